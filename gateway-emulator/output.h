/* The CSVs the GE writes: the per-request rows while the run goes on, and
 * the --dump-plan table. */
#ifndef GE_OUTPUT_H
#define GE_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "hosts.h"
#include "plan.h"

struct ge_loop; /* state.h */

struct ge_out {
  int fd;
  char *buf;
  size_t start, len; /* buf[start, len): formatted, not written yet */
  uint64_t row;      /* next row to format (trace index) */
  size_t released;   /* trace text given back below this offset */
  size_t peak;       /* most bytes formatted and not yet written */
  uint64_t written, writes;
  int err; /* errno of a failed write */
};
#define GE_OUT_BUF (1u << 20)

/* The CSV while the run goes on: header into the buffer; formats up to
 * max final rows in trace order (freeing chunks behind them); one write
 * of up to max bytes. */
int ge_out_open(struct ge_out *o, int fd);
size_t ge_out_format(struct ge_loop *L, size_t max);
int ge_out_write(struct ge_out *o, size_t max);
bool ge_out_full(const struct ge_out *o); /* no room for another row */
/* After the loop: every remaining row, everything written. */
int ge_out_finish(struct ge_loop *L, struct ge_err *e);
void ge_out_free(struct ge_out *o);

/* --dump-plan: `index,device_id,peer,socket,mid,window_max,k` for every
 * request of a finished plan, streamed by one pass of a cursor. */
int ge_out_dump_plan(const struct ge_plan *p, const struct ge_hosts *h,
                     const char *path, struct ge_err *e);

#endif
