/* The loaded plan: device and peer tables, request templates, and the
 * socket / message-ID plan that lets any number of requests be
 * outstanding per device without reusing a MID within EXCHANGE_LIFETIME.
 * (Printed by --dump-plan: output.c.) */
#include <stdlib.h>
#include <string.h>

#include "north.h"
#include "plan.h"

static uint64_t hash_bytes(const void *data, size_t len, uint64_t h) {
  const uint8_t *s = data;
  for (size_t i = 0; i < len; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL; /* FNV-1a */
  return h ^ (h >> 29);
}
static uint64_t hash_u32(uint32_t v) {
  uint64_t h = v * 0x9E3779B97F4A7C15ULL;
  return h ^ (h >> 31);
}
static uint64_t hash_addr(const struct sockaddr_in6 *a) {
  return hash_bytes(&a->sin6_port, 2,
                    hash_bytes(&a->sin6_addr, 16, 0xcbf29ce484222325ULL));
}
static bool addr_eq(const struct sockaddr_in6 *a,
                    const struct sockaddr_in6 *b) {
  return a->sin6_port == b->sin6_port &&
         !memcmp(&a->sin6_addr, &b->sin6_addr, 16);
}

/* Open-addressing tables hold index+1 (0 = empty) and stay <= 50% full. */
static int table_grow(uint32_t **tab, size_t *cap, size_t used) {
  if (2 * (used + 1) <= *cap)
    return 0;
  size_t ncap = *cap ? *cap * 2 : 64;
  uint32_t *nt = calloc(ncap, sizeof *nt);
  if (!nt)
    return -1;
  free(*tab);
  *tab = nt;
  *cap = ncap;
  return 1; /* caller re-inserts everything */
}

static void *grow_array(void *v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return v;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need)
    ncap *= 2;
  void *nv = realloc(v, ncap * elem);
  if (nv)
    *cap = ncap;
  return nv;
}

int64_t ge_plan_find_device(const struct ge_plan *p, uint32_t id) {
  if (!p->dev_hash_cap)
    return -1;
  size_t mask = p->dev_hash_cap - 1;
  for (size_t i = hash_u32(id) & mask;; i = (i + 1) & mask) {
    uint32_t v = p->dev_hash[i];
    if (!v)
      return -1;
    if (p->devs[v - 1].id == id)
      return v - 1;
  }
}

static int64_t peer_of_addr(const struct ge_plan *p,
                            const struct sockaddr_in6 *a) {
  if (!p->peer_hash_cap)
    return -1;
  size_t mask = p->peer_hash_cap - 1;
  for (size_t i = hash_addr(a) & mask;; i = (i + 1) & mask) {
    uint32_t v = p->peer_hash[i];
    if (!v)
      return -1;
    if (addr_eq(&p->peers[v - 1].addr, a))
      return v - 1;
  }
}

static void put(uint32_t *tab, size_t cap, uint64_t h, uint32_t idx) {
  size_t mask = cap - 1;
  size_t i = h & mask;
  while (tab[i])
    i = (i + 1) & mask;
  tab[i] = idx + 1;
}

int64_t ge_plan_peer_of(const struct ge_plan *p, const struct sockaddr_in6 *a,
                        unsigned sock) {
  if (!p->per_device)
    return peer_of_addr(p, a);
  if (!p->npeer || sock >= p->nsock ||
      !addr_eq(&p->peers[p->sock_peer[sock]].addr, a))
    return -1;
  return p->sock_peer[sock];
}

/* A peer at a: the one there already, or a new one; per device always a
 * new one (left out of the address table, which then stays empty). */
