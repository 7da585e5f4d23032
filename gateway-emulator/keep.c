/* The trace kept in memory ahead of the loop (keep.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include "keep.h"

#define GE_KEEP_VEC 64 /* mincore's vector: pages of 1 KB and up */

static const char *mode_name(int mode) {
  return mode == GE_KEEP_LOCKED          ? "locked"
         : mode == GE_KEEP_PREFETCH_ONLY ? "prefetch"
                                         : "off";
}

int ge_keep_init(struct ge_keep *k, const struct ge_plan *p, int fd) {
  memset(k, 0, sizeof *k);
  k->fd = -1;
  if (!p->text_mapped || !p->text_len || fd < 0)
    return 0;
  if (!(k->buf = malloc(GE_KEEP_CHUNK)))
    return -1;
  k->base = p->text;
  k->len = p->text_len;
  k->fd = fd;
  k->nowait = true;
  struct rlimit rl;
  rlim_t room = getrlimit(RLIMIT_MEMLOCK, &rl) ? 0 : rl.rlim_cur;
  if (room != RLIM_INFINITY && room < GE_KEEP_MIN) {
    k->mode = GE_KEEP_PREFETCH_ONLY;
    k->window = GE_KEEP_AHEAD;
    return 0;
  }
  k->mode = GE_KEEP_LOCKED;
  /* the release point moves in steps: keep a chunk of room for them */
  k->window =
      room == RLIM_INFINITY || room - GE_KEEP_CHUNK > GE_KEEP_MAX
          ? GE_KEEP_MAX
          : (size_t)(room - GE_KEEP_CHUNK) & ~(size_t)(GE_KEEP_CHUNK - 1);
  return 0;
}

void ge_keep_free(struct ge_keep *k) {
  free(k->buf);
  k->buf = NULL;
}

/* The chunk at hi: its end. */
static size_t chunk_end(const struct ge_keep *k) {
  return k->len - k->hi > GE_KEEP_CHUNK ? k->hi + GE_KEEP_CHUNK : k->len;
}

/* mincore's answer for [hi, end): an error counts as not resident. */
static bool mincore_resident(const struct ge_keep *k, size_t end) {
  unsigned char vec[GE_KEEP_VEC];
  long ps = sysconf(_SC_PAGESIZE);
  size_t page = ps > 0 ? (size_t)ps : 4096;
  size_t n = (end - k->hi + page - 1) / page;
  if (n > GE_KEEP_VEC || mincore((void *)(k->base + k->hi), end - k->hi, vec))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!(vec[i] & 1))
      return false;
  return true;
}

/* Every page of [hi, end) in the page cache: read with RWF_NOWAIT, which
 * returns what is cached up to the first page that is not (or EAGAIN).
 * A file system without it falls back to mincore for the rest of the
 * run. */
static bool resident(struct ge_keep *k, size_t end) {
  if (k->nowait) {
    struct iovec iov = {k->buf, end - k->hi};
    ssize_t got = preadv2(k->fd, &iov, 1, (off_t)k->hi, RWF_NOWAIT);
    if (got >= 0)
      return (size_t)got == end - k->hi;
    if (errno == EAGAIN || errno == EINTR)
      return false;
    k->nowait = false; /* EOPNOTSUPP, EINVAL, ENOSYS: cannot ask so */
  }
  return mincore_resident(k, end);
}

/* Locks [hi, end): 1 locked, 0 not now (EAGAIN: try again in a later
 * gap), -1 locking given up (prefetch from here). */
static int lock_chunk(struct ge_keep *k, size_t end, size_t released) {
  if (mlock(k->base + k->hi, end - k->hi)) {
    if (errno == EAGAIN)
      return 0;
    k->lock_errno = errno;
    k->mode = GE_KEEP_PREFETCH_ONLY;
    k->window = GE_KEEP_AHEAD;
    return -1;
  }
  k->hi = end;
  if (k->hi > released && k->hi - released > k->locked_peak)
    k->locked_peak = k->hi - released;
  return 1;
}

void ge_keep_fill(struct ge_keep *k, size_t released) {
  released &= ~(size_t)4095;
  while (k->mode == GE_KEEP_LOCKED && k->hi < k->len &&
         k->hi + GE_KEEP_CHUNK <= released + k->window &&
         lock_chunk(k, chunk_end(k), released) > 0)
    k->chunks++;
  if (k->mode == GE_KEEP_PREFETCH_ONLY && k->hi < k->len) {
    size_t end = k->len - k->hi > k->window ? k->hi + k->window : k->len;
    (void)madvise((void *)(k->base + k->hi), end - k->hi, MADV_WILLNEED);
    k->hi = k->asked = end;
  }
}

/* The chunk at hi is not resident: asked for without waiting (again
 * while it is not there yet: a page can go before the rest came). */
static void ask(struct ge_keep *k, size_t end) {
  size_t to = end;
  if (k->asked < end) {
    to = k->len - k->hi > GE_KEEP_AHEAD ? k->hi + GE_KEEP_AHEAD : k->len;
    k->asked = to;
    k->misses++;
  }
  (void)madvise((void *)(k->base + k->hi), to - k->hi, MADV_WILLNEED);
}

int ge_keep_step(struct ge_keep *k, size_t released, size_t cursor,
                 int64_t now) {
  if (k->mode == GE_KEEP_OFF)
    return 0;
  size_t at = cursor & ~(size_t)(GE_KEEP_CHUNK - 1);
  if (at > k->hi && cursor < k->len) { /* the parse overtook the keeper */
    k->behind++;
    k->hi = at;
  }
  size_t limit = k->mode == GE_KEEP_LOCKED
                     ? (released & ~(size_t)4095) + k->window
                     : cursor + k->window;
  if (k->hi >= k->len || k->hi + GE_KEEP_CHUNK > limit || now < k->retry_ns)
    return 0;
  size_t end = chunk_end(k);
  if (!resident(k, end)) {
    ask(k, end);
    k->retry_ns = now + GE_KEEP_RETRY_NS;
    if (k->mode == GE_KEEP_LOCKED)
      return 0; /* back in a later gap, not in every one meanwhile */
  }
  if (k->mode == GE_KEEP_LOCKED) {
    int locked = lock_chunk(k, end, released);
    k->chunks += locked > 0;
    return locked != 0;
  }
  k->chunks++;
  k->hi = end;
  return 1;
}

void ge_keep_json(FILE *f, const struct ge_keep *k) {
  fprintf(f,
          "  \"trace_keep\": {\"mode\": \"%s\", \"probe\": \"%s\", "
          "\"window_bytes\": %zu, \"locked_peak_bytes\": %zu, \"chunks\": "
          "%llu, \"misses\": %llu, \"behind\": %llu, \"lock_error\": ",
          mode_name(k->mode), k->nowait ? "nowait" : "mincore", k->window,
          k->locked_peak, (unsigned long long)k->chunks,
          (unsigned long long)k->misses, (unsigned long long)k->behind);
  if (k->lock_errno)
    fprintf(f, "\"%s\"},\n", strerror(k->lock_errno));
  else
    fputs("null},\n", f);
}
