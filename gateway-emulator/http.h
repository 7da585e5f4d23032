/* The HTTP/1.1 north side (--north http): a bounded pool of keep-alive
 * TCP connections to the gateway, one request outstanding on each (no
 * pipelining). A request whose time has come but finds no free connection
 * waits in a FIFO; it is stamped sent when its bytes are written, so the
 * wait counts in send lag and in the intended-send latency (as wrk2). */
#ifndef GE_HTTP_H
#define GE_HTTP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "http_parse.h"
#include "north.h"
#include "ring.h"

/* epoll data of a connection: this bit, its generation (bits 12..30: an
 * event of a connection since replaced is stale) and its index. */
#define GE_HTTP_TAG 0x80000000u
#define GE_HTTP_CONNS_MAX 4096 /* indices fit in 12 bits */
/* A connection that failed before serving a response is retried after
 * this; one that served is reconnected at once. */
#define GE_HTTP_RETRY_NS 50000000LL
/* How long ge_http_open waits for the first connects (before t0). */
#define GE_HTTP_SETTLE_NS 200000000LL

/* The summary's "http" object, in order. */
#define GE_HTTP_COUNTERS(X)                                                    \
  X(requests_sent)                                                             \
  X(status_2xx)                                                                \
  X(status_3xx)                                                                \
  X(status_4xx)                                                                \
  X(status_5xx)                                                                \
  X(status_502)                                                                \
  X(status_504)                                                                \
  X(connects)                                                                  \
  X(connect_errors)                                                            \
  X(closed_by_peer)                                                            \
  X(closed_malformed)                                                          \
  X(closed_timeout)                                                            \
  X(closed_unsolicited)                                                        \
  X(send_errors)                                                               \
  X(pool_waits)                                                                \
  X(pool_wait_max_us)                                                          \
  X(queue_timeouts)
struct ge_http_counters {
#define GE_HTTP_FIELD(name) uint64_t name;
  GE_HTTP_COUNTERS(GE_HTTP_FIELD)
#undef GE_HTTP_FIELD
};

enum { GE_HC_DOWN = 0, GE_HC_CONNECTING, GE_HC_IDLE, GE_HC_BUSY };
struct ge_http_conn {
  int fd;
  uint8_t st;
  bool served;  /* a response completed since the connect */
  uint32_t idx; /* the request in flight (GE_HC_BUSY) */
  uint32_t gen; /* connections made in this slot (epoll data) */
  int64_t retry_at;
  char *pend; /* request bytes a short write left (malloc'd) */
  uint32_t pend_off, pend_len;
  struct ge_hp hp;
};
struct ge_http {
  struct ge_http_conn *conns;
  unsigned n, nidle, ndown;
  unsigned *idle;      /* stack of idle connections */
  struct ge_ring fifo; /* uint32_t: requests due, waiting for a connection */
  int64_t retry_min;   /* earliest retry_at of a down connection */
  char host[GE_ADDR_TEXT_MAX];
  char *buf, *rbuf; /* request formatting, reading (GE_HTTP_BUF each) */
  struct ge_http_counters c;
};
#define GE_HTTP_BUF 65536

struct ge_loop; /* state.h */

/* The pool (after the loop's epoll set exists): connects started, waited
 * for up to GE_HTTP_SETTLE_NS. 0, or -1 (e: out of memory). */
int ge_http_open(struct ge_loop *L, struct ge_err *e);
void ge_http_close(struct ge_loop *L);
/* Request idx is due now: written on a free connection, or queued.
 * 0, or -1 out of memory. */
int ge_http_submit(struct ge_loop *L, uint32_t idx, int64_t now);
/* epoll events (data: GE_HTTP_TAG, generation, index): responses
 * completed, or -1 (OOM). */
int ge_http_event(struct ge_loop *L, uint32_t data, uint32_t events);
/* The timer of request idx (written, no response): it times out and its
 * connection is closed and reconnected. 0, or -1 (OOM). */
int ge_http_timeout(struct ge_loop *L, uint32_t idx, int64_t now);
/* Queued requests waiting past --timeout-ms from their intended time end
 * as timeouts; down connections due a retry reconnect. 0, or -1 (OOM). */
int ge_http_tick(struct ge_loop *L, int64_t now);
/* When ge_http_tick next has work (monotonic ns), INT64_MAX: none. */
int64_t ge_http_wake(const struct ge_loop *L);
/* The summary's "http" member line (null without --north http). */
void ge_http_json(FILE *f, const struct ge_loop *L);

#endif