static int64_t add_peer(struct ge_plan *p, const struct sockaddr_in6 *a) {
  if (!p->per_device) {
    int64_t have = peer_of_addr(p, a);
    if (have >= 0)
      return have;
    int g = table_grow(&p->peer_hash, &p->peer_hash_cap, p->npeer);
    if (g < 0)
      return -1;
    if (g)
      for (size_t i = 0; i < p->npeer; i++)
        put(p->peer_hash, p->peer_hash_cap, hash_addr(&p->peers[i].addr),
            (uint32_t)i);
  }
  struct ge_peer *nv =
      grow_array(p->peers, &p->peercap, p->npeer + 1, sizeof *nv);
  if (!nv)
    return -1;
  p->peers = nv;
  p->peers[p->npeer] = (struct ge_peer){.addr = *a};
  if (!p->per_device)
    put(p->peer_hash, p->peer_hash_cap, hash_addr(a), (uint32_t)p->npeer);
  return (int64_t)p->npeer++;
}

int64_t ge_plan_add_device(struct ge_plan *p, uint32_t id, const char *auth,
                           uint32_t auth_len, const struct sockaddr_in6 *addr) {
  if (p->frozen)
    return -1;
  int64_t peer = add_peer(p, p->has_gateway ? &p->gateway : addr);
  if (peer < 0)
    return -1;
  int g = table_grow(&p->dev_hash, &p->dev_hash_cap, p->ndev);
  if (g < 0)
    return -1;
  if (g)
    for (size_t i = 0; i < p->ndev; i++)
      put(p->dev_hash, p->dev_hash_cap, hash_u32(p->devs[i].id), (uint32_t)i);
  struct ge_device *nv =
      grow_array(p->devs, &p->devcap, p->ndev + 1, sizeof *nv);
  if (!nv)
    return -1;
  p->devs = nv;
  char *na = grow_array(p->abytes, &p->abytes_cap, p->abytes_len + auth_len, 1);
  if (!na)
    return -1;
  p->abytes = na;
  memcpy(p->abytes + p->abytes_len, auth, auth_len);
  p->devs[p->ndev] = (struct ge_device){.id = id,
                                        .peer = (uint32_t)peer,
                                        .auth_off = (uint32_t)p->abytes_len,
                                        .auth_len = auth_len,
                                        .addr = *addr};
  p->abytes_len += auth_len;
  put(p->dev_hash, p->dev_hash_cap, hash_u32(id), (uint32_t)p->ndev);
  return (int64_t)p->ndev++;
}

static int tbytes_append(struct ge_plan *p, const void *d, size_t len) {
  uint8_t *nv = grow_array(p->tbytes, &p->tbytes_cap, p->tbytes_len + len, 1);
  if (!nv)
    return -1;
  p->tbytes = nv;
  memcpy(p->tbytes + p->tbytes_len, d, len);
  p->tbytes_len += len;
  return 0;
}

/* A template's key: method, owner (the device through a gateway, else
 * none), path?query, newline, payload. */
struct key {
  uint8_t code;
  uint8_t owner[4];
  const char *path, *query, *payload;
  size_t plen, qlen, paylen;
};
#define KEY_LEN(k) (5 + (k)->plen + 1 + (k)->qlen + 1 + (k)->paylen)

static uint64_t key_hash(const struct key *k) {
  uint64_t h = hash_bytes(&k->code, 1, 0xcbf29ce484222325ULL);
  h = hash_bytes(k->owner, 4, h);
  h = hash_bytes(k->path, k->plen, h);
  h = hash_bytes("?", 1, h);
  h = hash_bytes(k->query, k->qlen, h);
  h = hash_bytes("\n", 1, h);
  return hash_bytes(k->payload, k->paylen, h);
}

static bool key_eq(const uint8_t *b, size_t blen, const struct key *k) {
  if (blen != KEY_LEN(k) || b[0] != k->code || memcmp(b + 1, k->owner, 4) != 0)
    return false;
  const uint8_t *q = b + 5 + k->plen, *y = q + 1 + k->qlen;
  return !memcmp(b + 5, k->path, k->plen) && q[0] == '?' &&
         !memcmp(q + 1, k->query, k->qlen) && y[0] == '\n' &&
         !memcmp(y + 1, k->payload, k->paylen);
}

