/* Real-time scheduling of the loop: SCHED_FIFO when asked (falling back to
 * SCHED_OTHER with the reason recorded), a leaky bucket that keeps the
 * loop's running time inside the container's RT budget so that the kernel
 * never throttles it, and stall and hold counters (gaps in the loop it did
 * not sleep for, during which it was preempted or throttled, or waited in
 * the kernel: a major fault, a blocking write).
 *
 * Why the bucket keeps the kernel from throttling. Let r/P be the RT
 * budget (runtime r per period P), m the margin (GE_RT_MARGIN_PPM of P),
 * f' = r/P - m the bucket's drain rate and C <= m*P/2 its capacity. The
 * bucket's level is L(t) = max over s <= t of [R(s,t) - f'*(t-s)], R the
 * loop's wall-clock running time (an upper bound of the CPU time the
 * kernel charges it: time it was preempted is counted as running), so for
 * every interval R(a,b) <= f'*(b-a) + L(b). The loop checks the level
 * once per iteration and yields when it reaches C, so L never exceeds
 * C + e, e one iteration's running time (well under a millisecond: at
 * most GE_SEND_BURST sends and a bounded drain). The kernel keeps a
 * running total rt_time per group and CPU, lowers it by r at each period
 * boundary and throttles once it exceeds r. Over the current partial
 * period d < P and k whole periods before it, rt_time <= R - k*r
 * <= f'*(k*P + d) + C + e - k*r = -k*m*P + f'*d + C + e
 * <= f'*P + C + e = r - m*P + C + e <= r - m*P/2 + e < r
 * for e < m*P/2 (15 ms with P = 1 s): never throttled. */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "clock.h"
#include "json.h"
#include "rt.h"

/* A send due during a forced yield is late by up to the yield plus the
 * wake-up: about 75 us with 50 us yields, 125 us with 100 us (docs/bench-ge.md,
 * "Rerun on a quiet machine"). */
#define GE_RT_MARGIN_PPM 30000    /* 3 % of the period */
#define GE_RT_YIELD_NS 50000      /* one forced yield */
#define GE_RT_GAP_MIN_NS 200000   /* idle in a gap only if at least this */
#define GE_RT_WAKE_EARLY_NS 50000 /* and wake this long before the send */
#define GE_RT_DEFAULT_PERIOD_NS 1000000000LL
#define GE_RT_POLL_NS 1000000 /* waiting for FIFO to be given */

int ge_rt_check_budget(int64_t runtime_us, int64_t period_us) {
  if (period_us < 1000 || period_us > 1000000 || runtime_us < 1 ||
      runtime_us > period_us)
    return -1;
  /* The drain rate must stay positive after the margin. */
  return runtime_us * 1000000 / period_us > GE_RT_MARGIN_PPM ? 0 : -1;
}

/* The thread's counters now into rt (ivcsw -1: unknown, which cannot
 * happen with valid arguments and disables stalls and holds). */
static void snapshot(struct ge_rt *rt) {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru)) {
    rt->ivcsw = -1;
    return;
  }
  rt->ivcsw = ru.ru_nivcsw;
  rt->vcsw = ru.ru_nvcsw;
  rt->majflt = ru.ru_majflt;
  rt->cpu_ns =
      ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
      ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

void ge_rt_init(struct ge_rt *rt, const struct ge_config *cfg) {
  memset(rt, 0, sizeof *rt);
  rt->requested_fifo = cfg->sched_fifo;
  rt->priority = cfg->rt_prio;
  rt->budget_us = cfg->rt_budget_us;
  rt->period_us = cfg->rt_period_us;
  rt->window_ns =
      cfg->rt_period_us ? cfg->rt_period_us * 1000 : GE_RT_DEFAULT_PERIOD_NS;
}

/* SCHED_FIFO already in force, set on this process from outside: its
 * priority in *prio. */
static bool fifo_given(int *prio) {
  struct sched_param sp;
  if (sched_getscheduler(0) != SCHED_FIFO || sched_getparam(0, &sp))
    return false;
  *prio = sp.sched_priority;
  return true;
}

