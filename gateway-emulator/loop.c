/* The single busy loop: send each request when its trace time is due,
 * otherwise read replies without blocking, then fire due timers, then use
 * what is left of the gap for the streaming work (parse ahead, format and
 * write finished rows). It never sleeps while a send is still to come,
 * unless --spin-us asks it to block until shortly before the next send.
 *
 * Replies carry the kernel's arrival stamp (SO_TIMESTAMPNS), so reading
 * them can wait for a gap in the schedule without moving their times:
 * sends come first, and replies are read when the next send is at least
 * GE_DRAIN_GAP_NS away, after GE_RECV_BATCH sends, or GE_DRAIN_MAX_NS
 * after the last read, and always before a timer acts on a request.
 *
 * Sends are stamped by the kernel too (SO_TIMESTAMPING software TX stamps,
 * OPT_ID keys): the stamps queue on each socket's error queue, which is
 * read before the socket's replies, and replace the user-space stamps
 * (txstamp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <linux/errqueue.h> /* after time.h: struct timespec */
#include <linux/net_tstamp.h>

#include <coap3/coap.h>

#include "clock.h"
#include "held.h"
#include "http.h"
#include "keep.h"
#include "loop.h"
#include "north.h"
#include "obsout.h"
#include "obstab.h"
#include "recv.h"
#include "rt.h"
#include "rtolog.h"
#include "wire.h"

/* Bound on consecutive sends before replies are drained once, so that a
 * GE that falls behind still timestamps replies. */
#define GE_SEND_BURST 64
/* Streaming work in the gaps: units of a few us each, started only when
 * the next send is at least this far away. */
#define GE_FEED_UNIT 8
#define GE_FORMAT_UNIT 16
#define GE_WRITE_UNIT (32u << 10)
#define GE_WRITE_SMALL (4u << 10)
#define GE_GAP_MIN_NS 5000
#define GE_WRITE_GAP_MIN_NS 20000
/* Rows sent but not yet formatted beyond which output is done in front of
 * the sends, GE_FORCE_UNIT rows at a time (memory.output_forced): a GE
 * whose gaps do not suffice for its output (at its ceiling, e.g. a regular
 * schedule past ~80k/s here) keeps bounded memory and pays in send lag,
 * which the report shows, instead of growing until the run ends. */
#define GE_BACKLOG_MAX (1u << 16)
#define GE_FORCE_UNIT 64
/* Reading replies: in a gap of at least this, and at least this often. */
#define GE_DRAIN_GAP_NS 3000
#define GE_DRAIN_MAX_NS 100000
/* Kernel send stamps: software TX stamps with an OPT_ID key and no copy of
 * the datagram; RX_FILTER keeps them off received datagrams (their
 * SO_TIMESTAMPNS stamp is enough), where the kernel knows the flag. */
#define GE_TX_FLAGS                                                            \
  (SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE |                  \
   SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY)
#define GE_TX_RX_FILTER (1 << 17) /* SOF_TIMESTAMPING_OPT_RX_FILTER */
/* An error-queue message: SCM_TIMESTAMPNS, SCM_TIMESTAMPING and the
 * IP(V6)_RECVERR extended error with the key. */
#define GE_TXQ_CTL 256

struct ge_txq {
  struct mmsghdr msgs[GE_RECV_BATCH];
  union {
    char buf[GE_TXQ_CTL];
    struct cmsghdr align;
  } ctl[GE_RECV_BATCH];
};

static uint64_t xorshift(uint64_t *s) {
  uint64_t x = *s;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

/* Kernel send stamps on socket si (fd): refused (an old kernel), its sends
 * keep their user-space stamps (tx_stamps_fallback). */
static void tx_enable(struct ge_loop *L, unsigned si, int fd) {
  int f = GE_TX_FLAGS | GE_TX_RX_FILTER;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof f)) {
    f = GE_TX_FLAGS; /* an older kernel: no RX_FILTER */
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof f))
      return;
  }
  L->tx.sk[si].on = true;
  L->tx.sk[si].key = 0;
}

