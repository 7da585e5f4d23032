/* The loop's state: set up without sockets, fed with requests parsed
 * ahead of their sends, a request ended (its record, counters, the
 * timed-out bits and the response distributions), freed. */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "clock.h"
#include "state.h"

int ge_state_init(struct ge_loop *L, const struct ge_config *cfg,
                  const struct ge_plan *p, const struct ge_hosts *h,
                  uint32_t salt, uint64_t seed, int out_fd) {
  memset(L, 0, sizeof *L);
  L->cfg = cfg;
  L->plan = p;
  L->hosts = h;
  L->salt = salt;
  L->rng = seed | 1;
  L->epfd = -1;
  L->nsock = p->nsock;
  L->out.fd = -1;
  size_t np = p->npeer ? p->npeer : 1;
  ge_cursor_init(&L->cur, p, cfg->trace ? cfg->trace : "trace");
  L->rq = calloc(np, sizeof *L->rq);
  L->sq = calloc(np, sizeof *L->sq);
  L->peer_parsed = calloc(np, sizeof *L->peer_parsed);
  L->peer_sent = calloc(np, sizeof *L->peer_sent);
  L->timed_out = calloc((1u << GE_DONE_BITS) / 64, sizeof *L->timed_out);
  L->retried = calloc((1u << GE_DONE_BITS) / 64, sizeof *L->retried);
  L->pdu = coap_pdu_init(0, 0, 0, GE_DGRAM_MAX);
  L->ccp = calloc(np, sizeof *L->ccp);
  L->hp = calloc(np, sizeof *L->hp);
  ge_rt_init(&L->rt, cfg);
  if (ge_tx_init(&L->tx, p->nsock))
    return -1;
  if (!L->rq || !L->sq || !L->peer_parsed || !L->peer_sent || !L->timed_out ||
      !L->retried || !L->pdu || !L->ccp || !L->hp)
    return -1;
  /* one state per peer, created at t0 (the times it gets are from t0) */
  for (size_t i = 0; i < np; i++)
    ge_cc_init(&L->ccp[i].cc, (enum ge_cc_strategy)cfg->congestion,
               cfg->ack_timeout_ns,
               cfg->ack_random_factor >= 1 ? cfg->ack_random_factor : 1.5, 0);
  return out_fd >= 0 ? ge_out_open(&L->out, out_fd) : 0;
}

long ge_state_feed(struct ge_loop *L, unsigned max, struct ge_err *e) {
  const struct ge_plan *p = L->plan;
  long got = 0;
  while (got < (long)max && !L->feed_done) {
    struct ge_req r;
    int rc = ge_cursor_read(p, &L->cur, L->hosts, &r, e);
    if (rc < 0)
      return -1;
    if (rc == 0) {
      ge_err_set(e, L->cur.name, L->cur.it.no, NULL,
                 "ends after %zu of %zu requests (was the file changed?)",
                 L->cur.n, p->n);
      return -1;
    }
    uint32_t idx = (uint32_t)L->win.end;
    uint32_t peer = p->devs[r.dev].peer;
    struct ge_rec *s = ge_win_push(&L->win);
    if (!s || ge_rankq_push(&L->rq[peer], idx)) {
      ge_err_set(e, NULL, 0, "loop", "out of memory");
      return -1;
    }
    const struct ge_peer *pr = &p->peers[peer];
    uint32_t rank = L->peer_parsed[peer]++;
    s->ts_us = r.ts_us;
    s->uri_off = r.uri_off;
    s->uri_len = r.uri_len;
    s->dev = r.dev;
    s->tmpl = r.tmpl;
    if (r.obs != UINT32_MAX)
      s->service_us = r.obs; /* until answered: the observation (window.h) */
    s->mid = ge_plan_mid(pr, rank);
    s->sock = (uint16_t)ge_plan_sock(pr, rank);
    got++;
    if (L->cur.n == p->n)
      L->feed_done = true;
  }
  return got;
}

