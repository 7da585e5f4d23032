/* What the device counts, printed as one line on stderr at exit and
 * optionally written as JSON (--stats; docs/formats.md "Device stats JSON",
 * mirrored by harness/base/formats.py, checked by
 * harness/tests/test_formats.py). */
#ifndef DEV_COUNTERS_H
#define DEV_COUNTERS_H

#include <stdint.h>
#include <stdio.h>

#include "hist.h"

/* Every counter, in output order: adding a counter is one line here, and
 * the struct field and its key in the stderr line and the JSON follow. */
#define DEV_COUNTERS(X)                                                        \
  X(datagrams)        /* received */                                           \
  X(requests)         /* well-formed requests, duplicates included */          \
  X(served)           /* requests answered (any code), duplicates excluded */  \
  X(ok)               /* of which 2.xx */                                      \
  X(inline_zero)      /* of which answered by the network thread (S = 0) */    \
  X(not_found)        /* 4.04 */                                               \
  X(bad_method)       /* 4.05 */                                               \
  X(bad_option)       /* 4.02 */                                               \
  X(overflow)         /* 5.03: the job queue (--queue) was full */             \
  X(wkc)              /* /.well-known/core answers */                          \
  X(duplicates)       /* requests recognised as retransmissions */             \
  X(dup_replies)      /* ... answered again (finished or separate) */          \
  X(garbage)          /* datagrams that are not CoAP */                        \
  X(ignored)          /* CoAP but nothing to do (responses, stray ACK/RST) */  \
  X(pings)            /* empty CON answered with RST */                        \
  X(dropped)          /* accepted but unanswered at shutdown */                \
  X(send_errors)      /* datagrams sendmmsg failed to send */                  \
  X(dedup_evictions)  /* live exchanges overwritten (--dedup-entries) */       \
  X(dedup_slots)      /* the dedup ring's active slots at the end */           \
  X(separate)         /* separate CON responses sent (S >= 2 s) */             \
  X(retransmits)      /* ... retransmissions of them */                        \
  X(sep_acked)        /* ... ended by the client's empty ACK */                \
  X(sep_reset)        /* ... ended by the client's RST */                      \
  X(sep_gave_up)      /* ... unacknowledged after 4 retransmissions */         \
  X(sep_untracked)    /* ... sent once, the retransmission table full */       \
  X(obs_registered)   /* observations created (RFC 7641 registration) */       \
  X(obs_reregistered) /* registrations that replaced a live one */             \
  X(obs_refused)      /* Observe 0 answered without Observe (not observable,   \
                         not GET) */                                           \
  X(obs_table_full)   /* ... because --observers were all live */              \
  X(obs_cancelled)    /* removed by a GET with Observe 1 */                    \
  X(obs_reset)        /* removed by the client's RST to a notification */      \
  X(obs_gave_up)      /* removed: a CON notification unacknowledged */         \
  X(obs_active)       /* live at exit */                                       \
  X(notify_events)    /* events of all observations, registrations too */      \
  X(notify_sent)      /* new notification messages (not registration           \
                         answers, not retransmissions) */                      \
  X(notify_con)       /* ... of which CON */                                   \
  X(notify_retransmits) /* CON notifications sent again, same bytes */         \
  X(notify_acked)       /* CON notifications acknowledged */                   \
  X(notify_superseded)  /* events never sent: a newer one replaced them */     \
  X(notify_refresh)     /* notifications of an old event before Max-Age */

struct dev_counters {
#define DEV_COUNTER_FIELD(name) uint64_t name;
  DEV_COUNTERS(DEV_COUNTER_FIELD)
#undef DEV_COUNTER_FIELD
};

/* The time histograms (hist.h), in output order after the counters, the
 * first two counting every served request once (so their counts sum to
 * `served`), the third every event notified at once: in the JSON only,
 * not on the stderr line. */
#define DEV_HISTOGRAMS(X)                                                      \
  X(residence_us)  /* the request's receipt to its response's send */          \
  X(queue_wait_us) /* receipt to a worker's pick-up; 0 for inline answers */   \
  X(notify_lag_us) /* an event's scheduled time to its notification's send */

struct dev_hists {
#define DEV_HIST_FIELD(name) struct hist name;
  DEV_HISTOGRAMS(DEV_HIST_FIELD)
#undef DEV_HIST_FIELD
};

/* One line, `key=value` pairs, for stderr. */
void counters_print(FILE *f, const struct dev_counters *c);

/* JSON via temp file + rename: "format", "cpus" (the CPU affinity in
 * force, LIST syntax), the counters, then the histograms; returns 0 or -1
 * (message printed). */
int counters_write_json(const char *file, const char *cpus,
                        const struct dev_counters *c,
                        const struct dev_hists *h);

#endif
