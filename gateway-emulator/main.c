/* wotbench-ge: load and check everything, pin (or read the affinity
 * inherited), wait for the start instant, run the loop, then write the
 * results atomically. Each step is one function over `struct run`, which
 * holds everything main owns; cleanup frees whatever the steps reached.
 * Exit 0 completed run, 1 runtime failure, 2 bad input. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <coap3/coap.h>

#include "cli.h"
#include "clock.h"
#include "counters.h"
#include "err.h"
#include "files.h"
#include "hosts.h"
#include "keep.h"
#include "loop.h"
#include "north.h"
#include "obsout.h"
#include "obstab.h"
#include "output.h"
#include "plan.h"
#include "rt.h"
#include "rtolog.h"
#include "state.h"
#include "stats.h"
#include "trace.h"

/* Sleep until 1 ms before t0; the loop itself spins the rest. */
static int wait_start(int64_t t0, struct ge_err *e) {
  int64_t wake = t0 - 1000000;
  if (ge_now_ns() >= wake)
    return 0;
  struct timespec ts = {.tv_sec = wake / 1000000000LL,
                        .tv_nsec = wake % 1000000000LL};
  int rc;
  while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) ==
         EINTR)
    ;
  if (rc) {
    ge_err_set(e, NULL, 0, "clock_nanosleep", "%s", strerror(rc));
    return -1;
  }
  return 0;
}

/* --cpu / --cpus, or the affinity inherited: the one in force goes to
 * *got for the summary. Returns 0, 1 (a syscall failed) or 2 (a CPU this
 * process may not use). */
static int set_affinity(const struct ge_config *cfg, cpu_set_t *got,
                        struct ge_err *e) {
  char why[sizeof e->msg];
  if (cfg->cpus_flag) {
    int rc = cpulist_pin(cfg->cpus_text, &cfg->cpus, got, why, sizeof why);
    if (rc)
      ge_err_set(e, NULL, 0, cfg->cpus_flag, "%s", why);
    return rc;
  }
  if (sched_getaffinity(0, sizeof *got, got)) {
    ge_err_set(e, NULL, 0, "sched_getaffinity", "%s", strerror(errno));
    return 1;
  }
  return 0;
}

static int random_bytes(void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t r = getrandom((char *)buf + got, len - got, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    got += (size_t)r;
  }
  return 0;
}

/* The one piece of process-wide state: a signal cannot reach the loop's
 * struct any other way. */
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig) {
  (void)sig;
  stop_requested = 1;
}

static int install_signals(struct ge_err *e) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, NULL) || sigaction(SIGTERM, &sa, NULL)) {
    ge_err_set(e, NULL, 0, "sigaction", "%s", strerror(errno));
    return -1;
  }
  return 0;
}

struct run {
  struct ge_config cfg;
  struct ge_err e;
  struct ge_hosts hosts;
  struct ge_plan plan;
  struct ge_trace_src src;
  struct ge_loop L;
  bool loop_ready; /* ge_state_init ran: L is freeable */
  struct ge_tmpfile out, sum, rto, notify; /* rto, notify: fd -1 without */
  struct {
    uint32_t salt, mid_seed;
    uint64_t rng;
  } seeds;
};

/* Inputs read and checked, the plan built: 0, or the exit status. */
static int load(struct run *r) {
  const struct ge_config *cfg = &r->cfg;
  struct ge_plan *p = &r->plan;
  if (ge_check_outputs(cfg, &r->e))
    return 2;
  int64_t t_load = ge_now_ns();
  if (cfg->hosts && ge_hosts_load(&r->hosts, cfg->hosts, &r->e))
    return 2;
  p->north = cfg->north; /* every request to the gateway, if any */
  p->has_gateway = cfg->gateway_text != NULL;
  p->per_device = cfg->north_sockets == GE_NSOCK_PER_DEVICE;
  p->gateway = cfg->gateway;
  if (ge_trace_load(p, &r->src, cfg->trace, &r->hosts, &r->e))
    return 2;
  if (random_bytes(&r->seeds, sizeof r->seeds)) {
    ge_err_set(&r->e, NULL, 0, "getrandom", "%s", strerror(errno));
    return 1;
  }
  int fin = ge_plan_finish(p, r->seeds.mid_seed);
  if (fin == -1 || fin == -2)
    ge_err_set(&r->e, cfg->trace, 0, fin == -1 ? "send_ts_us" : "device_id",
               fin == -1 ? "too many requests per device within "
                           "EXCHANGE_LIFETIME"
                         : "--north-sockets per-device needs more than %d "
                           "sockets (one per device)",
               GE_PLAN_SOCK_MAX);
  else if (fin)
    ge_err_set(&r->e, NULL, 0, "plan", "out of memory");
  if (fin)
    return fin == -3 ? 1 : 2;
  if (!cfg->quiet)
    fprintf(stderr,
            "wotbench-ge: %zu requests, %zu devices, %zu peers, %u sockets, "
            "%zu templates loaded in %.2f s\n",
            p->n, p->ndev, p->npeer, p->nsock, p->ntmpl,
            (double)(ge_now_ns() - t_load) / 1e9);
  return 0;
}

