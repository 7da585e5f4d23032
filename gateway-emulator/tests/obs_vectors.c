/* Replay driver of obs.c (tests/test_obs.py): scripted events on stdin,
 * one a line; one line of results on stdout per event. Links only obs.o.
 *
 *   new                        -> ok  (a fresh observation)
 *   seq V NOW_MS [rereg] [ended] [first] [non]
 *        -> STATUS gap G stale 0|1 reset 0|1 distinct D
 *      (the flags GE_OBS_F_REREG, _ENDED, _FIRST: payload n=0, _NO_N:
 *      payload without n)
 *   lost [LAST]                -> lost L
 *   stamps TEXT                -> t T e E n N   or   none
 *
 * A bad line: "error: LINE: what" on stderr, exit 2. */
#include "obs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const STATUS[] = {"registered", "fresh",     "reregistered",
                                     "reordered",  "duplicate", "after_cancel"};

static bool num_u64(const char *s, unsigned long long *v) {
  char *end = NULL;
  if (s == NULL || *s == '-')
    return false;
  errno = 0;
  *v = strtoull(s, &end, 10);
  return errno == 0 && end != s && *end == '\0';
}

static const char *ev_seq(struct ge_obs_seq *s, char **a, int n) {
  unsigned long long v, ms;
  if (n < 3 || !num_u64(a[1], &v) || !num_u64(a[2], &ms))
    return "usage: seq V NOW_MS [rereg] [ended] [first] [non]";
  static const char *const FLAG[] = {"rereg", "ended", "first", "non"};
  unsigned flags = 0;
  for (int i = 3; i < n; i++) {
    unsigned f = 0;
    for (unsigned k = 0; k < 4 && !f; k++)
      if (!strcmp(a[i], FLAG[k]))
        f = 1u << k;
    if (!f)
      return "unknown flag";
    flags |= f;
  }
  struct ge_obs_class c;
  ge_obs_classify(s, (uint32_t)v, (int64_t)ms * 1000000, flags, &c);
  printf("%s gap %u stale %d reset %d distinct %llu\n", STATUS[c.status], c.gap,
         c.stale, c.reset, (unsigned long long)s->distinct);
  return NULL;
}

static const char *ev_lost(const struct ge_obs_seq *s, char **a, int n) {
  unsigned long long last = 0;
  if (n > 2 || (n == 2 && !num_u64(a[1], &last)))
    return "usage: lost [LAST]";
  printf("lost %llu\n",
         (unsigned long long)ge_obs_lost(s, n == 2, (uint32_t)last));
  return NULL;
}

static const char *event(struct ge_obs_seq *s, char *line, const char *raw) {
  char *a[8];
  int n = 0;
  for (char *t = strtok(line, " \n"); t && n < 8; t = strtok(NULL, " \n"))
    a[n++] = t;
  if (n == 0)
    return "empty line";
  if (!strcmp(a[0], "new")) {
    *s = (struct ge_obs_seq){0};
    puts("ok");
    return NULL;
  }
  if (!strcmp(a[0], "seq"))
    return ev_seq(s, a, n);
  if (!strcmp(a[0], "lost"))
    return ev_lost(s, a, n);
  if (!strcmp(a[0], "stamps")) {
    const char *text = raw + strlen("stamps");
    text += *text == ' ';
    size_t len = strcspn(text, "\n");
    struct ge_obs_stamps st;
    if (ge_obs_parse_stamps((const uint8_t *)text, len, &st))
      printf("t %llu e %llu n %llu\n", (unsigned long long)st.t_us,
             (unsigned long long)st.e_us, (unsigned long long)st.n);
    else
      puts("none");
    return NULL;
  }
  return "unknown event";
}

int main(void) {
  struct ge_obs_seq s = {0};
  char line[4096], copy[4096];
  for (unsigned no = 1; fgets(line, sizeof line, stdin); no++) {
    memcpy(copy, line, sizeof line);
    const char *why = event(&s, line, copy);
    if (why) {
      fprintf(stderr, "error: %u: %s\n", no, why);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
