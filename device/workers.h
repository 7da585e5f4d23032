/* N worker threads that only emulate service times. The network thread
 * hands them jobs through a bounded queue and gets them back through a
 * completion queue plus an eventfd; workers never touch libcoap or the
 * socket, and own nothing but the job they hold. */
#ifndef DEV_WORKERS_H
#define DEV_WORKERS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "peer.h"
#include "recipe.h"

struct job {
  struct peer peer;
  struct recipe rc; /* the response to send when the service time is over */
  int64_t service_ns;
  int64_t rx_ns;    /* the request's receipt (monotonic) */
  int64_t start_ns; /* a worker picked it up (set by that worker) */
  uint32_t dd_slot, dd_gen;
  uint8_t separate; /* empty ACK already sent: answer with a CON */
};

struct workers {
  enum dev_mode mode;
  pthread_t *threads;
  unsigned nthreads;
  struct job *pool;
  uint32_t pool_cap;
  uint32_t *free_list; /* network thread only */
  uint32_t nfree;

  pthread_mutex_t mu; /* guards the job queue */
  pthread_cond_t cv;
  uint32_t *queue, qhead, qcount, qcap;

  pthread_mutex_t dmu; /* guards the completion queue */
  uint32_t *done, dhead, dcount;

  int efd; /* readable when completions are waiting */
  atomic_bool stop;
};

/* Returns 0 or -1 (message printed, nothing left running). */
int workers_start(struct workers *w, enum dev_mode mode, unsigned nthreads,
                  uint32_t queue_cap);

/* A free job slot, or NULL when every slot is queued, in service or
 * waiting to be answered. */
struct job *workers_alloc(struct workers *w);

/* Queues an allocated job; -1 (job freed) when --queue jobs already wait. */
int workers_submit(struct workers *w, struct job *job);

/* Moves up to max finished job indices into out; returns how many. */
size_t workers_take_done(struct workers *w, uint32_t *out, size_t max);

void workers_release(struct workers *w, struct job *job);

/* Stops and joins the threads (within one sleep slice); returns how many
 * jobs were never answered. */
uint32_t workers_stop(struct workers *w);

#endif