/* A GE that may not take SCHED_FIFO itself (an unprivileged container:
 * no CAP_SYS_NICE) is given it by its supervisor, which is root on the
 * host (the harness: sched_setscheduler on the container's process); so
 * EPERM is retried every GE_RT_POLL_NS until `deadline`. */
int ge_rt_enter(struct ge_rt *rt, int64_t deadline) {
  if (rt->requested_fifo) {
    struct sched_param sp = {.sched_priority = rt->priority};
    for (;;) {
      if (fifo_given(&rt->priority)) {
        rt->fifo = rt->given = true;
        break;
      }
      if (sched_setscheduler(0, SCHED_FIFO, &sp) == 0) {
        rt->fifo = true;
        break;
      }
      int err = errno;
      struct timespec poll_ts = {0, GE_RT_POLL_NS};
      if (err != EPERM || ge_now_ns() + GE_RT_POLL_NS > deadline ||
          (nanosleep(&poll_ts, NULL) && errno != EINTR)) {
        snprintf(rt->error, sizeof rt->error,
                 "sched_setscheduler(SCHED_FIFO, %d): %s%s", rt->priority,
                 strerror(err),
                 err == EPERM ? " (and not given from outside in time)" : "");
        break;
      }
    }
    if (rt->fifo) {
      int64_t p = rt->period_us * 1000;
      rt->drain_ppm =
          rt->budget_us * 1000000 / rt->period_us - GE_RT_MARGIN_PPM;
      rt->cap_ns = p / 1000000 * GE_RT_MARGIN_PPM / 2;
      rt->half_ns = rt->cap_ns / 2;
    }
  }
  int64_t now = ge_now_ns();
  rt->last_ns = now;
  rt->window_start_ns = now;
  snapshot(rt);
  rt->majflt_start = rt->majflt;
  return rt->fifo ? 0 : (rt->requested_fifo ? -1 : 0);
}

void ge_rt_leave(struct ge_rt *rt, int64_t now) {
  ge_rt_tick(rt, now);
  long before = rt->majflt_start;
  snapshot(rt);
  rt->majflt_run = rt->ivcsw < 0 ? -1 : rt->majflt - before;
  if (rt->fifo) {
    struct sched_param sp = {.sched_priority = 0};
    /* The results are written after the loop: no reason to hold the
     * budget for that. A failure leaves FIFO on, still inside the kernel's
     * throttle, so it is not an error of the run. */
    (void)sched_setscheduler(0, SCHED_OTHER, &sp);
  }
}

/* Closes the duty windows (of one period each) that ended before now;
 * the running time of the current one is in window_run_ns. */
void ge_rt_windows(struct ge_rt *rt, int64_t now) {
  while (now - rt->window_start_ns >= rt->window_ns) {
    if (rt->window_run_ns > rt->duty_max_ns)
      rt->duty_max_ns = rt->window_run_ns;
    rt->window_run_ns = 0;
    rt->window_start_ns += rt->window_ns;
  }
}

void ge_rt_gap(struct ge_rt *rt, int64_t dt) {
  long iv = rt->ivcsw, v = rt->vcsw, mf = rt->majflt;
  int64_t cpu = rt->cpu_ns;
  snapshot(rt);
  if (iv < 0 || rt->ivcsw < 0)
    return;
  if (rt->ivcsw > iv) {
    rt->stalls++;
    rt->stall_total_ns += dt;
    if (dt > rt->stall_max_ns)
      rt->stall_max_ns = dt;
    return;
  }
  /* a switch or fault from before a deliberate block is counted there
   * (idle: the block's own time is neither running nor off the CPU
   * here), and one carried over from a short gap finds no time off the
   * CPU in a long one that only ran */
  int64_t off = dt - (rt->cpu_ns - cpu);
  if ((rt->vcsw > v || rt->majflt > mf) && off > GE_RT_STALL_GAP_NS) {
    rt->holds++;
    rt->hold_total_ns += off;
    if (off > rt->hold_max_ns)
      rt->hold_max_ns = off;
  }
}

/* [from, to) was spent blocked (not running): everything since the last
 * tick up to `from` was running. */
