/* The trace kept in memory ahead of the loop (keep.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "keep.h"

#define GE_KEEP_PAGES (GE_KEEP_CHUNK / 1024u) /* mincore's vector, any page */
#define GE_KEEP_AHEAD (256u << 10) /* prefetch: checked this far ahead */

static const char *mode_name(int mode) {
  return mode == GE_KEEP_LOCKED          ? "locked"
         : mode == GE_KEEP_PREFETCH_ONLY ? "prefetch"
                                         : "off";
}

void ge_keep_init(struct ge_keep *k, const struct ge_plan *p) {
  memset(k, 0, sizeof *k);
  if (!p->text_mapped || !p->text_len)
    return;
  k->base = p->text;
  k->len = p->text_len;
  struct rlimit rl;
  rlim_t room = getrlimit(RLIMIT_MEMLOCK, &rl) ? 0 : rl.rlim_cur;
  if (room != RLIM_INFINITY && room < GE_KEEP_MIN) {
    k->mode = GE_KEEP_PREFETCH_ONLY;
    k->window = GE_KEEP_AHEAD;
    return;
  }
  k->mode = GE_KEEP_LOCKED;
  /* the release point moves in steps: keep a chunk of room for them */
  k->window =
      room == RLIM_INFINITY || room - GE_KEEP_CHUNK > GE_KEEP_MAX
          ? GE_KEEP_MAX
          : (size_t)(room - GE_KEEP_CHUNK) & ~(size_t)(GE_KEEP_CHUNK - 1);
}

/* The chunk at hi: its end. */
static size_t chunk_end(const struct ge_keep *k) {
  return k->len - k->hi > GE_KEEP_CHUNK ? k->hi + GE_KEEP_CHUNK : k->len;
}

/* Every page of [hi, end) in the page cache (mincore; an error counts as
 * not resident, so the chunk is asked for again). */
static bool resident(const struct ge_keep *k, size_t end) {
  unsigned char vec[GE_KEEP_PAGES];
  size_t page = 4096, n = (end - k->hi + page - 1) / page;
  if (mincore((void *)(k->base + k->hi), end - k->hi, vec))
    return false;
  for (size_t i = 0; i < n && i < GE_KEEP_PAGES; i++)
    if (!(vec[i] & 1))
      return false;
  return true;
}

/* Locks [hi, end): 0, or -1 with locking given up (prefetch from here). */
static int lock_chunk(struct ge_keep *k, size_t end, size_t released) {
  if (mlock(k->base + k->hi, end - k->hi)) {
    k->lock_errno = errno;
    k->mode = GE_KEEP_PREFETCH_ONLY;
    k->window = GE_KEEP_AHEAD;
    return -1;
  }
  k->hi = end;
  if (k->hi - released > k->locked_peak)
    k->locked_peak = k->hi - released;
  return 0;
}

void ge_keep_fill(struct ge_keep *k, size_t released) {
  released &= ~(size_t)4095;
  while (k->mode == GE_KEEP_LOCKED && k->hi < k->len &&
         k->hi + GE_KEEP_CHUNK <= released + k->window) {
    k->chunks++;
    if (lock_chunk(k, chunk_end(k), released))
      break;
  }
  if (k->mode == GE_KEEP_PREFETCH_ONLY && k->hi < k->len) {
    size_t end = k->len - k->hi > k->window ? k->hi + k->window : k->len;
    (void)madvise((void *)(k->base + k->hi), end - k->hi, MADV_WILLNEED);
    k->hi = k->asked = end;
  }
}

int ge_keep_step(struct ge_keep *k, size_t released, size_t cursor) {
  if (k->mode == GE_KEEP_OFF)
    return 0;
  if (cursor > k->hi && cursor < k->len) {
    k->behind++;
    k->hi = cursor & ~(size_t)(GE_KEEP_CHUNK - 1);
  }
  size_t limit = k->mode == GE_KEEP_LOCKED
                     ? (released & ~(size_t)4095) + k->window
                     : cursor + k->window;
  if (k->hi >= k->len || k->hi + GE_KEEP_CHUNK > limit)
    return 0;
  size_t end = chunk_end(k);
  if (!resident(k, end)) {
    /* read in without waiting (asked again while it is not there yet:
     * a page can go again before the rest came): back in a later gap */
    size_t to = end;
    if (k->asked < end) {
      to = k->len - k->hi > GE_KEEP_AHEAD ? k->hi + GE_KEEP_AHEAD : k->len;
      k->asked = to;
      k->misses++;
    }
    (void)madvise((void *)(k->base + k->hi), to - k->hi, MADV_WILLNEED);
    if (k->mode == GE_KEEP_LOCKED)
      return 0;
  }
  k->chunks++;
  if (k->mode == GE_KEEP_LOCKED && lock_chunk(k, end, released))
    return 1;
  k->hi = end;
  return 1;
}

void ge_keep_json(FILE *f, const struct ge_keep *k) {
  fprintf(f,
          "  \"trace_keep\": {\"mode\": \"%s\", \"window_bytes\": %zu, "
          "\"locked_peak_bytes\": %zu, \"chunks\": %llu, \"misses\": %llu, "
          "\"behind\": %llu, \"lock_error\": ",
          mode_name(k->mode), k->window, k->locked_peak,
          (unsigned long long)k->chunks, (unsigned long long)k->misses,
          (unsigned long long)k->behind);
  if (k->lock_errno)
    fprintf(f, "\"%s\"},\n", strerror(k->lock_errno));
  else
    fputs("null},\n", f);
}
