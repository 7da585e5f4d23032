/* The HTTP/1.1 connection pool. Connections are non-blocking TCP with
 * TCP_NODELAY, in the loop's epoll set (data: GE_HTTP_TAG | index). A
 * connection is down, connecting, idle or busy with one request. A
 * malformed response, a close or reset mid-response, unsolicited bytes
 * or a timeout end the connection (counted) and the pool reconnects it.
 * Responses are stamped when read (TCP has no per-message kernel stamp). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "http.h"
#include "http_req.h"
#include "state.h"
#include "wire.h"

/* The plan's template key: method code and 4 owner bytes, then
 * "path?query\npayload" (plan.c). */
#define KEY_HEAD 5
#define EV_CONN (EPOLLIN | EPOLLRDHUP)
enum { DONE_RESP = 1, ENDED = 2 }; /* what bytes read did (take) */

static int ep_set(struct ge_loop *L, unsigned ci, int op, uint32_t events) {
  uint32_t gen = (L->http.conns[ci].gen & 0x7ffff) << 12;
  struct epoll_event ev = {.events = events,
                           .data.u32 = GE_HTTP_TAG | gen | ci};
  return epoll_ctl(L->epfd, op, L->http.conns[ci].fd, &ev);
}

static void mark_down(struct ge_http *H, unsigned ci, int64_t at) {
  struct ge_http_conn *c = &H->conns[ci];
  c->st = GE_HC_DOWN;
  c->retry_at = at;
  if (!H->ndown++ || at < H->retry_min)
    H->retry_min = at;
}

static void make_idle(struct ge_http *H, unsigned ci) {
  H->conns[ci].st = GE_HC_IDLE;
  H->idle[H->nidle++] = ci;
}

/* A new connection for slot ci (down): connecting, idle, or down again
 * with a retry time when the socket or the connect failed at once. */
static void conn_start(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  int on = 1, off = 0;
  c->fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  c->gen++;
  c->served = false;
  ge_hp_reset(&c->hp);
  if (c->fd >= 0 &&
      !setsockopt(c->fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) &&
      !setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on)) {
    int r = connect(c->fd, (const struct sockaddr *)&L->plan->gateway,
                    sizeof L->plan->gateway);
    if (r == 0 && !ep_set(L, ci, EPOLL_CTL_ADD, EV_CONN)) {
      H->c.connects++;
      make_idle(H, ci);
      return;
    }
    if (r < 0 && errno == EINPROGRESS &&
        !ep_set(L, ci, EPOLL_CTL_ADD, EV_CONN | EPOLLOUT)) {
      c->st = GE_HC_CONNECTING;
      return;
    }
  }
  H->c.connect_errors++;
  if (c->fd >= 0)
    close(c->fd);
  c->fd = -1;
  mark_down(H, ci, now + GE_HTTP_RETRY_NS);
}

/* Ends connection ci (its request, if any, already finished) and
 * reconnects it: at once when it served a response, else after
 * GE_HTTP_RETRY_NS. */
static void conn_end(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  if (c->st == GE_HC_IDLE)
    for (unsigned i = 0; i < H->nidle; i++)
      if (H->idle[i] == ci) {
        H->idle[i] = H->idle[--H->nidle];
        break;
      }
  if (c->fd >= 0)
    close(c->fd); /* leaves the epoll set with it */
  c->fd = -1;
  free(c->pend);
  c->pend = NULL;
  c->pend_len = c->pend_off = 0;
  if (c->served)
    conn_start(L, ci, now);
  else
    mark_down(H, ci, now + GE_HTTP_RETRY_NS);
}

/* The request on busy connection ci ends without a response. */
static void fail_request(struct ge_loop *L, unsigned ci, uint8_t state,
                         int64_t now) {
  uint32_t idx = L->http.conns[ci].idx;
  ge_state_finish(L, idx, state);
  conn_end(L, ci, now);
}

/* Bytes of a short write kept for EPOLLOUT: 0, or -1 (OOM). */
static int keep_pending(struct ge_loop *L, unsigned ci, const char *b,
                        size_t n) {
  struct ge_http_conn *c = &L->http.conns[ci];
  c->pend = malloc(n);
  if (!c->pend)
    return -1;
  memcpy(c->pend, b, n);
  c->pend_off = 0;
  c->pend_len = (uint32_t)n;
  return ep_set(L, ci, EPOLL_CTL_MOD, EV_CONN | EPOLLOUT) ? -2 : 0;
}

/* Writes b[0, n) on ci; the rest kept when the socket takes less.
 * 0, -1 out of memory, -2 the connection failed. */
