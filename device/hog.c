/* wotbench-hog: a noisy neighbour at known instants. Sleeps (absolute,
 * CLOCK_REALTIME) until --start-at, runs N threads of busy loops or memory
 * streams until --end-at, then prints one JSON line of what it did. SIGTERM
 * or SIGINT ends the episode early: the line says "interrupted": true.
 * Exit 0; 2 on bad arguments; 1 when a system call failed. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hog_cli.h"
#include "hog_work.h"

#define SLICE_US 100000 /* longest sleep between looks for a signal */

static int fail(const char *what, int err) {
  fprintf(stderr, "error: %s: %s\n", what, strerror(err));
  return 1;
}

static int64_t now_us(void) {
  struct timespec ts;

  if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
    return -1;
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Sleeps until the epoch instant target_us. Returns 0 at the instant, 1
 * when a blocked signal of *sigs arrived first, -1 (errno) on failure. */
static int sleep_until(int64_t target_us, const sigset_t *sigs) {
  static const struct timespec zero = {0, 0};

  for (;;) {
    int64_t now = now_us(), at;
    struct timespec ts;
    int rc;

    if (now < 0)
      return -1;
    if (now >= target_us)
      return 0;
    at = target_us - now > SLICE_US ? now + SLICE_US : target_us;
    ts.tv_sec = (time_t)(at / 1000000);
    ts.tv_nsec = (long)(at % 1000000) * 1000;
    rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
    if (rc != 0 && rc != EINTR) {
      errno = rc;
      return -1;
    }
    if (sigtimedwait(sigs, NULL, &zero) > 0)
      return 1;
    if (errno != EAGAIN && errno != EINTR)
      return -1;
  }
}

static int print_result(const struct hog_config *cfg,
                        const struct hog_thread *t, int64_t start_us,
                        int64_t end_us, int interrupted) {
  uint64_t total = 0;
  double secs = (double)(end_us - start_us) / 1e6;
  int n;

  for (unsigned i = 0; i < cfg->threads; i++)
    total += t[i].done;
  n = printf("{\"kind\":\"%s\",\"threads\":%u,\"start_us\":%" PRId64
             ",\"end_us\":%" PRId64 ",",
             hog_kind_name(cfg->kind), cfg->threads, start_us, end_us);
  if (n >= 0 && cfg->kind == HOG_CPU)
    n = printf("\"loops\":%" PRIu64, total);
  else if (n >= 0)
    n = printf("\"bytes\":%" PRIu64 ",\"buffer\":%" PRIu64 ",\"gbps\":%.3f",
               total, cfg->buffer, secs > 0 ? (double)total / secs / 1e9 : 0.0);
  if (n >= 0)
    n = printf(",\"interrupted\":%s}\n", interrupted ? "true" : "false");
  if (n < 0 || fflush(stdout) != 0)
    return fail("stdout", errno);
  return 0;
}

/* Starts the threads (parked on the barrier); returns how many started. */
static unsigned start_threads(const struct hog_config *cfg,
                              struct hog_thread *t, pthread_t *ids,
                              pthread_barrier_t *go, const atomic_bool *stop,
                              int *err) {
  unsigned i;

  for (i = 0; i < cfg->threads; i++) {
    t[i] = (struct hog_thread){
        .kind = cfg->kind, .go = go, .stop = stop, .buffer = cfg->buffer};
    if (cfg->kind == HOG_MEMBW) {
      t[i].buf = aligned_alloc(64, cfg->buffer);
      if (t[i].buf == NULL) {
        *err = errno ? errno : ENOMEM;
        break;
      }
      memset(t[i].buf, (int)i, cfg->buffer); /* fault every page in now */
    }
    *err = pthread_create(&ids[i], NULL, hog_thread_main, &t[i]);
    if (*err != 0) {
      free(t[i].buf);
      t[i].buf = NULL;
      break;
    }
  }
  return i;
}

/* Releases the parked threads whatever happened (a barrier of N + 1 needs
 * them all: threads that never started are stood in for by main). */
static void release(pthread_barrier_t *go, unsigned missing) {
  for (unsigned i = 0; i <= missing; i++)
    pthread_barrier_wait(go);
}

static int episode(const struct hog_config *cfg, const sigset_t *sigs,
                   struct hog_thread *t, pthread_t *ids) {
  pthread_barrier_t go;
  atomic_bool stop = false;
  int64_t start_us, end_us;
  int err = 0, r, interrupted = 0, rc = 0;
  unsigned started;

  err = pthread_barrier_init(&go, NULL, cfg->threads + 1);
  if (err != 0)
    return fail("pthread_barrier_init", err);
  started = start_threads(cfg, t, ids, &go, &stop, &err);
  if (started < cfg->threads) {
    rc = fail(cfg->kind == HOG_MEMBW ? "buffer or thread" : "pthread_create",
              err);
    atomic_store(&stop, true);
  } else if ((r = sleep_until(cfg->start_at_us, sigs)) < 0) {
    rc = fail("clock_nanosleep", errno);
    atomic_store(&stop, true);
  } else {
    interrupted = r == 1;
    if (interrupted)
      atomic_store(&stop, true);
  }
  start_us = now_us();
  /* The last of N + 1 arrivals releases every thread at once. */
  release(&go, cfg->threads - started);
  if (rc == 0 && !interrupted) {
    r = sleep_until(cfg->end_at_us, sigs);
    if (r < 0)
      rc = fail("clock_nanosleep", errno);
    interrupted = r == 1;
  }
  atomic_store(&stop, true);
  for (unsigned i = 0; i < started; i++) {
    pthread_join(ids[i], NULL);
    free(t[i].buf);
  }
  end_us = now_us();
  pthread_barrier_destroy(&go);
  if (rc != 0)
    return rc;
  return print_result(cfg, t, start_us, end_us, interrupted);
}

int main(int argc, char **argv) {
  struct hog_config cfg;
  struct hog_thread *t;
  pthread_t *ids;
  sigset_t sigs;
  int rc;

  rc = hog_parse_args(argc, argv, &cfg);
  if (rc != 0)
    return rc;
  /* Blocked in every thread; main takes them with sigtimedwait. */
  if (sigemptyset(&sigs) != 0 || sigaddset(&sigs, SIGTERM) != 0 ||
      sigaddset(&sigs, SIGINT) != 0)
    return fail("sigset", errno);
  rc = pthread_sigmask(SIG_BLOCK, &sigs, NULL);
  if (rc != 0)
    return fail("pthread_sigmask", rc);
  t = calloc(cfg.threads, sizeof *t);
  ids = calloc(cfg.threads, sizeof *ids);
  if (t == NULL || ids == NULL) {
    free(t);
    free(ids);
    return fail("calloc", ENOMEM);
  }
  rc = episode(&cfg, &sigs, t, ids);
  free(t);
  free(ids);
  return rc;
}
