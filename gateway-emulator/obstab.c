/* The observation table at run time (obstab.h): states, the reg and
 * dereg rows finished by their answers, notifications classified and
 * queued for the notify CSV, re-registrations due, loss at the end. */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "clock.h"
#include "ge_format.h"
#include "obsout.h"
#include "obstab.h"
#include "state.h"

#define DEFAULT_MAX_AGE_S 60
#define SWEEP_EVERY_NS 100000000LL /* 100 ms */
#define SWEEP_UNIT 1024            /* entries looked at per call */

int ge_obs_init(struct ge_obs_rt *rt, size_t n, int fd, size_t ring,
                size_t buf) {
  memset(rt, 0, sizeof *rt);
  rt->out.fd = fd;
  rt->n = n;
  rt->c.observations = n;
  if (n && !(rt->v = calloc(n, sizeof *rt->v)))
    return -1;
  for (size_t i = 0; i < n; i++)
    rt->v[i].max_age = DEFAULT_MAX_AGE_S;
  if (n || fd >= 0) {
    rt->out.cap = ring;
    rt->out.bufcap = buf;
    rt->out.ring = malloc(ring * sizeof *rt->out.ring);
    rt->out.buf = malloc(buf);
    if (!rt->out.ring || !rt->out.buf)
      return -1;
    rt->out.end =
        (size_t)(stpcpy(rt->out.buf, GE_NOTIFY_COLUMNS "\n") - rt->out.buf);
  }
  return 0;
}

void ge_obs_free(struct ge_obs_rt *rt) {
  free(rt->v);
  free(rt->out.ring);
  free(rt->out.buf);
  ge_hist_free(&rt->latency);
  ge_hist_free(&rt->age);
  rt->v = NULL;
  rt->out.ring = NULL;
  rt->out.buf = NULL;
}

void ge_obs_sent(struct ge_loop *L, uint32_t obs, uint8_t code, uint16_t sock,
                 uint32_t tmpl, int64_t now) {
  if (obs >= L->obs.n)
    return;
  struct ge_obs *o = &L->obs.v[obs];
  if (code == GE_CODE_OBS && o->state == GE_OBS_PENDING) {
    o->state = GE_OBS_REGISTERING;
    o->base_ns = now;
    o->sock = sock;
    o->tmpl = tmpl;
  } else if (code == GE_CODE_UNOBS && o->state != GE_OBS_ENDED) {
    o->state = GE_OBS_CANCELLING;
  }
}

/* An unsigned option's value (at most 4 bytes); *has: present. */
static uint32_t opt_uint(const coap_pdu_t *pdu, uint16_t num, bool *has) {
  coap_opt_iterator_t it;
  coap_opt_t *o = coap_check_option(pdu, num, &it);
  *has = o && coap_opt_length(o) <= 4;
  if (!*has)
    return 0;
  return coap_decode_var_bytes(coap_opt_value(o), coap_opt_length(o));
}

/* The OBS or UNOBS row `row` is answered (code) at now, if it waits. */
static void finish_row(struct ge_loop *L, uint32_t row, uint8_t code,
                       int64_t now) {
  if (row == UINT32_MAX || row < L->win.base || row >= L->next)
    return;
  struct ge_rec *s = ge_win_at(&L->win, row);
  if (s->state != GE_WAIT && s->state != GE_SEPARATE)
    return;
  if (s->state == GE_WAIT && L->cfg->coap_type == GE_CON)
    ge_state_rtt(L, row, now);
  bool has;
  uint32_t svc = opt_uint(L->pdu, GE_SERVICE_TIME_OPTION, &has);
  s->recv_ns = now - L->t0;
  s->code = code;
  s->service_us = has && svc < UINT32_MAX ? svc : UINT32_MAX;
  ge_state_finish(L, row, code >> 5 == 2 ? GE_OK : GE_ERROR);
}

/* A response without Observe: the end of a registration (refused) or of
 * the observation (the UNOBS answer, with the device's last seq). */
static void plain(struct ge_loop *L, uint32_t obs, struct ge_obs *o,
                  uint8_t code, int64_t now) {
  const struct ge_plan_obs *po = &L->plan->obs[obs];
  if (o->state == GE_OBS_CANCELLING) {
    finish_row(L, po->dereg_row, code, now);
    o->last_dev_seq = opt_uint(L->pdu, GE_OBS_LAST_SEQ_OPTION, &o->has_last);
    L->obs.c.cancelled++;
    if (!o->has_last)
      L->obs.c.dropped_by_device++;
    o->state = GE_OBS_ENDED;
    return;
  }
  if (o->state == GE_OBS_REGISTERING)
    finish_row(L, po->reg_row, code, now);
  if (o->state != GE_OBS_REFUSED)
    L->obs.c.refused++;
  o->state = GE_OBS_REFUSED;
  o->rereg = false;
}

