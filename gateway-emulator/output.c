/* The CSVs the GE writes. The per-request CSV (docs/formats.md), written
 * while the run goes on: rows are formatted in trace order as soon as the
 * oldest request in memory is final (its chunk is freed behind it) into a
 * 1 MB buffer that the loop writes out in pieces in the gaps of its
 * schedule. Hand-rolled number formatting; times are whole us (ge_us), as
 * the summary's. And the --dump-plan table, streamed by one pass of a
 * cursor over the finished plan. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "ge_format.h"
#include "output.h"
#include "state.h"
#include "textout.h"
#include "trace.h"
#include "wire.h"

#define ROW_MAX ((size_t)GE_MAX_PATH_BYTES * 2 + 600)

int ge_out_open(struct ge_out *o, int fd) {
  o->fd = fd;
  o->buf = malloc(GE_OUT_BUF);
  if (!o->buf)
    return -1;
  o->len = (size_t)(stpcpy(o->buf, GE_OUTPUT_COLUMNS "\n") - o->buf);
  o->peak = o->len;
  return 0;
}

static char *row(char *q, const struct ge_plan *p, const struct ge_rec *s) {
  static const char *const status[] = {
      [GE_PENDING] = "error",    [GE_HELD] = "timeout", [GE_WAIT] = "timeout",
      [GE_SEPARATE] = "timeout", [GE_OK] = "ok",        [GE_ERROR] = "error",
      [GE_TIMEOUT] = "timeout"};
  const struct ge_template *t = &p->tmpls[s->tmpl];
  int64_t intended = (int64_t)s->ts_us;
  int64_t sent = ge_us(s->sent_ns), recv = ge_us(s->recv_ns);
  q = ge_put_u64(q, p->devs[s->dev].id);
  *q++ = ',';
  q = stpcpy(q, ge_wire_method_name(t->code));
  *q++ = ',';
  memcpy(q, p->text + s->uri_off, s->uri_len);
  q += s->uri_len;
  *q++ = ',';
  q = ge_put_u64(q, s->ts_us);
  *q++ = ',';
  if (s->sent_ns != GE_NOT_SENT)
    q = ge_put_u64(q, (uint64_t)sent);
  *q++ = ',';
  if (s->recv_ns >= 0)
    q = ge_put_u64(q, (uint64_t)recv);
  *q++ = ',';
  if (s->recv_ns >= 0)
    q = ge_put_u64(q, (uint64_t)(recv - sent));
  *q++ = ',';
  if (s->recv_ns >= 0)
    q = ge_put_u64(q, (uint64_t)(recv - intended));
  *q++ = ',';
  if (s->sent_ns != GE_NOT_SENT)
    q = ge_put_u64(q, (uint64_t)(sent - intended));
  *q++ = ',';
  q = stpcpy(q, status[s->state]);
  *q++ = ',';
  if (s->recv_ns >= 0 && s->http_status) {
    q = ge_put_u64(q, s->http_status); /* HTTP: the 3-digit status */
  } else if (s->recv_ns >= 0) {
    q = ge_put_u64(q, s->code >> 5);
    *q++ = '.';
    *q++ = (char)('0' + (s->code & 31) / 10);
    *q++ = (char)('0' + (s->code & 31) % 10);
  }
  *q++ = ',';
  q = ge_put_u64(q, s->retrans);
  *q++ = ',';
  if (s->recv_ns >= 0 && s->service_us != UINT32_MAX)
    q = ge_put_u64(q, s->service_us);
  *q++ = '\n';
  return q;
}