/* A settled sent stamp (e: in send order) enters the statistics. */
static int settled(struct ge_loop *L, const struct ge_tx_ent *e) {
  int64_t sent_us = ge_us(e->sent_ns);
  if (e->state == GE_TX_KERNEL)
    L->c.tx_stamps_kernel++;
  else if (!L->http.n) /* HTTP north: TCP has no per-request stamp to miss */
    L->c.tx_stamps_fallback++;
  if (sent_us - (int64_t)e->ts_us > L->cfg->late_us)
    L->c.late_sends++;
  if (ge_hist_add(&L->send_lag, (uint64_t)(sent_us - (int64_t)e->ts_us)))
    return -1;
  if (e->held && (uint64_t)(sent_us - (int64_t)e->ts_us) > L->held.wait_max_us)
    L->held.wait_max_us = (uint64_t)(sent_us - (int64_t)e->ts_us);
  /* a stamp is never earlier than the one before it; 0 if ever */
  int64_t rit = sent_us > L->sent_prev_us ? sent_us - L->sent_prev_us : 0;
  if (e->idx == 0)
    L->sent_first_us = sent_us;
  else if (ge_hist_add(&L->rit_submitted, (uint64_t)rit))
    return -1;
  L->sent_prev_us = sent_us;
  return 0;
}

int ge_state_tx_settle(struct ge_loop *L, bool all) {
  if (all)
    for (unsigned i = 0; i < L->tx.nsock; i++)
      ge_tx_reset(&L->tx, i, false);
  struct ge_tx_ent e;
  while (ge_tx_pop(&L->tx, &e))
    if (settled(L, &e))
      return -1;
  return 0;
}

int ge_state_sent(struct ge_loop *L, uint32_t idx, int64_t now) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  s->sent_ns = now - L->t0;
  if (ge_tx_full(&L->tx)) { /* the oldest waited too long */
    ge_tx_wrap(&L->tx);
    if (ge_state_tx_settle(L, false))
      return -1;
  }
  ge_tx_push(&L->tx, idx, L->http.n ? UINT32_MAX : s->sock, s->sent_ns,
             s->ts_us, s->state == GE_HELD);
  return ge_state_tx_settle(L, false);
}

int ge_state_take_rank(struct ge_loop *L, uint32_t idx, int64_t at_ns) {
  const struct ge_rec *s = ge_win_at(&L->win, idx);
  uint32_t peer = L->plan->devs[s->dev].peer;
  uint32_t rank = L->peer_sent[peer]++;
  /* The plan spaces MID reuse by trace time; a GE far behind its
   * schedule could still compress it, so check the actual send times. */
  const struct ge_peer *pr = &L->plan->peers[peer];
  uint64_t cycle = (uint64_t)pr->k * GE_MID_SPACE;
  if (pr->count > cycle) {
    bool early;
    if (ge_sentq_send(&L->sq[peer], rank, cycle, at_ns, &early))
      return -1;
    if (early)
      L->c.mid_reuse_early++;
  }
  return 0;
}

/* The peer's held requests may go (the loop sends them). */
static void mark_ready(struct ge_loop *L, uint32_t peer) {
  struct ge_held_peer *h = &L->hp[peer];
  if (h->ready || !h->q.len)
    return;
  uint32_t *slot = ge_ring_push(&L->ready, sizeof peer, 64);
  if (!slot) {
    L->oom = true;
    return;
  }
  *slot = peer;
  h->ready = true;
}

void ge_state_heard(struct ge_loop *L, uint32_t peer, int64_t now) {
  struct ge_held_peer *h = &L->hp[peer];
  if (!L->cfg->probing_rate)
    return;
  h->heard_ns = now;
  if (h->silent) {
    h->silent = false;
    mark_ready(L, peer);
  }
}

/* The end of a request that was sent (not given up while held): NSTART's
 * slot, PROBING_RATE's silence. */
static void sent_request_ends(struct ge_loop *L, const struct ge_rec *s,
                              uint8_t state) {
  uint32_t peer = L->plan->devs[s->dev].peer;
  struct ge_cc_peer *cp = &L->ccp[peer];
  if (L->http.n)
    return;
  if (L->cfg->coap_type == GE_CON) {
    if (cp->inflight)
      cp->inflight--;
    if (L->cfg->nstart)
      mark_ready(L, peer);
  } else if (L->cfg->probing_rate && state == GE_TIMEOUT &&
             L->hp[peer].heard_ns < L->t0 + s->sent_ns) {
    L->hp[peer].silent = true;
  }
}