static int key_append(struct ge_plan *p, const struct key *k) {
  return tbytes_append(p, &k->code, 1) || tbytes_append(p, k->owner, 4) ||
         tbytes_append(p, k->path, k->plen) || tbytes_append(p, "?", 1) ||
         tbytes_append(p, k->query, k->qlen) || tbytes_append(p, "\n", 1) ||
         tbytes_append(p, k->payload, k->paylen);
}

static int64_t template_find(const struct ge_plan *p, const struct key *k,
                             uint64_t h) {
  if (!p->tmpl_hash_cap)
    return -1;
  size_t mask = p->tmpl_hash_cap - 1;
  for (size_t i = h & mask; p->tmpl_hash[i]; i = (i + 1) & mask) {
    const struct ge_template *t = &p->tmpls[p->tmpl_hash[i] - 1];
    if (key_eq(p->tbytes + t->key_off, t->key_len, k))
      return p->tmpl_hash[i] - 1;
  }
  return -1;
}

/* A new template: key and encoded bytes appended, indexed. */
static int64_t template_add(struct ge_plan *p, const struct key *k, uint64_t h,
                            const uint8_t *enc, size_t elen) {
  int g = table_grow(&p->tmpl_hash, &p->tmpl_hash_cap, p->ntmpl);
  if (g < 0)
    return -1;
  if (g)
    for (size_t i = 0; i < p->ntmpl; i++)
      put(p->tmpl_hash, p->tmpl_hash_cap, p->tmpls[i].hash, (uint32_t)i);
  struct ge_template *nv =
      grow_array(p->tmpls, &p->tmplcap, p->ntmpl + 1, sizeof *nv);
  if (!nv)
    return -1;
  p->tmpls = nv;
  struct ge_template t = {.code = k->code,
                          .hash = h,
                          .key_off = (uint32_t)p->tbytes_len,
                          .key_len = (uint32_t)KEY_LEN(k)};
  if (key_append(p, k))
    return -1;
  t.off = (uint32_t)p->tbytes_len;
  t.len = (uint32_t)elen;
  if (tbytes_append(p, enc, elen))
    return -1;
  p->tmpls[p->ntmpl] = t;
  put(p->tmpl_hash, p->tmpl_hash_cap, h, (uint32_t)p->ntmpl);
  return (int64_t)p->ntmpl++;
}

int64_t ge_plan_template(struct ge_plan *p, uint8_t code, uint32_t dev,
                         const char *path, size_t plen, const char *query,
                         size_t qlen, const char *payload, size_t paylen,
                         const char **why) {
  /* Through a gateway the device is in the options: one template each. */
  uint32_t owner = p->has_gateway ? dev : UINT32_MAX;
  struct key k = {.code = code,
                  .owner = {(uint8_t)(owner >> 24), (uint8_t)(owner >> 16),
                            (uint8_t)(owner >> 8), (uint8_t)owner},
                  .path = path,
                  .plen = plen,
                  .query = query,
                  .qlen = qlen,
                  .payload = payload,
                  .paylen = paylen};
  uint64_t h = key_hash(&k);
  int64_t have = template_find(p, &k, h);
  if (have >= 0)
    return have;
  if (p->frozen) {
    *why = "not in the scanned trace (was the file changed?)";
    return -1;
  }
  uint8_t enc[GE_DGRAM_MAX];
  const char *bad = NULL;
  size_t elen =
      ge_north_template(enc, sizeof enc, p->north, code, &p->devs[dev].addr,
                        path, plen, query, qlen, payload, paylen, &bad);
  if (bad) {
    *why = bad;
    return -1;
  }
  *why = "out of memory";
  return template_add(p, &k, h, enc, elen);
}

static uint64_t pair_hash(uint32_t dev, const char *key, size_t len) {
  return hash_bytes(key, len, hash_u32(dev));
}

