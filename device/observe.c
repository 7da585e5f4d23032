/* The observation table, its heap and its notifications (observe.h). */
#include "observe.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire.h"

#define SEC_NS 1000000000LL

static uint32_t pow2_at_least(uint64_t n) {
  uint32_t p = 64;

  while (p < n && p < (1u << 31))
    p <<= 1;
  return p;
}

int obs_init(struct observe *o, uint32_t cap, const struct registry *reg,
             int64_t ack_timeout_ns, int64_t seq_start, uint16_t *next_mid,
             struct tx *tx, struct dev_counters *c) {
  memset(o, 0, sizeof(*o));
  o->cap = cap;
  o->hash_mask = pow2_at_least((uint64_t)cap * 2) - 1;
  /* calloc'ed pages stay untouched (and cost nothing) until used. */
  o->v = calloc(cap, sizeof(*o->v));
  o->hash = calloc((size_t)o->hash_mask + 1, sizeof(*o->hash));
  o->mid_owner = calloc(65536, sizeof(*o->mid_owner));
  o->ordinal = calloc(reg->count ? reg->count : 1, sizeof(*o->ordinal));
  o->free_head = UINT32_MAX;
  o->ack_timeout_ns = ack_timeout_ns;
  o->seq_start = seq_start;
  o->rng = (uint64_t)(uintptr_t)o ^ (uint64_t)time(NULL);
  o->next_mid = next_mid;
  o->tx = tx;
  o->c = c;
  obs_clock(o);
  if (o->v && o->hash && o->mid_owner && o->ordinal)
    return 0;
  obs_free(o);
  return -1;
}

void obs_free(struct observe *o) {
  free(o->v);
  free(o->hash);
  free(o->mid_owner);
  free(o->ordinal);
  free(o->heap);
  memset(o, 0, sizeof(*o));
}

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;

  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * SEC_NS + ts.tv_nsec;
}

void obs_clock(struct observe *o) {
  o->rt_off_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
}

/* ---- the (peer, token) hash ------------------------------------------ */

static uint32_t key_hash(const struct peer *p, const uint8_t *tok,
                         uint8_t tkl) {
  uint8_t addr[16];
  uint16_t port;
  uint64_t h;

  peer_key(p, addr, &port);
  h = notify_hash((const char *)addr, 16) ^ port;
  h = notify_mix(h ^ notify_hash((const char *)tok, tkl) ^ tkl);
  return (uint32_t)h;
}

static int key_equal(const struct obs *ob, const struct peer *p,
                     const uint8_t *tok, uint8_t tkl) {
  return ob->tkl == tkl && memcmp(ob->token, tok, tkl) == 0 &&
         peer_equal(&ob->peer, p);
}

/* The hash slot holding (p, tok), or the empty slot where it would go. */
static uint32_t slot_of(const struct observe *o, const struct peer *p,
                        const uint8_t *tok, uint8_t tkl) {
  uint32_t s = key_hash(p, tok, tkl) & o->hash_mask;

  while (o->hash[s] != 0 && !key_equal(&o->v[o->hash[s] - 1], p, tok, tkl))
    s = (s + 1) & o->hash_mask;
  return s;
}

/* Backward-shift deletion keeps every probe chain unbroken. */
static void hash_delete(struct observe *o, uint32_t s) {
  uint32_t j = s;

  o->hash[s] = 0;
  for (;;) {
    struct obs *ob;
    uint32_t home;

    j = (j + 1) & o->hash_mask;
    if (o->hash[j] == 0)
      return;
    ob = &o->v[o->hash[j] - 1];
    home = key_hash(&ob->peer, ob->token, ob->tkl) & o->hash_mask;
    if (((j - home) & o->hash_mask) >= ((j - s) & o->hash_mask)) {
      o->hash[s] = o->hash[j];
      o->hash[j] = 0;
      s = j;
    }
  }
}

/* ---- the heap -------------------------------------------------------- */

static void heap_swap(struct obs_due *a, struct obs_due *b) {
  struct obs_due t = *a;

  *a = *b;
  *b = t;
}

static void sift_down(struct obs_due *h, uint32_t n, uint32_t i) {
  for (;;) {
    uint32_t l = 2 * i + 1, m = i;

    if (l < n && h[l].due < h[m].due)
      m = l;
    if (l + 1 < n && h[l + 1].due < h[m].due)
      m = l + 1;
    if (m == i)
      return;
    heap_swap(&h[i], &h[m]);
    i = m;
  }
}

