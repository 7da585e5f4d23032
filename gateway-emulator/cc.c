/* Congestion control strategies (cc.h; README.md, "Congestion control").
 * cocoa follows draft-ietf-core-cocoa-03 with the GE's documented choices
 * (G = 100 ms, VBF from the undithered B, aging before every use); the
 * Californium family reproduces Californium 3.14.0's BasicRto, LinuxRto
 * and PeakhopperRto with its common layer's timer rules. */
#include "cc.h"

#include <math.h>
#include <string.h>

#define MS 1e6 /* ns */
/* The draft (ns). */
#define CO_G (100 * MS)
#define CO_ALPHA 0.125
#define CO_BETA 0.25
#define CO_K_STRONG 4.0
#define CO_K_WEAK 1.0
#define CO_W_STRONG 0.5
#define CO_W_WEAK 0.25
#define CO_LOW (1000 * MS)
#define CO_HIGH (3000 * MS)
#define CO_CAP (32000 * MS)
/* Californium (ms). */
#define CF_MIN_RTO 500
#define CF_MAX_RTO 60000
#define CF_RTO_CAP 32000      /* RemoteEndpoint.getRTO() */
#define CF_SCALE 2.0f         /* ACK_TIMEOUT_SCALE */
#define CF_MDEV_MIN 50        /* LinuxRto: TCP_RTO_MIN / 4 */
#define PH_GRAN ((int64_t)50) /* PeakhopperRto's 50 ms term */
#define PH_F 24.0f
#define PH_B_MAX 1.0f

/* The table's columns, one array each (index: the strategy). */
static int family(enum ge_cc_strategy s) {
  const int fam[] = {
#define GE_CC_FAMILY(id, name, fam, weak) fam,
      GE_CC_STRATEGIES(GE_CC_FAMILY)
#undef GE_CC_FAMILY
  };
  return (unsigned)s < GE_CC_NSTRATEGIES ? fam[s] : 0;
}

static bool uses_weak(enum ge_cc_strategy s) {
  const bool weak[] = {
#define GE_CC_WEAK(id, name, fam, weak) weak,
      GE_CC_STRATEGIES(GE_CC_WEAK)
#undef GE_CC_WEAK
  };
  return (unsigned)s < GE_CC_NSTRATEGIES && weak[s];
}

const char *ge_cc_name(enum ge_cc_strategy s) {
  switch (s) {
#define GE_CC_NAME(id, name, fam, weak)                                        \
  case GE_CC_##id: return name;
    GE_CC_STRATEGIES(GE_CC_NAME)
#undef GE_CC_NAME
  default: return NULL;
  }
}

int ge_cc_parse(const char *name) {
  for (int s = 0; s < GE_CC_NSTRATEGIES; s++)
    if (strcmp(ge_cc_name((enum ge_cc_strategy)s), name) == 0)
      return s;
  return -1;
}

void ge_cc_init(struct ge_cc *c, enum ge_cc_strategy s, int64_t ack_timeout_ns,
                double random_factor, int64_t now_ns) {
  memset(c, 0, sizeof *c);
  c->strategy = s;
  c->ack_timeout = (double)ack_timeout_ns;
  c->random_factor = random_factor;
  if (family(s) == 1) {
    struct ge_cc_cocoa *co = &c->u.co;
    co->rto = c->ack_timeout;
    co->last = (double)now_ns;
    co->strong.e = co->weak.e = c->ack_timeout;
  } else if (family(s) == 2) {
    c->u.cf.rto = ack_timeout_ns / 1000000;
  }
}

/* ---- cocoa, cocoa-strong (draft-ietf-core-cocoa-03) ---- */

uint32_t ge_cc_age(struct ge_cc *c, int64_t now_ns) {
  if (family(c->strategy) != 1)
    return 0;
  struct ge_cc_cocoa *co = &c->u.co;
  double now = (double)now_ns;
  uint32_t steps = 0;
  for (;;) {
    if (co->rto < CO_LOW && now - co->last > 16 * co->rto) {
      co->last += 16 * co->rto;
      co->rto = 2 * co->rto;
    } else if (co->rto > CO_HIGH && now - co->last > 4 * co->rto) {
      co->last += 4 * co->rto;
      co->rto = CO_LOW + co->rto / 2;
    } else {
      break;
    }
    steps++;
  }
  c->aging_steps += steps;
  return steps;
}

