/* --rto-out, the per-exchange RTO log: one row per event of a CON
 * exchange (a transmission, its RTT sample, its give-up, a duplicate
 * answer that shows a spurious retransmission). Events are binary records
 * in a fixed ring, pushed without syscalls; the loop formats them into a
 * 256 KB buffer and writes it in the gaps of its schedule, and in front
 * of the sends only when the ring would otherwise overflow. Times are
 * whole us (ge_us), as in the per-request CSV. */
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ge_format.h"
#include "north.h"
#include "rtolog.h"
#include "textout.h"

int ge_rto_open(struct ge_rto *r, int fd) {
  r->fd = fd;
  r->peer_cached = UINT32_MAX;
  r->ev = malloc(GE_RTO_RING * sizeof *r->ev);
  r->buf = malloc(GE_RTO_BUF);
  if (!r->ev || !r->buf)
    return -1;
  r->len = (size_t)(stpcpy(r->buf, GE_RTO_COLUMNS "\n") - r->buf);
  return 0;
}

double ge_rto_estimate(const struct ge_cc *c, int64_t now_ns) {
  struct ge_cc aged = *c;
  ge_cc_age(&aged, now_ns);
  return ge_cc_rto(&aged);
}

void ge_rto_push(struct ge_rto *r, const struct ge_rto_ev *ev) {
  if (r->n == GE_RTO_RING) {
    r->overflow = true;
    return;
  }
  r->ev[(r->head + r->n++) & (GE_RTO_RING - 1)] = *ev;
}

/* A time or duration in whole us; negative ones (none expected) as 0. */
static char *us(char *p, int64_t ns) {
  int64_t v = ge_us(ns);
  return ge_put_u64(p, v > 0 ? (uint64_t)v : 0);
}

static const char *peer_text(struct ge_rto *r, const struct ge_plan *p,
                             uint32_t peer) {
  if (r->peer_cached != peer) {
    ge_north_authority(&p->peers[peer].addr, r->peer_text);
    r->peer_cached = peer;
  }
  return r->peer_text;
}

/* The columns after `tx`: t_us,timer_us,rto_us,rtt_us,kind,used. */
static char *tail(char *q, const struct ge_rto_ev *v) {
  static const char *const kinds[] = {
      [GE_CC_STRONG] = "strong", [GE_CC_WEAK] = "weak", [GE_CC_NONE] = "none"};
  q = us(q, v->t_ns);
  *q++ = ',';
  if (v->event == GE_RTO_SEND)
    q = us(q, v->a_ns);
  *q++ = ',';
  q = us(q, v->rto_ns);
  *q++ = ',';
  if ((v->event == GE_RTO_SAMPLE || v->event == GE_RTO_DUP) && v->a_ns >= 0) {
    /* the difference of the whole-us stamps, as the CSV's response_us */
    int64_t d = ge_us(v->t_ns) - ge_us(v->a_ns);
    q = ge_put_u64(q, d > 0 ? (uint64_t)d : 0);
  }
  *q++ = ',';
  if (v->event == GE_RTO_SAMPLE)
    q = stpcpy(q, kinds[v->kind]);
  *q++ = ',';
  if (v->event == GE_RTO_SAMPLE)
    *q++ = v->used ? '1' : '0';
  *q++ = '\n';
  return q;
}

static char *row(struct ge_rto *r, const struct ge_plan *p, char *q,
                 const struct ge_rto_ev *v) {
  static const char *const names[] = {[GE_RTO_SEND] = "send",
                                      [GE_RTO_SAMPLE] = "sample",
                                      [GE_RTO_TIMEOUT] = "timeout",
                                      [GE_RTO_DUP] = "dup"};
  q = ge_put_u64(q, v->row);
  *q++ = ',';
  if (v->dev != GE_RTO_UNKNOWN)
    q = ge_put_u64(q, p->devs[v->dev].id);
  *q++ = ',';
  q = stpcpy(q, peer_text(r, p, v->peer));
  *q++ = ',';
  q = stpcpy(q, names[v->event]);
  *q++ = ',';
  if (v->tx != GE_RTO_UNKNOWN)
    q = ge_put_u64(q, v->tx);
  *q++ = ',';
  return tail(q, v);
}

size_t ge_rto_format(struct ge_rto *r, const struct ge_plan *p, size_t max) {
  size_t done = 0;
  if (r->start && r->len + 16 * GE_RTO_ROW_MAX > GE_RTO_BUF &&
      r->len - r->start <= GE_RTO_BUF / 16) {
    /* near the end with little left to write: move it to the front */
    memmove(r->buf, r->buf + r->start, r->len - r->start);
    r->len -= r->start;
    r->start = 0;
  }
  while (done < max && r->n && r->len + GE_RTO_ROW_MAX <= GE_RTO_BUF) {
    const struct ge_rto_ev *v = &r->ev[r->head];
    r->len = (size_t)(row(r, p, r->buf + r->len, v) - r->buf);
    r->head = (r->head + 1) & (GE_RTO_RING - 1);
    r->n--;
    r->rows++;
    done++;
  }
  return done;
}

int ge_rto_write(struct ge_rto *r, size_t max) {
  ssize_t w = ge_text_flush(r->fd, r->buf, &r->start, &r->len, max, &r->err);
  if (w > 0)
    r->writes++;
  return w < 0 ? -1 : 0;
}

int ge_rto_make_room(struct ge_rto *r, const struct ge_plan *p, size_t need) {
  while (ge_rto_room(r) < need || (need == GE_RTO_RING && r->len > r->start)) {
    ge_rto_format(r, p, SIZE_MAX);
    if (ge_rto_write(r, GE_RTO_BUF))
      return -1;
  }
  return 0;
}

void ge_rto_free(struct ge_rto *r) {
  free(r->ev);
  free(r->buf);
  r->ev = NULL;
  r->buf = NULL;
}
