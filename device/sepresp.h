/* Separate CON responses (RFC 7252 5.2.2) and their retransmission
 * (4.2: ACK_TIMEOUT 2 s, ACK_RANDOM_FACTOR 1.5, MAX_RETRANSMIT 4) until an
 * empty ACK or RST arrives. Network thread only. */
#ifndef DEV_SEPRESP_H
#define DEV_SEPRESP_H

#include <stdint.h>

#include "peer.h"
#include "recipe.h"

#define SEP_ACK_TIMEOUT_NS 2000000000LL
#define SEP_MAX_RETRANSMIT 4

struct sep_slot {
  struct peer peer;
  struct recipe rc;
  int64_t due_ns, timeout_ns;
  uint8_t tries, active;
};

struct sep_stats {
  uint64_t started, retransmits, acked, reset, gave_up, untracked;
};

struct sepresp {
  struct sep_slot *slots;
  uint32_t cap, high, active;
  int64_t next_due;
  uint64_t rng;
  struct sep_stats st;
};

typedef void (*sep_send_fn)(void *ctx, const struct peer *peer,
                            const struct recipe *rc);

int sep_init(struct sepresp *s, uint32_t cap, uint64_t seed);
void sep_free(struct sepresp *s);

/* Remembers a CON response that was just sent. When the table is full the
 * response goes out once, untracked (counted). */
void sep_track(struct sepresp *s, const struct peer *peer,
               const struct recipe *rc, int64_t now);

/* An empty ACK (rst = 0) or RST for mid from peer; 1 if it matched. */
int sep_ack(struct sepresp *s, const struct peer *peer, uint16_t mid, int rst);

/* Retransmits what is due and gives up after MAX_RETRANSMIT. */
void sep_tick(struct sepresp *s, int64_t now, sep_send_fn send, void *ctx);

/* When sep_tick next has work; INT64_MAX if never. */
static inline int64_t sep_next_due(const struct sepresp *s) {
  return s->active ? s->next_due : INT64_MAX;
}

#endif
