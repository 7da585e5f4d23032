/* Recipe -> bytes, and sendmmsg batching. */
#include "tx.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "dev_format.h"

size_t tx_build(uint8_t *out, struct recipe *rc, const struct registry *reg) {
  size_t h, t;

  if (rc->kind == RC_EMPTY)
    return wire_header(out, rc->type, 0, rc->mid, NULL, 0);
  h = wire_header(out, rc->type, rc->code, rc->mid, rc->token, rc->tkl);
  switch (rc->kind) {
  case RC_OK:
    memcpy(out + h, rc->res->tail, rc->res->tail_len);
    return h + rc->res->tail_len;
  case RC_UNOBS:
    return h + wire_resource_tail_seq(out + h, WIRE_MAX_RESPONSE - h,
                                      rc->res->service_us,
                                      rc->res->payload_bytes, rc->block2);
  case RC_ERR:
    memcpy(out + h, rc->res->err_tail, rc->res->err_tail_len);
    return h + rc->res->err_tail_len;
  case RC_WKC:
    t = wire_wkc_tail(out + h, WIRE_MAX_RESPONSE - h, reg->links,
                      reg->links_len, rc->block2);
    if (t)
      return h + t;
    rc->kind = RC_BARE;
    rc->code = DEV_CODE_BAD_OPTION;
    out[1] = rc->code;
    return h;
  default: return h;
  }
}

void tx_send(struct tx *tx, const struct peer *peer, struct recipe *rc,
             const struct registry *reg) {
  tx_answer(tx, peer, rc, reg, -1);
}

void tx_answer(struct tx *tx, const struct peer *peer, struct recipe *rc,
               const struct registry *reg, int64_t rx_ns) {
  uint8_t *out = tx_slot(tx, peer);

  tx_commit(tx, tx_build(out, rc, reg), rx_ns, -1);
}

uint8_t *tx_slot(struct tx *tx, const struct peer *peer) {
  tx->peers[tx->n] = *peer;
  return tx->buf[tx->n];
}

void tx_commit(struct tx *tx, size_t len, int64_t rx_ns, int64_t ev_ns) {
  unsigned i = tx->n;

  tx->iov[i].iov_base = tx->buf[i];
  tx->iov[i].iov_len = len;
  memset(&tx->msgs[i], 0, sizeof(tx->msgs[i]));
  tx->msgs[i].msg_hdr.msg_name = &tx->peers[i].u.sa;
  tx->msgs[i].msg_hdr.msg_namelen = tx->peers[i].len;
  tx->msgs[i].msg_hdr.msg_iov = &tx->iov[i];
  tx->msgs[i].msg_hdr.msg_iovlen = 1;
  tx->rx_ns[i] = rx_ns;
  tx->ev_ns[i] = ev_ns;
  if (++tx->n == TX_BATCH)
    tx_flush(tx);
}

/* The residences of the batch just sent: one clock read for all. */
static void record(struct tx *tx) {
  struct timespec ts;
  int64_t now;

  if (tx->residence == NULL && tx->lag == NULL)
    return;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
  for (unsigned i = 0; i < tx->n; i++) {
    if (tx->rx_ns[i] >= 0 && tx->residence != NULL)
      hist_add_ns(tx->residence, tx->rx_ns[i], now);
    if (tx->ev_ns[i] >= 0 && tx->lag != NULL)
      hist_add_ns(tx->lag, tx->ev_ns[i], now);
  }
}

void tx_flush(struct tx *tx) {
  unsigned off = 0;

  while (off < tx->n) {
    int r = sendmmsg(tx->fd, tx->msgs + off, tx->n - off, 0);

    if (r > 0) {
      off += (unsigned)r;
      tx->sent += (unsigned)r;
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else if (r < 0 &&
               (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)) {
      /* Send buffer full: dropping is what a loaded device does. */
      tx->errors += tx->n - off;
      break;
    } else {
      /* This datagram cannot be sent (e.g. unreachable peer): skip it. */
      tx->errors++;
      off++;
    }
  }
  record(tx);
  tx->n = 0;
}