static int write_bytes(struct ge_loop *L, unsigned ci, const char *b,
                       size_t n) {
  ssize_t r;
  do
    r = send(L->http.conns[ci].fd, b, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  while (r < 0 && errno == EINTR);
  if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    return -2;
  if (r < 0)
    r = 0;
  if ((size_t)r == n)
    return 0;
  return keep_pending(L, ci, b + r, n - (size_t)r);
}

/* The request's bytes into H->buf: their length (0: too long). */
static size_t format(struct ge_loop *L, const struct ge_rec *s) {
  const struct ge_plan *p = L->plan;
  const struct ge_template *t = &p->tmpls[s->tmpl];
  const char *key = (const char *)p->tbytes + t->key_off;
  return ge_http_req_format(L->http.buf, GE_HTTP_BUF, L->cfg->http_path,
                            L->http.host, ge_wire_method_name(t->code),
                            &p->devs[s->dev].addr, key + KEY_HEAD,
                            t->key_len - KEY_HEAD);
}

/* Request idx goes out on idle connection ci now: stamped, written, its
 * timer set. 0, or -1 out of memory. */
static int write_request(struct ge_loop *L, unsigned ci, uint32_t idx,
                         int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  struct ge_rec *s = ge_win_at(&L->win, idx);
  if (ge_state_sent(L, idx, now))
    return -1;
  s->state = GE_WAIT;
  s->sock = (uint16_t)ci;
  c->st = GE_HC_BUSY;
  c->idx = idx;
  ge_hp_reset(&c->hp);
  size_t n = format(L, s);
  int w = n ? write_bytes(L, ci, H->buf, n) : -2;
  if (w == -1)
    return -1;
  if (w == -2) {
    H->c.send_errors++;
    L->c.send_errors++;
    fail_request(L, ci, GE_ERROR, now);
    return 0;
  }
  H->c.requests_sent++;
  struct ge_timer t = {
      .idx = idx, .gen = s->gen, .deadline = now + L->cfg->timeout_ns};
  return ge_heap_push(&L->heap, t);
}

/* Queued requests onto idle connections, oldest first. */
static int dispatch(struct ge_loop *L, int64_t now) {
  struct ge_http *H = &L->http;
  while (H->fifo.len && H->nidle) {
    uint32_t idx = *(uint32_t *)ge_ring_at(&H->fifo, sizeof idx, 0);
    ge_ring_pop(&H->fifo);
    unsigned ci = H->idle[--H->nidle];
    int64_t due = L->t0 + (int64_t)ge_win_at(&L->win, idx)->ts_us * 1000;
    uint64_t waited = now > due ? (uint64_t)ge_us(now - due) : 0;
    if (waited > H->c.pool_wait_max_us)
      H->c.pool_wait_max_us = waited;
    if (write_request(L, ci, idx, now))
      return -1;
  }
  return 0;
}

int ge_http_submit(struct ge_loop *L, uint32_t idx, int64_t now) {
  struct ge_http *H = &L->http;
  L->outstanding++;
  if (!H->fifo.len && H->nidle)
    return write_request(L, H->idle[--H->nidle], idx, now);
  uint32_t *slot = ge_ring_push(&H->fifo, sizeof idx, 1024);
  if (!slot)
    return -1;
  *slot = idx;
  H->c.pool_waits++;
  return 0;
}

/* The response on ci is complete: the request ends by its status. */
static void complete(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  struct ge_rec *s = ge_win_at(&L->win, c->idx);
  unsigned st = c->hp.status;
  s->recv_ns = now - L->t0;
  s->http_status = (uint16_t)st;
  uint64_t *by_class[] = {&H->c.status_2xx, &H->c.status_3xx, &H->c.status_4xx,
                          &H->c.status_5xx};
  (*by_class[st / 100 - 2])++;
  H->c.status_502 += st == 502;
  H->c.status_504 += st == 504;
  c->served = true;
  ge_state_finish(L, c->idx, st / 100 == 2 ? GE_OK : GE_ERROR);
}

/* Bytes read on ci: -1 OOM, else DONE_RESP (a response completed) and
 * ENDED (the connection ended) or-ed, 0: more to come. */
static int take(struct ge_loop *L, unsigned ci, const uint8_t *b, size_t n,
                int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  if (c->st != GE_HC_BUSY) {
    H->c.closed_unsolicited++;
    conn_end(L, ci, now);
    return ENDED;
  }
  size_t used;
  int rc = ge_hp_feed(&c->hp, b, n, &used);
  if (rc == GE_HP_MORE)
    return 0;
  if (rc == GE_HP_BAD) {
    H->c.closed_malformed++;
    fail_request(L, ci, GE_ERROR, now);
    return ENDED;
  }
  complete(L, ci, now);
  if (used < n || c->hp.close || c->pend) {
    /* bytes beyond the one response asked for (or an answer before the
     * whole request was written), or Connection: close */
    H->c.closed_unsolicited += used < n || c->pend;
    H->c.closed_by_peer += used == n && !c->pend;
    conn_end(L, ci, now);
    return DONE_RESP | ENDED;
  }
  make_idle(H, ci);
  return dispatch(L, now) ? -1 : DONE_RESP;
}

/* The peer closed or reset ci. */
static int peer_closed(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http *H = &L->http;
  struct ge_http_conn *c = &H->conns[ci];
  H->c.closed_by_peer++;
  if (c->st == GE_HC_BUSY && ge_hp_eof(&c->hp) == GE_HP_DONE) {
    complete(L, ci, now);
    conn_end(L, ci, now);
    return 1;
  }
  if (c->st == GE_HC_BUSY)
    fail_request(L, ci, GE_ERROR, now);
  else
    conn_end(L, ci, now);
  return 0;
}

/* Reads ci until it would block: responses completed, or -1 (OOM). */
static int conn_read(struct ge_loop *L, unsigned ci) {
  struct ge_http *H = &L->http;
  int got = 0;
  for (;;) {
    ssize_t r = recv(H->conns[ci].fd, H->rbuf, GE_HTTP_BUF, MSG_DONTWAIT);
    int64_t now = ge_now_ns();
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return got;
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return got + peer_closed(L, ci, now);
    int t = take(L, ci, (const uint8_t *)H->rbuf, (size_t)r, now);
    if (t < 0)
      return -1;
    got += (t & DONE_RESP) != 0;
    if (t & ENDED)
      return got;
  }
}

/* Connect finished on ci (EPOLLOUT or an error). */
static int connected(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http *H = &L->http;
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(H->conns[ci].fd, SOL_SOCKET, SO_ERROR, &err, &len) || err ||
      ep_set(L, ci, EPOLL_CTL_MOD, EV_CONN)) {
    H->c.connect_errors++;
    conn_end(L, ci, now);
    return 0;
  }
  H->c.connects++;
  make_idle(H, ci);
  return dispatch(L, now);
}