/* The pair (dev, key) in the scan's table; -1 when new. */
static int64_t pair_find(const struct ge_plan *p, uint32_t dev, const char *key,
                         size_t len, uint64_t h) {
  if (!p->pair_hash_cap)
    return -1;
  size_t mask = p->pair_hash_cap - 1;
  for (size_t i = h & mask; p->pair_hash[i]; i = (i + 1) & mask) {
    const struct ge_obs_pair *q = &p->pairs[p->pair_hash[i] - 1];
    if (q->dev == dev && q->key_len == len &&
        !memcmp(p->text + q->key_off, key, len))
      return p->pair_hash[i] - 1;
  }
  return -1;
}

static int64_t pair_add(struct ge_plan *p, uint32_t dev, uint64_t key_off,
                        size_t len, uint64_t h) {
  int g = table_grow(&p->pair_hash, &p->pair_hash_cap, p->npair);
  if (g < 0)
    return -1;
  if (g)
    for (size_t i = 0; i < p->npair; i++) {
      const struct ge_obs_pair *q = &p->pairs[i];
      put(p->pair_hash, p->pair_hash_cap,
          pair_hash(q->dev, p->text + q->key_off, q->key_len), (uint32_t)i);
    }
  struct ge_obs_pair *nv =
      grow_array(p->pairs, &p->paircap, p->npair + 1, sizeof *nv);
  if (!nv)
    return -1;
  p->pairs = nv;
  p->pairs[p->npair] = (struct ge_obs_pair){.dev = dev,
                                            .obs = UINT32_MAX,
                                            .key_off = key_off,
                                            .key_len = (uint16_t)len};
  put(p->pair_hash, p->pair_hash_cap, h, (uint32_t)p->npair);
  return (int64_t)p->npair++;
}

/* An UNOBS row closes the pair's open observation. */
static int obs_close(struct ge_plan *p, struct ge_obs_pair *q, uint32_t row,
                     uint32_t *obs, const char **why) {
  if (q->obs == UINT32_MAX) {
    *why = "UNOBS without an earlier OBS of the same device and uri";
    return -1;
  }
  uint32_t *nv =
      grow_array(p->unobs_pair, &p->unobscap, p->nunobs + 1, sizeof *nv);
  if (!nv)
    return -2;
  p->unobs_pair = nv;
  p->unobs_pair[p->nunobs++] = *obs = q->obs;
  p->obs[q->obs].dereg_row = row;
  q->obs = UINT32_MAX;
  return 0;
}

int ge_plan_obs_row(struct ge_plan *p, uint8_t code, uint32_t dev, uint32_t row,
                    uint64_t line, uint64_t key_off, size_t key_len,
                    uint32_t *obs, const char **why, uint64_t *other) {
  const char *key = p->text + key_off;
  uint64_t h = pair_hash(dev, key, key_len);
  int64_t at = pair_find(p, dev, key, key_len, h);
  if (at < 0 && code == GE_CODE_UNOBS) {
    *why = "UNOBS without an earlier OBS of the same device and uri";
    return -1;
  }
  if (at < 0 && (at = pair_add(p, dev, key_off, key_len, h)) < 0)
    return -2;
  struct ge_obs_pair *q = &p->pairs[at];
  if (code == GE_CODE_UNOBS)
    return obs_close(p, q, row, obs, why);
  if (q->obs != UINT32_MAX) {
    *why = "OBS of a device and uri whose earlier OBS is not closed by an "
           "UNOBS yet";
    *other = q->line;
    return -1;
  }
  if (p->nobs == GE_PLAN_OBS_MAX) {
    *why = "more than 262144 observations (OBS rows)";
    return -1;
  }
  struct ge_plan_obs *nv =
      grow_array(p->obs, &p->obscap, p->nobs + 1, sizeof *nv);
  if (!nv)
    return -2;
  p->obs = nv;
  p->obs[p->nobs] =
      (struct ge_plan_obs){.reg_row = row, .dereg_row = UINT32_MAX, .dev = dev};
  q->obs = *obs = (uint32_t)p->nobs++;
  q->line = line;
  return 0;
}

