/* The notification process of an observable resource (the resource CSV's
 * observe_rit cell): a renewal process whose inter-event times are drawn
 * from det, exp, uniform, lognormal or pareto, each observation with its
 * own seeded xoshiro256** stream. Pure (no I/O, no clock): the resource
 * parser, the fuzzer and the network thread share it. */
#ifndef DEV_NOTIFY_H
#define DEV_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#define NOTIFY_MIN_US 100 /* the least mean (or A, B) a cell may ask for */
#define NOTIFY_MAX_US 1000000000000ULL /* 11.6 days */

enum notify_kind { NK_DET, NK_EXP, NK_UNIFORM, NK_LOGNORMAL, NK_PARETO };

struct notify_proc {
  uint8_t kind;
  double a, b; /* us: det/exp N; uniform A, B; lognormal mu, sigma;
                  pareto x_m, alpha */
};

struct notify_rng {
  uint64_t s[4];
};

/* Parses `det:N`, `exp:N`, `uniform:A:B`, `lognormal:N:CV`,
 * `pareto:N:ALPHA` (N, A, B integer us >= 100, A <= B; CV > 0; ALPHA > 1,
 * decimals). Returns 0, or -1 with a reason in why. */
int notify_parse(const char *s, size_t n, struct notify_proc *p, char *why,
                 size_t cap);

/* splitmix64 of x: seeds and hashes. */
uint64_t notify_mix(uint64_t x);

/* FNV-1a of a path. */
uint64_t notify_hash(const char *s, size_t n);

void notify_seed(struct notify_rng *r, uint64_t seed);
uint64_t notify_next(struct notify_rng *r);

/* One inter-event time in ns, at least 1 us. */
int64_t notify_draw_ns(const struct notify_proc *p, struct notify_rng *r);

#endif
