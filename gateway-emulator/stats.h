/* The summary JSON of a completed run. */
#ifndef GE_STATS_H
#define GE_STATS_H

#include "err.h"
#include "state.h"

/* Writes the summary to fd (through a dup: fd stays open): 0 or -1 (e). */
int ge_stats_write(const struct ge_loop *L, int fd, struct ge_err *e);

#endif
