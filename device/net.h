/* State of the network thread, shared by loop.c (events, sockets) and
 * dispatch.c (what to answer). Private to the device. */
#ifndef DEV_NET_H
#define DEV_NET_H

#include <coap3/coap.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cli.h"
#include "counters.h"
#include "dedup.h"
#include "observe.h"
#include "peer.h"
#include "registry.h"
#include "sepresp.h"
#include "tx.h"
#include "wire.h"
#include "workers.h"

#define RX_BATCH 64
#define RX_BATCHES_PER_WAKE 8 /* then serve completions, so neither starves */
#define RX_MAX 2048 /* a CoAP/UDP message is < 1280 bytes in practice */
#define SEP_TABLE 4096
#define MAX_WAIT_MS 100 /* completions are also drained on this tick */

struct loop {
  const struct dev_config *cfg;
  const struct registry *reg;
  struct dev_counters *c;
  struct dev_hists *h; /* written by this thread only */
  struct dedup dd;
  struct sepresp sep;
  struct workers wk;
  struct observe ob;
  coap_pdu_t *pdu;
  int sock, sigfd, epfd, tfd; /* tfd: a timerfd at the observations' due */
  int64_t armed;              /* the tfd's expiry, INT64_MAX disarmed */
  int stop;
  uint16_t next_mid;
  struct wire_request req;
  uint32_t done[256];
  struct mmsghdr rmsgs[RX_BATCH];
  struct iovec riov[RX_BATCH];
  struct peer rpeers[RX_BATCH];
  uint8_t rbuf[RX_BATCH][RX_MAX];
  struct tx tx;
};

/* One received datagram. */
void dispatch_datagram(struct loop *L, const uint8_t *buf, size_t len,
                       const struct peer *p, int64_t now);

/* Answers every job the workers finished. */
void dispatch_completions(struct loop *L, int64_t now);

/* sep_send_fn: a retransmission of a separate response. */
void dispatch_resend(void *ctx, const struct peer *p, const struct recipe *rc);

#endif
