/* Congestion control of CON exchanges: a table of strategies (README.md,
 * "Congestion control"), pure: no clock, no random numbers, no allocation.
 * The caller passes the monotonic time in ns and the dithering draw u in
 * [0, 1). One struct ge_cc per GE peer holds the estimator; one struct
 * ge_cc_xchg per exchange holds its timer and backoff factor.
 *
 * Units: times are int64 ns; the draft's strategies (cocoa, cocoa-strong)
 * keep their state in double ns (every value of the test vectors is exact
 * there), the Californium family (basic-rto, linux-rto, peakhopper-rto)
 * in whole ms with Java's integer and float32 semantics, as Californium
 * 3.14.0 does. Timers are double ns for all of them. */
#ifndef GE_CC_H
#define GE_CC_H

#include <stdbool.h>
#include <stdint.h>

/* X(id, name, family, weak): family 0 = fixed RFC 7252 timers, 1 = the
 * draft's CoCoA, 2 = Californium's RTO layer; weak = weak samples used. */
#define GE_CC_STRATEGIES(X)                                                    \
  X(rfc7252, "rfc7252", 0, false)                                              \
  X(cocoa, "cocoa", 1, true)                                                   \
  X(cocoa_strong, "cocoa-strong", 1, false)                                    \
  X(basic_rto, "basic-rto", 2, true)                                           \
  X(linux_rto, "linux-rto", 2, false)                                          \
  X(peakhopper_rto, "peakhopper-rto", 2, false)

enum ge_cc_strategy {
#define GE_CC_ENUM(id, name, family, weak) GE_CC_##id,
  GE_CC_STRATEGIES(GE_CC_ENUM)
#undef GE_CC_ENUM
      GE_CC_NSTRATEGIES
};

/* The class of an RTT sample, from the exchange's retransmissions before
 * its ACK: 0 strong, 1..2 weak, more none (draft: "Responses obtained
 * after the third retransmission are not used"). */
enum ge_cc_kind { GE_CC_NONE, GE_CC_STRONG, GE_CC_WEAK };

/* One RFC 6298 estimator of the draft (ns). */
struct ge_cc_est {
  double srtt, rttvar, e;
  bool init;
};

struct ge_cc_cocoa {
  struct ge_cc_est strong, weak;
  double rto;  /* overall RTO, ns */
  double last; /* last update of rto (a sample or an aging step), ns */
  bool sampled;
};

/* Californium's RemoteEndpoint and its subclasses' fields (ms). */
struct ge_cc_cf {
  int64_t rto; /* currentRTO */
  bool init;   /* initializedRto: a strong sample was taken */
  int64_t srtt, mdev, mdev_max, rttvar; /* linux-rto */
  int64_t hist[2], prev;                /* peakhopper-rto */
  uint32_t idx;
  float b;
};

struct ge_cc {
  enum ge_cc_strategy strategy;
  double ack_timeout;   /* ns */
  double random_factor; /* ACK_RANDOM_FACTOR, 1.5 */
  uint64_t aging_steps;
  union {
    struct ge_cc_cocoa co;
    struct ge_cc_cf cf;
  } u;
};

/* One exchange's timers (double ns). */
struct ge_cc_xchg {
  double base;  /* B: the strategy's RTO at the first send, undithered */
  double timer; /* the current timeout T_n */
  double vbf;   /* backoff factor, chosen once per exchange */
  uint32_t retrans;
};

/* The strategy's name ("cocoa-strong"), or NULL out of range. */
const char *ge_cc_name(enum ge_cc_strategy s);
/* The strategy called name; -1 when none is. */
int ge_cc_parse(const char *name);
/* Fresh state at now_ns: RTO = ACK_TIMEOUT. */
void ge_cc_init(struct ge_cc *c, enum ge_cc_strategy s, int64_t ack_timeout_ns,
                double random_factor, int64_t now_ns);
/* Aging (cocoa, cocoa-strong) up to now_ns, as the draft's timer would
 * have done it; returns the number of steps. A no-op for the others. */
uint32_t ge_cc_age(struct ge_cc *c, int64_t now_ns);
/* A new exchange's first timeout T0 (ns), after aging: B from the state
 * (inflight = exchanges of this peer already in flight, for the blind
 * estimate), then dithered by u in [0, 1) where the strategy dithers. */
double ge_cc_first(struct ge_cc *c, struct ge_cc_xchg *x, int64_t now_ns,
                   uint32_t inflight, double u);
/* The next timeout after a retransmission (x->retrans is incremented). */
double ge_cc_backoff(const struct ge_cc *c, struct ge_cc_xchg *x);
/* The class of a sample after r retransmissions. */
enum ge_cc_kind ge_cc_kind_of(uint32_t retrans);
/* Feeds an RTT sample (measured from the first transmission) at now_ns,
 * after aging. Returns true when the strategy used it. */
bool ge_cc_sample(struct ge_cc *c, int64_t now_ns, int64_t rtt_ns,
                  enum ge_cc_kind kind);
/* The current RTO estimate (ns): cocoa's overall rto, Californium's
 * currentRTO, rfc7252's ACK_TIMEOUT. No aging, no blind factor. */
double ge_cc_rto(const struct ge_cc *c);

#endif
