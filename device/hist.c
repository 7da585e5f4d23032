/* Log-linear microsecond histograms (hist.h). */
#include "hist.h"

unsigned hist_bucket(uint64_t us) {
  unsigned e, shift;

  if (us < 2ull * HIST_SUB)
    return (unsigned)us;
  e = 63u - (unsigned)__builtin_clzll(us); /* us >= 2^(SUB_BITS+1) */
  shift = e - HIST_SUB_BITS;
  return (shift + 1) * HIST_SUB + (unsigned)((us >> shift) - HIST_SUB);
}

void hist_bounds(unsigned bucket, uint64_t *lo, uint64_t *hi) {
  unsigned shift;
  uint64_t m;

  if (bucket < 2 * HIST_SUB) {
    *lo = bucket;
    *hi = bucket + 1u;
    return;
  }
  shift = bucket / HIST_SUB - 1;
  m = bucket % HIST_SUB + HIST_SUB;
  *lo = m << shift;
  *hi = (m + 1) << shift;
}

void hist_add(struct hist *h, uint64_t us) {
  if (us >= (1ull << HIST_TOP_POW))
    h->overflow++;
  else
    h->counts[hist_bucket(us)]++;
  h->sum += us;
  if (us > h->max)
    h->max = us;
}

void hist_add_ns(struct hist *h, int64_t then_ns, int64_t now_ns) {
  hist_add(h, now_ns > then_ns ? (uint64_t)(now_ns - then_ns) / 1000u : 0);
}

void hist_write_json(FILE *f, const struct hist *h) {
  const char *sep = "";

  fputs("{\"buckets\": [", f);
  for (unsigned i = 0; i < HIST_BUCKETS; i++) {
    uint64_t lo, hi;

    if (h->counts[i] == 0)
      continue;
    hist_bounds(i, &lo, &hi);
    fprintf(f, "%s[%llu, %llu, %llu]", sep, (unsigned long long)lo,
            (unsigned long long)hi, (unsigned long long)h->counts[i]);
    sep = ", ";
  }
  fprintf(f, "], \"overflow\": %llu, \"sum\": %llu, \"max\": %llu}",
          (unsigned long long)h->overflow, (unsigned long long)h->sum,
          (unsigned long long)h->max);
}
