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
  L->pdu = coap_pdu_init(0, 0, 0, GE_DGRAM_MAX);
  ge_rt_init(&L->rt, cfg);
  if (!L->rq || !L->sq || !L->peer_parsed || !L->peer_sent || !L->timed_out ||
      !L->pdu)
    return -1;
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
    s->mid = ge_plan_mid(pr, rank);
    s->sock = (uint16_t)ge_plan_sock(pr, rank);
    got++;
    if (L->cur.n == p->n)
      L->feed_done = true;
  }
  return got;
}

int ge_state_sent(struct ge_loop *L, uint32_t idx, int64_t now) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  s->sent_ns = now - L->t0;
  int64_t sent_us = ge_us(s->sent_ns);
  if (sent_us - (int64_t)s->ts_us > L->cfg->late_us)
    L->c.late_sends++;
  if (ge_hist_add(&L->send_lag, (uint64_t)(sent_us - (int64_t)s->ts_us)))
    return -1;
  if (idx == 0)
    L->sent_first_us = sent_us;
  else if (ge_hist_add(&L->rit_submitted,
                       (uint64_t)(sent_us - L->sent_prev_us)))
    return -1;
  L->sent_prev_us = sent_us;
  return 0;
}

void ge_state_finish(struct ge_loop *L, uint32_t idx, uint8_t state) {
  struct ge_rec *s = ge_win_at(&L->win, idx);
  s->state = state;
  s->gen++;
  L->outstanding--;
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
  if (s->recv_ns >= 0) {
    int64_t sent = ge_us(s->sent_ns), recv = ge_us(s->recv_ns);
    if (ge_hist_add(&L->response, (uint64_t)(recv - sent)) ||
        ge_hist_add(&L->latency, (uint64_t)(recv - (int64_t)s->ts_us)))
      L->oom = true;
  }
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
  ge_win_free(&L->win);
  ge_out_free(&L->out);
  ge_hist_free(&L->rit_submitted);
  ge_hist_free(&L->send_lag);
  ge_hist_free(&L->response);
  ge_hist_free(&L->latency);
  ge_heap_free(&L->heap);
  if (L->pdu)
    coap_delete_pdu(L->pdu);
  L->rq = NULL;
  L->sq = NULL;
  L->peer_parsed = L->peer_sent = NULL;
  L->timed_out = NULL;
  L->pdu = NULL;
}
