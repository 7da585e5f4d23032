/* A growable FIFO ring of fixed-size elements. */
#ifndef GE_RING_H
#define GE_RING_H

#include <stddef.h>

/* Elements of `size` bytes (the same size in every call on one ring) in a
 * power-of-two ring; a push into a full ring doubles it (`first` elements
 * the first time) and unwraps it to start at 0. */
struct ge_ring {
  unsigned char *buf;
  size_t cap, head, len; /* elements */
};
int ge_ring_grow(struct ge_ring *r, size_t size, size_t first); /* -1: OOM */
void ge_ring_free(struct ge_ring *r);
/* The i-th element from the front (i < len). */
static inline void *ge_ring_at(const struct ge_ring *r, size_t size, size_t i) {
  return r->buf + ((r->head + i) & (r->cap - 1)) * size;
}
/* A slot for a new element at the back; NULL: out of memory. */
static inline void *ge_ring_push(struct ge_ring *r, size_t size, size_t first) {
  if (r->len == r->cap && ge_ring_grow(r, size, first))
    return NULL;
  return ge_ring_at(r, size, r->len++);
}
/* Drops the front element (len > 0). */
static inline void ge_ring_pop(struct ge_ring *r) {
  r->head = (r->head + 1) & (r->cap - 1);
  r->len--;
}

#endif
