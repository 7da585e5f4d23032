/* The trace kept in memory ahead of the loop (README.md, "The trace kept
 * resident"). The scan reads the whole trace at load, long before the
 * loop parses a line of it again, and a host may page cold file pages out
 * meanwhile (a DAMON pageout scheme, reclaim): the parse would then wait
 * on the disk inside a page fault, with no system call to see. So in the
 * loop's gaps the keeper checks whether the next chunk is in the page
 * cache (a read with RWF_NOWAIT, which fails rather than wait: mincore
 * cannot tell, for it reports every page resident to a process that does
 * not own the file, as a GE under the harness does not), asks for it to
 * be read in when it is not (MADV_WILLNEED, which does not wait either),
 * and locks it once it is (mlock), never more than a window past the
 * output's release point; ge_text_release unlocks behind. Without
 * RLIMIT_MEMLOCK room it only reads ahead (mode "prefetch"). */
#ifndef GE_KEEP_H
#define GE_KEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plan.h"

#define GE_KEEP_CHUNK (64u << 10)
#define GE_KEEP_MAX (32u << 20)    /* the window at most */
#define GE_KEEP_MIN (1u << 20)     /* less lockable room: prefetch only */
#define GE_KEEP_AHEAD (256u << 10) /* prefetch: checked this far ahead */
#define GE_KEEP_RETRY_NS 1000000   /* a chunk asked for: probed again then */

enum { GE_KEEP_OFF = 0, GE_KEEP_LOCKED, GE_KEEP_PREFETCH_ONLY };

struct ge_keep {
  const char *base; /* the mapped trace; NULL: nothing to keep */
  size_t len;
  int fd;           /* the trace, for the RWF_NOWAIT probe (not owned) */
  bool nowait;      /* the probe works; else mincore (which may not tell) */
  char *buf;        /* the probe's chunk buffer; NULL: nothing to keep */
  size_t window;    /* locked (or read ahead) at most, bytes */
  size_t hi;        /* [.., hi) is handled: locked, or read ahead */
  size_t asked;     /* MADV_WILLNEED asked up to here */
  int64_t retry_ns; /* a chunk being read in: probed again from then */
  int mode;
  int lock_errno; /* why locking stopped mid-run (0: it did not) */
  uint64_t chunks, misses, behind;
  size_t locked_peak;
};

/* Sizes the window from RLIMIT_MEMLOCK; a buffer that is not a mapping
 * (or an empty one) is kept as it is: mode off. fd: the trace's. 0, or
 * -1: out of memory. */
int ge_keep_init(struct ge_keep *k, const struct ge_plan *p, int fd);
void ge_keep_free(struct ge_keep *k);
/* Before the start: locks (or reads) the first window, waiting for it. */
void ge_keep_fill(struct ge_keep *k, size_t released);
/* One chunk in a gap, without waiting for the disk: 1 done (come back),
 * 0 nothing to do now. `released`: the output's release point, `cursor`:
 * the parse cursor (a cursor past hi counts as `behind`), `now`: monotonic
 * ns (a chunk asked for is probed again GE_KEEP_RETRY_NS later). */
int ge_keep_step(struct ge_keep *k, size_t released, size_t cursor,
                 int64_t now);
void ge_keep_json(FILE *f, const struct ge_keep *k);

#endif
