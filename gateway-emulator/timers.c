/* Retransmission, separate-response and NON timeouts share one binary
 * min-heap. Entries are never removed early: a popped entry whose slot
 * generation moved on is simply dropped (lazy deletion). */
#include <stdlib.h>

#include "timers.h"

int ge_heap_push(struct ge_heap *h, struct ge_timer t) {
  if (h->n == h->cap) {
    size_t ncap = h->cap ? h->cap * 2 : 1024;
    struct ge_timer *nv = realloc(h->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    h->v = nv;
    h->cap = ncap;
  }
  size_t i = h->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (h->v[parent].deadline <= t.deadline)
      break;
    h->v[i] = h->v[parent];
    i = parent;
  }
  h->v[i] = t;
  return 0;
}

void ge_heap_pop(struct ge_heap *h, struct ge_timer *out) {
  *out = h->v[0];
  struct ge_timer last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n)
      break;
    if (c + 1 < h->n && h->v[c + 1].deadline < h->v[c].deadline)
      c++;
    if (last.deadline <= h->v[c].deadline)
      break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n)
    h->v[i] = last;
}

void ge_heap_free(struct ge_heap *h) {
  free(h->v);
  h->v = NULL;
  h->n = h->cap = 0;
}
