/* A FIFO of fixed-size elements in a power-of-two ring that doubles when
 * full: the per-peer queues of window.c (trace indices by rank) and
 * reuse.c (varint send instants). Only the growth lives here; the push,
 * pop and indexing are inline in ring.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"

int ge_ring_grow(struct ge_ring *r, size_t size, size_t first) {
  size_t ncap = r->cap ? r->cap * 2 : first;
  if (ncap < r->cap || ncap > SIZE_MAX / size)
    return -1;
  unsigned char *nb = malloc(ncap * size);
  if (!nb)
    return -1;
  /* Unwrapped: the elements from head to the end of the buffer, then
   * those that wrapped to its start. */
  if (r->len) {
    size_t tail = r->cap - r->head < r->len ? r->cap - r->head : r->len;
    memcpy(nb, r->buf + r->head * size, tail * size);
    memcpy(nb + tail * size, r->buf, (r->len - tail) * size);
  }
  free(r->buf);
  r->buf = nb;
  r->cap = ncap;
  r->head = 0;
  return 0;
}

void ge_ring_free(struct ge_ring *r) {
  free(r->buf);
  memset(r, 0, sizeof *r);
}