bool ge_plan_obs_done(struct ge_plan *p, uint64_t *line) {
  bool open = false;
  for (size_t i = 0; i < p->npair; i++)
    if (p->pairs[i].obs != UINT32_MAX && (!open || p->pairs[i].line < *line)) {
      *line = p->pairs[i].line;
      open = true;
    }
  free(p->pairs);
  free(p->pair_hash);
  p->pairs = NULL;
  p->pair_hash = NULL;
  p->npair = p->paircap = p->pair_hash_cap = 0;
  return open;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* The scan (trace.c) counted every peer's requests and found the most of
 * them in any closed EXCHANGE_LIFETIME window; K sockets per peer then
 * keep a (socket, peer) pair from reusing a MID before K*65536 requests,
 * which by construction span more than 247 s of trace time. */
int ge_plan_finish(struct ge_plan *p, uint32_t mid_seed) {
  uint64_t seed = mid_seed, total = 0;
  p->nsock = 1;
  p->frozen = true;
  for (size_t q = 0; q < p->npeer; q++) {
    struct ge_peer *pr = &p->peers[q];
    uint32_t best = pr->window_max;
    pr->k = best ? (best + GE_MID_SPACE - 1) / GE_MID_SPACE : 1;
    if (pr->k > GE_PLAN_SOCK_MAX)
      return -1;
    /* shared: every peer from socket 0 on; per device: one after another */
    pr->sock0 = p->per_device ? (uint32_t)total : 0;
    total = p->per_device ? total + pr->k : (pr->k > total ? pr->k : total);
    if (total > GE_PLAN_SOCK_MAX)
      return -2;
    pr->mid0 = (uint16_t)splitmix(&seed);
  }
  if (total > 1)
    p->nsock = (unsigned)total;
  if (!p->per_device)
    return 0;
  p->sock_peer = malloc(p->nsock * sizeof *p->sock_peer);
  if (!p->sock_peer)
    return -3;
  p->sock_peer[0] = 0; /* a trace without requests: socket 0, no peer */
  for (size_t q = 0; q < p->npeer; q++)
    for (uint32_t i = 0; i < p->peers[q].k; i++)
      p->sock_peer[p->peers[q].sock0 + i] = (uint32_t)q;
  return 0;
}

int64_t ge_plan_mid_lookup(const struct ge_plan *p, uint32_t peer, unsigned s,
                           uint16_t mid, uint32_t sent) {
  const struct ge_peer *pr = &p->peers[peer];
  if (!sent || s < pr->sock0 || s - pr->sock0 >= pr->k)
    return -1;
  s -= pr->sock0;
  /* rank n = q*65536 + delta with q % K == s; the most recent such rank
   * already sent is the only one that can still be in flight. */
  uint64_t delta = (uint16_t)(mid - pr->mid0);
  uint64_t q0 = (uint64_t)(sent - 1) / GE_MID_SPACE;
  if (q0 < s)
    return -1;
  uint64_t q = q0 - (q0 - s) % pr->k;
  for (;;) {
    uint64_t n = q * GE_MID_SPACE + delta;
    if (n < sent)
      return (int64_t)n;
    if (q < pr->k)
      return -1;
    q -= pr->k;
  }
}

void ge_plan_free(struct ge_plan *p) {
  ge_hist_free(&p->rit_expected);
  free(p->devs);
  free(p->dev_hash);
  free(p->abytes);
  free(p->peers);
  free(p->peer_hash);
  free(p->sock_peer);
  free(p->tmpls);
  free(p->tmpl_hash);
  free(p->tbytes);
  free(p->obs);
  free(p->unobs_pair);
  free(p->pairs);
  free(p->pair_hash);
  memset(p, 0, sizeof *p);
}
