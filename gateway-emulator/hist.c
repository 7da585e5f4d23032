/* Exact distributions in bounded memory: counts per integer value in
 * pages of 1024 values, found by a hash of the page number. A run of any
 * length needs as many pages as its values spread over (a few for send
 * lags of a healthy run), and the percentiles are the same order
 * statistics a sorted array would give. */
#include <stdlib.h>
#include <string.h>

#include "hist.h"

#define PAGE (1u << GE_HIST_PAGE_BITS)

static size_t slot_of(uint64_t key, size_t cap) {
  uint64_t h = key * 0x9E3779B97F4A7C15ULL;
  return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static int grow(struct ge_hist *h) {
  size_t ncap = h->cap ? h->cap * 2 : 16;
  uint64_t *nk = calloc(ncap, sizeof *nk);
  uint32_t **np = calloc(ncap, sizeof *np);
  if (!nk || !np) {
    free(nk);
    free(np);
    return -1;
  }
  for (size_t i = 0; i < h->cap; i++)
    if (h->keys[i]) {
      size_t j = slot_of(h->keys[i], ncap);
      while (nk[j])
        j = (j + 1) & (ncap - 1);
      nk[j] = h->keys[i];
      np[j] = h->pages[i];
    }
  free(h->keys);
  free(h->pages);
  h->keys = nk;
  h->pages = np;
  h->cap = ncap;
  return 0;
}

static uint32_t *page_of(struct ge_hist *h, uint64_t key) {
  if (2 * (h->npages + 1) > h->cap && grow(h))
    return NULL;
  size_t i = slot_of(key, h->cap);
  while (h->keys[i] && h->keys[i] != key)
    i = (i + 1) & (h->cap - 1);
  if (!h->keys[i]) {
    uint32_t *pg = calloc(PAGE, sizeof *pg);
    if (!pg)
      return NULL;
    h->keys[i] = key;
    h->pages[i] = pg;
    h->npages++;
  }
  return h->pages[i];
}

int ge_hist_add(struct ge_hist *h, uint64_t v) {
  uint64_t key = (v >> GE_HIST_PAGE_BITS) + 1;
  if (key != h->last_key) {
    uint32_t *pg = page_of(h, key);
    if (!pg)
      return -1;
    h->last_key = key;
    h->last_page = pg;
  }
  h->last_page[v & (PAGE - 1)]++;
  h->n++;
  h->sum += v;
  if (v > h->max)
    h->max = v;
  return 0;
}

size_t ge_hist_bytes(const struct ge_hist *h) {
  return h->npages * PAGE * sizeof(uint32_t) +
         h->cap * (sizeof *h->keys + sizeof *h->pages);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted occupied pages with their totals, for rank queries. */
struct order {
  uint64_t *key;
  const uint32_t **page;
  uint64_t *total;
  size_t n;
};

static int order_build(const struct ge_hist *h, struct order *o) {
  o->n = 0;
  o->key = malloc(h->npages * sizeof *o->key);
  o->page = malloc(h->npages * sizeof *o->page);
  o->total = malloc(h->npages * sizeof *o->total);
  if (!o->key || !o->page || !o->total)
    return -1;
  for (size_t i = 0; i < h->cap; i++)
    if (h->keys[i])
      o->key[o->n++] = h->keys[i];
  qsort(o->key, o->n, sizeof *o->key, cmp_u64);
  for (size_t i = 0; i < o->n; i++) {
    size_t j = slot_of(o->key[i], h->cap);
    while (h->keys[j] != o->key[i])
      j = (j + 1) & (h->cap - 1);
    o->page[i] = h->pages[j];
    uint64_t t = 0;
    for (unsigned k = 0; k < PAGE; k++)
      t += h->pages[j][k];
    o->total[i] = t;
  }
  return 0;
}

static void order_free(struct order *o) {
  free(o->key);
  free(o->page);
  free(o->total);
}

/* The r-th smallest value (0-based, r < n). */
static uint64_t rank_value(const struct order *o, uint64_t r) {
  size_t i = 0;
  while (r >= o->total[i]) {
    r -= o->total[i];
    i++;
  }
  unsigned k = 0;
  while (r >= o->page[i][k]) {
    r -= o->page[i][k];
    k++;
  }
  return ((o->key[i] - 1) << GE_HIST_PAGE_BITS) + k;
}

/* q in [0,1], linear between order statistics (NumPy's default). */
static double pct(const struct order *o, uint64_t n, double q) {
  double pos = q * (double)(n - 1);
  uint64_t lo = (uint64_t)pos;
  uint64_t hi = lo + 1 < n ? lo + 1 : n - 1;
  double f = pos - (double)lo;
  double vlo = (double)rank_value(o, lo), vhi = (double)rank_value(o, hi);
  return vlo + (vhi - vlo) * f;
}

void ge_hist_json(FILE *f, const char *name, const struct ge_hist *h,
                  bool more) {
  struct order o;
  fprintf(f, "  \"%s\": ", name);
  if (h->n == 0 || order_build(h, &o)) {
    if (h->n)
      order_free(&o);
    fprintf(f, "null%s\n", more ? "," : "");
    return;
  }
  fprintf(f, "{\"count\": %llu", (unsigned long long)h->n);
  fprintf(f, ", \"mean\": %.3f", (double)((long double)h->sum / h->n));
  static const struct {
    const char *k;
    double q;
  } qs[] = {{"p5", .05}, {"p50", .5}, {"p95", .95}, {"p99", .99}};
  for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
    fprintf(f, ", \"%s\": %.3f", qs[i].k, pct(&o, h->n, qs[i].q));
  fprintf(f, ", \"max\": %llu}%s\n", (unsigned long long)h->max,
          more ? "," : "");
  order_free(&o);
}

void ge_hist_free(struct ge_hist *h) {
  for (size_t i = 0; i < h->cap; i++)
    free(h->pages[i]);
  free(h->keys);
  free(h->pages);
  memset(h, 0, sizeof *h);
}
