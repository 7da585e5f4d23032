/* The GE's clocks: CLOCK_MONOTONIC for the loop, CLOCK_REALTIME for the
 * kernel's receive stamps and the start instant, and the one rounding
 * rule of every time it reports. Header only (inline: the loop reads the
 * clock every iteration). */
#ifndef GE_CLOCK_H
#define GE_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Every time the GE reports is whole microseconds, truncated, so that the
 * CSV (integer us per docs/formats.md) and the summary agree exactly. */
static inline int64_t ge_us(int64_t ns) { return ns / 1000; }

static inline int64_t ge_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CLOCK_REALTIME in ns: the clock of the kernel's receive stamps. */
static inline int64_t ge_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC (ns), the realtime read bracketed
 * by two monotonic reads: a pause between two bare reads (a preemption, a
 * loaded host) would shift every kernel stamp moved by it, and a reply
 * could then seem to arrive before its own send. Of up to three tries the
 * tightest bracket counts; one suffices unless the reads were interrupted. */
static inline int64_t ge_real_minus_mono(void) {
  int64_t best = 0, width = INT64_MAX;
  for (int i = 0; i < 3 && width > 2000; i++) {
    int64_t m1 = ge_now_ns(), r = ge_real_ns(), m2 = ge_now_ns();
    if (m2 - m1 < width) {
      width = m2 - m1;
      best = r - (m1 + (m2 - m1) / 2);
    }
  }
  return best;
}

#endif