/* RFC 6298 section 2 on one estimator, with E = SRTT + max(G, K RTTVAR). */
static double est_update(struct ge_cc_est *x, double r, double k) {
  if (!x->init) {
    x->srtt = r;
    x->rttvar = r / 2;
    x->init = true;
  } else {
    x->rttvar = (1 - CO_BETA) * x->rttvar + CO_BETA * fabs(x->srtt - r);
    x->srtt = (1 - CO_ALPHA) * x->srtt + CO_ALPHA * r;
  }
  x->e = x->srtt + fmax(CO_G, k * x->rttvar);
  return x->e;
}

static bool cocoa_sample(struct ge_cc *c, int64_t now_ns, double r,
                         enum ge_cc_kind kind) {
  struct ge_cc_cocoa *co = &c->u.co;
  if (kind == GE_CC_NONE || (kind == GE_CC_WEAK && !uses_weak(c->strategy)))
    return false; /* no update, no aging step is "used" */
  ge_cc_age(c, now_ns);
  if (kind == GE_CC_STRONG) {
    double e = est_update(&co->strong, r, CO_K_STRONG);
    co->rto = CO_W_STRONG * e + (1 - CO_W_STRONG) * co->rto;
  } else {
    double e = est_update(&co->weak, r, CO_K_WEAK);
    co->rto = CO_W_WEAK * e + (1 - CO_W_WEAK) * co->rto;
  }
  co->last = (double)now_ns;
  co->sampled = true;
  return true;
}

/* B: the blind estimate (ACK_TIMEOUT per exchange in flight, the new one
 * included) before any sample, then the overall RTO; at most 32 s. */
static double cocoa_base(const struct ge_cc *c, uint32_t inflight) {
  const struct ge_cc_cocoa *co = &c->u.co;
  if (!co->sampled)
    return fmin(c->ack_timeout * ((double)inflight + 1), CO_CAP);
  return fmin(co->rto, CO_CAP);
}

static double cocoa_vbf(double base) {
  if (base < CO_LOW)
    return 3;
  if (base > CO_HIGH)
    return 1.5;
  return 2;
}

/* ---- Californium's BasicRto, LinuxRto, PeakhopperRto (ms) ---- */

static int64_t java_round(double x) { return (int64_t)floor(x + 0.5); }

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* RemoteEndpoint.getRTO(): the blind factor (the exchanges in flight,
 * not counting the new one) until the first strong sample, for the two
 * strategies with usesBlindEstimator; at most 32 s. */
static int64_t cf_get_rto(const struct ge_cc *c, uint32_t inflight) {
  int64_t rto = c->u.cf.rto;
  if (c->strategy != GE_CC_basic_rto && inflight > 1 && !c->u.cf.init)
    rto *= inflight;
  return min64(rto, CF_RTO_CAP);
}

static void linux_first(struct ge_cc_cf *f, int64_t r) {
  f->srtt = r;
  f->mdev = r / 2;
  f->mdev_max = max64(f->mdev, CF_MDEV_MIN);
  f->rttvar = f->mdev_max;
  f->rto = f->srtt + 4 * f->rttvar;
}

static void linux_update(struct ge_cc_cf *f, int64_t r) {
  f->srtt += java_round(0.125 * (double)(r - f->srtt));
  int64_t err = r > f->srtt ? r - f->srtt : f->srtt - r; /* new srtt */
  if (r < f->srtt - f->mdev)
    f->mdev = java_round(0.96875 * (double)f->mdev + 0.03125 * (double)err);
  else
    f->mdev =
        java_round(0.75 * (double)f->mdev) + java_round(0.25 * (double)err);
  if (f->mdev > f->mdev_max) {
    f->mdev_max = f->mdev;
    if (f->mdev_max > f->rttvar)
      f->rttvar = f->mdev_max;
  }
  if (f->mdev_max < f->rttvar)
    f->rttvar =
        java_round(0.75 * (double)f->rttvar + 0.25 * (double)f->mdev_max);
  f->mdev_max = CF_MDEV_MIN;
  f->rto = f->srtt + 4 * f->rttvar;
}

static void peak_first(struct ge_cc_cf *f, int64_t r) {
  f->hist[f->idx++ % 2] = r;
  f->rto = (int64_t)((1 + 0.75) * (double)r);
}

/* Java's float32 and long arithmetic, quirks included (README.md):
 * the integer division in delta, prev = 0 at the second sample. */