static void heap_pop(struct observe *o) {
  o->heap[0] = o->heap[--o->heap_n];
  sift_down(o->heap, o->heap_n, 0);
}

static int stale(const struct observe *o, const struct obs_due *d) {
  const struct obs *ob = &o->v[d->idx];

  return !ob->live || ob->gen != d->gen;
}

/* Drops the stale entries once they outnumber the live ones. */
static void heap_compact(struct observe *o) {
  uint32_t k = 0;

  for (uint32_t i = 0; i < o->heap_n; i++)
    if (!stale(o, &o->heap[i]))
      o->heap[k++] = o->heap[i];
  o->heap_n = k;
  for (uint32_t i = k / 2; i-- > 0;)
    sift_down(o->heap, k, i);
}

static void heap_push(struct observe *o, int64_t due, uint32_t idx,
                      uint32_t gen) {
  uint32_t i;

  if (o->heap_n > 2 * o->live + 1024)
    heap_compact(o);
  if (o->heap_n == o->heap_cap) {
    uint32_t cap = o->heap_cap ? o->heap_cap * 2 : 1024;
    struct obs_due *h = realloc(o->heap, cap * sizeof(*h));

    if (h == NULL)
      abort(); /* bounded by 2 x observers + 1024: tiny next to them */
    o->heap = h;
    o->heap_cap = cap;
  }
  i = o->heap_n++;
  o->heap[i] = (struct obs_due){due, idx, gen};
  while (i > 0 && o->heap[(i - 1) / 2].due > o->heap[i].due) {
    heap_swap(&o->heap[(i - 1) / 2], &o->heap[i]);
    i = (i - 1) / 2;
  }
}

/* The refresh (RFC 7641 4.3.1): 1 s before Max-Age runs out (half of it
 * when Max-Age is 1 s). */
static int64_t refresh_due(const struct obs *ob) {
  int64_t age = (int64_t)ob->res->max_age * SEC_NS;

  return ob->last_sent_ns + (age > SEC_NS ? age - SEC_NS : age / 2);
}

/* One live heap entry per observation, at its earliest due time. */
static void schedule(struct observe *o, uint32_t i) {
  struct obs *ob = &o->v[i];
  int64_t due = ob->next_ev_ns;
  int64_t other = ob->inflight ? ob->rto_ns : refresh_due(ob);

  if (other < due)
    due = other;
  if (due == ob->due_ns)
    return;
  ob->due_ns = due;
  ob->gen++;
  heap_push(o, due, i, ob->gen);
}

/* ---- notifications --------------------------------------------------- */

/* Builds one notification into the tx batch. lag: the event is notified
 * at once, so its scheduled time to the send counts in notify_lag_us. */
static void emit(struct observe *o, const struct obs *ob, uint8_t type,
                 uint16_t mid, uint32_t seq, int64_t t_us, int64_t e_us,
                 uint64_t n, int64_t rx_ns, int64_t lag_ev_ns) {
  struct wire_notif w = {
      .type = type,
      .tkl = ob->tkl,
      .mid = mid,
      .token = ob->token,
      .seq = seq,
      .max_age = ob->res->max_age,
      .service_us = ob->res->service_us,
      .payload_bytes = ob->res->payload_bytes,
      .t_us = t_us,
      .e_us = e_us,
      .n = n,
  };
  uint8_t *out = tx_slot(o->tx, &ob->peer);
  size_t len = wire_notification(out, WIRE_MAX_RESPONSE, &w);

  if (len == 0) /* cannot happen: sizes are bounded by the parser */
    abort();
  tx_commit(o->tx, len, rx_ns, lag_ev_ns);
}

static int64_t realtime_us(void) { return clock_ns(CLOCK_REALTIME) / 1000; }

/* A new message of type with the current state: the next seq, a new MID
 * unless mid >= 0 (a registration answer), a CON goes in flight. */
