/* Duplicate detection (RFC 7252 4.5): exchanges keyed by peer + MID, kept
 * for EXCHANGE_LIFETIME in a fixed ring with a chained hash index, so the
 * memory is bounded; overwriting a live entry counts as an eviction. */
#ifndef DEV_DEDUP_H
#define DEV_DEDUP_H

#include <stdint.h>

#include "recipe.h"

#define DD_LIFETIME_NS (247LL * 1000000000LL)

enum dd_state {
  DD_FREE,
  DD_PENDING,  /* queued or in service, piggybacked/NON answer to come */
  DD_SEPARATE, /* empty ACK sent, separate CON response to come or sent */
  DD_DONE,     /* answered: rc rebuilds the same response */
};

struct dd_entry {
  uint8_t addr[16];
  uint16_t port, mid;
  uint32_t next; /* hash chain */
  uint32_t gen;  /* bumped on reuse so late completions can tell */
  uint8_t state, tkl;
  uint8_t token[8]; /* the request's token */
  int64_t t_ns;
  struct recipe rc;
};

struct dedup {
  struct dd_entry *ring;
  uint32_t *buckets;
  uint32_t cap, mask, head;
  uint64_t evictions;
};

int dedup_init(struct dedup *d, uint32_t entries);
void dedup_free(struct dedup *d);

/* The live entry for this exchange, or NULL. */
struct dd_entry *dedup_find(struct dedup *d, const uint8_t addr[16],
                            uint16_t port, uint16_t mid, int64_t now);

/* A fresh entry for the exchange (state DD_PENDING, new gen). `old` is the
 * entry dedup_find returned for the same key (reused in place) or NULL. */
struct dd_entry *dedup_claim(struct dedup *d, struct dd_entry *old,
                             const uint8_t addr[16], uint16_t port,
                             uint16_t mid, int64_t now);

static inline uint32_t dedup_slot(const struct dedup *d,
                                  const struct dd_entry *e) {
  return (uint32_t)(e - d->ring);
}

/* The entry at slot if it still belongs to exchange generation gen. */
static inline struct dd_entry *dedup_at(struct dedup *d, uint32_t slot,
                                        uint32_t gen) {
  struct dd_entry *e = &d->ring[slot];

  return e->gen == gen && e->state != DD_FREE ? e : 0;
}

#endif
