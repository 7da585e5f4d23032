/* Observe (RFC 7641) on the GE's side, the pure part: the freshness of a
 * notification's sequence number (section 3.4) with a 64-entry window
 * below the highest seq seen, the loss of an observation at the end, and
 * the stamps of a wotbench-device notification's payload. No syscalls and
 * no allocation: fuzzed (fuzz/fuzz_obs.c) and replayed by
 * tests/obs_vectors.c. */
#ifndef GE_OBS_H
#define GE_OBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GE_OBS_SEQ_BITS 24
#define GE_OBS_SEQ_MOD (1u << GE_OBS_SEQ_BITS)
#define GE_OBS_SEQ_HALF (1u << (GE_OBS_SEQ_BITS - 1)) /* 2^23 */
#define GE_OBS_WINDOW 64
/* RFC 7641 section 3.4: a notification more than 128 s after the last
 * fresh one is fresh whatever its seq. */
#define GE_OBS_FRESH_NS 128000000000LL

/* A notification's status (the notify CSV's `status`, GE_NOTIFY_STATUSES
 * in this order). */
enum ge_obs_status {
  GE_OBS_REGISTERED = 0, /* the first notification of the observation */
  GE_OBS_FRESH,          /* newer than every earlier one, or a new epoch */
  GE_OBS_REREGISTERED,   /* it answers a re-registration: a new epoch */
  GE_OBS_REORDERED,      /* older, not seen before (a late hole filled) */
  GE_OBS_DUPLICATE,      /* a seq seen before */
  GE_OBS_AFTER_CANCEL,   /* any, after the GE deregistered (UNOBS sent) */
};

/* The seq bookkeeping of one observation. Seqs are unwrapped onto 64 bits
 * starting at 2^32 + the first value, so that older ones stay positive. */
struct ge_obs_seq {
  uint64_t hi;          /* highest unwrapped seq; 0: no notification yet */
  uint64_t win;         /* bit i: hi - 1 - i was seen */
  uint64_t first;       /* lowest unwrapped seq of this epoch */
  uint64_t distinct;    /* registered, fresh, reregistered, reordered */
  uint64_t span_before; /* seqs spanned by the epochs before this one */
  int64_t last_fresh_ns;
};

/* What one notification was. */
struct ge_obs_class {
  uint8_t status; /* enum ge_obs_status */
  bool stale;     /* older by more than the window: counted reordered,
                     not distinct (it may be a duplicate) */
  bool reset;     /* a new epoch: the 128 s rule, or a first one (above) */
  uint32_t gap;   /* fresh, reregistered: seqs skipped below it */
};

/* What is known of a notification besides its seq (ge_obs_classify's
 * flags): a re-registration waits for its answer; deregistered (UNOBS
 * sent); its payload says n=0, the first notification of an observation
 * at the device; its payload has no n (not t=;e=;n=). */
#define GE_OBS_F_REREG 1u
#define GE_OBS_F_ENDED 2u
#define GE_OBS_F_FIRST 4u
#define GE_OBS_F_NO_N 8u

/* Notification seq v (24 bits) at `now_ns` with `flags` (GE_OBS_F_*).
 * Ended: status after_cancel, the bookkeeping still updated. A new epoch
 * starts, with no gap and nothing stale, at the answer to a
 * re-registration (rereg and first; rereg and no n: the first one that
 * is neither a duplicate nor a late one within the window) and at any
 * other first one (n=0) that is neither: a server may begin a new
 * observation at any seq (RFC 7641 4.4), so the jump from the old epoch
 * is no loss; the old epoch's unseen tail stays uncounted. */
void ge_obs_classify(struct ge_obs_seq *s, uint32_t v, int64_t now_ns,
                     unsigned flags, struct ge_obs_class *out);

/* Notifications lost: (last - first + 1) - distinct over every epoch,
 * never below 0. `last` is the device's last seq (option 65001) when
 * have_last, else the highest seen. 0 when none was received. */
uint64_t ge_obs_lost(const struct ge_obs_seq *s, bool have_last, uint32_t last);

/* The stamps of a wotbench-device payload "t=<us>;e=<us>;n=<k>" followed
 * by nothing or by '.' padding; false when it is anything else. */
struct ge_obs_stamps {
  uint64_t t_us, e_us, n;
};
bool ge_obs_parse_stamps(const uint8_t *p, size_t len,
                         struct ge_obs_stamps *out);

#endif
