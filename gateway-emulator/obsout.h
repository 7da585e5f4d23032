/* The notify CSV (--notify-out, docs/formats.md): records of the notify
 * ring formatted into a 1 MB buffer in the loop's gaps and written out in
 * pieces, as the per-request rows (output.c). */
#ifndef GE_OBSOUT_H
#define GE_OBSOUT_H

#include <stddef.h>

#include "obstab.h"
#include "plan.h"

/* Formats up to max records of the ring (oldest first) while the buffer
 * has room: the count. Without a CSV the records are only dropped. */
size_t ge_obs_out_format(const struct ge_plan *p, struct ge_obs_rt *rt,
                         size_t max);
/* One write of up to max formatted bytes: 0, or -1 (errno in out.err). */
int ge_obs_out_write(struct ge_notify_out *o, size_t max);
/* Formatted bytes waiting to be written. */
size_t ge_obs_out_pending(const struct ge_notify_out *o);
/* After the loop: everything formatted and written. 0, or -1. */
int ge_obs_out_finish(const struct ge_plan *p, struct ge_obs_rt *rt);

#endif
