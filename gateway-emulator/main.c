/* wotbench-ge: load and check everything, pin (or read the affinity
 * inherited), wait for the start instant, run the loop, then write the
 * results atomically.
 * Exit 0 completed run, 1 runtime failure, 2 bad input. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <coap3/coap.h>

#include "ge.h"

struct tmpfile {
  const char *final;
  char path[4096];
  int fd;
};

static int tmp_open(struct tmpfile *t, const char *final, const char *field,
                    struct ge_err *e) {
  t->final = final;
  t->fd = -1;
  int n =
      snprintf(t->path, sizeof t->path, "%s.tmp.%ld", final, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof t->path) {
    ge_err_set(e, NULL, 0, field, "path too long");
    return -1;
  }
  t->fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (t->fd < 0) {
    ge_err_set(e, NULL, 0, field, "cannot create '%s': %s", t->path,
               strerror(errno));
    return -1;
  }
  return 0;
}

static void tmp_discard(struct tmpfile *t) {
  if (t->fd >= 0) {
    close(t->fd);
    unlink(t->path);
    t->fd = -1;
  }
}

static int tmp_commit(struct tmpfile *t, struct ge_err *e) {
  int rc = close(t->fd);
  t->fd = -1;
  if (rc || rename(t->path, t->final)) {
    ge_err_set(e, t->final, 0, NULL, "cannot finish: %s", strerror(errno));
    unlink(t->path);
    return -1;
  }
  return 0;
}

static int64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Monotonic instant minus realtime instant, read as close together as
 * possible (the realtime read is bracketed by two monotonic reads). */
static int64_t mono_minus_real(void) {
  int64_t m1 = ge_now_ns(), r = realtime_ns(), m2 = ge_now_ns();
  return m1 + (m2 - m1) / 2 - r;
}

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

int main(int argc, char **argv) {
  struct ge_config cfg;
  struct ge_err e = {{0}};
  struct ge_hosts hosts = {0};
  struct ge_plan plan = {0};
  struct ge_trace_src src = {0};
  struct ge_loop L;
  struct tmpfile out = {.fd = -1}, sum = {.fd = -1};
  int status = 2;
  bool loop_ready = false;

  coap_startup();
  coap_set_log_level(LOG_EMERG);
  int c = ge_cli_parse(argc, argv, &cfg, &e);
  if (c)
    goto done_cli;
  int64_t t_load = ge_now_ns();
  if (cfg.hosts && ge_hosts_load(&hosts, cfg.hosts, &e))
    goto done;
  if (ge_trace_load(&plan, &src, cfg.trace, &hosts, &e))
    goto done;
  struct {
    uint32_t salt, mid_seed;
    uint64_t rng;
  } seeds;
  if (random_bytes(&seeds, sizeof seeds)) {
    status = 1;
    ge_err_set(&e, NULL, 0, "getrandom", "%s", strerror(errno));
    goto done;
  }
  if (ge_plan_finish(&plan, seeds.mid_seed)) {
    ge_err_set(&e, cfg.trace, 0, "send_ts_us",
               "too many requests per device within EXCHANGE_LIFETIME");
    goto done;
  }
  if (!cfg.quiet)
    fprintf(stderr,
            "wotbench-ge: %zu requests, %zu devices, %zu peers, %u sockets, "
            "%zu templates loaded in %.2f s\n",
            plan.n, plan.ndev, plan.npeer, plan.nsock, plan.ntmpl,
            (double)(ge_now_ns() - t_load) / 1e9);
  if (cfg.dump_plan) {
    status = ge_plan_dump(&plan, &hosts, cfg.dump_plan, &e) ? 1 : 0;
    goto done;
  }
  if (tmp_open(&out, cfg.out, "--out", &e) ||
      tmp_open(&sum, cfg.summary, "--summary", &e))
    goto done;
  cpu_set_t cpus;
  int affinity = set_affinity(&cfg, &cpus, &e);
  if (affinity) {
    status = affinity;
    goto done;
  }
  status = 1;
  loop_ready = true; /* ge_loop_init leaves L freeable even on failure */
  if (ge_loop_init(&L, &cfg, &plan, &hosts, seeds.salt, seeds.rng, out.fd)) {
    ge_err_set(&e, NULL, 0, "loop", "out of memory");
    goto done;
  }
  L.stop = &stop_requested;
  L.cpus = cpus;
  if (install_signals(&e) || ge_loop_open(&L, &e) ||
      ge_loop_feed(&L, GE_FEED_AHEAD, &e) < 0)
    goto done;
  /* Loaded and pinned: real-time from here (or the reason why not); an
   * unprivileged GE waits for it until 2 ms before its start instant. */
  int64_t offset = mono_minus_real();
  ge_rt_enter(&L.rt, cfg.start_at_us >= 0
                         ? cfg.start_at_us * 1000 + offset - GE_RT_WAIT_SLACK_NS
                         : ge_now_ns());
  if (cfg.start_at_us >= 0) {
    L.t0 = cfg.start_at_us * 1000 + offset;
    L.start_epoch_us = cfg.start_at_us;
    int64_t late = ge_now_ns() - L.t0;
    if (late > 0) {
      ge_err_set(&e, NULL, 0, "--start-at",
                 "the start instant passed %.3f ms ago", (double)late / 1e6);
      goto done;
    }
    int64_t t_wait = ge_now_ns();
    if (wait_start(L.t0, &e))
      goto done;
    ge_rt_blocked(&L.rt, t_wait, ge_now_ns());
  } else {
    L.t0 = ge_now_ns();
    L.start_epoch_us = (L.t0 - offset) / 1000;
  }
  int run = ge_loop_run(&L, &e);
  ge_rt_leave(&L.rt, ge_now_ns());
  if (run)
    goto done;
  if (ge_out_finish(&L, &e) || ge_stats_write(&L, sum.fd, &e) ||
      tmp_commit(&out, &e) || tmp_commit(&sum, &e))
    goto done;
  if (!cfg.quiet)
    ge_counters_print(stderr, &L.c, plan.n, (double)(L.t_end - L.t0) / 1e9);
  status = 0;
done:
  tmp_discard(&out);
  tmp_discard(&sum);
  if (loop_ready)
    ge_loop_free(&L);
  ge_plan_free(&plan);
  ge_trace_unmap(&src);
  ge_hosts_free(&hosts);
  coap_cleanup();
  if (status)
    fprintf(stderr, "error: %s\n", e.msg);
  return status;
done_cli:
  coap_cleanup();
  if (c > 0)
    return 0;
  fprintf(stderr, "error: %s\n", e.msg);
  return 2;
}