int ge_loop_open(struct ge_loop *L, struct ge_err *e) {
  if (L->cfg->north == GE_NORTH_HTTP)
    L->nsock = 0; /* no datagrams: TCP to the gateway (http.c) */
  L->socks = malloc((L->nsock ? L->nsock : 1) * sizeof *L->socks);
  L->txq = calloc(1, sizeof *L->txq);
  if (!L->socks || !L->txq) {
    ge_err_set(e, NULL, 0, "sockets", "out of memory");
    return -1;
  }
  for (unsigned i = 0; i < GE_RECV_BATCH; i++)
    L->txq->msgs[i].msg_hdr =
        (struct msghdr){.msg_control = L->txq->ctl[i].buf,
                        .msg_controllen = sizeof L->txq->ctl[i].buf};
  for (unsigned i = 0; i < L->nsock; i++)
    L->socks[i] = -1;
  L->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (L->epfd < 0) {
    ge_err_set(e, NULL, 0, "epoll_create1", "%s", strerror(errno));
    return -1;
  }
  for (unsigned i = 0; i < L->nsock; i++) {
    int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      ge_err_set(e, NULL, 0, "socket", "%s", strerror(errno));
      return -1;
    }
    L->socks[i] = fd;
    int off = 0, big = 16 << 20;
    struct sockaddr_in6 any = {.sin6_family = AF_INET6};
    if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off)) {
      ge_err_set(e, NULL, 0, "IPV6_V6ONLY", "%s", strerror(errno));
      return -1;
    }
    /* Large buffers absorb reply bursts. Root may exceed rmem_max /
     * wmem_max (the *FORCE options); otherwise the kernel caps the plain
     * request silently, which is fine. */
    if ((setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) &&
         setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big)) ||
        (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) &&
         setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big))) {
      ge_err_set(e, NULL, 0, "SO_RCVBUF", "%s", strerror(errno));
      return -1;
    }
    int on = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on)) {
      ge_err_set(e, NULL, 0, "SO_TIMESTAMPNS", "%s", strerror(errno));
      return -1;
    }
    tx_enable(L, i, fd);
    if (bind(fd, (struct sockaddr *)&any, sizeof any)) {
      ge_err_set(e, NULL, 0, "bind", "%s", strerror(errno));
      return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = i};
    if (epoll_ctl(L->epfd, EPOLL_CTL_ADD, fd, &ev)) {
      ge_err_set(e, NULL, 0, "epoll_ctl", "%s", strerror(errno));
      return -1;
    }
  }
  return L->cfg->north == GE_NORTH_HTTP ? ge_http_open(L, e) : 0;
}

/* A send stamp from the error queue: its OPT_ID key and CLOCK_REALTIME
 * ns. False for anything else. */
static bool tx_stamp_of(struct msghdr *h, uint32_t *key, int64_t *real) {
  bool k = false, t = false;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
      struct scm_timestamping ts;
      memcpy(&ts, CMSG_DATA(c), sizeof ts);
      *real = (int64_t)ts.ts[0].tv_sec * 1000000000LL + ts.ts[0].tv_nsec;
      t = *real > 0;
    } else if ((c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR) ||
               (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR)) {
      struct sock_extended_err ee;
      memcpy(&ee, CMSG_DATA(c), sizeof ee);
      *key = ee.ee_data;
      k = ee.ee_errno == ENOMSG && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING &&
          ee.ee_info == SCM_TSTAMP_SND;
    }
  }
  return k && t;
}

/* Socket si's error queue cannot be read: its waiting entries are
 * fallbacks and the kernel stops stamping its sends (else the unread
 * stamps would fill its receive buffer and keep it ready for epoll). If
 * that fails too, its stamps stay on with their keys lost: the queue is
 * still drained and every send keeps its own stamp. */
static void tx_unreadable(struct ge_loop *L, unsigned si) {
  ge_tx_reset(&L->tx, si, true);
  int none = 0;
  if (setsockopt(L->socks[si], SOL_SOCKET, SO_TIMESTAMPING, &none,
                 sizeof none) == 0)
    L->tx.sk[si].on = false;
}

/* The kernel's send stamps queued on socket si (its error queue): each
 * replaces its request's user-space stamp (txstamp.h). An error-queue
 * read that fails turns the socket's stamps off. */
static void tx_drain(struct ge_loop *L, unsigned si) {
  struct ge_txq *q = L->txq;
  for (unsigned round = 0; round < 8; round++) {
    int r = recvmmsg(L->socks[si], q->msgs, GE_RECV_BATCH,
                     MSG_ERRQUEUE | MSG_DONTWAIT, NULL);
    int err = r < 0 ? errno : 0;
    if (r < 0 && err != EAGAIN && err != EWOULDBLOCK && err != EINTR)
      tx_unreadable(L, si);
    if (r <= 0) {
      L->tx.sk[si].unread = err == EINTR && L->tx.sk[si].on;
      return;
    }
    int64_t off = ge_real_minus_mono(), now = ge_now_ns();
    for (int i = 0; i < r; i++) {
      struct msghdr *h = &q->msgs[i].msg_hdr;
      uint32_t key = 0;
      int64_t real = 0;
      if (tx_stamp_of(h, &key, &real))
        ge_tx_stamp(&L->tx, &L->win, si, key, real - off - L->t0, now - L->t0);
      h->msg_controllen = sizeof q->ctl[i].buf;
    }
    if (r < GE_RECV_BATCH) {
      L->tx.sk[si].unread = false;
      return;
    }
  }
}

/* After a send from socket si (r: sendmsg's result): its key is taken; a
 * failed send may or may not have taken one, so the socket's stamps are
 * read, the entries still waiting are fallbacks, and its keys restart at
 * 0 (OPT_ID set anew; failing that, its stamps are off). r < 0: -1. */
static int tx_after(struct ge_loop *L, unsigned si, ssize_t r) {
  if (r >= 0) {
    ge_tx_sent(&L->tx, si);
    return 0;
  }
  if (si >= L->tx.nsock || !L->tx.sk[si].on || L->tx.sk[si].lost)
    return -1;
  int err = errno, f = 0;
  tx_drain(L, si);
  socklen_t len = sizeof f;
  bool off = getsockopt(L->socks[si], SOL_SOCKET, SO_TIMESTAMPING, &f, &len);
  int g = f & ~SOF_TIMESTAMPING_OPT_ID;
  off = off ||
        setsockopt(L->socks[si], SOL_SOCKET, SO_TIMESTAMPING, &g, sizeof g) ||
        setsockopt(L->socks[si], SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof f);
  ge_tx_reset(&L->tx, si, off);
  if (ge_state_tx_settle(L, false))
    L->oom = true;
  errno = err;
  return -1;
}

