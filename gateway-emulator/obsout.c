/* The notify CSV (obsout.h): hand-rolled integer formatting (times are
 * whole us, signed where clocks may disagree), one row per record. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "obsout.h"
#include "textout.h"
#include "wire.h"

#define NOTIFY_ROW_MAX ((size_t)256)

static char *text(char *p, const char *s) { return stpcpy(p, s); }

/* The stamped columns n,event_us,dev_sent_us (after seq) and, after
 * recv_us, latency_us,age_us; empty when unstamped. */
static char *stamped(char *q, const struct ge_notify_rec *r, bool late) {
  int64_t sent = r->recv_us - r->latency_us, event = sent - r->t_minus_e;
  if (!r->stamped)
    return late ? text(q, ",,") : text(q, ",,,");
  if (late) {
    *q++ = ',';
    q = ge_put_i64(q, r->latency_us);
    *q++ = ',';
    return ge_put_i64(q, r->recv_us - event);
  }
  *q++ = ',';
  q = ge_put_u64(q, r->n);
  *q++ = ',';
  q = ge_put_i64(q, event);
  *q++ = ',';
  return ge_put_i64(q, sent);
}

/* obs,reg_row,device_id,seq,n,event_us,dev_sent_us,recv_us,latency_us,
 * age_us,type,status,gap */
static char *row(char *q, const struct ge_plan *p,
                 const struct ge_notify_rec *r) {
  static const char *const status[] = {"registered",   "fresh",
                                       "reregistered", "reordered",
                                       "duplicate",    "after_cancel"};
  const struct ge_plan_obs *po = &p->obs[r->obs];
  q = ge_put_u64(q, r->obs);
  *q++ = ',';
  q = ge_put_u64(q, po->reg_row);
  *q++ = ',';
  q = ge_put_u64(q, p->devs[po->dev].id);
  *q++ = ',';
  q = ge_put_u64(q, r->seq);
  q = stamped(q, r, false);
  *q++ = ',';
  q = ge_put_i64(q, r->recv_us);
  q = stamped(q, r, true);
  *q++ = ',';
  q = text(q, r->type == GE_CON ? "con" : r->type == GE_NON ? "non" : "ack");
  *q++ = ',';
  q = text(q, status[r->status]);
  *q++ = ',';
  if (r->status == GE_OBS_FRESH || r->status == GE_OBS_REREGISTERED)
    q = ge_put_u64(q, r->gap);
  *q++ = '\n';
  return q;
}

size_t ge_obs_out_format(const struct ge_plan *p, struct ge_obs_rt *rt,
                         size_t max) {
  struct ge_notify_out *o = &rt->out;
  size_t done = 0;
  if (o->start && o->end + 16 * NOTIFY_ROW_MAX > o->bufcap) {
    memmove(o->buf, o->buf + o->start, o->end - o->start);
    o->end -= o->start;
    o->start = 0;
  }
  while (done < max && o->len &&
         (o->fd < 0 || o->end + NOTIFY_ROW_MAX <= o->bufcap)) {
    if (o->fd >= 0)
      o->end = (size_t)(row(o->buf + o->end, p, &o->ring[o->head]) - o->buf);
    o->head = (o->head + 1) % o->cap;
    o->len--;
    done++;
  }
  if (o->end - o->start > o->peak)
    o->peak = o->end - o->start;
  return done;
}

int ge_obs_out_write(struct ge_notify_out *o, size_t max) {
  if (o->fd < 0)
    return o->err ? -1 : 0;
  ssize_t w = ge_text_flush(o->fd, o->buf, &o->start, &o->end, max, &o->err);
  if (w > 0)
    o->writes++;
  return w < 0 ? -1 : 0;
}

size_t ge_obs_out_pending(const struct ge_notify_out *o) {
  return o->fd < 0 ? 0 : o->end - o->start;
}

int ge_obs_out_finish(const struct ge_plan *p, struct ge_obs_rt *rt) {
  struct ge_notify_out *o = &rt->out;
  if (!o->buf)
    return 0;
  while (!o->err && (o->len || ge_obs_out_pending(o))) {
    ge_obs_out_format(p, rt, SIZE_MAX);
    if (ge_obs_out_write(o, o->bufcap))
      return -1;
  }
  return o->err ? -1 : 0;
}
