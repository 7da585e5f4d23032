/* sleep: an absolute CLOCK_MONOTONIC deadline, waited in slices so that a
 * stop request is seen within one slice; no CPU is used.
 * busy: spin until the *thread's* CPU clock has advanced by the service
 * time, so a contended core stretches the response time as a real
 * CPU-bound handler's would. */
#include "service.h"

#include <errno.h>
#include <time.h>

#define SLICE_NS 50000000LL /* stop latency bound in sleep mode */

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;

  /* Cannot fail for these clocks with a valid pointer. */
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t mono_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static int sleep_until(int64_t deadline, const atomic_bool *stop) {
  for (;;) {
    int64_t now = mono_ns(), until;
    struct timespec ts;
    int rc;

    if (now >= deadline)
      return 1;
    if (atomic_load_explicit(stop, memory_order_relaxed))
      return 0;
    until = deadline - now > SLICE_NS ? now + SLICE_NS : deadline;
    ts.tv_sec = (time_t)(until / 1000000000LL);
    ts.tv_nsec = (long)(until % 1000000000LL);
    rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    if (rc != 0 && rc != EINTR)
      return 1; /* EINVAL cannot happen for a normalised timespec */
  }
}

static int spin_cpu(int64_t service_ns, const atomic_bool *stop) {
  int64_t start = clock_ns(CLOCK_THREAD_CPUTIME_ID);

  while (clock_ns(CLOCK_THREAD_CPUTIME_ID) - start < service_ns)
    if (atomic_load_explicit(stop, memory_order_relaxed))
      return 0;
  return 1;
}

int service_emulate(enum dev_mode mode, int64_t service_ns,
                    const atomic_bool *stop) {
  if (service_ns <= 0)
    return 1;
  if (mode == DEV_MODE_BUSY)
    return spin_cpu(service_ns, stop);
  return sleep_until(mono_ns() + service_ns, stop);
}