static void peak_update(struct ge_cc_cf *f, int64_t r) {
  const float d = 1.0f - 1.0f / PH_F;
  f->hist[f->idx++ % 2] = r;
  int64_t q = (r - f->prev) / r;
  float delta = (float)(q < 0 ? -q : q);
  f->b = fminf(fmaxf(delta * 2.0f, d * f->b), PH_B_MAX);
  int64_t rtt_max = max64(r, f->prev);
  int64_t rto_min = max64(f->hist[0], f->hist[1]) + 2 * PH_GRAN;
  float old = (float)min64(f->rto, CF_RTO_CAP); /* getRTO(), initialised */
  int64_t x = (int64_t)fmaxf(d * old, (1.0f + f->b) * (float)rtt_max);
  x = max64(max64(x, rtt_max + (int64_t)((1.0f + PH_B_MAX) * 50.0f)), rto_min);
  f->prev = r;
  f->rto = x;
}

static bool cf_sample(struct ge_cc *c, int64_t rtt_ns, enum ge_cc_kind kind) {
  struct ge_cc_cf *f = &c->u.cf;
  if (kind == GE_CC_NONE || (kind == GE_CC_WEAK && !uses_weak(c->strategy)))
    return false;
  int64_t r = max64(rtt_ns / 1000000, 1); /* max(toMillis(rtt), 1) */
  bool first = !f->init;
  if (c->strategy == GE_CC_basic_rto) {
    f->rto = r + r / 2;
    return true;
  }
  f->init = true;
  if (c->strategy == GE_CC_linux_rto) {
    if (first)
      linux_first(f, r);
    else
      linux_update(f, r);
  } else {
    if (first)
      peak_first(f, r);
    else
      peak_update(f, r);
  }
  return true;
}

/* ---- the common interface ---- */

double ge_cc_first(struct ge_cc *c, struct ge_cc_xchg *x, int64_t now_ns,
                   uint32_t inflight, double u) {
  x->retrans = 0;
  double dither = 1 + (c->random_factor - 1) * u;
  switch (family(c->strategy)) {
  case 1:
    ge_cc_age(c, now_ns);
    x->base = cocoa_base(c, inflight);
    x->vbf = cocoa_vbf(x->base);
    x->timer = x->base * dither;
    break;
  case 2: { /* no dithering; T0 in [MIN_RTO, MAX_RTO] */
    int64_t b = cf_get_rto(c, inflight);
    x->base = (double)b * MS;
    x->vbf = CF_SCALE;
    x->timer = (double)min64(max64(b, CF_MIN_RTO), CF_MAX_RTO) * MS;
    break;
  }
  default: /* RFC 7252: ACK_TIMEOUT x [1, ACK_RANDOM_FACTOR) */
    x->base = c->ack_timeout;
    x->vbf = 2;
    x->timer = c->ack_timeout * dither;
  }
  return x->timer;
}

double ge_cc_backoff(const struct ge_cc *c, struct ge_cc_xchg *x) {
  x->retrans++;
  switch (family(c->strategy)) {
  case 1: /* truncated at 32 s */
    x->timer = fmin(CO_CAP, x->timer * x->vbf);
    break;
  case 2: { /* (int)(scale * current), at most MAX_RTO */
    int64_t t = (int64_t)(x->timer / MS);
    t = (int64_t)((float)x->vbf * (float)t);
    x->timer = (double)min64(t, CF_MAX_RTO) * MS;
    break;
  }
  default: x->timer *= 2;
  }
  return x->timer;
}

enum ge_cc_kind ge_cc_kind_of(uint32_t retrans) {
  if (retrans == 0)
    return GE_CC_STRONG;
  return retrans <= 2 ? GE_CC_WEAK : GE_CC_NONE;
}

bool ge_cc_sample(struct ge_cc *c, int64_t now_ns, int64_t rtt_ns,
                  enum ge_cc_kind kind) {
  switch (family(c->strategy)) {
  case 1: return cocoa_sample(c, now_ns, (double)rtt_ns, kind);
  case 2: return cf_sample(c, rtt_ns, kind);
  default: return false;
  }
}

double ge_cc_rto(const struct ge_cc *c) {
  switch (family(c->strategy)) {
  case 1: return c->u.co.rto;
  case 2: return (double)c->u.cf.rto * MS;
  default: return c->ack_timeout;
  }
}