static int transmit(struct ge_loop *L, uint32_t idx) {
  const struct ge_plan *p = L->plan;
  const struct ge_rec *s = ge_win_at(&L->win, idx);
  const struct ge_template *t = &p->tmpls[s->tmpl];
  uint8_t hdr[GE_HDR_LEN];
  uint32_t salt = L->salt, tok = idx;
  if (t->code >= GE_CODE_OBS) { /* OBS, UNOBS: the observation's token */
    salt ^= GE_OBS_SALT_BIT;
    tok = s->service_us;
    ge_obs_sent(L, tok, t->code, s->sock, s->tmpl, L->t0 + s->sent_ns);
  }
  ge_wire_header(hdr, L->cfg->coap_type, ge_wire_code(t->code), s->mid, salt,
                 tok);
  struct iovec iov[2] = {{hdr, sizeof hdr}, {p->tbytes + t->off, t->len}};
  struct msghdr mh = {
      .msg_name = (void *)&p->peers[p->devs[s->dev].peer].addr,
      .msg_namelen = sizeof(struct sockaddr_in6),
      .msg_iov = iov,
      .msg_iovlen = t->len ? 2 : 1,
  };
  ssize_t r;
  do
    r = sendmsg(L->socks[s->sock], &mh, 0);
  while (r < 0 && errno == EINTR);
  return tx_after(L, s->sock, r);
}

/* A CON exchange's first timer, from its peer's congestion control
 * (cc.c): rfc7252 gives today's ACK_TIMEOUT x [1, ACK_RANDOM_FACTOR), the
 * dithering draw u in [0, 1) coming from the run's xorshift as before.
 * Timers are kept in whole ns: (int64_t) of the module's double. */
static struct ge_timer first_timer(struct ge_loop *L, uint32_t peer,
                                   uint32_t idx, int64_t now) {
  struct ge_cc_peer *cp = &L->ccp[peer];
  uint64_t r = xorshift(&L->rng) >> 11; /* 53 random bits */
  double u = (double)r / 9007199254740992.0;
  struct ge_cc_xchg x;
  double t0 = ge_cc_first(&cp->cc, &x, now - L->t0, cp->inflight, u);
  cp->inflight++;
  cp->exchanges++;
  struct ge_timer t = {.interval = (int64_t)t0, .idx = idx};
  t.vbf2 = (uint8_t)(x.vbf * 2);
  t.deadline = now + t.interval;
  if (ge_hist_add(&L->timer0, (uint64_t)(t.interval / 1000)))
    L->oom = true;
  return t;
}

/* The next timer of a CON exchange after a retransmission. */
static int64_t backoff(struct ge_loop *L, const struct ge_timer *t,
                       const struct ge_rec *s) {
  struct ge_cc_xchg x = {.timer = (double)t->interval,
                         .vbf = t->vbf2 / 2.0,
                         .retrans = s->retrans - 1u};
  return (int64_t)ge_cc_backoff(&L->ccp[L->plan->devs[s->dev].peer].cc, &x);
}

/* --rto-out: room for `need` more events, made in front of the sends when
 * the gaps did not (memory.rto_forced). A failed write stays in rto.err
 * and ends the run at the next check_abort. */
static void rto_room(struct ge_loop *L, size_t need) {
  if (ge_rto_room(&L->rto) >= need)
    return;
  L->rto.forced++;
  ge_rto_make_room(&L->rto, L->plan, GE_RTO_RING / 2);
}

/* --rto-out: an event of CON exchange idx (s) at `now` (monotonic ns):
 * a transmission and the timer armed after it, or the give-up. */
static void rto_event(struct ge_loop *L, uint32_t idx, const struct ge_rec *s,
                      uint8_t event, int64_t now, int64_t timer) {
  uint32_t peer = L->plan->devs[s->dev].peer;
  struct ge_rto_ev ev = {
      .t_ns = now - L->t0,
      .a_ns = timer,
      .rto_ns = (int64_t)ge_rto_estimate(&L->ccp[peer].cc, now - L->t0),
      .row = idx,
      .dev = s->dev,
      .peer = peer,
      .tx = s->retrans,
      .event = event};
  rto_room(L, 1);
  ge_rto_push(&L->rto, &ev);
}

/* Request idx goes out now: stamped, its rank (MID, socket) taken, its
 * first timer set, transmitted. 0, or -1 out of memory. */
static int send_now(struct ge_loop *L, uint32_t idx, int64_t now) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  uint32_t peer = L->plan->devs[s->dev].peer;
  if (ge_state_sent(L, idx, now) || ge_state_take_rank(L, idx, s->sent_ns))
    return -1;
  s->state = GE_WAIT;
  ge_held_sent(L, idx, now); /* PROBING_RATE's pace */
  struct ge_timer t = {.idx = idx, .deadline = now + L->cfg->timeout_ns};
  if (L->cfg->coap_type == GE_CON)
    t = first_timer(L, peer, idx, now);
  t.gen = s->gen;
  if (transmit(L, idx)) {
    L->c.send_errors++;
    ge_state_finish(L, idx, GE_ERROR);
    return 0;
  }
  if (ge_rto_on(&L->rto) && L->cfg->coap_type == GE_CON)
    rto_event(L, idx, s, GE_RTO_SEND, now, t.interval);
  return ge_heap_push(&L->heap, t);
}

