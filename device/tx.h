/* Outgoing datagrams: responses are built straight into a sendmmsg batch. */
#ifndef DEV_TX_H
#define DEV_TX_H

#include <stdint.h>
#include <sys/socket.h>

#include "hist.h"
#include "peer.h"
#include "recipe.h"
#include "registry.h"
#include "wire.h"

#define TX_BATCH 64

struct tx {
  int fd;
  unsigned n;
  uint64_t sent, errors;
  struct mmsghdr msgs[TX_BATCH];
  struct iovec iov[TX_BATCH];
  struct peer peers[TX_BATCH];
  int64_t rx_ns[TX_BATCH]; /* a first answer's request receipt, else -1 */
  int64_t ev_ns[TX_BATCH]; /* a notification's event time, else -1 */
  struct hist *residence;  /* first answers' receipt-to-send times, or NULL */
  struct hist *lag;        /* notifications' event-to-send times, or NULL */
  uint8_t buf[TX_BATCH][WIRE_MAX_RESPONSE];
};

/* Serializes rc. A /.well-known/core block past the end becomes 4.02 Bad
 * Option (RFC 7959 2.4), which is why rc is not const. Returns the length. */
size_t tx_build(uint8_t *out, struct recipe *rc, const struct registry *reg);

/* Queues rc for peer; sends the batch when it is full. */
void tx_send(struct tx *tx, const struct peer *peer, struct recipe *rc,
             const struct registry *reg);

/* tx_send for the first answer to a request received at rx_ns (monotonic):
 * its residence (receipt to send) goes to tx->residence when sent. */
void tx_answer(struct tx *tx, const struct peer *peer, struct recipe *rc,
               const struct registry *reg, int64_t rx_ns);

/* A datagram the caller builds itself: tx_slot gives the next slot's
 * buffer (WIRE_MAX_RESPONSE bytes) for peer, tx_commit queues its len
 * bytes (rx_ns as tx_answer's; ev_ns >= 0: a notification of the event
 * at ev_ns, whose lag goes to tx->lag when sent). */
uint8_t *tx_slot(struct tx *tx, const struct peer *peer);
void tx_commit(struct tx *tx, size_t len, int64_t rx_ns, int64_t ev_ns);

/* Sends whatever is queued. Datagrams the kernel refuses are counted in
 * errors, never retried (UDP: the client retransmits); their residence
 * counts all the same (they were served: the time to the attempt). */
void tx_flush(struct tx *tx);

#endif
