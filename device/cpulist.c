/* CPU lists: parse, format, pin (cpulist.h). No state: every function
 * works on its arguments alone. */
#include "cpulist.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

_Static_assert(CPU_SETSIZE == 1024, "the messages below say 0..1023");

static const char syntax[] = "expected CPUs and ranges like 1,3-5, got";

/* One decimal CPU number at *sp; advances *sp past its digits. */
static const char *number(const char **sp, unsigned long *out) {
  const char *s = *sp;
  unsigned long v = 0;

  if (*s < '0' || *s > '9')
    return syntax;
  /* Stop accumulating once out of range: no overflow on any length. */
  for (; *s >= '0' && *s <= '9'; s++)
    if (v < CPU_SETSIZE)
      v = v * 10 + (unsigned long)(*s - '0');
  if (v >= CPU_SETSIZE)
    return "expected CPU numbers 0..1023, got";
  *sp = s;
  *out = v;
  return NULL;
}

const char *cpulist_parse(const char *s, cpu_set_t *set) {
  CPU_ZERO(set);
  for (;;) {
    unsigned long lo, hi;
    const char *why = number(&s, &lo);

    if (why != NULL)
      return why;
    hi = lo;
    if (*s == '-') {
      s++;
      why = number(&s, &hi);
      if (why != NULL)
        return why;
      if (hi < lo)
        return "expected ranges A-B with A <= B, got";
    }
    for (unsigned long c = lo; c <= hi; c++)
      CPU_SET(c, set);
    if (*s == '\0')
      return NULL;
    if (*s != ',')
      return syntax;
    s++;
  }
}

int cpulist_format(const cpu_set_t *set, char *out, size_t cap) {
  size_t n = 0;

  if (cap == 0)
    return -1;
  out[0] = '\0';
  for (int c = 0; c < CPU_SETSIZE; c++) {
    int last = c, m;

    if (!CPU_ISSET(c, set))
      continue;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
      last++;
    if (last > c)
      m = snprintf(out + n, cap - n, "%s%d-%d", n ? "," : "", c, last);
    else
      m = snprintf(out + n, cap - n, "%s%d", n ? "," : "", c);
    if (m < 0 || (size_t)m >= cap - n) {
      out[0] = '\0';
      return -1;
    }
    n += (size_t)m;
    c = last;
  }
  return (int)n;
}

int cpulist_pin(const char *list, const cpu_set_t *want, cpu_set_t *got,
                char *why, size_t cap) {
  char kept[CPULIST_TEXT_MAX];

  if (sched_setaffinity(0, sizeof(*want), want) != 0) {
    if (errno == EINVAL) {
      snprintf(why, cap, "no CPU of '%s' is available to this process", list);
      return 2;
    }
    snprintf(why, cap, "cannot pin to '%s': %s", list, strerror(errno));
    return 1;
  }
  if (sched_getaffinity(0, sizeof(*got), got) != 0) {
    snprintf(why, cap, "cannot read the CPU affinity back: %s",
             strerror(errno));
    return 1;
  }
  if (CPU_EQUAL(want, got))
    return 0;
  /* The kernel keeps the CPUs of the list that are online and in the
   * process's cpuset and drops the rest without an error: pinned to less
   * than asked is a wrong placement, refused like a CPU not there at all. */
  cpulist_format(got, kept, sizeof(kept)); /* any set fits */
  snprintf(why, cap, "only %s of '%s' %s available to this process", kept, list,
           CPU_COUNT(got) == 1 ? "is" : "are");
  return 2;
}