/* The next request is due: sent, or held back by NSTART / PROBING_RATE
 * (held.c), or, with --north http, on a connection or in its queue. */
static int send_one(struct ge_loop *L, int64_t now) {
  uint32_t idx = (uint32_t)L->next++;
  if (L->http.n) /* a connection of the pool, or its queue */
    return ge_http_submit(L, idx, now);
  L->outstanding++;
  int held = ge_held_admit(L, idx, now);
  if (held)
    return held < 0 ? -1 : 0;
  return send_now(L, idx, now);
}

/* Peer's held requests that may go now, then its wake timer if the pace
 * still holds the rest. 0, or -1 out of memory. */
static int send_held(struct ge_loop *L, uint32_t peer) {
  int64_t now = ge_now_ns();
  for (int64_t idx; (idx = ge_held_pop(L, peer, now)) >= 0; now = ge_now_ns())
    if (send_now(L, (uint32_t)idx, now))
      return -1;
  return ge_held_wake(L, peer, now);
}

/* Held requests of every peer marked ready (an exchange ended, or the
 * peer was heard from). 0, or -1 out of memory. */
static int send_ready(struct ge_loop *L) {
  for (int64_t peer; (peer = ge_held_ready(L)) >= 0;)
    if (send_held(L, (uint32_t)peer))
      return -1;
  return 0;
}

/* A due timer of a held request (its give-up) or of a peer's pace (its
 * wake): the peer's held requests past --timeout-ms end, those that may
 * go are sent. 0, or -1 out of memory. */
static int held_timer(struct ge_loop *L, const struct ge_timer *t,
                      int64_t now) {
  uint32_t peer = t->idx;
  if (t->wake)
    ge_held_woken(L, t);
  else
    peer = L->plan->devs[ge_win_at(&L->win, t->idx)->dev].peer;
  if (ge_held_expire(L, peer, now))
    return -1;
  return send_held(L, peer);
}

struct rxbuf;
static int drain_replies(struct ge_loop *L, struct rxbuf *rx, size_t owed,
                         struct ge_err *e);

/* One due timer of request t->idx (s): a held request's give-up, an HTTP
 * timeout, a CON retransmission, or the request's timeout. 0, or -1 out
 * of memory. */
static int fire_one(struct ge_loop *L, struct ge_timer *t, struct ge_rec *s,
                    int64_t now) {
  if (s->state == GE_HELD)
    return held_timer(L, t, now);
  if (L->http.n) /* no retransmission over TCP */
    return ge_http_timeout(L, t->idx, now);
  if (s->state == GE_WAIT && L->cfg->coap_type == GE_CON &&
      s->retrans < L->cfg->max_retransmit) {
    s->retrans++;
    L->c.retransmissions++;
    if (transmit(L, t->idx))
      L->c.send_errors++; /* counts as lost; the next timer retries */
    t->interval = backoff(L, t, s);
    t->deadline = now + t->interval;
    if (ge_rto_on(&L->rto))
      rto_event(L, t->idx, s, GE_RTO_SEND, now, t->interval);
    return ge_heap_push(&L->heap, *t);
  }
  if (ge_rto_on(&L->rto) && s->state == GE_WAIT && L->cfg->coap_type == GE_CON)
    rto_event(L, t->idx, s, GE_RTO_TIMEOUT, now, 0);
  ge_state_finish(L, t->idx, GE_TIMEOUT);
  return 0;
}

/* Due timers: a retransmission or a timeout, after the replies queued so
 * far are read (once per call), so that no reply already here is missed.
 * Returns 0, -1 out of memory, -2 a receive error (in e). */
static int fire_timers(struct ge_loop *L, struct rxbuf *rx, int64_t now,
                       struct ge_err *e) {
  bool drained = false;
  while (L->heap.n && L->heap.v[0].deadline <= now) {
    struct ge_timer t = L->heap.v[0];
    if (t.wake) { /* a peer's pace, not a request's timer */
      ge_heap_pop(&L->heap, &t);
      if (held_timer(L, &t, now))
        return -1;
      continue;
    }
    if (t.idx < L->win.base) { /* its row is written: a stale entry */
      ge_heap_pop(&L->heap, &t);
      continue;
    }
    struct ge_rec *s = ge_win_at(&L->win, t.idx);
    if (t.gen != s->gen || (s->state != GE_WAIT && s->state != GE_SEPARATE &&
                            s->state != GE_HELD)) {
      ge_heap_pop(&L->heap, &t); /* stale entry */
      continue;
    }
    if (!drained) {
      drained = true;
      if (drain_replies(L, rx, 0, e))
        return -2;
      continue; /* look again: the reply may have ended it */
    }
    ge_heap_pop(&L->heap, &t);
    if (fire_one(L, &t, s, now))
      return -1;
  }
  return send_ready(L);
}

