/* The loop's counters as a table generated from GE_COUNTERS and
 * GE_GARBAGE_COUNTERS (counters.h), so that the summary JSON and the stderr
 * line cannot disagree with the struct or with each other. */
#include <stddef.h>
#include <stdio.h>

#include "counters.h"

struct field {
  const char *name;
  size_t off;
};

#define GE_COUNTER_ROW(name) {#name, offsetof(struct ge_counters, name)},
static const struct field top[] = {GE_COUNTERS(GE_COUNTER_ROW)};
static const struct field garbage[] = {GE_GARBAGE_COUNTERS(GE_COUNTER_ROW)};
#undef GE_COUNTER_ROW

#define NTOP (sizeof top / sizeof top[0])
#define NGARBAGE (sizeof garbage / sizeof garbage[0])

static unsigned long long get(const struct ge_counters *c,
                              const struct field *fl) {
  return *(const uint64_t *)((const char *)c + fl->off);
}

static unsigned long long garbage_total(const struct ge_counters *c) {
  unsigned long long sum = 0;
  for (size_t i = 0; i < NGARBAGE; i++)
    sum += get(c, &garbage[i]);
  return sum;
}

void ge_counters_json(FILE *f, const struct ge_counters *c) {
  for (size_t i = 0; i < NTOP; i++)
    fprintf(f, "  \"%s\": %llu,\n", top[i].name, get(c, &top[i]));
  fprintf(f, "  \"garbage\": {\"total\": %llu", garbage_total(c));
  for (size_t i = 0; i < NGARBAGE; i++)
    fprintf(f, ", \"%s\": %llu", garbage[i].name, get(c, &garbage[i]));
  fputs("},\n", f);
}

void ge_counters_print(FILE *f, const struct ge_counters *c, size_t requests,
                       double seconds) {
  fprintf(f, "wotbench-ge: %zu requests in %.3f s:", requests, seconds);
  for (size_t i = 0; i < NTOP; i++)
    fprintf(f, " %s=%llu", top[i].name, get(c, &top[i]));
  fprintf(f, " garbage=%llu\n", garbage_total(c));
}
