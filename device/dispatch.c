/* What to answer: duplicates, the resource lookup, inline answers for
 * S = 0 and errors, hand-off to the workers, and their completions. */
#include <string.h>

#include "net.h"

#define WKC_PATH ".well-known/core"

static uint8_t method_code(uint8_t method) {
  switch (method) {
  case COAP_REQUEST_CODE_GET: return DEV_CODE_CONTENT;
  case COAP_REQUEST_CODE_POST:
  case COAP_REQUEST_CODE_PUT: return DEV_CODE_CHANGED;
  case COAP_REQUEST_CODE_DELETE: return DEV_CODE_DELETED;
  default: return 0;
  }
}

static void count_answer(struct dev_counters *c, const struct recipe *rc) {
  c->served++;
  switch (rc->code) {
  case DEV_CODE_NOT_FOUND: c->not_found++; break;
  case DEV_CODE_BAD_METHOD: c->bad_method++; break;
  case DEV_CODE_BAD_OPTION: c->bad_option++; break;
  case DEV_CODE_UNAVAILABLE: c->overflow++; break;
  default: c->ok += (rc->code >> 5) == 2;
  }
}

static void send_empty(struct loop *L, const struct peer *p, uint8_t type,
                       uint16_t mid) {
  struct recipe rc = {.kind = RC_EMPTY, .type = type, .mid = mid, .block2 = -1};

  tx_send(&L->tx, p, &rc, L->reg);
}

/* The Observe side of a 2.05 answer: a deregistration carries the last
 * seq (65001), a registration's answer is notification 0 (sent here;
 * returns 1). A full table makes it a plain answer. */
static int observe_answer(struct loop *L, const struct peer *p,
                          struct recipe *rc, int64_t rx_ns, int64_t now,
                          int separate) {
  if (rc->kind != RC_OK || rc->observe == OBS_NONE)
    return 0;
  if (rc->observe == OBS_DEREGISTER) {
    rc->kind = RC_UNOBS;
    rc->block2 = obs_cancel(&L->ob, p, rc);
    return 0;
  }
  if (obs_register(&L->ob, p, rc, rx_ns, now, separate) == 0)
    return 1;
  L->c->obs_table_full++;
  rc->observe = OBS_NONE;
  return 0;
}

/* Sends rc now and records it so that a duplicate gets the same bytes. */
static void answer_now(struct loop *L, const struct peer *p, struct dd_entry *e,
                       struct recipe *rc, int64_t rx_ns) {
  if (!observe_answer(L, p, rc, rx_ns, rx_ns, 0))
    tx_answer(&L->tx, p, rc, L->reg, rx_ns);
  hist_add(&L->h->queue_wait_us, 0);
  e->state = DD_DONE;
  e->rc = *rc;
  count_answer(L->c, rc);
}

static void answer_duplicate(struct loop *L, const struct peer *p,
                             struct dd_entry *e, int64_t now) {
  L->c->duplicates++;
  if (e->state == DD_SEPARATE) {
    /* The empty ACK may have been lost; the CON response has its own
     * retransmission. */
    send_empty(L, p, WIRE_ACK, e->mid);
    L->c->dup_replies++;
  } else if (e->state == DD_DONE) {
    /* A repeated registration refreshes it (RFC 7641 4.1). */
    if (e->rc.observe != OBS_REGISTER || !obs_duplicate(&L->ob, p, &e->rc, now))
      tx_send(&L->tx, p, &e->rc, L->reg);
    L->c->dup_replies++;
  }
  /* DD_PENDING: still in service; the answer is coming. */
}

/* Hands the request to a worker; 0 if the queue is full. */
static int enqueue(struct loop *L, const struct peer *p, struct dd_entry *e,
                   const struct recipe *rc, int64_t service_ns, int64_t now) {
  struct job *job = workers_alloc(&L->wk);

  if (job == NULL)
    return 0;
  job->peer = *p;
  job->rc = *rc;
  job->service_ns = service_ns;
  job->rx_ns = now;
  job->dd_slot = dedup_slot(&L->dd, e);
  job->dd_gen = e->gen;
  /* A piggybacked answer must beat the client's ACK_TIMEOUT. */
  job->separate = L->req.type == WIRE_CON && service_ns >= SEP_ACK_TIMEOUT_NS;
  if (workers_submit(&L->wk, job) < 0)
    return 0;
  if (job->separate) {
    e->state = DD_SEPARATE;
    send_empty(L, p, WIRE_ACK, L->req.mid);
  }
  return 1;
}

/* GET with Observe 0 registers on an observable resource (refused: a plain
 * answer), GET with Observe 1 deregisters; other values are plain GETs. */
static void observe_request(struct loop *L, const struct wire_request *q,
                            const struct peer *p, struct recipe *rc) {
  int get = q->code == COAP_REQUEST_CODE_GET;

  if (q->observe == 1 && get) {
    rc->observe = OBS_DEREGISTER;
  } else if (q->observe == 0) {
    if (!get || !rc->res->observable)
      L->c->obs_refused++;
    else if (!obs_room(&L->ob, p, rc))
      L->c->obs_table_full++;
    else
      rc->observe = OBS_REGISTER;
  }
}

