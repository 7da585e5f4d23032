/* Retransmission, separate-response and NON timeouts: one binary min-heap
 * with lazy deletion (a popped entry whose record moved on is dropped). */
#ifndef GE_TIMERS_H
#define GE_TIMERS_H

#include <stddef.h>
#include <stdint.h>

struct ge_timer {
  int64_t deadline, interval; /* ns, monotonic */
  uint32_t idx;
  uint8_t gen;
  uint8_t vbf2; /* CON: the exchange's backoff factor in halves (cc.h) */
  uint8_t wake; /* 1: PROBING_RATE lets peer `idx` send again (held.c) */
};
struct ge_heap {
  struct ge_timer *v;
  size_t n, cap;
};
int ge_heap_push(struct ge_heap *h, struct ge_timer t); /* -1: OOM */
void ge_heap_pop(struct ge_heap *h, struct ge_timer *out);
void ge_heap_free(struct ge_heap *h);

#endif