static void send_state(struct observe *o, uint32_t i, int64_t now, uint8_t type,
                       int32_t mid, int64_t rx_ns, int lag) {
  struct obs *ob = &o->v[i];
  uint16_t m = mid >= 0 ? (uint16_t)mid : (*o->next_mid)++;
  int64_t t_us = realtime_us(), e_us = (ob->ev_ns + o->rt_off_ns) / 1000;

  ob->seq = (ob->seq + 1) & 0xffffffu;
  ob->last_sent_ns = now;
  ob->pending = 0;
  if (type != WIRE_ACK)
    o->mid_owner[m] = (struct obs_mid){i + 1, ob->serial};
  emit(o, ob, type, m, ob->seq, t_us, e_us, ob->n, rx_ns, lag ? ob->ev_ns : -1);
  if (type != WIRE_CON)
    return;
  ob->inflight = 1;
  ob->if_mid = m;
  ob->if_seq = ob->seq;
  ob->if_n = ob->n;
  ob->if_t_us = t_us;
  ob->if_e_us = e_us;
  ob->tries = 0;
  /* ACK_TIMEOUT x [1, ACK_RANDOM_FACTOR 1.5) (RFC 7252 4.8). */
  o->rng = notify_mix(o->rng);
  ob->timeout_ns = o->ack_timeout_ns +
                   (int64_t)(o->rng % (uint64_t)(o->ack_timeout_ns / 2 + 1));
  ob->rto_ns = now + ob->timeout_ns;
  o->c->notify_con++;
}

/* notify_type: CON for con, and for every N-th message of non:N. */
static int next_is_con(struct obs *ob) {
  uint16_t every = ob->res->con_every;

  ob->msgs++;
  return every == 1 || (every > 1 && ob->msgs % every == 0);
}

static void notify(struct observe *o, uint32_t i, int64_t now, int lag) {
  struct obs *ob = &o->v[i];

  send_state(o, i, now, next_is_con(ob) ? WIRE_CON : WIRE_NON, -1, -1, lag);
  o->c->notify_sent++;
}

static void remove_obs(struct observe *o, uint32_t i) {
  struct obs *ob = &o->v[i];

  hash_delete(o, slot_of(o, &ob->peer, ob->token, ob->tkl));
  ob->live = 0;
  ob->gen++;
  ob->next_free = o->free_head;
  o->free_head = i;
  o->live--;
}

/* The CON in flight again, byte for byte (its first t stays). */
static void retransmit(struct observe *o, struct obs *ob) {
  emit(o, ob, WIRE_CON, ob->if_mid, ob->if_seq, ob->if_t_us, ob->if_e_us,
       ob->if_n, -1, -1);
  o->c->notify_retransmits++;
}

/* Every event due by now: notified at once unless a CON is in flight,
 * then only the newest waits (RFC 7641 4.5.2). */
static void events(struct observe *o, uint32_t i, int64_t now) {
  struct obs *ob = &o->v[i];

  while (ob->next_ev_ns <= now) {
    ob->n++;
    ob->ev_ns = ob->next_ev_ns;
    ob->next_ev_ns += notify_draw_ns(&ob->res->proc, &ob->rng);
    o->c->notify_events++;
    if (!ob->inflight) {
      notify(o, i, now, 1);
      continue;
    }
    if (ob->pending)
      o->c->notify_superseded++;
    ob->pending = 1;
  }
}

/* The CON in flight timed out: give up after MAX_RETRANSMIT, else send it
 * again, or the newer state instead keeping the retransmission state. */
static void timed_out(struct observe *o, uint32_t i, int64_t now) {
  struct obs *ob = &o->v[i];
  int64_t timeout = ob->timeout_ns * 2;
  uint8_t tries = ob->tries;

  if (tries == OBS_MAX_RETRANSMIT) {
    o->c->obs_gave_up++;
    remove_obs(o, i);
    return;
  }
  if (ob->pending) {
    send_state(o, i, now, WIRE_CON, -1, -1, 0);
    o->c->notify_sent++;
  } else {
    retransmit(o, ob);
  }
  ob->tries = (uint8_t)(tries + 1);
  ob->timeout_ns = timeout;
  ob->rto_ns = now + timeout;
}

static void process(struct observe *o, uint32_t i, int64_t now) {
  struct obs *ob = &o->v[i];

  events(o, i, now);
  if (ob->inflight && ob->rto_ns <= now)
    timed_out(o, i, now);
  if (!ob->live)
    return;
  if (!ob->inflight && refresh_due(ob) <= now) {
    notify(o, i, now, 0);
    o->c->notify_refresh++;
  }
  schedule(o, i);
}

void obs_tick(struct observe *o, int64_t now) {
  obs_clock(o);
  while (o->heap_n && o->heap[0].due <= now) {
    struct obs_due d = o->heap[0];

    heap_pop(o);
    if (stale(o, &d))
      continue;
    o->v[d.idx].due_ns = INT64_MIN; /* its entry is gone */
    process(o, d.idx, now);
  }
}