/* Output files created, pinned, the loop's state and sockets set up and
 * the first requests parsed: 0, or the exit status. */
static int prepare(struct run *r) {
  struct ge_loop *L = &r->L;
  if (ge_tmp_open(&r->out, r->cfg.out, "--out", &r->e) ||
      ge_tmp_open(&r->sum, r->cfg.summary, "--summary", &r->e) ||
      (r->cfg.rto_out &&
       ge_tmp_open(&r->rto, r->cfg.rto_out, "--rto-out", &r->e)) ||
      (r->cfg.notify_out &&
       ge_tmp_open(&r->notify, r->cfg.notify_out, "--notify-out", &r->e)))
    return 2;
  cpu_set_t cpus;
  int affinity = set_affinity(&r->cfg, &cpus, &r->e);
  if (affinity)
    return affinity;
  r->loop_ready = true; /* ge_state_init leaves L freeable even on failure */
  if (ge_state_init(L, &r->cfg, &r->plan, &r->hosts, r->seeds.salt,
                    r->seeds.rng, r->out.fd) ||
      (r->cfg.rto_out && ge_rto_open(&L->rto, r->rto.fd)) ||
      ge_obs_init(&L->obs, r->plan.nobs, r->notify.fd, GE_NOTIFY_RING,
                  GE_NOTIFY_BUF)) {
    ge_err_set(&r->e, NULL, 0, "loop", "out of memory");
    return 1;
  }
  L->obs.mid = (uint16_t)r->seeds.rng;
  L->stop = &stop_requested;
  L->cpus = cpus;
  if (install_signals(&r->e) || ge_loop_open(L, &r->e) ||
      ge_state_feed(L, GE_FEED_AHEAD, &r->e) < 0)
    return 1;
  if (ge_keep_init(&L->keep, &r->plan, r->src.map ? r->src.fd : -1)) {
    ge_err_set(&r->e, NULL, 0, "loop", "out of memory");
    return 1;
  }
  ge_keep_fill(&L->keep, L->out.released);
  return 0;
}

/* Loaded and pinned: real-time from here (or the reason why not); an
 * unprivileged GE waits for it until 2 ms before its start instant. Then
 * t0: --start-at (slept for) or now. 0, or the exit status. */
static int start(struct run *r) {
  struct ge_loop *L = &r->L;
  int64_t at = r->cfg.start_at_us;
  int64_t offset = -ge_real_minus_mono();
  ge_rt_enter(&L->rt,
              at >= 0 ? at * 1000 + offset - GE_RT_WAIT_SLACK_NS : ge_now_ns());
  if (at < 0) {
    L->t0 = ge_now_ns();
    L->start_epoch_us = (L->t0 - offset) / 1000;
    return 0;
  }
  L->t0 = at * 1000 + offset;
  L->start_epoch_us = at;
  int64_t late = ge_now_ns() - L->t0;
  if (late > 0) {
    ge_err_set(&r->e, NULL, 0, "--start-at",
               "the start instant passed %.3f ms ago", (double)late / 1e6);
    return 1;
  }
  int64_t t_wait = ge_now_ns();
  if (wait_start(L->t0, &r->e))
    return 1;
  ge_rt_blocked(&L->rt, t_wait, ge_now_ns());
  return 0;
}

/* --rto-out: every event left formatted and written. 0, or -1 (e). */
static int rto_finish(struct run *r) {
  struct ge_rto *t = &r->L.rto;
  if (!ge_rto_on(t) ||
      (!t->overflow && !ge_rto_make_room(t, &r->plan, GE_RTO_RING)))
    return 0;
  ge_err_set(&r->e, r->cfg.rto_out, 0, NULL, "%s",
             t->overflow ? "internal error: event ring overflow"
                         : strerror(t->err));
  return -1;
}

