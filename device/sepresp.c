/* A flat slot table: separate responses only exist for service times of
 * 2 s and more, so a few thousand in flight is already a lot, and a scan
 * happens only when a deadline passes or an ACK arrives. */
#include "sepresp.h"

#include <stdlib.h>
#include <string.h>

int sep_init(struct sepresp *s, uint32_t cap, uint64_t seed) {
  memset(s, 0, sizeof(*s));
  s->slots = calloc(cap, sizeof(*s->slots));
  if (s->slots == NULL)
    return -1;
  s->cap = cap;
  s->rng = seed | 1;
  s->next_due = INT64_MAX;
  return 0;
}

void sep_free(struct sepresp *s) {
  free(s->slots);
  memset(s, 0, sizeof(*s));
}

static uint64_t next_rand(struct sepresp *s) {
  s->rng ^= s->rng << 13;
  s->rng ^= s->rng >> 7;
  s->rng ^= s->rng << 17;
  return s->rng;
}

void sep_track(struct sepresp *s, const struct peer *peer,
               const struct recipe *rc, int64_t now) {
  struct sep_slot *slot = NULL;

  s->st.started++;
  for (uint32_t i = 0; i < s->cap && slot == NULL; i++)
    if (!s->slots[i].active)
      slot = &s->slots[i];
  if (slot == NULL) {
    s->st.untracked++;
    return;
  }
  if ((uint32_t)(slot - s->slots) + 1 > s->high)
    s->high = (uint32_t)(slot - s->slots) + 1;
  slot->peer = *peer;
  slot->rc = *rc;
  slot->tries = 0;
  slot->active = 1;
  /* Initial timeout uniformly in [ACK_TIMEOUT, ACK_TIMEOUT * 1.5]. */
  slot->timeout_ns =
      SEP_ACK_TIMEOUT_NS +
      (int64_t)(next_rand(s) % (uint64_t)(SEP_ACK_TIMEOUT_NS / 2 + 1));
  slot->due_ns = now + slot->timeout_ns;
  s->active++;
  if (slot->due_ns < s->next_due)
    s->next_due = slot->due_ns;
}

static void finish(struct sepresp *s, struct sep_slot *slot) {
  slot->active = 0;
  s->active--;
  while (s->high && !s->slots[s->high - 1].active)
    s->high--;
}

int sep_ack(struct sepresp *s, const struct peer *peer, uint16_t mid, int rst) {
  for (uint32_t i = 0; i < s->high; i++) {
    struct sep_slot *slot = &s->slots[i];

    if (slot->active && slot->rc.mid == mid && peer_equal(&slot->peer, peer)) {
      finish(s, slot);
      if (rst)
        s->st.reset++;
      else
        s->st.acked++;
      return 1;
    }
  }
  return 0;
}

void sep_tick(struct sepresp *s, int64_t now, sep_send_fn send, void *ctx) {
  int64_t next = INT64_MAX;

  if (s->active == 0 || now < s->next_due)
    return;
  for (uint32_t i = 0; i < s->high; i++) {
    struct sep_slot *slot = &s->slots[i];

    if (!slot->active)
      continue;
    if (slot->due_ns <= now) {
      if (slot->tries == SEP_MAX_RETRANSMIT) {
        s->st.gave_up++;
        finish(s, slot);
        continue;
      }
      send(ctx, &slot->peer, &slot->rc);
      s->st.retransmits++;
      slot->tries++;
      slot->timeout_ns *= 2;
      slot->due_ns = now + slot->timeout_ns;
    }
    if (slot->due_ns < next)
      next = slot->due_ns;
  }
  s->next_due = next;
}
