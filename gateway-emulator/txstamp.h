/* The kernel's send stamps (README.md, "Kernel send stamps"): the first
 * transmissions waiting for their SO_TIMESTAMPING software TX stamp, in a
 * bounded ring in send order, and per socket the OPT_ID key of its next
 * send and its waiting entries in key order. A stamp read from a socket's
 * error queue (loop.c) replaces its request's sent stamp; an entry whose
 * stamp never comes (a later key arrived first, its request ended, or the
 * ring wrapped) keeps the user-space stamp: a fallback. Entries leave the
 * ring in send order, settled, for the send-order statistics (state.c).
 * No syscalls. */
#ifndef GE_TXSTAMP_H
#define GE_TXSTAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "window.h"

#define GE_TX_RING (1u << 12) /* first transmissions awaiting a stamp */
#define GE_TX_NONE UINT64_MAX

enum { GE_TX_PENDING = 0, GE_TX_KERNEL, GE_TX_FALLBACK };

struct ge_tx_ent {
  int64_t sent_ns; /* rel. t0: user-space stamp; the kernel's once matched */
  uint64_t ts_us;  /* intended */
  uint64_t next;   /* the socket's next waiting entry (seq), GE_TX_NONE */
  uint32_t idx, key;
  uint16_t sock;
  uint8_t state;
  bool held; /* NSTART or PROBING_RATE held it (its wait: held.wait_max_us) */
};
struct ge_tx_sock {
  uint64_t head, tail; /* its waiting entries (seq), GE_TX_NONE: none */
  uint32_t key;        /* the OPT_ID key of its next send */
  bool on;             /* SO_TIMESTAMPING in force: its error queue is read */
  bool lost;   /* its keys are unknown: its sends keep their own stamps */
  bool unread; /* sent since its error queue was last read empty */
};
struct ge_tx {
  struct ge_tx_ent *ring; /* entry seq at ring[seq % GE_TX_RING] */
  struct ge_tx_sock *sk;
  unsigned nsock;
  uint64_t lo, hi;  /* entries [lo, hi), in send order */
  uint64_t wrapped; /* entries settled unstamped because the ring was full */
};

/* nsock sockets, all off. 0, or -1 out of memory. */
int ge_tx_init(struct ge_tx *t, unsigned nsock);
void ge_tx_free(struct ge_tx *t);
static inline bool ge_tx_full(const struct ge_tx *t) {
  return t->hi - t->lo == GE_TX_RING;
}
/* Socket si has entries waiting for stamps. */
static inline bool ge_tx_waiting(const struct ge_tx *t, unsigned si) {
  return si < t->nsock && t->sk[si].head != GE_TX_NONE;
}
/* Socket si's error queue may hold stamps (it is read until empty, also
 * of sends nothing waits for, so that it never fills). */
static inline bool ge_tx_unread(const struct ge_tx *t, unsigned si) {
  return si < t->nsock && t->sk[si].unread;
}
/* A datagram went out of socket si: its key is taken. */
static inline void ge_tx_sent(struct ge_tx *t, unsigned si) {
  if (si < t->nsock) {
    t->sk[si].key++;
    t->sk[si].unread = t->sk[si].on;
  }
}
/* The oldest entry gives up waiting (the ring is full): a fallback. */
void ge_tx_wrap(struct ge_tx *t);
/* Request idx's first transmission, stamped sent_ns (rel. t0) in user
 * space, is the next datagram of socket `sock`; it waits for its kernel
 * stamp if the socket has them, else it is settled at once. The ring
 * must not be full. */
void ge_tx_push(struct ge_tx *t, uint32_t idx, uint32_t sock, int64_t sent_ns,
                uint64_t ts_us, bool held);
/* The kernel stamp of socket si's send with this key, at k_ns (rel. t0,
 * monotonic), read at now_ns: it replaces the sent stamp of its request
 * (in w) if it is no earlier than the user-space one and not in the
 * future; waiting entries of older keys are fallbacks. */
void ge_tx_stamp(struct ge_tx *t, struct ge_window *w, unsigned si,
                 uint32_t key, int64_t k_ns, int64_t now_ns);
/* Request idx (last sent from socket si) ends: if it still waits, it is a
 * fallback. */
void ge_tx_end(struct ge_tx *t, unsigned si, uint32_t idx);
/* Every entry of socket si still waiting is a fallback (send error, end
 * of the run); its keys restart at 0, or are unknown from now (`lost`). */
void ge_tx_reset(struct ge_tx *t, unsigned si, bool lost);
/* The oldest entry if it is settled (removed), else false. */
bool ge_tx_pop(struct ge_tx *t, struct ge_tx_ent *out);

#endif
