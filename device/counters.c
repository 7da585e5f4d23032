/* The counter set (DEV_COUNTERS in counters.h) as a table so that the
 * stderr line and the JSON file cannot disagree. */
#include "counters.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dev_format.h"

static const struct {
  const char *name;
  size_t off;
} fields[] = {
#define F(x) {#x, offsetof(struct dev_counters, x)},
    DEV_COUNTERS(F)
#undef F
};

static uint64_t get(const struct dev_counters *c, size_t i) {
  uint64_t v;

  memcpy(&v, (const char *)c + fields[i].off, sizeof(v));
  return v;
}

void counters_print(FILE *f, const struct dev_counters *c) {
  fputs("wotbench-device:", f);
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    fprintf(f, " %s=%llu", fields[i].name, (unsigned long long)get(c, i));
  fputc('\n', f);
}

static const struct {
  const char *name;
  size_t off;
} hists[] = {
#define H(x) {#x, offsetof(struct dev_hists, x)},
    DEV_HISTOGRAMS(H)
#undef H
};

int counters_write_json(const char *file, const char *cpus,
                        const struct dev_counters *c,
                        const struct dev_hists *h) {
  size_t n = strlen(file);
  char *tmp = malloc(n + 16);
  FILE *f;
  int ok;

  if (tmp == NULL)
    return -1;
  snprintf(tmp, n + 16, "%s.tmp%ld", file, (long)getpid());
  f = fopen(tmp, "w");
  if (f == NULL)
    goto err;
  /* cpus is digits, commas and dashes (cpulist_format): no escaping. */
  fprintf(f, "{\"format\": %d, \"cpus\": \"%s\"", DEV_STATS_FORMAT, cpus);
  for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    fprintf(f, ", \"%s\": %llu", fields[i].name, (unsigned long long)get(c, i));
  for (size_t i = 0; i < sizeof(hists) / sizeof(hists[0]); i++) {
    fprintf(f, ", \"%s\": ", hists[i].name);
    hist_write_json(f, (const struct hist *)((const char *)h + hists[i].off));
  }
  fputs("}\n", f);
  ok = fflush(f) == 0 && !ferror(f) && fsync(fileno(f)) == 0;
  if (fclose(f) != 0 || !ok) {
    unlink(tmp);
    goto err;
  }
  if (rename(tmp, file) != 0) {
    unlink(tmp);
    goto err;
  }
  free(tmp);
  return 0;
err:
  fprintf(stderr, "error: %s: %s\n", file, strerror(errno));
  free(tmp);
  return -1;
}
