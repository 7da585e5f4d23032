/* RFC 7641 observations, network thread only: the table keyed by (peer,
 * token), each observation's event process (notify.h), its notifications
 * built straight into the tx batch, one CON notification in flight per
 * observation with RFC 7252 retransmission (a newer event supersedes the
 * one in flight), refreshes before Max-Age runs out, and a min-heap of
 * due times with lazy deletion that the loop's timerfd follows. */
#ifndef DEV_OBSERVE_H
#define DEV_OBSERVE_H

#include <stdint.h>

#include "counters.h"
#include "notify.h"
#include "peer.h"
#include "recipe.h"
#include "registry.h"
#include "tx.h"

#define OBS_MAX_RETRANSMIT 4

struct obs {
  struct peer peer;
  const struct reg_entry *res;
  struct notify_rng rng;
  int64_t ev_ns, next_ev_ns; /* the current event and the next (monotonic) */
  int64_t last_sent_ns, due_ns, rto_ns, timeout_ns;
  int64_t if_t_us, if_e_us; /* the CON in flight */
  uint64_t n, if_n;
  uint32_t seq, if_seq; /* the last seq sent; the in-flight one */
  uint32_t gen, msgs, next_free;
  uint32_t serial; /* the registration that created it (its MIDs' owner) */
  uint16_t if_mid;
  uint8_t token[8];
  uint8_t tkl, live, inflight, pending, tries;
};

/* A MID's owner: the slot (+ 1, 0: none) and the serial of the
 * observation in it then, so that a late RST or ACK for an observation
 * that is gone never reaches the one that reuses its slot. */
struct obs_mid {
  uint32_t slot, serial;
};

struct obs_due {
  int64_t due;
  uint32_t idx, gen;
};

struct observe {
  struct obs *v;
  uint32_t cap, high, live, free_head;
  uint32_t *hash; /* index + 1, 0 empty; open addressing */
  uint32_t hash_mask;
  struct obs_mid *mid_owner; /* MID -> the observation that last used it */
  uint32_t serials;          /* observations created */
  uint64_t *ordinal;         /* registrations per resource (seeds) */
  struct obs_due *heap;
  uint32_t heap_n, heap_cap;
  int64_t ack_timeout_ns, seq_start, rt_off_ns;
  uint64_t rng;
  uint16_t *next_mid; /* the device's one MID counter */
  struct tx *tx;
  struct dev_counters *c;
};

int obs_init(struct observe *o, uint32_t cap, const struct registry *reg,
             int64_t ack_timeout_ns, int64_t seq_start, uint16_t *next_mid,
             struct tx *tx, struct dev_counters *c);
void obs_free(struct observe *o);

/* Reads the realtime - monotonic offset the stamps use (once per turn). */
void obs_clock(struct observe *o);

/* 1 if a registration by (peer, rc's token) can be taken: it exists or
 * there is room. */
int obs_room(const struct observe *o, const struct peer *p,
             const struct recipe *rc);

/* Creates or replaces the observation of (peer, rc's token) on rc->res and
 * sends notification 0 as the answer: rc->type and rc->mid (ACK or NON),
 * or with separate set a CON with a new MID that the observation
 * retransmits. rx_ns is the request's receipt (event 0), now the answer's
 * time. Returns 0, or -1 when the table is full (nothing sent). */
int obs_register(struct observe *o, const struct peer *p,
                 const struct recipe *rc, int64_t rx_ns, int64_t now,
                 int separate);

/* A duplicate of a registration: the current state as a new notification
 * (rc->type, rc->mid as for the first answer). 0 if the observation is
 * gone (the caller answers plainly). */
int obs_duplicate(struct observe *o, const struct peer *p,
                  const struct recipe *rc, int64_t now);

/* Removes the observation of (peer, rc's token); returns its last seq, or
 * -1 if there was none. */
int32_t obs_cancel(struct observe *o, const struct peer *p,
                   const struct recipe *rc);

/* An empty ACK (rst = 0) or RST for mid from peer; 1 if it was ours. */
int obs_ack(struct observe *o, const struct peer *p, uint16_t mid, int rst,
            int64_t now);

/* Everything due by now: events, retransmissions, refreshes. */
void obs_tick(struct observe *o, int64_t now);

/* When obs_tick next has work; INT64_MAX if never. */
static inline int64_t obs_next_due(const struct observe *o) {
  return o->heap_n ? o->heap[0].due : INT64_MAX;
}

#endif
