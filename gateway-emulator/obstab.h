/* Observe (RFC 7641) at run time: the observation table (one entry per
 * OBS row of the trace), what a datagram with an observation's token does
 * to it (the reg and dereg rows finished, a notification classified by
 * obs.c and pushed to the notify ring), which observations are due for a
 * re-registration, and the loss per observation at the end. No syscalls:
 * the loop sends the ACKs, RSTs and re-registrations (recv.c, loop.c). */
#ifndef GE_OBSTAB_H
#define GE_OBSTAB_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "obs.h"

struct ge_loop; /* state.h */

/* Where an observation stands. */
enum ge_obs_state {
  GE_OBS_PENDING = 0, /* its OBS row not sent yet */
  GE_OBS_REGISTERING, /* OBS sent */
  GE_OBS_ACTIVE,      /* a response with Observe came */
  GE_OBS_REFUSED,     /* answered without Observe, an error, or timed out */
  GE_OBS_CANCELLING,  /* UNOBS sent */
  GE_OBS_ENDED,       /* the UNOBS answer (without Observe) came */
};

struct ge_obs {
  struct ge_obs_seq seq;
  int64_t base_ns;       /* re-registration clock: last fresh one, or a send */
  uint32_t max_age;      /* s, from the last notification's Max-Age (14) */
  uint32_t last_dev_seq; /* option 65001 of the UNOBS answer */
  uint32_t tmpl;         /* the OBS row's template */
  uint16_t sock;         /* the OBS row's socket */
  uint8_t state;
  bool has_last; /* last_dev_seq came */
  bool rereg;    /* a re-registration is unanswered */
};

/* The summary's "observe" object, in its order (counters.c's pattern). */
#define GE_OBS_COUNTERS(X)                                                     \
  X(observations)                                                              \
  X(registered)                                                                \
  X(refused)                                                                   \
  X(reregistrations)                                                           \
  X(rereg_answered)                                                            \
  X(cancelled)                                                                 \
  X(dropped_by_device)                                                         \
  X(notifications)                                                             \
  X(fresh)                                                                     \
  X(reordered)                                                                 \
  X(duplicates)                                                                \
  X(after_cancel)                                                              \
  X(stale)                                                                     \
  X(unstamped)                                                                 \
  X(seq_resets)                                                                \
  X(lost)                                                                      \
  X(tail_unknown)                                                              \
  X(con_notifications)                                                         \
  X(acks_sent)                                                                 \
  X(rsts_sent)                                                                 \
  X(rows_dropped) /* notify CSV rows lost to a full ring and buffer */
struct ge_obs_counters {
#define GE_OBS_COUNTER_FIELD(name) uint64_t name;
  GE_OBS_COUNTERS(GE_OBS_COUNTER_FIELD)
#undef GE_OBS_COUNTER_FIELD
};

/* One notification as read, formatted later (obsout.c). */
struct ge_notify_rec {
  int64_t recv_us;    /* rel. t0, as the request rows */
  int64_t latency_us; /* kernel realtime stamp - t */
  int64_t t_minus_e;  /* device send - event, us */
  uint64_t n;
  uint32_t obs, seq, gap;
  uint8_t type, status;
  bool stamped;
};
#define GE_NOTIFY_RING (1u << 16)
#define GE_NOTIFY_BUF (1u << 20)

/* The notify CSV (--notify-out): a ring of records and a buffer of
 * formatted rows written in the loop's gaps (obsout.c). */
struct ge_notify_out {
  struct ge_notify_rec *ring;
  size_t cap;       /* ring entries (GE_NOTIFY_RING; less in the fuzzer) */
  size_t head, len; /* records [head, head + len) mod cap */
  size_t bufcap;    /* buf's bytes (GE_NOTIFY_BUF; less in the fuzzer) */
  int fd;           /* -1: no CSV */
  char *buf;
  size_t start, end, peak; /* buf[start, end): formatted, not written */
  uint64_t writes, forced;
  int err;
};

struct ge_obs_rt {
  struct ge_obs *v; /* plan->nobs entries; NULL: no OBS rows */
  size_t n;
  struct ge_obs_counters c;
  struct ge_hist latency, age;
  struct ge_notify_out out;
  int64_t real_off_ns; /* realtime - monotonic of the batch being read */
  int64_t sweep_ns;    /* next re-registration sweep (monotonic ns) */
  size_t sweep_at;     /* where the sweep goes on */
  uint16_t mid;        /* re-registrations' MIDs */
};

/* What the loop owes the sender of a datagram. */
enum ge_obs_reply { GE_OBS_NOTHING = 0, GE_OBS_SEND_ACK, GE_OBS_SEND_RST };

/* Table of n observations; fd < 0: no CSV. 0, or -1 out of memory (rt is
 * still freeable). */
int ge_obs_init(struct ge_obs_rt *rt, size_t n, int fd, size_t ring,
                size_t buf);
void ge_obs_free(struct ge_obs_rt *rt);
/* An OBS or UNOBS row (method code `code`) of observation `obs` goes out
 * now on socket `sock` with template `tmpl`. */
void ge_obs_sent(struct ge_loop *L, uint32_t obs, uint8_t code, uint16_t sock,
                 uint32_t tmpl, int64_t now);
/* A response (code != 0) whose token carries observation `obs`, from
 * `peer`, at `now` (monotonic ns); L->pdu holds it parsed. Returns what
 * to send back; -1: not an observation of this run (unknown token), -2:
 * from the wrong source. */
int ge_obs_datagram(struct ge_loop *L, uint32_t obs, uint32_t peer,
                    int64_t now);
/* The next observation due for a re-registration at `now`, in the
 * current sweep (-1: none left in this sweep). Marks it re-registering. */
int64_t ge_obs_rereg_due(struct ge_loop *L, int64_t now);
/* After the run: loss per observation summed up (lost, tail_unknown). */
void ge_obs_finish(struct ge_obs_rt *rt);
/* The summary's `"observe": {...},` line(s), or `"observe": null,`. */
void ge_obs_json(FILE *f, const struct ge_obs_rt *rt);
/* The stderr line's " observe: key=value ..." part (nothing without OBS
 * rows). */
void ge_obs_print(FILE *f, const struct ge_obs_rt *rt);

#endif