size_t ge_out_format(struct ge_loop *L, size_t max) {
  struct ge_out *o = &L->out;
  const struct ge_plan *p = L->plan;
  size_t done = 0;
  if (o->start && o->len + 16 * ROW_MAX > GE_OUT_BUF &&
      o->len - o->start <= GE_OUT_BUF / 16) {
    /* near the end with little left to write: move it to the front */
    memmove(o->buf, o->buf + o->start, o->len - o->start);
    o->len -= o->start;
    o->start = 0;
  }
  while (done < max && o->row < L->next && o->len + ROW_MAX <= GE_OUT_BUF) {
    const struct ge_rec *s = ge_win_at(&L->win, o->row);
    if (s->state < GE_OK)
      break; /* the oldest request in memory is not final yet */
    if (o->buf)
      o->len = (size_t)(row(o->buf + o->len, p, s) - o->buf);
    ge_rankq_pop(&L->rq[p->devs[s->dev].peer]);
    size_t uri_off = (size_t)s->uri_off;
    if (++o->row == L->win.base + GE_CHUNK)
      ge_win_drop_chunk(&L->win);
    done++;
    if ((o->row & 1023) == 0)
      ge_text_release(p, &o->released, uri_off);
  }
  if (o->len - o->start > o->peak)
    o->peak = o->len - o->start;
  return done;
}

int ge_out_write(struct ge_out *o, size_t max) {
  ssize_t w = ge_text_flush(o->fd, o->buf, &o->start, &o->len, max, &o->err);
  if (w > 0) {
    o->written += (uint64_t)w;
    o->writes++;
  }
  return w < 0 ? -1 : 0;
}

int ge_out_finish(struct ge_loop *L, struct ge_err *e) {
  struct ge_out *o = &L->out;
  while (!o->err && (o->row < L->next || o->len > o->start)) {
    size_t got = ge_out_format(L, SIZE_MAX);
    bool pending = o->len > o->start;
    if (ge_out_write(o, GE_OUT_BUF))
      break;
    if (!got && !pending && o->row < L->next) {
      ge_err_set(e, L->cfg->out, 0, NULL, "row %llu is not final",
                 (unsigned long long)o->row);
      return -1;
    }
  }
  if (o->err) {
    ge_err_set(e, L->cfg->out, 0, NULL, "write failed: %s", strerror(o->err));
    return -1;
  }
  return 0;
}

void ge_out_free(struct ge_out *o) {
  free(o->buf);
  o->buf = NULL;
}

bool ge_out_full(const struct ge_out *o) {
  return o->len + ROW_MAX > GE_OUT_BUF;
}

/* Streams the plan: one pass of a cursor, ranks counted per peer. */
int ge_out_dump_plan(const struct ge_plan *p, const struct ge_hosts *h,
                     const char *path, struct ge_err *e) {
  uint32_t *rank = calloc(p->npeer ? p->npeer : 1, sizeof *rank);
  FILE *f = rank ? fopen(path, "w") : NULL;
  if (!f) {
    ge_err_set(e, path, 0, NULL, "cannot create: %s",
               rank ? strerror(errno) : "out of memory");
    free(rank);
    return -1;
  }
  fprintf(f, "index,device_id,peer,socket,mid,window_max,k\n");
  struct ge_cursor c;
  struct ge_req r;
  ge_cursor_init(&c, p, path);
  int got;
  while ((got = ge_cursor_read(p, &c, h, &r, e)) == 1) {
    const struct ge_device *d = &p->devs[r.dev];
    const struct ge_peer *pr = &p->peers[d->peer];
    uint32_t n = rank[d->peer]++;
    fprintf(f, "%zu,%u,%u,%u,%u,%u,%u\n", c.n - 1, d->id, d->peer,
            ge_plan_sock(pr, n), ge_plan_mid(pr, n), pr->window_max, pr->k);
    if ((c.n & 4095) == 0)
      ge_text_release(p, &c.released, (size_t)(c.it.p - p->text));
  }
  free(rank);
  if (got < 0) {
    fclose(f);
    return -1;
  }
  if (ferror(f) | fclose(f)) {
    ge_err_set(e, path, 0, NULL, "write failed: %s", strerror(errno));
    return -1;
  }
  return 0;
}
