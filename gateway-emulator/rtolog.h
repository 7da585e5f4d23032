/* --rto-out: the per-exchange RTO log (docs/formats.md, "GE RTO log CSV";
 * README.md, "Congestion control"). Events of CON exchanges are pushed
 * into a fixed ring of binary records (no syscalls, no allocation: the
 * datagram path calls it) and formatted and written by the loop in the
 * gaps of its schedule, like the per-request rows; the loop makes room
 * before it can push (ge_rto_make_room), so the ring never grows. */
#ifndef GE_RTOLOG_H
#define GE_RTOLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cc.h"
#include "plan.h"

enum ge_rto_event { GE_RTO_SEND, GE_RTO_SAMPLE, GE_RTO_TIMEOUT, GE_RTO_DUP };
#define GE_RTO_UNKNOWN UINT32_MAX /* dev / tx of a record freed already */

/* One event (40 bytes). Times are ns from t0. */
struct ge_rto_ev {
  int64_t t_ns;   /* the transmission, the answer, the give-up */
  int64_t a_ns;   /* send: the timer armed; sample, dup: the first send */
  int64_t rto_ns; /* the peer's RTO estimate then (ge_rto_estimate) */
  uint32_t row, dev, peer, tx; /* tx: the transmission, or retransmissions */
  uint8_t event, kind, used;   /* kind: enum ge_cc_kind (sample rows) */
};

#define GE_RTO_RING (1u << 14)  /* events */
#define GE_RTO_BUF (256u << 10) /* formatted bytes */
#define GE_RTO_ROW_MAX ((size_t)256)

struct ge_rto {
  struct ge_rto_ev *ev; /* NULL: no --rto-out */
  size_t head, n;       /* ring of GE_RTO_RING */
  int fd;
  char *buf;
  size_t start, len;    /* buf[start, len): formatted, not written yet */
  uint32_t peer_cached; /* the peer whose text is in peer_text */
  char peer_text[64];
  uint64_t rows, forced, writes;
  int err;       /* errno of a failed write */
  bool overflow; /* an event found the ring full (a bug: the run fails) */
};

/* The log on fd: the ring, the buffer, the header line. -1: OOM. */
int ge_rto_open(struct ge_rto *r, int fd);
static inline bool ge_rto_on(const struct ge_rto *r) { return r->ev != NULL; }
static inline size_t ge_rto_room(const struct ge_rto *r) {
  return GE_RTO_RING - r->n;
}
/* The peer's RTO estimate at now_ns as the strategy would use it: aged on
 * a copy (the state is not changed), without the blind factor. */
double ge_rto_estimate(const struct ge_cc *c, int64_t now_ns);
/* Appends one event (no syscall); a full ring sets `overflow`. */
void ge_rto_push(struct ge_rto *r, const struct ge_rto_ev *ev);
/* Formats up to max events into the buffer (while it has room). */
size_t ge_rto_format(struct ge_rto *r, const struct ge_plan *p, size_t max);
/* Bytes formatted and not yet written. */
static inline size_t ge_rto_pending(const struct ge_rto *r) {
  return r->len - r->start;
}
/* One write of up to max bytes: 0, or -1 (err). */
int ge_rto_write(struct ge_rto *r, size_t max);
/* In front of the sends: formats and writes until at least `need` events
 * fit (`forced` counts it); at the end, need = GE_RTO_RING: everything.
 * 0, or -1 (err). */
int ge_rto_make_room(struct ge_rto *r, const struct ge_plan *p, size_t need);
void ge_rto_free(struct ge_rto *r);

#endif