/* The stamps of the notification (t, e from its payload) as times. */
static void stamps(struct ge_loop *L, struct ge_notify_rec *r, int64_t now) {
  size_t len = 0;
  const uint8_t *data = NULL;
  struct ge_obs_stamps st;
  r->recv_us = ge_us(now - L->t0);
  r->stamped = coap_get_data(L->pdu, &len, &data) &&
               ge_obs_parse_stamps(data, len, &st) && st.t_us <= INT64_MAX &&
               st.e_us <= st.t_us;
  if (!r->stamped) {
    L->obs.c.unstamped++;
    return;
  }
  int64_t real_us = (now + L->obs.real_off_ns) / 1000;
  r->latency_us = real_us - (int64_t)st.t_us;
  r->t_minus_e = (int64_t)(st.t_us - st.e_us);
  r->n = st.n;
}

static void count_status(struct ge_obs_rt *rt, const struct ge_obs_class *c) {
  static const size_t at[] = {
      [GE_OBS_REGISTERED] = offsetof(struct ge_obs_counters, registered),
      [GE_OBS_FRESH] = offsetof(struct ge_obs_counters, fresh),
      [GE_OBS_REREGISTERED] = offsetof(struct ge_obs_counters, rereg_answered),
      [GE_OBS_REORDERED] = offsetof(struct ge_obs_counters, reordered),
      [GE_OBS_DUPLICATE] = offsetof(struct ge_obs_counters, duplicates),
      [GE_OBS_AFTER_CANCEL] = offsetof(struct ge_obs_counters, after_cancel)};
  (*(uint64_t *)((char *)&rt->c + at[c->status]))++;
  rt->c.stale += c->stale;
  rt->c.seq_resets += c->reset;
  rt->c.notifications++;
}

/* The record into the ring; when the ring is full, the oldest records are
 * formatted into the buffer first (ge_obs_out_format), or, with that full
 * too, the row is dropped and counted. */
static void push(struct ge_loop *L, const struct ge_notify_rec *r) {
  struct ge_obs_rt *rt = &L->obs;
  struct ge_notify_out *o = &rt->out;
  if (o->len == o->cap) {
    o->forced += ge_obs_out_format(L->plan, rt, 64);
    if (o->len == o->cap) {
      rt->c.rows_dropped++;
      return;
    }
  }
  o->ring[(o->head + o->len) % o->cap] = *r;
  o->len++;
}

/* A notification: classified, counted, its times, into the ring. */
static void notification(struct ge_loop *L, uint32_t obs, struct ge_obs *o,
                         uint32_t seq, uint8_t type, int64_t now) {
  struct ge_obs_rt *rt = &L->obs;
  if (o->state == GE_OBS_REGISTERING) {
    finish_row(L, L->plan->obs[obs].reg_row, coap_pdu_get_code(L->pdu), now);
    o->state = GE_OBS_ACTIVE;
  } else if (o->state == GE_OBS_REFUSED) {
    o->state = GE_OBS_ACTIVE; /* a (re-)registration answered late */
  }
  bool ended = o->state == GE_OBS_CANCELLING || o->state == GE_OBS_ENDED;
  struct ge_notify_rec r = {.obs = obs, .seq = seq, .type = type};
  stamps(L, &r, now);
  unsigned flags = (o->rereg ? GE_OBS_F_REREG : 0) |
                   (ended ? GE_OBS_F_ENDED : 0) |
                   (!r.stamped ? GE_OBS_F_NO_N
                    : r.n == 0 ? GE_OBS_F_FIRST
                               : 0);
  struct ge_obs_class c;
  ge_obs_classify(&o->seq, seq, now, flags, &c);
  count_status(rt, &c);
  r.gap = c.gap;
  r.status = c.status;
  if (c.status == GE_OBS_REREGISTERED || c.status == GE_OBS_FRESH ||
      c.status == GE_OBS_REGISTERED) {
    o->rereg = o->rereg && c.status == GE_OBS_FRESH; /* not its answer */
    o->base_ns = now;
    bool has;
    uint32_t age = opt_uint(L->pdu, COAP_OPTION_MAXAGE, &has);
    o->max_age = has ? age : DEFAULT_MAX_AGE_S;
  }
  rt->c.con_notifications += type == GE_CON;
  if (r.stamped && c.status != GE_OBS_DUPLICATE) {
    int64_t age = r.latency_us + r.t_minus_e;
    if (ge_hist_add(&rt->latency,
                    r.latency_us > 0 ? (uint64_t)r.latency_us : 0) ||
        ge_hist_add(&rt->age, age > 0 ? (uint64_t)age : 0))
      L->oom = true;
  }
  push(L, &r);
}

