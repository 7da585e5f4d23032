/* Exact distribution of integer values in bounded memory. */
#ifndef GE_HIST_H
#define GE_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Counts per value in 4 KB pages of 1024 consecutive values, found by a
 * hash of value / 1024: memory follows the spread of the values, not how
 * many were added, and every order statistic is exact. */
#define GE_HIST_PAGE_BITS 10
struct ge_hist {
  uint64_t *keys;   /* page number + 1; 0 = empty slot */
  uint32_t **pages; /* parallel to keys */
  size_t npages, cap;
  uint64_t n, max;
  unsigned __int128 sum;
  uint64_t last_key; /* page number + 1 of last_page (0: none) */
  uint32_t *last_page;
};
int ge_hist_add(struct ge_hist *h, uint64_t v); /* -1: out of memory */
size_t ge_hist_bytes(const struct ge_hist *h);
/* `  "name": {count, mean, p5, p50, p95, p99, max}` (or null), percentiles
 * interpolated linearly between order statistics as NumPy's default. */
void ge_hist_json(FILE *f, const char *name, const struct ge_hist *h,
                  bool more);
void ge_hist_free(struct ge_hist *h);

#endif
