/* The third tier of state: the loop's own struct, with a bounded window
 * of per-request records; setting it up, parsing requests into it ahead
 * of their sends, ending a request, and freeing it. No syscalls: the
 * datagram fuzzer runs on this state alone (loop.c adds the sockets). */
#ifndef GE_STATE_H
#define GE_STATE_H

#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cc.h"
#include "cli.h"
#include "counters.h"
#include "err.h"
#include "hist.h"
#include "hosts.h"
#include "http.h"
#include "keep.h"
#include "obstab.h"
#include "output.h"
#include "plan.h"
#include "reuse.h"
#include "rt.h"
#include "rtolog.h"
#include "timers.h"
#include "trace.h"
#include "txstamp.h"
#include "window.h"

#define GE_RECV_BATCH 32   /* datagrams per recvmmsg */
#define GE_FEED_AHEAD 4096 /* requests parsed ahead of the sends */
/* Responses to requests whose rows are written already: whether they had
 * timed out (late_response) is kept for the last 2^24 requests. */
#define GE_DONE_BITS 24

/* Empty ACKs owed for CON responses of one receive batch, and RSTs for
 * notifications of ended observations. */
struct ge_ackq {
  struct {
    struct sockaddr_in6 to;
    uint16_t sock, mid;
    uint8_t type; /* GE_ACK or GE_RST */
  } v[GE_RECV_BATCH];
  unsigned n;
};

/* Congestion control of one peer (README.md, "Congestion control"): the
 * strategy's estimator and what fed it. */
struct ge_cc_peer {
  struct ge_cc cc;
  uint32_t inflight;             /* CON exchanges in flight (sent, not ended) */
  uint64_t exchanges;            /* CON first transmissions */
  uint64_t strong, weak, unused; /* RTT samples: used, by kind; unused */
};

/* NSTART and PROBING_RATE of one peer (held.c; README.md, "NSTART and
 * PROBING_RATE"): its due requests held back, in trace order. */
struct ge_held_peer {
  struct ge_ring q;   /* uint32_t trace indices */
  int64_t heard_ns;   /* the last datagram from the peer (monotonic ns) */
  int64_t probe_next; /* silent: no NON send before this (monotonic ns) */
  int64_t wake_ns;    /* the wake timer pushed for probe_next; 0: none */
  bool silent;        /* a NON timed out with nothing heard since its send */
  bool ready;         /* in the loop's `ready` list */
};
/* The summary's congestion.held object. */
struct ge_held_stats {
  uint64_t nstart_waits, probing_waits; /* requests held, by cause */
  uint64_t wait_max_us;    /* longest wait of a held request that was sent */
  uint64_t queue_max;      /* most requests held at one peer at once */
  uint64_t queue_timeouts; /* held past --timeout-ms: timeouts, never sent */
};

struct ge_txq; /* loop.c */

struct ge_loop {
  const struct ge_config *cfg;
  const struct ge_plan *plan;
  const struct ge_hosts *hosts;
  struct ge_cursor cur; /* the next line to parse */
  struct ge_keep keep;  /* the trace kept resident ahead of cur (keep.h) */
  bool feed_done;
  struct ge_window win;
  struct ge_rankq *rq;   /* per peer */
  struct ge_sentq *sq;   /* per peer (used when it outnumbers a cycle) */
  uint32_t *peer_parsed; /* per peer: requests parsed so far */
  uint32_t *peer_sent;   /* per peer: requests sent so far */
  uint64_t *timed_out;   /* ring of 2^GE_DONE_BITS bits */
  uint64_t *retried;     /* likewise: the request had retransmissions */
  struct ge_out out;
  struct ge_rto rto; /* --rto-out (rtolog.c); rto.ev NULL: off */
  struct ge_hist rit_submitted, send_lag, response, latency;
  struct ge_tx tx;    /* the kernel's send stamps (txstamp.h) */
  struct ge_txq *txq; /* their error-queue buffers (loop.c) */
  int64_t sent_first_us, sent_prev_us;
  uint64_t feed_forced;   /* parses forced in front of a due send */
  uint64_t output_forced; /* rows formatted in front of the sends (backlog) */
  bool oom;
  struct ge_heap heap;
  struct ge_cc_peer *ccp;  /* per peer */
  struct ge_hist timer0;   /* CON: the first timeout of each exchange, us */
  struct ge_held_peer *hp; /* per peer */
  struct ge_ring ready;    /* uint32_t: peers whose held requests may go */
  struct ge_held_stats held;
  struct ge_counters c;
  struct ge_ackq ackq;
  struct ge_obs_rt obs;   /* Observe: set up by ge_obs_init (main.c) */
  struct coap_pdu_t *pdu; /* one reusable parse target */
  uint32_t salt;
  uint64_t rng;
  struct ge_http http; /* --north http: the connection pool (http.c) */
  int *socks;
  unsigned nsock;
  int epfd;
  int64_t t0, t_end; /* monotonic ns */
  int64_t start_epoch_us;
  cpu_set_t cpus; /* the CPU affinity in force during the run */
  struct ge_rt rt;
  size_t next, outstanding;
  size_t undrained;   /* sends since the replies were last read */
  int64_t drained_at; /* monotonic ns of that last read */
  const volatile sig_atomic_t *stop; /* SIGINT / SIGTERM: abandon the run */
};