static void idle(struct ge_rt *rt, int64_t from, int64_t to) {
  ge_rt_tick(rt, from);
  ge_rt_windows(rt, to);
  if (rt->fifo) {
    rt->level_ns -= (to - from) * rt->drain_ppm / 1000000;
    if (rt->level_ns < 0)
      rt->level_ns = 0;
  }
  rt->last_ns = to;
  snapshot(rt); /* switches while blocked are neither stalls nor holds */
}

void ge_rt_blocked(struct ge_rt *rt, int64_t from, int64_t to) {
  if (to - from > 0)
    idle(rt, from, to);
}

/* One forced yield: a plain sleep (a reply cannot cut it short). */
static int yield_once(struct ge_rt *rt, struct ge_err *e) {
  int64_t from = ge_now_ns();
  struct timespec ts = {0, GE_RT_YIELD_NS};
  int rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
  if (rc && rc != EINTR) {
    ge_err_set(e, NULL, 0, "clock_nanosleep", "%s", strerror(rc));
    return -1;
  }
  int64_t to = ge_now_ns();
  rt->yields++;
  rt->yield_ns += to - from;
  idle(rt, from, to);
  return 0;
}

int ge_rt_block(struct ge_rt *rt, int epfd, int64_t timeout_ns,
                struct ge_err *e) {
  struct pollfd pfd = {.fd = epfd, .events = POLLIN};
  struct timespec ts = {timeout_ns / 1000000000LL, timeout_ns % 1000000000LL};
  int64_t from = ge_now_ns();
  int r = ppoll(&pfd, 1, &ts, NULL);
  ge_rt_blocked(rt, from, ge_now_ns());
  if (r < 0 && errno != EINTR) {
    ge_err_set(e, NULL, 0, "ppoll", "%s", strerror(errno));
    return -1;
  }
  return r > 0;
}

int ge_rt_idle(struct ge_rt *rt, int epfd, int64_t next_ns, struct ge_err *e) {
  int64_t gap = next_ns - GE_RT_WAKE_EARLY_NS - ge_now_ns();
  if (gap >= GE_RT_GAP_MIN_NS)
    /* A gap in the schedule: block until shortly before the next send
     * or until a reply arrives (it is then read and stamped at once). */
    return ge_rt_block(rt, epfd, gap, e) < 0 ? -1 : 0;
  while (rt->level_ns >= rt->cap_ns)
    if (yield_once(rt, e))
      return -1;
  return 0;
}

void ge_rt_json(FILE *f, const struct ge_rt *rt) {
  fprintf(f,
          "  \"sched\": {\"policy\": \"%s\", \"requested\": \"%s\", "
          "\"set_by\": %s, \"priority\": ",
          rt->fifo ? "fifo" : "other", rt->requested_fifo ? "fifo" : "other",
          !rt->fifo   ? "null"
          : rt->given ? "\"outside\""
                      : "\"self\"");
  if (rt->requested_fifo)
    fprintf(f, "%d", rt->priority);
  else
    fputs("null", f);
  fputs(", \"error\": ", f);
  if (rt->error[0])
    ge_json_str(f, rt->error);
  else
    fputs("null", f);
  if (rt->period_us)
    fprintf(f, ", \"budget_us\": %lld, \"period_us\": %lld",
            (long long)rt->budget_us, (long long)rt->period_us);
  else
    fputs(", \"budget_us\": null, \"period_us\": null", f);
  int64_t duty =
      rt->duty_max_ns > rt->window_run_ns ? rt->duty_max_ns : rt->window_run_ns;
  fprintf(f,
          ", \"duty_max\": %.4f, \"yields\": %llu, \"yield_us\": %lld, "
          "\"stalls\": %llu, \"stall_max_us\": %lld, \"stall_total_us\": "
          "%lld, \"holds\": %llu, \"hold_max_us\": %lld, \"hold_total_us\": "
          "%lld, \"majflt\": %ld},\n",
          (double)duty / (double)rt->window_ns, (unsigned long long)rt->yields,
          (long long)ge_us(rt->yield_ns), (unsigned long long)rt->stalls,
          (long long)ge_us(rt->stall_max_ns),
          (long long)ge_us(rt->stall_total_ns), (unsigned long long)rt->holds,
          (long long)ge_us(rt->hold_max_ns),
          (long long)ge_us(rt->hold_total_ns), rt->majflt_run);
}
