/* Every counter of the loop, in summary JSON order: adding a counter is one
 * line here, and the struct field, its summary key and its part of the
 * stderr line follow (counters.c). GE_COUNTERS are top-level summary keys;
 * GE_GARBAGE_COUNTERS are datagrams counted and ignored, by kind, in the
 * summary's "garbage" object (with their "total"). */
#ifndef GE_COUNTERS_H
#define GE_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GE_COUNTERS(X)                                                         \
  X(ok)                                                                        \
  X(timeouts)                                                                  \
  X(errors)                                                                    \
  X(send_errors)                                                               \
  X(retransmissions)                                                           \
  X(spurious_retransmissions) /* duplicate ACKs after a retransmission */      \
  X(late_sends)                                                                \
  X(empty_acks)                                                                \
  X(rsts)                                                                      \
  X(acks_sent)                                                                 \
  X(ack_send_errors)                                                           \
  X(mid_reuse_early)    /* (socket, peer, MID) reused within 247 s */          \
  X(tx_stamps_kernel)   /* sent stamps that are the kernel's (txstamp.h) */    \
  X(tx_stamps_fallback) /* sent stamps taken in user space */
#define GE_GARBAGE_COUNTERS(X)                                                 \
  X(truncated)                                                                 \
  X(unparseable)                                                               \
  X(unknown_source)                                                            \
  X(unknown_token)                                                             \
  X(wrong_source)                                                              \
  X(unmatched_empty_ack)                                                       \
  X(unmatched_rst)                                                             \
  X(unexpected_message)                                                        \
  X(late_response)                                                             \
  X(duplicate_response)
struct ge_counters {
#define GE_COUNTER_FIELD(name) uint64_t name;
  GE_COUNTERS(GE_COUNTER_FIELD)
  GE_GARBAGE_COUNTERS(GE_COUNTER_FIELD)
#undef GE_COUNTER_FIELD
};

/* The counters as summary JSON members, one "  key: value,\n" line each,
 * then the "garbage" object. */
void ge_counters_json(FILE *f, const struct ge_counters *c);
/* The end-of-run stderr line: "wotbench-ge: N requests in T s: key=value
 * ... garbage=TOTAL" with the summary's keys. */
void ge_counters_print(FILE *f, const struct ge_counters *c, size_t requests,
                       double seconds);

#endif