/* A re-registration of observation `obs` (RFC 7641 section 3.3.1): its
 * OBS row's GET with Observe 0 and token, NON, from its socket, with a
 * MID of the GE's own counter. Not a trace row. */
static void send_rereg(struct ge_loop *L, uint32_t obs) {
  const struct ge_plan *p = L->plan;
  const struct ge_obs *o = &L->obs.v[obs];
  const struct ge_template *t = &p->tmpls[o->tmpl];
  uint8_t hdr[GE_HDR_LEN];
  ge_wire_header(hdr, GE_NON, ge_wire_code(t->code), L->obs.mid++,
                 L->salt ^ GE_OBS_SALT_BIT, obs);
  struct iovec iov[2] = {{hdr, sizeof hdr}, {p->tbytes + t->off, t->len}};
  struct msghdr mh = {
      .msg_name = (void *)&p->peers[p->devs[p->obs[obs].dev].peer].addr,
      .msg_namelen = sizeof(struct sockaddr_in6),
      .msg_iov = iov,
      .msg_iovlen = t->len ? 2 : 1,
  };
  ssize_t r;
  do
    r = sendmsg(L->socks[o->sock], &mh, 0);
  while (r < 0 && errno == EINTR);
  if (tx_after(L, o->sock, r))
    L->c.send_errors++;
}

static void flush_acks(struct ge_loop *L) {
  for (unsigned i = 0; i < L->ackq.n; i++) {
    uint8_t m[4];
    ge_wire_empty(m, L->ackq.v[i].type, L->ackq.v[i].mid);
    ssize_t r;
    do
      r = sendto(L->socks[L->ackq.v[i].sock], m, sizeof m, 0,
                 (struct sockaddr *)&L->ackq.v[i].to, sizeof L->ackq.v[i].to);
    while (r < 0 && errno == EINTR);
    if (tx_after(L, L->ackq.v[i].sock, r))
      L->c.ack_send_errors++;
    else
      L->c.acks_sent++;
  }
  L->ackq.n = 0;
}

struct rxbuf {
  struct mmsghdr msgs[GE_RECV_BATCH];
  struct iovec iov[GE_RECV_BATCH];
  struct sockaddr_in6 from[GE_RECV_BATCH];
  union { /* SCM_TIMESTAMPNS; SCM_TIMESTAMPING too without RX_FILTER */
    char buf[CMSG_SPACE(sizeof(struct timespec)) +
             CMSG_SPACE(sizeof(struct scm_timestamping))];
    struct cmsghdr align;
  } ctl[GE_RECV_BATCH];
  uint8_t data[GE_RECV_BATCH][GE_DGRAM_MAX];
};

static void rx_init(struct rxbuf *rx) {
  for (unsigned i = 0; i < GE_RECV_BATCH; i++) {
    rx->iov[i] = (struct iovec){rx->data[i], GE_DGRAM_MAX};
    rx->msgs[i].msg_hdr = (struct msghdr){
        .msg_name = &rx->from[i],
        .msg_namelen = sizeof rx->from[i],
        .msg_iov = &rx->iov[i],
        .msg_iovlen = 1,
        .msg_control = rx->ctl[i].buf,
        .msg_controllen = sizeof rx->ctl[i].buf,
    };
  }
}

/* When the datagram arrived (monotonic ns): the kernel's stamp, moved
 * from CLOCK_REALTIME by `off` (realtime - monotonic, read bracketed
 * with the batch); `now` when it has none or one later than now. */
static int64_t arrival(struct msghdr *h, int64_t off, int64_t now) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
      struct timespec ts;
      memcpy(&ts, CMSG_DATA(c), sizeof ts);
      int64_t t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec - off;
      return t > 0 && t <= now ? t : now;
    }
  return now;
}

/* One recvmmsg batch from socket si, each datagram at its kernel arrival
 * stamp. Returns the datagrams read or -1. */
static int rx_socket(struct ge_loop *L, struct rxbuf *rx, unsigned si,
                     struct ge_err *e) {
  if (ge_rto_on(&L->rto)) /* at most one event per datagram */
    rto_room(L, GE_RECV_BATCH);
  /* Before the replies that end them; also while entries wait, since a
   * stamp can come after the send returned (a neighbour still resolving):
   * it would otherwise sit unread and keep the socket ready (EPOLLERR). */
  if (ge_tx_unread(&L->tx, si) || ge_tx_waiting(&L->tx, si)) {
    tx_drain(L, si);
    if (ge_state_tx_settle(L, false)) {
      ge_err_set(e, NULL, 0, "loop", "out of memory");
      return -1;
    }
  }
  int r = recvmmsg(L->socks[si], rx->msgs, GE_RECV_BATCH, MSG_DONTWAIT, NULL);
  int64_t now = ge_now_ns();
  if (r < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ||
        errno == ECONNREFUSED)
      return 0;
    ge_err_set(e, NULL, 0, "recvmmsg", "%s", strerror(errno));
    return -1;
  }
  int64_t off = ge_real_minus_mono();
  L->obs.real_off_ns = off; /* notifications' latency (obstab.c) */
  for (int i = 0; i < r; i++) {
    struct msghdr *h = &rx->msgs[i].msg_hdr;
    if (h->msg_namelen != sizeof(struct sockaddr_in6) ||
        rx->from[i].sin6_family != AF_INET6)
      L->c.unknown_source++;
    else
      ge_recv_datagram(L, rx->data[i], rx->msgs[i].msg_len,
                       (h->msg_flags & MSG_TRUNC) != 0, &rx->from[i], si,
                       arrival(h, off, now));
    h->msg_namelen = sizeof rx->from[i]; /* the kernel overwrote them */
    h->msg_controllen = sizeof rx->ctl[i].buf;
  }
  flush_acks(L);
  if (send_ready(L)) { /* NSTART slots the replies freed */
    ge_err_set(e, NULL, 0, "loop", "out of memory");
    return -1;
  }
  return r;
}

