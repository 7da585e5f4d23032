/* The work of one hog thread: a busy loop (cpu) or a stream over its own
 * buffer, reading and writing every cache line (membw), until told to stop. */
#ifndef HOG_WORK_H
#define HOG_WORK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "hog_cli.h"

struct hog_thread {
  enum hog_kind kind;
  pthread_barrier_t *go;   /* every thread and main: released at start */
  const atomic_bool *stop; /* set by main at the end */
  unsigned char *buf;      /* membw: its buffer */
  uint64_t buffer;         /* bytes of buf */
  uint64_t done;           /* loops (cpu) or bytes streamed (membw) */
  uint64_t sink;           /* the work's result, so it cannot be elided */
};

/* pthread start routine; arg is a struct hog_thread. */
void *hog_thread_main(void *arg);

#endif