/* The notify CSV's last rows, and the loss per observation. */
static int notify_finish(struct run *r) {
  ge_obs_finish(&r->L.obs);
  if (!ge_obs_out_finish(&r->plan, &r->L.obs))
    return 0;
  ge_err_set(&r->e, r->cfg.notify_out, 0, NULL, "write failed: %s",
             strerror(r->L.obs.out.err));
  return -1;
}

/* The run, then the CSVs and the summary committed: 0, or the exit
 * status. */
static int run_and_commit(struct run *r) {
  struct ge_loop *L = &r->L;
  int rc = ge_loop_run(L, &r->e);
  ge_rt_leave(&L->rt, ge_now_ns());
  if (rc || ge_out_finish(L, &r->e) || rto_finish(r) || notify_finish(r) ||
      ge_stats_write(L, r->sum.fd, &r->e) || ge_tmp_commit(&r->out, &r->e) ||
      (r->cfg.rto_out && ge_tmp_commit(&r->rto, &r->e)) ||
      ge_tmp_commit(&r->sum, &r->e) ||
      (r->cfg.notify_out && ge_tmp_commit(&r->notify, &r->e)))
    return 1;
  if (!r->cfg.quiet) {
    ge_counters_print(stderr, &L->c, r->plan.n,
                      (double)(L->t_end - L->t0) / 1e9);
    ge_obs_print(stderr, &L->obs);
  }
  return 0;
}

/* Files the GE opens besides its sockets: stdio, trace, hosts, the two
 * outputs, epoll, and a margin (libraries). */
#define GE_FD_SPARE 64

/* Room under RLIMIT_NOFILE for the run's sockets (UDP, or the HTTP pool),
 * the soft limit raised toward the hard one if need be: 0, or 2 (e). */
static int fd_room(struct run *r) {
  const struct ge_config *cfg = &r->cfg;
  unsigned socks =
      cfg->north == GE_NORTH_HTTP ? cfg->http_conns : r->plan.nsock;
  rlim_t need = (rlim_t)socks + GE_FD_SPARE;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY ||
      rl.rlim_cur >= need)
    return 0;
  if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need) {
    rl.rlim_cur = need;
    if (!setrlimit(RLIMIT_NOFILE, &rl))
      return 0;
  }
  ge_err_set(&r->e, NULL, 0,
             cfg->north_sockets == GE_NSOCK_PER_DEVICE ? "--north-sockets"
                                                       : "sockets",
             "%u sockets and %d other files need an open-file limit of %llu, "
             "the hard limit (ulimit -Hn) is %llu",
             socks, GE_FD_SPARE, (unsigned long long)need,
             (unsigned long long)rl.rlim_max);
  return 2;
}

/* The steps after the command line, in order: the exit status. */
static int steps(struct run *r) {
  int status = load(r);
  if (status)
    return status;
  if (r->cfg.dump_plan)
    return ge_out_dump_plan(&r->plan, &r->hosts, r->cfg.dump_plan, &r->e) != 0;
  if ((status = fd_room(r)) || (status = prepare(r)) || (status = start(r)))
    return status;
  return run_and_commit(r);
}

static void cleanup(struct run *r) {
  ge_tmp_discard(&r->out);
  ge_tmp_discard(&r->sum);
  ge_tmp_discard(&r->rto);
  ge_tmp_discard(&r->notify);
  if (r->loop_ready) {
    ge_loop_close(&r->L);
    ge_obs_free(&r->L.obs);
    ge_keep_free(&r->L.keep);
    ge_state_free(&r->L);
  }
  ge_plan_free(&r->plan);
  ge_trace_unmap(&r->src);
  ge_hosts_free(&r->hosts);
}

int main(int argc, char **argv) {
  static struct run r; /* about 10 KB (two paths): off the stack */
  r.out.fd = r.sum.fd = r.rto.fd = r.notify.fd = -1;
  coap_startup();
  coap_set_log_level(LOG_EMERG);
  int c = ge_cli_parse(argc, argv, &r.cfg, &r.e);
  int status = c > 0 ? 0 : 2;
  if (!c) {
    status = steps(&r);
    cleanup(&r);
  }
  coap_cleanup();
  if (status)
    fprintf(stderr, "error: %s\n", r.e.msg);
  return status;
}
