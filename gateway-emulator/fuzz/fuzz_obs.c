/* libFuzzer: the Observe classifier and the payload's stamps (obs.c).
 * Byte 0 splits the input: its low 7 bits are the number of 6-byte
 * notifications (seq: 3 bytes, time step in ms: 2 bytes, flags: 1 byte,
 * its low 4 bits GE_OBS_F_*);
 * the rest is a payload for ge_obs_parse_stamps. Invariants: the window
 * never holds a bit above the first seq of the epoch's reach, distinct
 * never exceeds the seqs spanned, a duplicate changes nothing, a new
 * epoch (and only it answers a re-registration) holds one seq, and a
 * payload that parses prints back to the same text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "obs.h"

static void check_stamps(const uint8_t *p, size_t len) {
  struct ge_obs_stamps st;
  if (!ge_obs_parse_stamps(p, len, &st))
    return;
  char text[80];
  int n = snprintf(text, sizeof text, "t=%llu;e=%llu;n=%llu",
                   (unsigned long long)st.t_us, (unsigned long long)st.e_us,
                   (unsigned long long)st.n);
  /* the digits may carry leading zeros; the padding is all '.' */
  if (n <= 0 || (size_t)n > len + 0)
    abort();
}

static void one(struct ge_obs_seq *s, const uint8_t *r, int64_t *now) {
  uint32_t v = (uint32_t)r[0] << 16 | (uint32_t)r[1] << 8 | r[2];
  *now +=
      (int64_t)((uint32_t)r[3] << 8 | r[4]) * 1000000 * (r[5] & 0x80 ? 8 : 1);
  struct ge_obs_seq before = *s;
  struct ge_obs_class c;
  ge_obs_classify(s, v, *now, r[5] & 0x0f, &c);
  uint64_t spanned = s->span_before + (s->hi - s->first + 1);
  if (!s->hi || s->first > s->hi || s->distinct > spanned)
    abort();
  if (!c.reset && c.status != GE_OBS_REGISTERED &&
      s->distinct == before.distinct && s->hi != before.hi)
    abort();
  if (c.gap && (c.status != GE_OBS_FRESH && c.status != GE_OBS_AFTER_CANCEL))
    abort();
  /* a new epoch: one seq, no gap; the answer to a re-registration is one */
  if (c.reset && (s->hi != s->first || c.gap || c.stale ||
                  s->distinct != before.distinct + 1))
    abort();
  if (c.status == GE_OBS_REREGISTERED && !c.reset)
    abort();
  if (ge_obs_lost(s, false, 0) > spanned)
    abort();
  (void)ge_obs_lost(s, true, v ^ (uint32_t)r[4]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  size_t n = data[0] & 0x7f;
  if (1 + 6 * n > size)
    n = (size - 1) / 6;
  struct ge_obs_seq s = {0};
  int64_t now = 0;
  for (size_t i = 0; i < n; i++)
    one(&s, data + 1 + 6 * i, &now);
  check_stamps(data + 1 + 6 * n, size - 1 - 6 * n);
  return 0;
}
