/* The single busy loop: the sockets, sending at trace time,
 * retransmission and timeouts, reading replies, the streaming work in the
 * gaps of the schedule. */
#ifndef GE_LOOP_H
#define GE_LOOP_H

#include "err.h"
#include "state.h"

/* The sockets and the epoll set (after ge_state_init): 0 or -1 (e). */
int ge_loop_open(struct ge_loop *L, struct ge_err *e);
/* Runs until every request is final: 0, or -1 (e). */
int ge_loop_run(struct ge_loop *L, struct ge_err *e);
/* Closes what ge_loop_open opened (also after a failed open). */
void ge_loop_close(struct ge_loop *L);

#endif
