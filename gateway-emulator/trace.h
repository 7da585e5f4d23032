/* The trace CSV (docs/formats.md) -> requests: a cursor over the mapped
 * text, and the scan that checks every line and builds the plan before
 * anything is sent. */
#ifndef GE_TRACE_H
#define GE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "hosts.h"
#include "lines.h"
#include "plan.h"

/* One request line of the trace. */
struct ge_req {
  uint64_t ts_us, uri_off; /* uri_off: the URI text in plan->text */
  uint32_t dev, tmpl;
  uint32_t obs; /* OBS, UNOBS rows: the observation; else UINT32_MAX */
  uint16_t uri_len;
};
/* A cursor over the trace text, line by line. Pages behind it are given
 * back (MADV_DONTNEED) so that reading a trace of any length keeps only a
 * few MB of it resident. */
struct ge_cursor {
  const char *name;
  struct ge_lines it;
  bool seen_content;
  uint64_t prev_ts;
  size_t n;            /* requests returned */
  size_t nobs, nunobs; /* OBS and UNOBS rows returned */
  size_t released;
};
void ge_cursor_init(struct ge_cursor *c, const struct ge_plan *p,
                    const char *name);
/* 1: the next request in *r; 0: end of the trace; -1: bad line (e).
 * Before ge_plan_finish it adds devices and templates; after it, the
 * tables are frozen and a line naming anything new is an error. */
int ge_cursor_next(struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e);
/* Same for an already frozen plan (run time, --dump-plan). */
int ge_cursor_read(const struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e);
/* Gives back the pages of p->text below `upto` (a byte offset) that are
 * whole and not given back yet, in steps of at least 256 KB. */
void ge_text_release(const struct ge_plan *p, size_t *released, size_t upto);

struct ge_trace_src {
  void *map;
  size_t len;
  int fd; /* open while mapped: the keeper reads from it (keep.h) */
};
/* Maps the trace and scans it: every line checked, devices, peers and
 * templates built, counts, EXCHANGE_LIFETIME window maxima and the
 * expected inter-arrival distribution; nothing per request is kept. */
int ge_trace_load(struct ge_plan *p, struct ge_trace_src *src, const char *path,
                  const struct ge_hosts *h, struct ge_err *e);
int ge_trace_parse_buf(struct ge_plan *p, const char *name, const char *buf,
                       size_t len, const struct ge_hosts *h, struct ge_err *e);
void ge_trace_unmap(struct ge_trace_src *src);

#endif
