/* Ring + chained hash; all of it owned by the network thread. */
#include "dedup.h"

#include <stdlib.h>
#include <string.h>

#define DD_NIL UINT32_MAX

static uint32_t hash(const uint8_t addr[16], uint16_t port, uint16_t mid) {
  uint64_t a, b, h;

  memcpy(&a, addr, 8);
  memcpy(&b, addr + 8, 8);
  h = a * 0x9e3779b97f4a7c15ULL ^ b ^ ((uint64_t)port << 16 | mid);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (uint32_t)h;
}

int dedup_init(struct dedup *d, uint32_t entries, int64_t lifetime_ns) {
  uint32_t nb = 1;

  memset(d, 0, sizeof(*d));
  while (nb < entries)
    nb <<= 1;
  /* calloc: untouched ring pages stay unbacked until traffic reaches them. */
  d->ring = calloc(entries, sizeof(*d->ring));
  d->buckets = malloc((size_t)nb * sizeof(*d->buckets));
  if (d->ring == NULL || d->buckets == NULL) {
    dedup_free(d);
    return -1;
  }
  memset(d->buckets, 0xff, (size_t)nb * sizeof(*d->buckets));
  d->cap = entries;
  d->mask = nb - 1;
  d->limit = entries < DD_START_SLOTS ? entries : DD_START_SLOTS;
  d->lifetime_ns = lifetime_ns;
  return 0;
}

void dedup_free(struct dedup *d) {
  free(d->ring);
  free(d->buckets);
  memset(d, 0, sizeof(*d));
}

static int same_key(const struct dd_entry *e, const uint8_t addr[16],
                    uint16_t port, uint16_t mid) {
  return e->mid == mid && e->port == port && memcmp(e->addr, addr, 16) == 0;
}

struct dd_entry *dedup_find(struct dedup *d, const uint8_t addr[16],
                            uint16_t port, uint16_t mid, int64_t now) {
  uint32_t i = d->buckets[hash(addr, port, mid) & d->mask];

  while (i != DD_NIL) {
    struct dd_entry *e = &d->ring[i];

    if (same_key(e, addr, port, mid))
      return now - e->t_ns < d->lifetime_ns ? e : NULL;
    i = e->next;
  }
  return NULL;
}

static void unlink_entry(struct dedup *d, uint32_t slot) {
  struct dd_entry *e = &d->ring[slot];
  uint32_t *p = &d->buckets[hash(e->addr, e->port, e->mid) & d->mask];

  while (*p != DD_NIL && *p != slot)
    p = &d->ring[*p].next;
  if (*p == slot)
    *p = e->next;
}

struct dd_entry *dedup_claim(struct dedup *d, struct dd_entry *old,
                             const uint8_t addr[16], uint16_t port,
                             uint16_t mid, int64_t now) {
  struct dd_entry *e = old;
  uint32_t slot;

  if (e == NULL) {
    /* A stale entry for this key would shadow the new one in its chain. */
    uint32_t i = d->buckets[hash(addr, port, mid) & d->mask];

    while (i != DD_NIL && !same_key(&d->ring[i], addr, port, mid))
      i = d->ring[i].next;
    if (i != DD_NIL)
      e = &d->ring[i];
  }
  if (e == NULL) {
    if (d->head == d->limit) {
      /* Slots 0..limit-1 are in time order now: slot 0 is the oldest. If
       * it is still live, the active part is too small for the rate: grow
       * it (fresh slots, order kept) rather than overwrite; else wrap. */
      const struct dd_entry *oldest = &d->ring[0];

      if (d->limit < d->cap && oldest->state != DD_FREE &&
          now - oldest->t_ns < d->lifetime_ns)
        d->limit = d->limit > d->cap / 2 ? d->cap : d->limit * 2;
      else
        d->head = 0;
    }
    slot = d->head++;
    e = &d->ring[slot];
    if (e->state != DD_FREE) {
      unlink_entry(d, slot);
      if (now - e->t_ns < d->lifetime_ns)
        d->evictions++;
    }
    memcpy(e->addr, addr, 16);
    e->port = port;
    e->mid = mid;
    e->next = d->buckets[hash(addr, port, mid) & d->mask];
    d->buckets[hash(addr, port, mid) & d->mask] = slot;
  }
  e->gen++;
  e->state = DD_PENDING;
  e->t_ns = now;
  return e;
}