/* One batch from every ready socket, first blocking up to `timeout_ns`
 * (0 never blocks). With a single socket the non-blocking recvmmsg is
 * itself the poll, which saves the epoll_wait syscall per reply. */
static int poll_replies(struct ge_loop *L, struct rxbuf *rx, int64_t timeout_ns,
                        struct ge_err *e) {
  if (L->nsock == 1 && timeout_ns == 0)
    return rx_socket(L, rx, 0, e);
  if (timeout_ns > 0) {
    int ready = ge_rt_block(&L->rt, L->epfd, timeout_ns, e);
    if (ready <= 0)
      return ready;
  }
  struct epoll_event ev[16];
  int nev = epoll_wait(L->epfd, ev, 16, 0);
  if (nev < 0) {
    if (errno == EINTR)
      return 0;
    ge_err_set(e, NULL, 0, "epoll_wait", "%s", strerror(errno));
    return -1;
  }
  int total = 0;
  for (int k = 0; k < nev; k++) {
    uint32_t d = ev[k].data.u32;
    if (!(d & GE_HTTP_TAG) && (ev[k].events & EPOLLERR) && d < L->tx.nsock &&
        L->tx.sk[d].on) /* a send stamp came after its queue was read */
      L->tx.sk[d].unread = true;
    int r = d & GE_HTTP_TAG ? ge_http_event(L, d, ev[k].events)
                            : rx_socket(L, rx, d, e);
    if (r < 0 && (d & GE_HTTP_TAG))
      ge_err_set(e, NULL, 0, "http", "out of memory");
    if (r < 0)
      return -1;
    total += r;
  }
  return total;
}

/* When the next send is due (monotonic ns): INT64_MAX once all are sent,
 * 0 when it is not parsed yet (so: parse now). */
static int64_t next_due(const struct ge_loop *L) {
  if (L->next >= L->plan->n)
    return INT64_MAX;
  if (L->next >= L->win.end)
    return 0;
  return L->t0 + (int64_t)ge_win_at(&L->win, L->next)->ts_us * 1000;
}

/* Reads replies at least as fast as requests went out (`owed`: sends of
 * the last burst), and keeps draining while no send is due, so that
 * replies are stamped when they arrive, not when a GE behind schedule
 * gets round to them (and no timer fires for a reply already queued). */
static int drain_replies(struct ge_loop *L, struct rxbuf *rx, size_t owed,
                         struct ge_err *e) {
  L->undrained = 0;
  L->drained_at = ge_now_ns();
  /* bounded, so that a flood cannot starve the timers */
  for (unsigned round = 0; round < 64; round++) {
    int got = poll_replies(L, rx, 0, e);
    if (got < 0)
      return -1;
    if (got < GE_RECV_BATCH)
      return 0; /* the socket(s) had no more */
    owed = owed > (size_t)got ? owed - (size_t)got : 0;
    if (!owed && next_due(L) <= ge_now_ns())
      return 0; /* a send is due */
  }
  return 0;
}

/* Writes up to `piece` formatted bytes of the CSV. */
static int write_piece(struct ge_loop *L, size_t piece, struct ge_err *e) {
  if (!ge_out_write(&L->out, piece))
    return 0;
  ge_err_set(e, L->cfg->out, 0, NULL, "write failed: %s", strerror(L->out.err));
  return -1;
}

/* --rto-out's share of a gap: format events, write formatted bytes.
 * 1: it did some, 0: nothing to do, -1: a write failed (e). */
static int rto_background(struct ge_loop *L, size_t piece, struct ge_err *e) {
  struct ge_rto *r = &L->rto;
  if (!ge_rto_on(r))
    return 0;
  if (r->n && ge_rto_format(r, L->plan, GE_FORMAT_UNIT))
    return 1;
  size_t pending = ge_rto_pending(r);
  if (!pending || (pending < GE_WRITE_SMALL && !r->n && L->next < L->plan->n))
    return 0;
  if (ge_rto_write(r, piece)) {
    ge_err_set(e, L->cfg->rto_out, 0, NULL, "write failed: %s",
               strerror(r->err));
    return -1;
  }
  return 1;
}

/* One unit of the notify CSV's streaming work in a gap: format records
 * of the ring, or write formatted bytes. 1 done (come back), 0 none, -1
 * write error. */