int ge_obs_datagram(struct ge_loop *L, uint32_t obs, uint32_t peer,
                    int64_t now) {
  struct ge_obs_rt *rt = &L->obs;
  if (obs >= rt->n || rt->v[obs].state == GE_OBS_PENDING)
    return -1;
  if (L->plan->devs[L->plan->obs[obs].dev].peer != peer)
    return -2;
  struct ge_obs *o = &rt->v[obs];
  uint8_t type = (uint8_t)coap_pdu_get_type(L->pdu);
  uint8_t code = (uint8_t)coap_pdu_get_code(L->pdu);
  bool has_obs;
  uint32_t seq = opt_uint(L->pdu, COAP_OPTION_OBSERVE, &has_obs);
  /* a notification of an ended observation: reactive cancellation */
  int reply = o->state == GE_OBS_ENDED && has_obs ? GE_OBS_SEND_RST
              : type == GE_CON                    ? GE_OBS_SEND_ACK
                                                  : GE_OBS_NOTHING;
  if (has_obs && code >> 5 == 2)
    notification(L, obs, o, seq, type, now);
  else if (o->state != GE_OBS_ENDED)
    plain(L, obs, o, code, now);
  rt->c.acks_sent += reply == GE_OBS_SEND_ACK;
  rt->c.rsts_sent += reply == GE_OBS_SEND_RST;
  return reply;
}

int64_t ge_obs_rereg_due(struct ge_loop *L, int64_t now) {
  struct ge_obs_rt *rt = &L->obs;
  if (!rt->n || now < rt->sweep_ns)
    return -1;
  for (unsigned k = 0; k < SWEEP_UNIT; k++) {
    if (rt->sweep_at >= rt->n) {
      rt->sweep_at = 0;
      rt->sweep_ns = now + SWEEP_EVERY_NS;
      return -1;
    }
    size_t i = rt->sweep_at++;
    struct ge_obs *o = &rt->v[i];
    if (o->state != GE_OBS_ACTIVE && o->state != GE_OBS_REFUSED &&
        o->state != GE_OBS_REGISTERING)
      continue;
    if (now - o->base_ns <=
        (int64_t)o->max_age * 1000000000LL + L->cfg->observe_grace_ns)
      continue;
    o->base_ns = now;
    o->rereg = true;
    rt->c.reregistrations++;
    return (int64_t)i;
  }
  return -1;
}

void ge_obs_finish(struct ge_obs_rt *rt) {
  for (size_t i = 0; i < rt->n; i++) {
    const struct ge_obs *o = &rt->v[i];
    if (!o->seq.hi)
      continue;
    rt->c.lost += ge_obs_lost(&o->seq, o->has_last, o->last_dev_seq);
    rt->c.tail_unknown += !o->has_last;
  }
}

struct field {
  const char *name;
  size_t off;
};
#define GE_OBS_ROW(name) {#name, offsetof(struct ge_obs_counters, name)},
static const struct field fields[] = {GE_OBS_COUNTERS(GE_OBS_ROW)};
#undef GE_OBS_ROW
#define NFIELDS (sizeof fields / sizeof fields[0])

static unsigned long long get(const struct ge_obs_counters *c, size_t i) {
  return *(const uint64_t *)((const char *)c + fields[i].off);
}

void ge_obs_json(FILE *f, const struct ge_obs_rt *rt) {
  if (!rt->n) {
    fputs("  \"observe\": null,\n", f);
    return;
  }
  fputs("  \"observe\": {", f);
  for (size_t i = 0; i < NFIELDS; i++)
    fprintf(f, "%s\"%s\": %llu", i ? ", " : "", fields[i].name, get(&rt->c, i));
  fputs(",\n  ", f);
  ge_hist_json(f, "latency_us", &rt->latency, true);
  fputs("  ", f);
  ge_hist_json(f, "age_us", &rt->age, false);
  fputs("  },\n", f);
}

void ge_obs_print(FILE *f, const struct ge_obs_rt *rt) {
  if (!rt->n)
    return;
  fputs("wotbench-ge: observe:", f);
  for (size_t i = 0; i < NFIELDS; i++)
    fprintf(f, " %s=%llu", fields[i].name, get(&rt->c, i));
  fputc('\n', f);
}
