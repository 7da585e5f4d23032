/* The requests in memory: the per-request record (its slot), chunks of
 * records in a ring, and per peer its in-memory requests by rank. */
#ifndef GE_WINDOW_H
#define GE_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/* Where a request stands. */
enum ge_state {
  GE_PENDING = 0, /* not sent yet */
  GE_HELD,        /* due, held back by NSTART or PROBING_RATE (held.c) */
  GE_WAIT,        /* sent, waiting for a response (or an empty ACK) */
  GE_SEPARATE,    /* empty ACK seen, waiting for the separate response */
  GE_OK,
  GE_ERROR,
  GE_TIMEOUT,
};

#define GE_NOT_SENT (-1)

/* One request from the moment it is parsed (ahead of its send) until its
 * CSV row is written. */
struct ge_rec {
  int64_t sent_ns, recv_ns; /* relative to t0; recv < 0: none; sent
                               GE_NOT_SENT: given up while held */
  uint64_t ts_us, uri_off;
  uint32_t dev, tmpl, service_us; /* service_us UINT32_MAX: none; an
                                     OBS or UNOBS row's observation until
                                     it is answered */
  uint16_t uri_len, mid, sock;    /* sock: the HTTP connection (http.c) */
  uint16_t http_status;           /* 0: none (a CoAP response has code) */
  uint8_t state, code, retrans, gen;
};
/* Requests [base, end) of the trace, in chunks of GE_CHUNK held in a
 * ring; the oldest chunk is freed once all its rows are written. */
#define GE_CHUNK_BITS 12
#define GE_CHUNK (1u << GE_CHUNK_BITS)
struct ge_window {
  struct ge_rec **ring; /* chunk c at ring[c & (cap - 1)] */
  size_t cap;
  uint64_t base, end;
  struct ge_rec *spare; /* one freed chunk kept for reuse */
  uint64_t peak;        /* most requests in memory at once */
};
static inline struct ge_rec *ge_win_at(const struct ge_window *w, uint64_t i) {
  return &w->ring[(i >> GE_CHUNK_BITS) & (w->cap - 1)][i & (GE_CHUNK - 1)];
}
struct ge_rec *ge_win_push(struct ge_window *w); /* NULL: out of memory */
void ge_win_drop_chunk(struct ge_window *w);     /* base += GE_CHUNK */
void ge_win_free(struct ge_window *w);

/* Per peer: the trace indices of its requests in memory, by rank, so that
 * an empty ACK or RST (MID, no token) finds its request. */
struct ge_rankq {
  struct ge_ring r; /* uint32_t trace indices */
  uint32_t lo;      /* rank of the front */
};
int ge_rankq_push(struct ge_rankq *q, uint32_t idx); /* the next rank */
void ge_rankq_pop(struct ge_rankq *q);
int64_t ge_rankq_find(const struct ge_rankq *q, uint32_t rank);
void ge_rankq_free(struct ge_rankq *q);

#endif