static int notify_work(struct ge_loop *L, int64_t room, struct ge_err *e) {
  struct ge_notify_out *o = &L->obs.out;
  if (ge_obs_out_format(L->plan, &L->obs, GE_FORMAT_UNIT))
    return 1;
  size_t pending = ge_obs_out_pending(o);
  if (!pending || (pending < GE_WRITE_SMALL && L->next < L->plan->n))
    return 0;
  if (!ge_obs_out_write(o, room >= GE_WRITE_GAP_MIN_NS ? GE_WRITE_UNIT
                                                       : GE_WRITE_SMALL))
    return 1;
  ge_err_set(e, L->cfg->notify_out, 0, NULL, "write failed: %s",
             strerror(o->err));
  return -1;
}

/* The streaming work, in units of a few us, while the gap before `until`
 * has room: keep GE_FEED_AHEAD requests parsed ahead, format the rows of
 * finished requests, write the formatted bytes out. Returns 1 when work
 * is left, 0 when there is none, -1 on error. */
static int background(struct ge_loop *L, int64_t now, int64_t until,
                      struct ge_err *e) {
  for (;; now = ge_now_ns()) {
    int64_t room = until - now;
    if (room < GE_GAP_MIN_NS)
      return 1;
    if (!L->feed_done && L->win.end - L->next < GE_FEED_AHEAD) {
      if (ge_state_feed(L, GE_FEED_UNIT, e) < 0)
        return -1;
      continue;
    }
    /* the trace ahead kept in memory: a chunk (keep.h) */
    if (ge_keep_step(&L->keep, L->out.released,
                     (size_t)(L->cur.it.p - L->plan->text), now))
      continue;
    if (ge_out_format(L, GE_FORMAT_UNIT))
      continue;
    /* small pieces fit the gaps of a fast schedule, big ones the rest */
    size_t piece = room >= GE_WRITE_GAP_MIN_NS ? GE_WRITE_UNIT : GE_WRITE_SMALL;
    int nw = L->obs.out.buf ? notify_work(L, room, e) : 0;
    if (nw < 0)
      return -1;
    if (nw)
      continue;
    size_t pending = L->out.len - L->out.start;
    if (pending && (pending >= GE_WRITE_SMALL || ge_out_full(&L->out) ||
                    L->next >= L->plan->n)) {
      if (write_piece(L, piece, e))
        return -1;
      continue;
    }
    int rto = rto_background(L, piece, e);
    if (rto < 0)
      return -1;
    if (rto)
      continue;
    return 0;
  }
}

/* Output in front of the sends: a backlog of GE_BACKLOG_MAX rows. */
static int force_output(struct ge_loop *L, struct ge_err *e) {
  L->output_forced += ge_out_format(L, GE_FORCE_UNIT);
  size_t pending = L->out.len - L->out.start;
  if (pending >= GE_WRITE_UNIT || ge_out_full(&L->out))
    return write_piece(L, GE_WRITE_UNIT, e);
  return 0;
}

/* The notify ring half full: records formatted and written in front of
 * the sends (memory.notify_output_forced). */
static int force_notify(struct ge_loop *L, struct ge_err *e) {
  struct ge_notify_out *o = &L->obs.out;
  o->forced += ge_obs_out_format(L->plan, &L->obs, GE_FORCE_UNIT);
  if (ge_obs_out_pending(o) >= GE_WRITE_UNIT &&
      ge_obs_out_write(o, GE_WRITE_UNIT)) {
    ge_err_set(e, L->cfg->notify_out, 0, NULL, "write failed: %s",
               strerror(o->err));
    return -1;
  }
  return 0;
}

/* Stop asked for, or out of memory: -1 with the reason. */
static int check_abort(const struct ge_loop *L, struct ge_err *e) {
  if (L->stop && *L->stop) {
    ge_err_set(e, NULL, 0, "signal", "interrupted; no results written");
    return -1;
  }
  if (L->oom) {
    ge_err_set(e, NULL, 0, "loop", "out of memory");
    return -1;
  }
  if (L->rto.err || L->rto.overflow) {
    ge_err_set(e, L->cfg->rto_out, 0, NULL, "%s: %s",
               L->rto.err ? "write failed" : "internal error",
               L->rto.err ? strerror(L->rto.err) : "event ring overflow");
    return -1;
  }
  return 0;
}

/* Sends what is due (up to GE_SEND_BURST), then reads replies when they
 * are owed or the schedule has a gap, and keeps the output backlog
 * bounded. */
static int send_due(struct ge_loop *L, struct rxbuf *rx, int64_t now,
                    struct ge_err *e) {
  if (L->next == L->win.end) {
    /* nothing parsed ahead: the gaps did not suffice (a GE at its
     * ceiling), so parse in front of the send */
    L->feed_forced++;
    if (ge_state_feed(L, GE_FEED_UNIT, e) < 0)
      return -1;
  }
  unsigned burst = 0;
  for (; burst < GE_SEND_BURST && L->next < L->win.end && next_due(L) <= now;
       burst++) {
    if (send_one(L, now)) {
      ge_err_set(e, NULL, 0, "loop", "out of memory");
      return -1;
    }
    now = ge_now_ns();
  }
  L->undrained += burst;
  int64_t t = ge_now_ns();
  if ((L->undrained >= GE_RECV_BATCH || next_due(L) - t >= GE_DRAIN_GAP_NS ||
       t - L->drained_at >= GE_DRAIN_MAX_NS) &&
      drain_replies(L, rx, L->undrained, e))
    return -1;
  if (L->next - L->out.row > GE_BACKLOG_MAX && force_output(L, e))
    return -1;
  if (L->obs.out.len > L->obs.out.cap / 2 && force_notify(L, e))
    return -1;
  return 0;
}