void ge_state_finish(struct ge_loop *L, uint32_t idx, uint8_t state) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  bool sent = s->state == GE_WAIT || s->state == GE_SEPARATE;
  s->state = state;
  s->gen++;
  L->outstanding--;
  if (sent) {
    ge_tx_end(&L->tx, L->http.n ? UINT32_MAX : s->sock, idx);
    sent_request_ends(L, s, state);
  }
  if (state == GE_OK)
    L->c.ok++;
  else if (state == GE_TIMEOUT)
    L->c.timeouts++;
  else
    L->c.errors++;
  uint64_t bit = idx & ((1u << GE_DONE_BITS) - 1);
  if (state == GE_TIMEOUT)
    L->timed_out[bit / 64] |= 1ULL << (bit % 64);
  else
    L->timed_out[bit / 64] &= ~(1ULL << (bit % 64));
  if (s->retrans)
    L->retried[bit / 64] |= 1ULL << (bit % 64);
  else
    L->retried[bit / 64] &= ~(1ULL << (bit % 64));
  if (s->recv_ns >= 0) {
    int64_t sent = ge_us(s->sent_ns), recv = ge_us(s->recv_ns);
    if (ge_hist_add(&L->response, (uint64_t)(recv - sent)) ||
        ge_hist_add(&L->latency, (uint64_t)(recv - (int64_t)s->ts_us)))
      L->oom = true;
  }
}

void ge_state_rtt(struct ge_loop *L, uint32_t idx, int64_t now) {
  const struct ge_rec *s = ge_win_at(&L->win, idx);
  uint32_t peer = L->plan->devs[s->dev].peer;
  struct ge_cc_peer *cp = &L->ccp[peer];
  int64_t rtt = now - L->t0 - s->sent_ns;
  enum ge_cc_kind kind = ge_cc_kind_of(s->retrans);
  bool used = ge_cc_sample(&cp->cc, now - L->t0, rtt > 0 ? rtt : 0, kind);
  if (!used)
    cp->unused++;
  else if (kind == GE_CC_STRONG)
    cp->strong++;
  else
    cp->weak++;
  if (ge_rto_on(&L->rto)) {
    struct ge_rto_ev ev = {.t_ns = now - L->t0,
                           .a_ns = s->sent_ns,
                           .rto_ns =
                               (int64_t)ge_rto_estimate(&cp->cc, now - L->t0),
                           .row = idx,
                           .dev = s->dev,
                           .peer = peer,
                           .tx = s->retrans,
                           .event = GE_RTO_SAMPLE,
                           .kind = (uint8_t)kind,
                           .used = used};
    ge_rto_push(&L->rto, &ev);
  }
}

void ge_state_duplicate(struct ge_loop *L, uint32_t idx, const struct ge_rec *s,
                        uint32_t peer, uint8_t type, int64_t now) {
  uint64_t bit = idx & ((1u << GE_DONE_BITS) - 1);
  bool retried =
      s ? s->retrans > 0 : (L->retried[bit / 64] >> (bit % 64) & 1) != 0;
  if (type != GE_ACK || L->cfg->coap_type != GE_CON || !retried)
    return;
  L->c.spurious_retransmissions++;
  if (!ge_rto_on(&L->rto))
    return;
  struct ge_rto_ev ev = {
      .t_ns = now - L->t0,
      .a_ns = s ? s->sent_ns : -1,
      .rto_ns = (int64_t)ge_rto_estimate(&L->ccp[peer].cc, now - L->t0),
      .row = idx,
      .dev = s ? s->dev : GE_RTO_UNKNOWN,
      .peer = peer,
      .tx = s ? s->retrans : GE_RTO_UNKNOWN,
      .event = GE_RTO_DUP};
  ge_rto_push(&L->rto, &ev);
}

void ge_state_free(struct ge_loop *L) {
  if (L->rq)
    for (size_t i = 0; i < L->plan->npeer; i++)
      ge_rankq_free(&L->rq[i]);
  if (L->sq)
    for (size_t i = 0; i < L->plan->npeer; i++)
      ge_sentq_free(&L->sq[i]);
  free(L->rq);
  free(L->sq);
  free(L->peer_parsed);
  free(L->peer_sent);
  free(L->timed_out);
  free(L->retried);
  ge_win_free(&L->win);
  ge_out_free(&L->out);
  ge_rto_free(&L->rto);
  ge_hist_free(&L->rit_submitted);
  ge_hist_free(&L->send_lag);
  ge_hist_free(&L->response);
  ge_hist_free(&L->latency);
  ge_tx_free(&L->tx);
  ge_heap_free(&L->heap);
  ge_hist_free(&L->timer0);
  free(L->ccp);
  L->ccp = NULL;
  if (L->hp)
    for (size_t i = 0; i < L->plan->npeer; i++)
      ge_ring_free(&L->hp[i].q);
  free(L->hp);
  L->hp = NULL;
  ge_ring_free(&L->ready);
  if (L->pdu)
    coap_delete_pdu(L->pdu);
  L->rq = NULL;
  L->sq = NULL;
  L->peer_parsed = L->peer_sent = NULL;
  L->timed_out = L->retried = NULL;
  L->pdu = NULL;
}
