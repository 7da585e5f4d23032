/* NSTART and PROBING_RATE: per peer, the due requests held back in a FIFO
 * (a ring of trace indices), released in trace order when an exchange of
 * the peer ends (NSTART) or when the pace of a silent peer allows
 * (PROBING_RATE), given up --timeout-ms after their intended time. */
#include "held.h"
#include "wire.h"

/* The instant request s was due (monotonic ns). */
static int64_t due_ns(const struct ge_loop *L, const struct ge_rec *s) {
  return L->t0 + (int64_t)s->ts_us * 1000;
}

static uint32_t peer_of(const struct ge_loop *L, uint32_t idx) {
  return L->plan->devs[ge_win_at(&L->win, idx)->dev].peer;
}

static uint32_t head(const struct ge_held_peer *h) {
  return *(const uint32_t *)ge_ring_at(&h->q, sizeof(uint32_t), 0);
}

/* Whether a request of peer may not go at `now` (queue aside): NSTART
 * for CON, the silent peer's pace for NON. */
static bool blocked(const struct ge_loop *L, uint32_t peer, int64_t now) {
  const struct ge_held_peer *h = &L->hp[peer];
  if (L->cfg->coap_type == GE_CON)
    return L->cfg->nstart && L->ccp[peer].inflight >= L->cfg->nstart;
  return h->silent && now < h->probe_next;
}

int ge_held_admit(struct ge_loop *L, uint32_t idx, int64_t now) {
  if (!L->cfg->nstart && !L->cfg->probing_rate)
    return 0;
  uint32_t peer = peer_of(L, idx);
  struct ge_held_peer *h = &L->hp[peer];
  if (!h->q.len && !blocked(L, peer, now))
    return 0;
  uint32_t *slot = ge_ring_push(&h->q, sizeof idx, 64);
  if (!slot)
    return -1;
  *slot = idx;
  struct ge_rec *s = ge_win_at(&L->win, idx);
  s->state = GE_HELD;
  if (L->cfg->coap_type == GE_CON)
    L->held.nstart_waits++;
  else
    L->held.probing_waits++;
  if (h->q.len > L->held.queue_max)
    L->held.queue_max = h->q.len;
  struct ge_timer t = {
      .deadline = due_ns(L, s) + L->cfg->timeout_ns, .idx = idx, .gen = s->gen};
  if (ge_heap_push(&L->heap, t) || ge_held_wake(L, peer, now))
    return -1;
  return 1;
}

int64_t ge_held_pop(struct ge_loop *L, uint32_t peer, int64_t now) {
  struct ge_held_peer *h = &L->hp[peer];
  if (!h->q.len || blocked(L, peer, now))
    return -1;
  uint32_t idx = head(h);
  ge_ring_pop(&h->q);
  struct ge_rec *s = ge_win_at(&L->win, idx);
  s->gen++;   /* its give-up timer is stale now */
  return idx; /* its wait: held.wait_max_us once its sent stamp settles */
}

/* PROBING_RATE: while the peer is silent, no more than `rate` bytes per
 * second on average: each datagram of n bytes (UDP payload) moves the
 * earliest next send on by n / rate, rounded up to whole ns. */
void ge_held_sent(struct ge_loop *L, uint32_t idx, int64_t now) {
  if (!L->cfg->probing_rate || L->cfg->coap_type == GE_CON)
    return;
  const struct ge_rec *s = ge_win_at(&L->win, idx);
  struct ge_held_peer *h = &L->hp[L->plan->devs[s->dev].peer];
  if (!h->silent)
    return;
  int64_t bytes = GE_HDR_LEN + (int64_t)L->plan->tmpls[s->tmpl].len;
  int64_t rate = L->cfg->probing_rate;
  int64_t from = h->probe_next > now ? h->probe_next : now;
  h->probe_next = from + (bytes * 1000000000LL + rate - 1) / rate;
}

int ge_held_expire(struct ge_loop *L, uint32_t peer, int64_t now) {
  struct ge_held_peer *h = &L->hp[peer];
  while (h->q.len) {
    uint32_t idx = head(h);
    struct ge_rec *s = ge_win_at(&L->win, idx);
    if (now < due_ns(L, s) + L->cfg->timeout_ns)
      return 0;
    ge_ring_pop(&h->q);
    /* given up, never transmitted: no sent stamp (an empty sent_us and
     * send_lag_us), not in the send lag or the submitted RITs; its rank
     * is taken now so the later ones keep the MID plan, its MID unused */
    s->sent_ns = GE_NOT_SENT;
    if (ge_state_take_rank(L, idx, now - L->t0))
      return -1;
    L->held.queue_timeouts++;
    ge_state_finish(L, idx, GE_TIMEOUT);
  }
  return 0;
}

int ge_held_wake(struct ge_loop *L, uint32_t peer, int64_t now) {
  struct ge_held_peer *h = &L->hp[peer];
  if (L->cfg->coap_type == GE_CON || !h->q.len || !h->silent ||
      now >= h->probe_next || h->wake_ns == h->probe_next)
    return 0;
  struct ge_timer t = {.deadline = h->probe_next, .idx = peer, .wake = 1};
  h->wake_ns = h->probe_next;
  return ge_heap_push(&L->heap, t);
}

void ge_held_woken(struct ge_loop *L, const struct ge_timer *t) {
  struct ge_held_peer *h = &L->hp[t->idx];
  if (h->wake_ns == t->deadline)
    h->wake_ns = 0;
}

int64_t ge_held_ready(struct ge_loop *L) {
  if (!L->ready.len)
    return -1;
  uint32_t peer = *(uint32_t *)ge_ring_at(&L->ready, sizeof peer, 0);
  ge_ring_pop(&L->ready);
  L->hp[peer].ready = false;
  return peer;
}
