/* Replay driver of cc.c (tests/test_cc.py): scripted events on stdin, one
 * a line, times in integer ns; one line of results on stdout per event,
 * numbers as %.17g (doubles round-trip exactly). Links only cc.o.
 *
 *   init STRATEGY NOW [ACK_TIMEOUT [RANDOM_FACTOR]]  -> rto R
 *   exchange NOW U [INFLIGHT]   -> base B vbf V timer T0 aged N rto R
 *   retransmit                  -> timer T retrans N
 *   ack NOW                     -> kind K rtt R used 0|1 rto X
 *                                  (R from the exchange's first send,
 *                                  K from its retransmissions)
 *   sample KIND RTT NOW         -> used 0|1 rto X  (KIND strong|weak|none)
 *   age NOW                     -> aged N rto X
 *   state                       -> the strategy's internal state
 *
 * A bad line: "error: LINE: what" on stderr, exit 2. */
#include "cc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct drv {
  struct ge_cc cc;
  struct ge_cc_xchg x;
  int64_t first_ns; /* the exchange's first send */
  bool have_cc, have_x;
};

static const char *const KINDS[] = {"none", "strong", "weak"};

static bool num_i64(const char *s, int64_t *v) {
  char *end = NULL;
  if (s == NULL)
    return false;
  errno = 0;
  long long n = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0')
    return false;
  *v = (int64_t)n;
  return true;
}

static bool num_dbl(const char *s, double *v) {
  char *end = NULL;
  if (s == NULL)
    return false;
  errno = 0;
  *v = strtod(s, &end);
  return errno == 0 && end != s && *end == '\0';
}

static int kind_of(const char *s) {
  for (int k = 0; s != NULL && k < 3; k++)
    if (strcmp(s, KINDS[k]) == 0)
      return k;
  return -1;
}

static const char *ev_init(struct drv *d, char **a, int n) {
  int s = n >= 2 ? ge_cc_parse(a[1]) : -1;
  int64_t now = 0, ack = 2000000000;
  double rf = 1.5;
  if (s < 0 || !num_i64(a[2], &now) || (n > 3 && !num_i64(a[3], &ack)) ||
      (n > 4 && !num_dbl(a[4], &rf)))
    return "init STRATEGY NOW [ACK_TIMEOUT [RANDOM_FACTOR]]";
  ge_cc_init(&d->cc, (enum ge_cc_strategy)s, ack, rf, now);
  d->have_cc = true;
  d->have_x = false;
  printf("rto %.17g\n", ge_cc_rto(&d->cc));
  return NULL;
}

static const char *ev_exchange(struct drv *d, char **a, int n) {
  int64_t now = 0, inflight = 0;
  double u = 0;
  if (!num_i64(a[1], &now) || !num_dbl(a[2], &u) || u < 0 || u >= 1 ||
      (n > 3 && (!num_i64(a[3], &inflight) || inflight < 0)))
    return "exchange NOW U [INFLIGHT], U in [0, 1)";
  uint64_t aged = d->cc.aging_steps;
  ge_cc_first(&d->cc, &d->x, now, (uint32_t)inflight, u);
  d->first_ns = now;
  d->have_x = true;
  printf("base %.17g vbf %.17g timer %.17g aged %llu rto %.17g\n", d->x.base,
         d->x.vbf, d->x.timer, (unsigned long long)(d->cc.aging_steps - aged),
         ge_cc_rto(&d->cc));
  return NULL;
}

static const char *ev_retransmit(struct drv *d) {
  if (!d->have_x)
    return "retransmit before any exchange";
  ge_cc_backoff(&d->cc, &d->x);
  printf("timer %.17g retrans %u\n", d->x.timer, d->x.retrans);
  return NULL;
}

static const char *ev_ack(struct drv *d, char **a) {
  int64_t now = 0;
  if (!d->have_x || !num_i64(a[1], &now) || now < d->first_ns)
    return "ack NOW, after an exchange's first send";
  enum ge_cc_kind k = ge_cc_kind_of(d->x.retrans);
  int64_t rtt = now - d->first_ns;
  bool used = ge_cc_sample(&d->cc, now, rtt, k);
  d->have_x = false;
  printf("kind %s rtt %lld used %d rto %.17g\n", KINDS[k], (long long)rtt, used,
         ge_cc_rto(&d->cc));
  return NULL;
}

static const char *ev_sample(struct drv *d, char **a) {
  int k = kind_of(a[1]);
  int64_t rtt = 0, now = 0;
  if (k < 0 || !num_i64(a[2], &rtt) || rtt < 0 || !num_i64(a[3], &now))
    return "sample strong|weak|none RTT NOW";
  bool used = ge_cc_sample(&d->cc, now, rtt, (enum ge_cc_kind)k);
  printf("used %d rto %.17g\n", used, ge_cc_rto(&d->cc));
  return NULL;
}

static const char *ev_age(struct drv *d, char **a) {
  int64_t now = 0;
  if (!num_i64(a[1], &now))
    return "age NOW";
  uint32_t n = ge_cc_age(&d->cc, now);
  printf("aged %u rto %.17g\n", n, ge_cc_rto(&d->cc));
  return NULL;
}

static void ev_state(const struct drv *d) {
  const struct ge_cc_cocoa *co = &d->cc.u.co;
  const struct ge_cc_cf *f = &d->cc.u.cf;
  switch (d->cc.strategy) {
  case GE_CC_cocoa:
  case GE_CC_cocoa_strong:
    printf("s %.17g %.17g %.17g w %.17g %.17g %.17g last %.17g sampled %d\n",
           co->strong.srtt, co->strong.rttvar, co->strong.e, co->weak.srtt,
           co->weak.rttvar, co->weak.e, co->last, co->sampled);
    break;
  case GE_CC_linux_rto:
    printf("srtt %lld rttvar %lld mdev %lld\n", (long long)f->srtt,
           (long long)f->rttvar, (long long)f->mdev);
    break;
  case GE_CC_peakhopper_rto:
    printf("b %.9g hist %lld %lld prev %lld\n", (double)f->b,
           (long long)f->hist[0], (long long)f->hist[1], (long long)f->prev);
    break;
  default: printf("rto %.17g\n", ge_cc_rto(&d->cc));
  }
}

static const char *event(struct drv *d, char **a, int n) {
  if (strcmp(a[0], "init") == 0)
    return ev_init(d, a, n);
  if (!d->have_cc)
    return "init first";
  if (strcmp(a[0], "exchange") == 0)
    return ev_exchange(d, a, n);
  if (strcmp(a[0], "retransmit") == 0)
    return ev_retransmit(d);
  if (strcmp(a[0], "ack") == 0)
    return ev_ack(d, a);
  if (strcmp(a[0], "sample") == 0)
    return ev_sample(d, a);
  if (strcmp(a[0], "age") == 0)
    return ev_age(d, a);
  if (strcmp(a[0], "state") == 0) {
    ev_state(d);
    return NULL;
  }
  return "unknown event";
}

int main(void) {
  struct drv d = {0};
  char line[512];
  for (long no = 1; fgets(line, sizeof line, stdin) != NULL; no++) {
    char *a[8] = {0};
    int n = 0;
    for (char *t = strtok(line, " \t\r\n"); t != NULL && n < 7;
         t = strtok(NULL, " \t\r\n"))
      a[n++] = t;
    if (n == 0 || a[0][0] == '#')
      continue;
    const char *err = event(&d, a, n);
    if (err != NULL) {
      fprintf(stderr, "error: %ld: %s\n", no, err);
      return 2;
    }
    fflush(stdout);
  }
  return 0;
}