/* ---- registration, cancellation, ACK and RST ---------------------------- */

int obs_room(const struct observe *o, const struct peer *p,
             const struct recipe *rc) {
  return o->live < o->cap || o->hash[slot_of(o, p, rc->token, rc->tkl)] != 0;
}

/* A fresh observation in slot s of the hash; UINT32_MAX if full. */
static uint32_t create(struct observe *o, uint32_t s, const struct peer *p,
                       const struct recipe *rc) {
  uint32_t i;
  struct obs *ob;

  if (o->live == o->cap)
    return UINT32_MAX;
  if (o->free_head != UINT32_MAX) {
    i = o->free_head;
    o->free_head = o->v[i].next_free;
  } else {
    i = o->high++;
  }
  ob = &o->v[i];
  ob->peer = *p;
  ob->tkl = rc->tkl;
  memcpy(ob->token, rc->token, sizeof(ob->token));
  ob->live = 1;
  ob->serial = ++o->serials;
  o->hash[s] = i + 1;
  o->live++;
  o->rng = notify_mix(o->rng);
  ob->seq =
      (uint32_t)((o->seq_start >= 0 ? (uint64_t)o->seq_start : o->rng) - 1u) &
      0xffffffu;
  o->c->obs_registered++;
  return i;
}

int obs_register(struct observe *o, const struct peer *p,
                 const struct recipe *rc, int64_t rx_ns, int64_t now,
                 int separate) {
  uint32_t s = slot_of(o, p, rc->token, rc->tkl), i;
  const struct reg_entry *res = rc->res;
  struct obs *ob;

  if (o->hash[s] != 0) {
    i = o->hash[s] - 1; /* RFC 7641 4.1: replace, never add twice */
    o->c->obs_reregistered++;
  } else if ((i = create(o, s, p, rc)) == UINT32_MAX) {
    return -1;
  }
  ob = &o->v[i];
  ob->res = res;
  notify_seed(&ob->rng, notify_mix(res->seed) ^ o->ordinal[res->index]++);
  ob->n = 0;
  ob->msgs = 0;
  ob->inflight = ob->pending = 0;
  ob->ev_ns = rx_ns;
  ob->next_ev_ns = rx_ns + notify_draw_ns(&res->proc, &ob->rng);
  o->c->notify_events++;
  if (separate)
    send_state(o, i, now, WIRE_CON, -1, rx_ns, 0);
  else
    send_state(o, i, now, rc->type, rc->mid, rx_ns, 0);
  ob->due_ns = INT64_MIN;
  schedule(o, i);
  return 0;
}

int obs_duplicate(struct observe *o, const struct peer *p,
                  const struct recipe *rc, int64_t now) {
  uint32_t s = slot_of(o, p, rc->token, rc->tkl), i;

  if (o->hash[s] == 0)
    return 0;
  i = o->hash[s] - 1;
  if (o->v[i].inflight)
    return 1; /* the CON in flight carries the state; it is retransmitted */
  send_state(o, i, now, rc->type, rc->type == WIRE_ACK ? rc->mid : -1, -1, 0);
  schedule(o, i);
  return 1;
}

int32_t obs_cancel(struct observe *o, const struct peer *p,
                   const struct recipe *rc) {
  uint32_t s = slot_of(o, p, rc->token, rc->tkl);
  int32_t seq;

  if (o->hash[s] == 0)
    return -1;
  seq = (int32_t)o->v[o->hash[s] - 1].seq;
  remove_obs(o, o->hash[s] - 1);
  o->c->obs_cancelled++;
  return seq;
}

int obs_ack(struct observe *o, const struct peer *p, uint16_t mid, int rst,
            int64_t now) {
  uint32_t owner = o->mid_owner[mid].slot;
  struct obs *ob;

  if (owner == 0)
    return 0;
  ob = &o->v[owner - 1];
  if (!ob->live || ob->serial != o->mid_owner[mid].serial ||
      !peer_equal(&ob->peer, p))
    return 0;
  if (rst) {
    o->mid_owner[mid].slot = 0;
    o->c->obs_reset++;
    remove_obs(o, owner - 1);
    return 1;
  }
  if (!ob->inflight || ob->if_mid != mid)
    return 0;
  ob->inflight = 0;
  o->c->notify_acked++;
  if (ob->pending)
    notify(o, owner - 1, now, 0);
  schedule(o, owner - 1);
  return 1;
}