/* State without sockets; out_fd < 0: no CSV. On failure (-1: out of
 * memory) L is still freeable. */
int ge_state_init(struct ge_loop *L, const struct ge_config *cfg,
                  const struct ge_plan *p, const struct ge_hosts *h,
                  uint32_t salt, uint64_t seed, int out_fd);
/* Parses up to max more requests into the window: the count, or -1. */
long ge_state_feed(struct ge_loop *L, unsigned max, struct ge_err *e);
/* Request idx counts as sent at `now` (monotonic ns): its sent stamp,
 * which the kernel's may replace (txstamp.h); once it is settled, in the
 * order of the sends: the send-lag and submitted inter-arrival
 * distributions, late_sends, tx_stamps_*. 0, or -1 out of memory. */
int ge_state_sent(struct ge_loop *L, uint32_t idx, int64_t now);
/* The sent stamps settled so far go into the statistics (in send order);
 * `all`: every one still waiting for its kernel stamp is settled with its
 * own (the end of the run). 0, or -1 out of memory. */
int ge_state_tx_settle(struct ge_loop *L, bool all);
/* Request idx takes the next rank of its peer at at_ns (rel. t0: its
 * sent_ns, or its give-up): its (socket, MID) is in use from then,
 * checked for early reuse. Each peer's requests take their ranks in
 * trace order. 0, or -1 out of memory. */
int ge_state_take_rank(struct ge_loop *L, uint32_t idx, int64_t at_ns);
/* A datagram came from `peer` at `now`: PROBING_RATE's silence ends. */
void ge_state_heard(struct ge_loop *L, uint32_t peer, int64_t now);
/* Request idx ends in `state` (GE_OK, GE_ERROR or GE_TIMEOUT). A CON
 * exchange that ends frees an NSTART slot of its peer; a NON that times
 * out with nothing heard from its peer since its send makes the peer
 * silent (PROBING_RATE). */
void ge_state_finish(struct ge_loop *L, uint32_t idx, uint8_t state);
/* Request idx (CON, in GE_WAIT) is answered at `now` (monotonic ns), by
 * an ACK or a response: its RTT, from the first transmission, is fed to
 * its peer's congestion control with the kind its retransmissions give. */
void ge_state_rtt(struct ge_loop *L, uint32_t idx, int64_t now);
/* An answer of type `type` to request idx, whose exchange was answered
 * already (s: its record, NULL when freed) came from `peer` at `now`: a
 * duplicate. An ACK (piggybacked response or empty ACK) to a CON exchange
 * that had retransmissions shows a spurious retransmission (README.md,
 * "Congestion control"): counted, and logged with --rto-out. */
void ge_state_duplicate(struct ge_loop *L, uint32_t idx, const struct ge_rec *s,
                        uint32_t peer, uint8_t type, int64_t now);
/* Everything but the sockets (ge_loop_close). */
void ge_state_free(struct ge_loop *L);

#endif
