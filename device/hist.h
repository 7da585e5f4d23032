/* Log-linear histograms of times in microseconds, cheap to update (a shift
 * and a count; no floating point, no allocation): the device's residence
 * and queue-wait distributions in the --stats JSON (docs/formats.md,
 * "Device stats JSON"). Values below 2^HIST_SUB_BITS us have a bucket each;
 * above, every power of two is split into 2^HIST_SUB_BITS equal buckets, so
 * a bucket is at most 1/64 (1.6 %) of the values in it wide. Values of
 * 2^HIST_TOP_POW us (134 s) and more count as overflow. One histogram has
 * one writer (the network thread): no locks, nothing shared. */
#ifndef DEV_HIST_H
#define DEV_HIST_H

#include <stdint.h>
#include <stdio.h>

#define HIST_SUB_BITS 6
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_TOP_POW 27
#define HIST_BUCKETS (HIST_SUB + (HIST_TOP_POW - HIST_SUB_BITS) * HIST_SUB)

struct hist {
  uint64_t counts[HIST_BUCKETS];
  uint64_t overflow; /* values >= 2^HIST_TOP_POW us */
  uint64_t sum;      /* of all values, us */
  uint64_t max;      /* us */
};

/* Counts one value (us). */
void hist_add(struct hist *h, uint64_t us);

/* Counts the time from then_ns to now_ns (monotonic ns; 0 if negative). */
void hist_add_ns(struct hist *h, int64_t then_ns, int64_t now_ns);

/* The bucket of a value below 2^HIST_TOP_POW, and a bucket's bounds:
 * it holds lo <= us < hi. */
unsigned hist_bucket(uint64_t us);
void hist_bounds(unsigned bucket, uint64_t *lo, uint64_t *hi);

/* {"buckets": [[lo, hi, count], ...] (non-empty buckets only, ascending),
 *  "overflow": n, "sum": us, "max": us} */
void hist_write_json(FILE *f, const struct hist *h);

#endif
