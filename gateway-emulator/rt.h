/* Real-time scheduling of the loop: SCHED_FIFO on/off, the RT-budget
 * bucket, gap idling and forced yields, stall counting, the summary's
 * `sched` object. */
#ifndef GE_RT_H
#define GE_RT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "err.h"

struct ge_rt {
  bool requested_fifo, fifo; /* asked for; in force */
  bool given;                /* FIFO set on it from outside (its supervisor) */
  int priority;
  char error[160]; /* why FIFO was refused ("" when it was not) */
  int64_t budget_us, period_us;
  /* leaky bucket of running time (ns), only under FIFO */
  int64_t drain_ppm, cap_ns, half_ns, level_ns;
  int64_t last_ns; /* last tick: running since then */
  /* running time per window of one period (duty_max) */
  int64_t window_ns, window_start_ns, window_run_ns, duty_max_ns;
  uint64_t yields, stalls, holds;
  int64_t yield_ns, stall_max_ns, stall_total_ns, hold_max_ns, hold_total_ns;
  /* the thread's switches, major faults and CPU time (ns) at the last
   * check (ivcsw -1: unknown), major faults at the start and over the run */
  long ivcsw, vcsw, majflt, majflt_start, majflt_run;
  int64_t cpu_ns;
};
/* A loop gap longer than this is checked: a stall (an involuntary switch
 * in it: preempted, throttled), or a hold: no involuntary switch, but a
 * voluntary one or a major fault that no deliberate block explains, and
 * over 1 ms of the gap off the CPU (the gap less the thread's CPU time in
 * it): the loop waited in the kernel, e.g. for a page of its trace read
 * back from the disk. A hold's length is that time off the CPU. */
#define GE_RT_STALL_GAP_NS 1000000
/* FIFO given from outside must be in force this long before the start. */
#define GE_RT_WAIT_SLACK_NS 2000000

/* 0 when RUNTIME/PERIOD is a usable budget (period 1 ms..1 s). */
int ge_rt_check_budget(int64_t runtime_us, int64_t period_us);
void ge_rt_init(struct ge_rt *rt, const struct ge_config *cfg);
/* Switches to SCHED_FIFO when asked, or waits until `deadline` (monotonic
 * ns) for it to be given from outside; else records why not. */
int ge_rt_enter(struct ge_rt *rt, int64_t deadline);
void ge_rt_leave(struct ge_rt *rt, int64_t now); /* back to SCHED_OTHER */
void ge_rt_gap(struct ge_rt *rt, int64_t dt);    /* slow path of the tick */
void ge_rt_blocked(struct ge_rt *rt, int64_t from, int64_t to);
/* Blocks up to timeout_ns until epfd is readable, to the nanosecond (a
 * CD-GE at a 2 ms interval blocks 1.9 ms, not 1; ppoll on the epoll fd:
 * epoll_pwait2 needs Linux 5.11); the time blocked is neither running time
 * nor a stall. 1: readable, 0: timed out or interrupted, -1: error (e). */
int ge_rt_block(struct ge_rt *rt, int epfd, int64_t timeout_ns,
                struct ge_err *e);
/* Under FIFO with the bucket half full: blocks in a gap before next_ns
 * (waking on a reply on epfd), or yields while the bucket is full. */
int ge_rt_idle(struct ge_rt *rt, int epfd, int64_t next_ns, struct ge_err *e);
void ge_rt_json(FILE *f, const struct ge_rt *rt);
/* Closes the duty windows that ended before now (slow path of the tick). */
void ge_rt_windows(struct ge_rt *rt, int64_t now);

/* Once per loop iteration, no syscall: the time since the last tick was
 * running time. A long gap goes to the slow path (was it preempted?). */
static inline void ge_rt_tick(struct ge_rt *rt, int64_t now) {
  int64_t dt = now - rt->last_ns;
  if (dt <= 0)
    return;
  rt->last_ns = now;
  if (now - rt->window_start_ns >= rt->window_ns)
    ge_rt_windows(rt, now);
  rt->window_run_ns += dt;
  if (rt->fifo)
    rt->level_ns += dt - dt * rt->drain_ppm / 1000000;
  if (dt > GE_RT_STALL_GAP_NS)
    ge_rt_gap(rt, dt);
}

static inline bool ge_rt_wants_idle(const struct ge_rt *rt) {
  return rt->fifo && rt->level_ns >= rt->half_ns;
}

#endif
