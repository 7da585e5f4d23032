/* RFC 7641 section 3.4 freshness with a window of the 64 seqs below the
 * highest, loss per observation, and the payload's stamps (obs.h). */
#include <string.h>

#include "obs.h"

static void first_of_epoch(struct ge_obs_seq *s, uint32_t v, int64_t now) {
  s->hi = ((uint64_t)1 << 32) + v;
  s->first = s->hi;
  s->win = 0;
  s->distinct++;
  s->last_fresh_ns = now;
}

/* Newer by d (0 < d < 2^23): the window shifts under the new highest. */
static void newer(struct ge_obs_seq *s, uint32_t d, int64_t now) {
  if (d > GE_OBS_WINDOW)
    s->win = 0;
  else
    s->win = (d == GE_OBS_WINDOW ? 0 : s->win << d) | 1ULL << (d - 1);
  s->hi += d;
  s->distinct++;
  s->last_fresh_ns = now;
}

/* Older by k (1 <= k <= 2^23): the window tells a duplicate from a late
 * one within 64; beyond it, stale. */
static uint8_t older(struct ge_obs_seq *s, uint32_t k, bool *stale) {
  if (k > GE_OBS_WINDOW || k > s->hi) {
    *stale = true;
    return GE_OBS_REORDERED;
  }
  uint64_t bit = 1ULL << (k - 1);
  if (s->win & bit)
    return GE_OBS_DUPLICATE;
  s->win |= bit;
  s->distinct++;
  if (s->hi - k < s->first)
    s->first = s->hi - k; /* older than the first one received */
  return GE_OBS_REORDERED;
}

/* Whether v, from a notification with `flags`, begins a new epoch
 * (obs.h): the answer to a re-registration, or a first one (n=0) that is
 * neither seen before nor a late one within the window. */
static bool new_epoch(const struct ge_obs_seq *s, uint32_t v, unsigned flags) {
  bool rereg = flags & GE_OBS_F_REREG, first = flags & GE_OBS_F_FIRST;
  if (rereg && first)
    return true;
  if (!first && !(rereg && (flags & GE_OBS_F_NO_N)))
    return false;
  uint32_t d = (v - (uint32_t)s->hi) & (GE_OBS_SEQ_MOD - 1);
  return d != 0 && (d < GE_OBS_SEQ_HALF || GE_OBS_SEQ_MOD - d > GE_OBS_WINDOW);
}

void ge_obs_classify(struct ge_obs_seq *s, uint32_t v, int64_t now_ns,
                     unsigned flags, struct ge_obs_class *out) {
  v &= GE_OBS_SEQ_MOD - 1;
  *out = (struct ge_obs_class){0};
  bool answer =
      (flags & GE_OBS_F_REREG) && (flags & (GE_OBS_F_FIRST | GE_OBS_F_NO_N));
  if (!s->hi) {
    first_of_epoch(s, v, now_ns);
    out->status = GE_OBS_REGISTERED;
  } else if (now_ns - s->last_fresh_ns > GE_OBS_FRESH_NS ||
             new_epoch(s, v, flags)) {
    s->span_before += s->hi - s->first + 1;
    first_of_epoch(s, v, now_ns);
    out->reset = true;
    out->status = answer ? GE_OBS_REREGISTERED : GE_OBS_FRESH;
  } else {
    uint32_t d = (v - (uint32_t)s->hi) & (GE_OBS_SEQ_MOD - 1);
    if (d == 0) {
      out->status = GE_OBS_DUPLICATE;
    } else if (d < GE_OBS_SEQ_HALF) {
      newer(s, d, now_ns);
      out->gap = d - 1;
      out->status = GE_OBS_FRESH;
    } else {
      out->status = older(s, GE_OBS_SEQ_MOD - d, &out->stale);
    }
  }
  if (flags & GE_OBS_F_ENDED)
    out->status = GE_OBS_AFTER_CANCEL;
}

uint64_t ge_obs_lost(const struct ge_obs_seq *s, bool have_last,
                     uint32_t last) {
  if (!s->hi)
    return 0;
  uint64_t top = s->hi;
  if (have_last) {
    uint32_t d = (last - (uint32_t)s->hi) & (GE_OBS_SEQ_MOD - 1);
    if (d < GE_OBS_SEQ_HALF)
      top = s->hi + d; /* the device sent later ones we never saw */
  }
  uint64_t span = s->span_before + (top - s->first + 1);
  return span > s->distinct ? span - s->distinct : 0;
}

/* "<key>=<digits>" at *p, then `sep` (or the end when sep is 0). */
static bool field(const uint8_t **p, const uint8_t *end, char key, char sep,
                  uint64_t *out) {
  const uint8_t *q = *p;
  if (end - q < 3 || q[0] != (uint8_t)key || q[1] != '=')
    return false;
  q += 2;
  uint64_t v = 0;
  size_t nd = 0;
  for (; q < end && *q >= '0' && *q <= '9' && nd < 20; q++, nd++) {
    uint64_t dig = (uint64_t)(*q - '0');
    if (v > (UINT64_MAX - dig) / 10)
      return false;
    v = v * 10 + dig;
  }
  if (!nd || (q < end && *q >= '0' && *q <= '9'))
    return false;
  if (sep) {
    if (q == end || *q != (uint8_t)sep)
      return false;
    q++;
  }
  *out = v;
  *p = q;
  return true;
}

bool ge_obs_parse_stamps(const uint8_t *p, size_t len,
                         struct ge_obs_stamps *out) {
  const uint8_t *q = p, *end = p + len;
  struct ge_obs_stamps st;
  if (!field(&q, end, 't', ';', &st.t_us) ||
      !field(&q, end, 'e', ';', &st.e_us) || !field(&q, end, 'n', 0, &st.n))
    return false;
  for (; q < end; q++)
    if (*q != '.')
      return false;
  *out = st;
  return true;
}
