/* NSTART and PROBING_RATE (RFC 7252 section 4.7; README.md, "NSTART and
 * PROBING_RATE"): per peer, a FIFO of due requests held back. A CON
 * request waits while --nstart exchanges of its peer are in flight; a NON
 * request, with --probing-rate, while its peer is silent and the pace
 * (bytes sent / rate) forbids a send. A held request is stamped sent when
 * it goes out, so the wait counts in its send lag; one held --timeout-ms
 * past its intended time ends as a timeout, never sent. No syscalls: the
 * loop sends what these functions release. */
#ifndef GE_HELD_H
#define GE_HELD_H

#include <stdint.h>

#include "state.h"

/* Request idx is due at `now`: 0, it may go now; 1, it is held (a
 * give-up timer is set); -1, out of memory. */
int ge_held_admit(struct ge_loop *L, uint32_t idx, int64_t now);
/* The head of peer's queue when it may go at `now` (popped; its wait
 * counted), else -1. */
int64_t ge_held_pop(struct ge_loop *L, uint32_t peer, int64_t now);
/* Request idx goes out at `now`: a silent peer's pace moves on by its
 * datagram's bytes. */
void ge_held_sent(struct ge_loop *L, uint32_t idx, int64_t now);
/* Held requests of peer past --timeout-ms from their intended time: they
 * end as timeouts, unsent (their ranks are taken). 0, or -1 OOM. */
int ge_held_expire(struct ge_loop *L, uint32_t peer, int64_t now);
/* A wake timer for the instant the pace lets peer send again, when its
 * queue waits for it and none is set. 0, or -1 OOM. */
int ge_held_wake(struct ge_loop *L, uint32_t peer, int64_t now);
/* Wake timer t fired: the peer has no pending wake if it was this one. */
void ge_held_woken(struct ge_loop *L, const struct ge_timer *t);
/* The next peer marked ready (an exchange ended, or it was heard from),
 * or -1. */
int64_t ge_held_ready(struct ge_loop *L);

#endif
