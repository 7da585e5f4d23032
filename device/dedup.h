/* Duplicate detection (RFC 7252 4.5): exchanges keyed by peer + MID, kept
 * for EXCHANGE_LIFETIME in a ring with a chained hash index. The ring's
 * active part grows (doubling, up to its capacity) only while its oldest
 * entry is still live, and otherwise wraps: its memory follows the
 * exchanges live at once (rate x lifetime), not the requests served; a
 * soak of an hour used to touch a new ~85-byte slot per request until the
 * capacity. Overwriting a live entry counts as an eviction. */
#ifndef DEV_DEDUP_H
#define DEV_DEDUP_H

#include <stdint.h>

#include "recipe.h"

/* EXCHANGE_LIFETIME with RFC 7252's default transmission parameters. */
#define DD_LIFETIME_NS (247LL * 1000000000LL)
/* Slots in use at start; the active part doubles from here as needed. */
#define DD_START_SLOTS 256u

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
  uint32_t limit; /* active slots: 0..limit-1, in time order at head == limit */
  int64_t lifetime_ns; /* how long an exchange is remembered */
  uint64_t evictions;
};

int dedup_init(struct dedup *d, uint32_t entries, int64_t lifetime_ns);
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
