/* Early MID reuse, checked in bounded memory. */
#ifndef GE_REUSE_H
#define GE_REUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* Per peer whose requests outnumber one MID cycle (K * 65536): the send
 * instants of its last sends within EXCHANGE_LIFETIME, as varint deltas,
 * so that a send can tell whether the request one cycle before it went
 * out less than 247 s earlier. */
struct ge_sentq {
  struct ge_ring r; /* bytes */
  uint32_t count, front_rank;
  int64_t front_ns, back_ns;
};
/* Records the send of `rank` at t (ns); *early: rank - cycle went out
 * within EXCHANGE_LIFETIME before t. -1: out of memory. */
int ge_sentq_send(struct ge_sentq *q, uint32_t rank, uint64_t cycle, int64_t t,
                  bool *early);
size_t ge_sentq_bytes(const struct ge_sentq *q);
void ge_sentq_free(struct ge_sentq *q);

#endif
