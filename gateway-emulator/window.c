/* The requests in memory: chunks of GE_CHUNK records in a ring, pushed as
 * the trace is parsed ahead of the sends and dropped oldest first once
 * their rows are written; and per peer, its requests in memory by rank. */
#include <stdlib.h>
#include <string.h>

#include "window.h"

static int ring_grow(struct ge_window *w) {
  size_t ncap = w->cap ? w->cap * 2 : 16;
  struct ge_rec **nr = calloc(ncap, sizeof(struct ge_rec *));
  if (!nr)
    return -1;
  if (w->end > w->base)
    for (uint64_t c = w->base >> GE_CHUNK_BITS;
         c <= (w->end - 1) >> GE_CHUNK_BITS; c++)
      nr[c & (ncap - 1)] = w->ring[c & (w->cap - 1)];
  free(w->ring);
  w->ring = nr;
  w->cap = ncap;
  return 0;
}

struct ge_rec *ge_win_push(struct ge_window *w) {
  uint64_t i = w->end;
  if ((i & (GE_CHUNK - 1)) == 0) {
    uint64_t chunks = (i >> GE_CHUNK_BITS) - (w->base >> GE_CHUNK_BITS) + 1;
    if (chunks > w->cap && ring_grow(w))
      return NULL;
    struct ge_rec *c = w->spare;
    w->spare = NULL;
    if (!c && !(c = malloc(GE_CHUNK * sizeof *c)))
      return NULL;
    w->ring[(i >> GE_CHUNK_BITS) & (w->cap - 1)] = c;
  }
  w->end++;
  if (w->end - w->base > w->peak)
    w->peak = w->end - w->base;
  struct ge_rec *r = ge_win_at(w, i);
  memset(r, 0, sizeof *r);
  r->recv_ns = -1;
  r->service_us = UINT32_MAX;
  return r;
}

void ge_win_drop_chunk(struct ge_window *w) {
  struct ge_rec **slot = &w->ring[(w->base >> GE_CHUNK_BITS) & (w->cap - 1)];
  if (w->spare)
    free(*slot);
  else
    w->spare = *slot;
  *slot = NULL;
  w->base += GE_CHUNK;
}

void ge_win_free(struct ge_window *w) {
  if (w->ring)
    for (size_t i = 0; i < w->cap; i++)
      free(w->ring[i]);
  free(w->ring);
  free(w->spare);
  memset(w, 0, sizeof *w);
}

int ge_rankq_push(struct ge_rankq *q, uint32_t idx) {
  uint32_t *slot = ge_ring_push(&q->r, sizeof idx, 16);
  if (!slot)
    return -1;
  *slot = idx;
  return 0;
}

void ge_rankq_pop(struct ge_rankq *q) {
  ge_ring_pop(&q->r);
  q->lo++;
}

int64_t ge_rankq_find(const struct ge_rankq *q, uint32_t rank) {
  if (rank < q->lo || rank - q->lo >= q->r.len)
    return -1;
  return *(const uint32_t *)ge_ring_at(&q->r, sizeof(uint32_t), rank - q->lo);
}

void ge_rankq_free(struct ge_rankq *q) {
  ge_ring_free(&q->r);
  q->lo = 0;
}
