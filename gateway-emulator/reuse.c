/* Early MID reuse without a per-request history: a peer's n-th request
 * reuses the (socket, MID) of its (n - K*65536)-th, which matters only if
 * that one went out less than EXCHANGE_LIFETIME before. Per peer, a FIFO
 * of the send instants of its sends within the last 247 s (varint deltas
 * in ns, two or three bytes each) answers that exactly; older sends
 * cannot be early. */
#include <stdlib.h>
#include <string.h>

#include "reuse.h"
#include "wire.h"

static uint8_t front_byte(const struct ge_sentq *q) {
  return *(const uint8_t *)ge_ring_at(&q->r, 1, 0);
}

static int put_byte(struct ge_sentq *q, uint8_t b) {
  uint8_t *slot = ge_ring_push(&q->r, 1, 256);
  if (!slot)
    return -1;
  *slot = b;
  return 0;
}

static void pop_front(struct ge_sentq *q) {
  if (--q->count == 0) {
    q->r.head = q->r.len = 0;
    return;
  }
  uint64_t d = 0;
  unsigned shift = 0;
  uint8_t b;
  do {
    b = front_byte(q);
    ge_ring_pop(&q->r);
    d |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
  } while (b & 0x80);
  q->front_ns += (int64_t)d;
  q->front_rank++;
}

int ge_sentq_send(struct ge_sentq *q, uint32_t rank, uint64_t cycle, int64_t t,
                  bool *early) {
  *early = false;
  while (q->count && t - q->front_ns > GE_EXCHANGE_LIFETIME_NS)
    pop_front(q);
  if (rank >= cycle) {
    uint64_t want = rank - cycle;
    while (q->count && q->front_rank < want)
      pop_front(q);
    *early = q->count && q->front_rank == want;
  }
  if (q->count == 0) {
    q->front_rank = rank;
    q->front_ns = q->back_ns = t;
    q->count = 1;
    return 0;
  }
  uint64_t d = (uint64_t)(t - q->back_ns);
  q->back_ns = t;
  q->count++;
  do {
    if (put_byte(q, (uint8_t)((d & 0x7f) | (d > 0x7f ? 0x80 : 0))))
      return -1;
    d >>= 7;
  } while (d);
  return 0;
}

size_t ge_sentq_bytes(const struct ge_sentq *q) { return q->r.cap; }

void ge_sentq_free(struct ge_sentq *q) {
  ge_ring_free(&q->r);
  memset(q, 0, sizeof *q);
}
