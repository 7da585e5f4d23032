/* Job and completion queues: index rings over one pool of job slots. */
#include "workers.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "service.h"

/* Slots beyond queue + threads for finished jobs the network thread has not
 * answered yet; when they run out, new requests get 5.03 like a full queue. */
#define DONE_SLACK 1024u

static void notify(struct workers *w) {
  uint64_t one = 1;

  /* EAGAIN means the counter is already non-zero: the network thread will
   * wake anyway. Any other failure is covered by its bounded epoll
   * timeout, which also drains completions. */
  while (write(w->efd, &one, sizeof(one)) < 0 && errno == EINTR)
    ;
}

static void *worker_main(void *arg) {
  struct workers *w = arg;

  for (;;) {
    uint32_t idx;
    struct job *job;
    int was_empty;

    pthread_mutex_lock(&w->mu);
    while (w->qcount == 0 && !atomic_load(&w->stop))
      pthread_cond_wait(&w->cv, &w->mu);
    if (atomic_load(&w->stop)) {
      pthread_mutex_unlock(&w->mu);
      return NULL;
    }
    idx = w->queue[w->qhead];
    w->qhead = w->qhead + 1 == w->qcap ? 0 : w->qhead + 1;
    w->qcount--;
    pthread_mutex_unlock(&w->mu);

    job = &w->pool[idx];
    /* Read by the network thread after the completion queue's lock. */
    job->start_ns = mono_ns();
    if (!service_emulate(w->mode, job->service_ns, &w->stop))
      return NULL;

    pthread_mutex_lock(&w->dmu);
    was_empty = w->dcount == 0;
    w->done[(w->dhead + w->dcount) % w->pool_cap] = idx;
    w->dcount++;
    pthread_mutex_unlock(&w->dmu);
    /* The network thread drains the whole queue per wake-up, so only
     * the push that makes it non-empty needs to wake it. */
    if (was_empty)
      notify(w);
  }
}

static void free_all(struct workers *w) {
  if (w->efd >= 0)
    close(w->efd);
  free(w->threads);
  free(w->pool);
  free(w->free_list);
  free(w->queue);
  free(w->done);
}

int workers_start(struct workers *w, enum dev_mode mode, unsigned nthreads,
                  uint32_t queue_cap) {
  int rc;

  memset(w, 0, sizeof(*w));
  w->mode = mode;
  w->qcap = queue_cap;
  w->pool_cap = queue_cap + nthreads + DONE_SLACK;
  atomic_init(&w->stop, false);
  w->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (w->efd < 0) {
    perror("error: eventfd");
    free_all(w);
    return -1;
  }
  w->threads = calloc(nthreads, sizeof(*w->threads));
  w->pool = calloc(w->pool_cap, sizeof(*w->pool));
  w->free_list = malloc(w->pool_cap * sizeof(*w->free_list));
  w->queue = malloc(w->qcap * sizeof(*w->queue));
  w->done = malloc(w->pool_cap * sizeof(*w->done));
  if (!w->threads || !w->pool || !w->free_list || !w->queue || !w->done) {
    fputs("error: out of memory for the job queue\n", stderr);
    free_all(w);
    return -1;
  }
  for (uint32_t i = 0; i < w->pool_cap; i++)
    w->free_list[i] = w->pool_cap - 1 - i;
  w->nfree = w->pool_cap;
  pthread_mutex_init(&w->mu, NULL);
  pthread_mutex_init(&w->dmu, NULL);
  pthread_cond_init(&w->cv, NULL);
  for (unsigned i = 0; i < nthreads; i++) {
    rc = pthread_create(&w->threads[i], NULL, worker_main, w);
    if (rc != 0) {
      fprintf(stderr, "error: pthread_create: %s\n", strerror(rc));
      w->nthreads = i;
      workers_stop(w);
      return -1;
    }
    w->nthreads = i + 1;
  }
  return 0;
}

struct job *workers_alloc(struct workers *w) {
  if (w->nfree == 0)
    return NULL;
  return &w->pool[w->free_list[--w->nfree]];
}

void workers_release(struct workers *w, struct job *job) {
  w->free_list[w->nfree++] = (uint32_t)(job - w->pool);
}

int workers_submit(struct workers *w, struct job *job) {
  pthread_mutex_lock(&w->mu);
  if (w->qcount == w->qcap) {
    pthread_mutex_unlock(&w->mu);
    workers_release(w, job);
    return -1;
  }
  w->queue[(w->qhead + w->qcount) % w->qcap] = (uint32_t)(job - w->pool);
  w->qcount++;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  return 0;
}

size_t workers_take_done(struct workers *w, uint32_t *out, size_t max) {
  size_t n = 0;

  pthread_mutex_lock(&w->dmu);
  while (n < max && w->dcount) {
    out[n++] = w->done[w->dhead];
    w->dhead = w->dhead + 1 == w->pool_cap ? 0 : w->dhead + 1;
    w->dcount--;
  }
  pthread_mutex_unlock(&w->dmu);
  return n;
}

uint32_t workers_stop(struct workers *w) {
  uint32_t unanswered;

  pthread_mutex_lock(&w->mu);
  atomic_store(&w->stop, true);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  for (unsigned i = 0; i < w->nthreads; i++)
    pthread_join(w->threads[i], NULL);
  unanswered = w->pool_cap - w->nfree;
  pthread_mutex_destroy(&w->mu);
  pthread_mutex_destroy(&w->dmu);
  pthread_cond_destroy(&w->cv);
  free_all(w);
  memset(w, 0, sizeof(*w));
  w->efd = -1;
  return unanswered;
}