static void on_request(struct loop *L, const struct peer *p, int64_t now) {
  const struct wire_request *q = &L->req;
  const struct reg_entry *res = NULL;
  struct dd_entry *e;
  struct recipe rc;
  uint8_t addr[16];
  uint16_t port;

  L->c->requests++;
  peer_key(p, addr, &port);
  e = dedup_find(&L->dd, addr, port, q->mid, now);
  /* Same MID with another token is a new request from a client whose
   * MIDs wrapped within EXCHANGE_LIFETIME (a fast load generator). */
  if (e && e->tkl == q->tkl && memcmp(e->token, q->token, q->tkl) == 0) {
    answer_duplicate(L, p, e, now);
    return;
  }
  e = dedup_claim(&L->dd, e, addr, port, q->mid, now);
  e->tkl = q->tkl;
  memcpy(e->token, q->token, sizeof(e->token));

  memset(&rc, 0, sizeof(rc));
  rc.kind = RC_BARE;
  rc.type = q->type == WIRE_CON ? WIRE_ACK : WIRE_NON;
  rc.mid = q->type == WIRE_CON ? q->mid : L->next_mid++;
  rc.tkl = q->tkl;
  memcpy(rc.token, q->token, sizeof(rc.token));
  rc.block2 = -1;

  if (q->bad_option) {
    rc.code = DEV_CODE_BAD_OPTION;
  } else if (q->path_len == sizeof(WKC_PATH) - 1 &&
             memcmp(q->path, WKC_PATH, q->path_len) == 0) {
    rc.code = q->code == COAP_REQUEST_CODE_GET ? DEV_CODE_CONTENT
                                               : DEV_CODE_BAD_METHOD;
    if (rc.code == DEV_CODE_CONTENT) {
      rc.kind = RC_WKC;
      rc.block2 = q->has_block2 ? (int32_t)q->block2 : -1;
      L->c->wkc++;
    }
  } else if (q->path_overflow ||
             (res = registry_find(L->reg, q->path, q->path_len)) == NULL) {
    rc.code = DEV_CODE_NOT_FOUND;
  } else {
    rc.res = res;
    rc.code = method_code(q->code);
    rc.kind = rc.code ? RC_OK : RC_ERR;
    observe_request(L, q, p, &rc);
    if (rc.code == 0)
      rc.code = DEV_CODE_BAD_METHOD;
    else if (res->service_ns > 0 && enqueue(L, p, e, &rc, res->service_ns, now))
      return;
    else if (res->service_ns > 0) {
      rc.kind = RC_ERR;
      rc.code = DEV_CODE_UNAVAILABLE;
    } else {
      L->c->inline_zero++;
    }
  }
  answer_now(L, p, e, &rc, now);
}

void dispatch_datagram(struct loop *L, const uint8_t *buf, size_t len,
                       const struct peer *p, int64_t now) {
  L->c->datagrams++;
  switch (wire_parse(L->pdu, buf, len, &L->req)) {
  case WIRE_REQUEST: on_request(L, p, now); break;
  case WIRE_PING:
    L->c->pings++;
    send_empty(L, p, WIRE_RST, L->req.mid);
    break;
  case WIRE_EMPTY_ACK:
  case WIRE_EMPTY_RST:
    if (!sep_ack(&L->sep, p, L->req.mid, L->req.type == WIRE_RST) &&
        !obs_ack(&L->ob, p, L->req.mid, L->req.type == WIRE_RST, now))
      L->c->ignored++;
    break;
  case WIRE_OTHER: L->c->ignored++; break;
  default: L->c->garbage++;
  }
}

void dispatch_completions(struct loop *L, int64_t now) {
  size_t n;

  while ((n = workers_take_done(&L->wk, L->done,
                                sizeof(L->done) / sizeof(L->done[0]))) > 0) {
    for (size_t i = 0; i < n; i++) {
      struct job *job = &L->wk.pool[L->done[i]];
      struct dd_entry *e = dedup_at(&L->dd, job->dd_slot, job->dd_gen);

      if (observe_answer(L, &job->peer, &job->rc, job->rx_ns, now,
                         job->separate)) {
        if (e != NULL && !job->separate) {
          e->state = DD_DONE;
          e->rc = job->rc;
        }
      } else if (job->separate) {
        job->rc.type = WIRE_CON;
        job->rc.mid = L->next_mid++;
        tx_answer(&L->tx, &job->peer, &job->rc, L->reg, job->rx_ns);
        sep_track(&L->sep, &job->peer, &job->rc, now);
      } else {
        tx_answer(&L->tx, &job->peer, &job->rc, L->reg, job->rx_ns);
        if (e != NULL) {
          e->state = DD_DONE;
          e->rc = job->rc;
        }
      }
      count_answer(L->c, &job->rc);
      hist_add_ns(&L->h->queue_wait_us, job->rx_ns, job->start_ns);
      workers_release(&L->wk, job);
    }
  }
}

void dispatch_resend(void *ctx, const struct peer *p, const struct recipe *rc) {
  struct loop *L = ctx;
  struct recipe copy = *rc;

  tx_send(&L->tx, p, &copy, L->reg);
}
