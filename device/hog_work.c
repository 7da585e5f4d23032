/* Hog thread bodies. The cpu loop is an xorshift chain whose result is
 * stored, so the compiler cannot remove it; the membw stream adds to one
 * word of every 64-byte line (a read and a write of the line), touching
 * the whole buffer, larger than the LLC, pass after pass. */
#include "hog_work.h"

#include <stddef.h>

#define CPU_BATCH 4096u        /* xorshift steps between looks at stop */
#define MEMBW_CHUNK (1u << 20) /* bytes streamed between looks at stop */
#define LINE 64u

static uint64_t cpu_batch(uint64_t x) {
  for (unsigned i = 0; i < CPU_BATCH; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

static void run_cpu(struct hog_thread *t) {
  uint64_t x = 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)t;

  while (!atomic_load_explicit(t->stop, memory_order_relaxed)) {
    x = cpu_batch(x);
    t->done += CPU_BATCH;
  }
  t->sink = x;
}

static void run_membw(struct hog_thread *t) {
  uint64_t off = 0, acc = 0;

  while (!atomic_load_explicit(t->stop, memory_order_relaxed)) {
    uint64_t n = t->buffer - off < MEMBW_CHUNK ? t->buffer - off : MEMBW_CHUNK;
    volatile uint64_t *p = (volatile uint64_t *)(void *)(t->buf + off);

    for (uint64_t i = 0; i < n / sizeof(uint64_t);
         i += LINE / sizeof(uint64_t)) {
      uint64_t v = p[i];
      p[i] = v + 1;
      acc += v;
    }
    t->done += n;
    off = off + n == t->buffer ? 0 : off + n;
  }
  t->sink = acc;
}

void *hog_thread_main(void *arg) {
  struct hog_thread *t = arg;
  int rc = pthread_barrier_wait(t->go);

  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD)
    return NULL;
  if (t->kind == HOG_CPU)
    run_cpu(t);
  else
    run_membw(t);
  return NULL;
}