/* The rest of a short write, on EPOLLOUT. */
static int flush_pending(struct ge_loop *L, unsigned ci, int64_t now) {
  struct ge_http_conn *c = &L->http.conns[ci];
  ssize_t r = send(c->fd, c->pend + c->pend_off, c->pend_len - c->pend_off,
                   MSG_NOSIGNAL | MSG_DONTWAIT);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return 0;
  if (r < 0) {
    L->http.c.send_errors++;
    fail_request(L, ci, GE_ERROR, now);
    return 0;
  }
  c->pend_off += (uint32_t)r;
  if (c->pend_off < c->pend_len)
    return 0;
  free(c->pend);
  c->pend = NULL;
  c->pend_off = c->pend_len = 0;
  if (ep_set(L, ci, EPOLL_CTL_MOD, EV_CONN)) {
    L->http.c.send_errors++;
    fail_request(L, ci, GE_ERROR, now);
  }
  return 0;
}

int ge_http_event(struct ge_loop *L, uint32_t data, uint32_t events) {
  unsigned ci = data & (GE_HTTP_CONNS_MAX - 1);
  struct ge_http_conn *c = &L->http.conns[ci];
  int64_t now = ge_now_ns();
  if (ci >= L->http.n || ((data >> 12) & 0x7ffff) != (c->gen & 0x7ffff))
    return 0; /* of a connection since replaced */
  if (c->st == GE_HC_CONNECTING)
    return connected(L, ci, now) ? -1 : 0;
  if (c->st == GE_HC_BUSY && c->pend && (events & EPOLLOUT))
    flush_pending(L, ci, now);
  if (c->fd >= 0 && (c->st == GE_HC_IDLE || c->st == GE_HC_BUSY) &&
      (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
    return conn_read(L, ci);
  return 0;
}

int ge_http_timeout(struct ge_loop *L, uint32_t idx, int64_t now) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  unsigned ci = s->sock;
  struct ge_http_conn *c = &L->http.conns[ci];
  if (ci >= L->http.n || c->st != GE_HC_BUSY || c->idx != idx) {
    ge_state_finish(L, idx, GE_TIMEOUT); /* cannot happen: still ends */
    return 0;
  }
  L->http.c.closed_timeout++;
  c->served = true; /* a stalled gateway: reconnect at once */
  fail_request(L, ci, GE_TIMEOUT, now);
  return dispatch(L, now);
}

/* Queued requests past their time: timeouts, never written. */
static void queue_timeouts(struct ge_loop *L, int64_t now) {
  struct ge_http *H = &L->http;
  while (H->fifo.len) {
    uint32_t idx = *(uint32_t *)ge_ring_at(&H->fifo, sizeof idx, 0);
    struct ge_rec *s = ge_win_at(&L->win, idx);
    if (now - (L->t0 + (int64_t)s->ts_us * 1000) < L->cfg->timeout_ns)
      return;
    ge_ring_pop(&H->fifo);
    if (ge_state_sent(L, idx, now))
      L->oom = true;
    H->c.queue_timeouts++;
    ge_state_finish(L, idx, GE_TIMEOUT);
  }
}

int ge_http_tick(struct ge_loop *L, int64_t now) {
  struct ge_http *H = &L->http;
  queue_timeouts(L, now);
  if (!H->ndown || now < H->retry_min)
    return 0;
  unsigned down = H->ndown;
  H->ndown = 0;
  H->retry_min = INT64_MAX;
  for (unsigned ci = 0; ci < H->n; ci++) {
    struct ge_http_conn *c = &H->conns[ci];
    if (c->st != GE_HC_DOWN)
      continue;
    if (c->retry_at <= now)
      conn_start(L, ci, now);
    else
      mark_down(H, ci, c->retry_at);
    if (!--down)
      break;
  }
  return dispatch(L, now);
}

int64_t ge_http_wake(const struct ge_loop *L) {
  const struct ge_http *H = &L->http;
  int64_t w = H->ndown ? H->retry_min : INT64_MAX;
  if (H->fifo.len) {
    uint32_t idx = *(uint32_t *)ge_ring_at(&H->fifo, sizeof idx, 0);
    int64_t q = L->t0 + (int64_t)ge_win_at(&L->win, idx)->ts_us * 1000 +
                L->cfg->timeout_ns;
    if (q < w)
      w = q;
  }
  return w;
}

/* Waits (before t0) up to GE_HTTP_SETTLE_NS for the first connects. */
static void settle(struct ge_loop *L) {
  int64_t end = ge_now_ns() + GE_HTTP_SETTLE_NS;
  for (;;) {
    unsigned connecting = 0;
    for (unsigned ci = 0; ci < L->http.n; ci++)
      connecting += L->http.conns[ci].st == GE_HC_CONNECTING;
    int64_t left = end - ge_now_ns();
    if (!connecting || left <= 0)
      return;
    struct epoll_event ev[16];
    int nev = epoll_wait(L->epfd, ev, 16, (int)(left / 1000000) + 1);
    for (int k = 0; k < nev; k++)
      if (ev[k].data.u32 & GE_HTTP_TAG)
        ge_http_event(L, ev[k].data.u32, ev[k].events);
  }
}

int ge_http_open(struct ge_loop *L, struct ge_err *e) {
  struct ge_http *H = &L->http;
  H->n = L->cfg->http_conns;
  H->conns = calloc(H->n, sizeof *H->conns);
  H->idle = calloc(H->n, sizeof *H->idle);
  H->buf = malloc(GE_HTTP_BUF);
  H->rbuf = malloc(GE_HTTP_BUF);
  for (unsigned ci = 0; H->conns && ci < H->n; ci++)
    H->conns[ci].fd = -1;
  if (!H->conns || !H->idle || !H->buf || !H->rbuf) {
    ge_err_set(e, NULL, 0, "http", "out of memory");
    return -1;
  }
  ge_north_authority(&L->plan->gateway, H->host);
  int64_t now = ge_now_ns();
  for (unsigned ci = 0; ci < H->n; ci++)
    conn_start(L, ci, now);
  settle(L);
  return 0;
}

void ge_http_close(struct ge_loop *L) {
  struct ge_http *H = &L->http;
  for (unsigned ci = 0; H->conns && ci < H->n; ci++) {
    if (H->conns[ci].fd >= 0)
      close(H->conns[ci].fd);
    free(H->conns[ci].pend);
  }
  free(H->conns);
  free(H->idle);
  free(H->buf);
  free(H->rbuf);
  ge_ring_free(&H->fifo);
  H->conns = NULL;
  H->idle = NULL;
  H->buf = H->rbuf = NULL;
  H->n = 0;
}

void ge_http_json(FILE *f, const struct ge_loop *L) {
  if (!L->http.n) {
    fprintf(f, "  \"http\": null,\n");
    return;
  }
  const struct ge_http_counters *c = &L->http.c;
  fprintf(f, "  \"http\": {\"connections\": %u", L->http.n);
#define GE_HTTP_JSON(name)                                                     \
  fprintf(f, ", \"" #name "\": %llu", (unsigned long long)c->name);
  GE_HTTP_COUNTERS(GE_HTTP_JSON)
#undef GE_HTTP_JSON
  fprintf(f, "},\n");
}
