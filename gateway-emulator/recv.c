/* One received datagram -> state update. No syscalls: empty ACKs for CON
 * responses are queued for the loop to send, so the fuzz harness can call
 * this with arbitrary bytes. Anything unexpected is counted and dropped. */
#include <string.h>

#include <coap3/coap.h>

#include "ge_format.h"
#include "recv.h"

static void queue_empty(struct ge_loop *L, const struct sockaddr_in6 *to,
                        unsigned sock, uint16_t mid, uint8_t type) {
  if (L->ackq.n == GE_RECV_BATCH) /* at most one per datagram of a batch */
    return;
  L->ackq.v[L->ackq.n].to = *to;
  L->ackq.v[L->ackq.n].sock = (uint16_t)sock;
  L->ackq.v[L->ackq.n].mid = mid;
  L->ackq.v[L->ackq.n].type = type;
  L->ackq.n++;
}

static void queue_ack(struct ge_loop *L, const struct sockaddr_in6 *to,
                      unsigned sock, uint16_t mid) {
  queue_empty(L, to, sock, mid, GE_ACK);
}

/* A token's 4-byte half, big-endian. */
static uint32_t be32(const uint8_t *t) {
  return (uint32_t)t[0] << 24 | (uint32_t)t[1] << 16 | (uint32_t)t[2] << 8 |
         t[3];
}

/* The observation in an Observe token of this run (obstab.h): the salt
 * with its top bit flipped, then the observation index; -1 when none. */
static int64_t obs_token(const struct ge_loop *L, coap_bin_const_t tok) {
  if (!L->obs.n || tok.length != GE_TOKEN_LEN)
    return -1;
  uint32_t salt = be32(tok.s), idx = be32(tok.s + 4);
  return salt == (L->salt ^ GE_OBS_SALT_BIT) ? (int64_t)idx : -1;
}

/* A response with a token that is not a request's: an observation's
 * (a notification, or the answer to OBS / UNOBS), or unknown. */
static void observe_reply(struct ge_loop *L, const struct sockaddr_in6 *src,
                          unsigned sock, uint32_t peer, uint16_t mid,
                          int64_t now) {
  int64_t obs = obs_token(L, coap_pdu_get_token(L->pdu));
  int r = obs >= 0 ? ge_obs_datagram(L, (uint32_t)obs, peer, now) : -1;
  if (r == -1)
    L->c.unknown_token++;
  else if (r == -2)
    L->c.wrong_source++;
  else if (r == GE_OBS_SEND_ACK)
    queue_ack(L, src, sock, mid);
  else if (r == GE_OBS_SEND_RST)
    queue_empty(L, src, sock, mid, GE_RST);
}

static uint32_t service_option(const coap_pdu_t *pdu) {
  coap_opt_iterator_t it;
  coap_opt_t *o = coap_check_option(pdu, GE_SERVICE_TIME_OPTION, &it);
  if (!o || coap_opt_length(o) > 4)
    return UINT32_MAX;
  unsigned v = coap_decode_var_bytes(coap_opt_value(o), coap_opt_length(o));
  return v >= UINT32_MAX ? UINT32_MAX - 1 : (uint32_t)v;
}

static void empty_message(struct ge_loop *L, uint8_t type, uint16_t mid,
                          uint32_t peer, unsigned sock, int64_t now) {
  if (type != GE_ACK && type != GE_RST) {
    L->c.unexpected_message++; /* CoAP ping from the device */
    return;
  }
  int64_t rank =
      ge_plan_mid_lookup(L->plan, peer, sock, mid, L->peer_sent[peer]);
  /* a request no longer in memory is finished: unmatched, as before */
  int64_t idx = rank >= 0 ? ge_rankq_find(&L->rq[peer], (uint32_t)rank) : -1;
  struct ge_rec *s = idx >= 0 ? ge_win_at(&L->win, (uint64_t)idx) : NULL;
  if (type == GE_ACK) {
    if (!s || s->state != GE_WAIT || L->cfg->coap_type != GE_CON) {
      L->c.unmatched_empty_ack++;
      /* a repeated empty ACK: an answer to a copy sent again */
      if (s && (s->state == GE_SEPARATE || s->state == GE_OK ||
                s->state == GE_ERROR))
        ge_state_duplicate(L, (uint32_t)idx, s, peer, type, now);
      return;
    }
    /* Separate response follows: stop retransmitting, wait for it. The
     * ACK is the RTT sample (the response will not be one). */
    ge_state_rtt(L, (uint32_t)idx, now);
    L->c.empty_acks++;
    s->state = GE_SEPARATE;
    s->gen++;
    struct ge_timer t = {.deadline = now + L->cfg->timeout_ns,
                         .idx = (uint32_t)idx,
                         .gen = s->gen};
    if (ge_heap_push(&L->heap, t))
      ge_state_finish(L, (uint32_t)idx, GE_TIMEOUT);
    return;
  }
  if (!s || (s->state != GE_WAIT && s->state != GE_SEPARATE)) {
    L->c.unmatched_rst++;
    return;
  }
  L->c.rsts++;
  ge_state_finish(L, (uint32_t)idx, GE_ERROR);
}

