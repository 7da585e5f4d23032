/* The bookkeeping of the kernel's send stamps: a bounded ring of first
 * transmissions in send order, linked per socket in key order. */
#include <stdlib.h>

#include "txstamp.h"

static struct ge_tx_ent *ent(const struct ge_tx *t, uint64_t seq) {
  return &t->ring[seq % GE_TX_RING];
}

int ge_tx_init(struct ge_tx *t, unsigned nsock) {
  t->ring = malloc(GE_TX_RING * sizeof *t->ring);
  t->sk = calloc(nsock ? nsock : 1, sizeof *t->sk);
  t->nsock = nsock;
  t->lo = t->hi = t->wrapped = 0;
  if (!t->ring || !t->sk)
    return -1;
  for (unsigned i = 0; i < nsock; i++)
    t->sk[i].head = t->sk[i].tail = GE_TX_NONE;
  return 0;
}

void ge_tx_free(struct ge_tx *t) {
  free(t->ring);
  free(t->sk);
  t->ring = NULL;
  t->sk = NULL;
  t->nsock = 0;
}

void ge_tx_wrap(struct ge_tx *t) {
  struct ge_tx_ent *e = ent(t, t->lo);
  if (t->hi > t->lo && e->state == GE_TX_PENDING) {
    e->state = GE_TX_FALLBACK;
    t->wrapped++;
  }
}

void ge_tx_push(struct ge_tx *t, uint32_t idx, uint32_t sock, int64_t sent_ns,
                uint64_t ts_us, bool held) {
  uint64_t seq = t->hi++;
  struct ge_tx_ent *e = ent(t, seq);
  bool on = sock < t->nsock && t->sk[sock].on && !t->sk[sock].lost;
  *e = (struct ge_tx_ent){.sent_ns = sent_ns,
                          .ts_us = ts_us,
                          .next = GE_TX_NONE,
                          .idx = idx,
                          .sock = (uint16_t)sock,
                          .state = on ? GE_TX_PENDING : GE_TX_FALLBACK,
                          .held = held};
  if (!on)
    return;
  struct ge_tx_sock *s = &t->sk[sock];
  e->key = s->key;
  if (s->tail != GE_TX_NONE)
    ent(t, s->tail)->next = seq;
  else
    s->head = seq;
  s->tail = seq;
}

/* Socket s's front entry leaves its list. */
static void unlink_head(struct ge_tx *t, struct ge_tx_sock *s) {
  s->head = ent(t, s->head)->next;
  if (s->head == GE_TX_NONE)
    s->tail = GE_TX_NONE;
}

void ge_tx_stamp(struct ge_tx *t, struct ge_window *w, unsigned si,
                 uint32_t key, int64_t k_ns, int64_t now_ns) {
  if (si >= t->nsock)
    return;
  struct ge_tx_sock *s = &t->sk[si];
  while (s->head != GE_TX_NONE) {
    struct ge_tx_ent *e = ent(t, s->head);
    if (e->state != GE_TX_PENDING) { /* settled already: forced */
      unlink_head(t, s);
      continue;
    }
    int32_t d = (int32_t)(e->key - key);
    if (d > 0)
      return; /* a retransmission's, an ACK's, or a forced entry's */
    unlink_head(t, s);
    if (d < 0) { /* its stamp never came */
      e->state = GE_TX_FALLBACK;
      continue;
    }
    if (k_ns < e->sent_ns || k_ns > now_ns || e->idx < w->base) {
      e->state = GE_TX_FALLBACK; /* not its send's: keep its own stamp */
      return;
    }
    e->state = GE_TX_KERNEL;
    e->sent_ns = k_ns;
    ge_win_at(w, e->idx)->sent_ns = k_ns;
    return;
  }
}

void ge_tx_end(struct ge_tx *t, unsigned si, uint32_t idx) {
  if (!ge_tx_waiting(t, si))
    return;
  for (uint64_t q = t->sk[si].head; q != GE_TX_NONE; q = ent(t, q)->next) {
    struct ge_tx_ent *e = ent(t, q);
    if (e->idx == idx && e->state == GE_TX_PENDING) {
      e->state = GE_TX_FALLBACK;
      return;
    }
  }
}

void ge_tx_reset(struct ge_tx *t, unsigned si, bool lost) {
  if (si >= t->nsock)
    return;
  struct ge_tx_sock *s = &t->sk[si];
  for (; s->head != GE_TX_NONE; unlink_head(t, s))
    if (ent(t, s->head)->state == GE_TX_PENDING)
      ent(t, s->head)->state = GE_TX_FALLBACK;
  s->key = 0;
  s->lost = s->lost || lost;
}

bool ge_tx_pop(struct ge_tx *t, struct ge_tx_ent *out) {
  if (t->lo == t->hi || ent(t, t->lo)->state == GE_TX_PENDING)
    return false;
  *out = *ent(t, t->lo);
  struct ge_tx_sock *s = out->sock < t->nsock ? &t->sk[out->sock] : NULL;
  if (s && s->head == t->lo)
    unlink_head(t, s);
  t->lo++;
  return true;
}