/* --spin-us: a GE that shares its core (the CD-GE on a small host) blocks
 * while the next send and the next timer are far away, and spins only
 * the last spin_us before the send (a shorter block is not worth the
 * wake-up). */
#define GE_BLOCK_MIN_NS 20000
static int spin_wait(struct ge_loop *L, struct rxbuf *rx, struct ge_err *e) {
  int64_t due = next_due(L);
  int64_t wake = due - L->cfg->spin_us * 1000;
  if (background(L, ge_now_ns(), wake, e) < 0)
    return -1;
  if (L->heap.n && L->heap.v[0].deadline < wake)
    wake = L->heap.v[0].deadline;
  int64_t d = wake - ge_now_ns();
  if (d < GE_BLOCK_MIN_NS)
    return 0;
  if (poll_replies(L, rx, d > 1000000000 ? 1000000000 : d, e) < 0 ||
      drain_replies(L, rx, 0, e))
    return -1;
  return 0;
}

/* All sent: nothing is due until the next timer or reply, so block
 * instead of spinning on a shared machine (after the streaming work,
 * which has the gap to itself now). */
static int wait_all_sent(struct ge_loop *L, struct rxbuf *rx, int64_t now,
                         struct ge_err *e) {
  int64_t until = L->heap.n ? L->heap.v[0].deadline : now + 1000000000LL;
  if (L->http.n && ge_http_wake(L) < until) /* queue timeouts, reconnects */
    until = ge_http_wake(L);
  int left = background(L, now, until, e);
  if (left < 0)
    return -1;
  now = ge_now_ns();
  int64_t wait_ns = until - now;
  if (wait_ns > 1000000000LL)
    wait_ns = 1000000000LL;
  if (wait_ns < 0 || left)
    wait_ns = 0;
  if (poll_replies(L, rx, wait_ns, e) < 0 || drain_replies(L, rx, 0, e))
    return -1;
  return 0;
}

/* Due timers, the streaming work in the gap before the next send, and
 * under SCHED_FIFO with the RT-budget bucket half full: idle in a gap of
 * the schedule, or yield while the bucket is full (rt.c). */
static int after_sends(struct ge_loop *L, struct rxbuf *rx, struct ge_err *e) {
  const size_t n = L->plan->n;
  int64_t now = ge_now_ns();
  int ft = fire_timers(L, rx, now, e);
  if (!ft && L->http.n && ge_http_tick(L, now))
    ft = -1;
  if (ft) {
    if (ft == -1)
      ge_err_set(e, NULL, 0, "timers", "out of memory");
    return -1;
  }
  for (int64_t obs; L->obs.n && (obs = ge_obs_rereg_due(L, now)) >= 0;)
    send_rereg(L, (uint32_t)obs);
  if (L->next < n && background(L, now, next_due(L), e) < 0)
    return -1;
  if (ge_rt_wants_idle(&L->rt)) {
    int64_t next = L->next < n ? next_due(L) : ge_now_ns() + 1000000000LL;
    if (L->heap.n && L->heap.v[0].deadline < next)
      next = L->heap.v[0].deadline;
    if (ge_rt_idle(&L->rt, L->epfd, next, e))
      return -1;
  }
  return 0;
}

/* One turn of the loop: 0, or -1 (e). */
static int turn(struct ge_loop *L, struct rxbuf *rx, struct ge_err *e) {
  if (check_abort(L, e))
    return -1;
  int64_t now = ge_now_ns();
  ge_rt_tick(&L->rt, now);
  if (L->next < L->plan->n) {
    if (send_due(L, rx, now, e))
      return -1;
    if (L->cfg->spin_us >= 0 && L->next < L->plan->n && spin_wait(L, rx, e))
      return -1;
  } else if (wait_all_sent(L, rx, now, e)) {
    return -1;
  }
  return after_sends(L, rx, e);
}

int ge_loop_run(struct ge_loop *L, struct ge_err *e) {
  struct rxbuf *rx = malloc(sizeof *rx);
  if (!rx) {
    ge_err_set(e, NULL, 0, "loop", "out of memory");
    return -1;
  }
  rx_init(rx);
  int rc = 0;
  while (!rc && (L->next < L->plan->n || L->outstanding > 0))
    rc = turn(L, rx, e);
  if (!rc && ge_state_tx_settle(L, true)) { /* stamps that never came */
    ge_err_set(e, NULL, 0, "loop", "out of memory");
    rc = -1;
  }
  if (!rc)
    L->t_end = ge_now_ns();
  free(rx);
  return rc;
}

void ge_loop_close(struct ge_loop *L) {
  ge_http_close(L);
  if (L->socks)
    for (unsigned i = 0; i < L->nsock; i++)
      if (L->socks[i] >= 0)
        close(L->socks[i]);
  if (L->epfd >= 0)
    close(L->epfd);
  free(L->socks);
  free(L->txq);
  L->txq = NULL;
  L->socks = NULL;
  L->epfd = -1;
}