/* The request index in a token of this run, of a request sent already
 * (requests go out in order); -1 when it is none. */
static int64_t token_index(const struct ge_loop *L, coap_bin_const_t tok) {
  if (tok.length != GE_TOKEN_LEN)
    return -1;
  uint32_t salt = be32(tok.s), idx = be32(tok.s + 4);
  return salt == L->salt && idx < L->next ? (int64_t)idx : -1;
}

/* A response to request idx whose row is written and its record freed:
 * what is left is whether it timed out, for the last 2^GE_DONE_BITS
 * requests (older ones are counted late); its source cannot be checked
 * any more. */
static void row_written(struct ge_loop *L, uint32_t idx, uint32_t peer,
                        uint8_t type, int64_t now) {
  uint64_t bit = idx & ((1u << GE_DONE_BITS) - 1);
  if (L->next - idx > (1u << GE_DONE_BITS) ||
      (L->timed_out[bit / 64] >> (bit % 64) & 1)) {
    L->c.late_response++;
    return;
  }
  L->c.duplicate_response++;
  ge_state_duplicate(L, idx, NULL, peer, type, now);
}

void ge_recv_datagram(struct ge_loop *L, const uint8_t *buf, size_t len,
                      bool truncated, const struct sockaddr_in6 *src,
                      unsigned sock, int64_t now) {
  if (truncated || len < 4) {
    L->c.truncated++;
    return;
  }
  int64_t peer = sock < L->nsock ? ge_plan_peer_of(L->plan, src, sock) : -1;
  if (peer < 0) {
    L->c.unknown_source++;
    return;
  }
  ge_state_heard(L, (uint32_t)peer, now); /* the peer responds */
  if (!coap_pdu_parse(COAP_PROTO_UDP, buf, len, L->pdu)) {
    L->c.unparseable++;
    return;
  }
  uint8_t type = (uint8_t)coap_pdu_get_type(L->pdu);
  uint8_t code = (uint8_t)coap_pdu_get_code(L->pdu);
  uint16_t mid = (uint16_t)coap_pdu_get_mid(L->pdu);
  if (code == 0) {
    empty_message(L, type, mid, (uint32_t)peer, sock, now);
    return;
  }
  if (code >> 5 == 0 || type == GE_RST) {
    L->c.unexpected_message++; /* a request, or a non-empty RST */
    return;
  }
  int64_t tidx = token_index(L, coap_pdu_get_token(L->pdu));
  if (tidx < 0) {
    observe_reply(L, src, sock, (uint32_t)peer, mid, now);
    return;
  }
  uint32_t idx = (uint32_t)tidx;
  if (idx < L->win.base) {
    if (type == GE_CON)
      queue_ack(L, src, sock, mid);
    row_written(L, idx, (uint32_t)peer, type, now);
    return;
  }
  struct ge_rec *s = ge_win_at(&L->win, idx);
  if (s->state == GE_HELD) { /* not sent yet: no response can be for it */
    L->c.unknown_token++;
    return;
  }
  if (L->plan->devs[s->dev].peer != (uint32_t)peer) {
    L->c.wrong_source++;
    return;
  }
  /* A CON response is acknowledged even when it is a duplicate: our
   * earlier ACK may have been lost (RFC 7252 section 4.2). */
  if (type == GE_CON)
    queue_ack(L, src, sock, mid);
  if (s->state == GE_TIMEOUT) {
    L->c.late_response++;
    return;
  }
  if (s->state != GE_WAIT && s->state != GE_SEPARATE) {
    L->c.duplicate_response++;
    ge_state_duplicate(L, idx, s, (uint32_t)peer, type, now);
    return;
  }
  /* the first answer of a CON (piggybacked, or a separate response whose
   * empty ACK was lost) is its RTT sample */
  if (s->state == GE_WAIT && L->cfg->coap_type == GE_CON)
    ge_state_rtt(L, idx, now);
  s->recv_ns = now - L->t0;
  s->code = code;
  s->service_us = service_option(L->pdu);
  ge_state_finish(L, idx, code >> 5 == 2 ? GE_OK : GE_ERROR);
}
