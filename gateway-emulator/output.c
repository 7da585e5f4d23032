/* Per-request CSV (docs/formats.md), written after the loop in large
 * blocks with hand-rolled number formatting: ten million rows must not
 * take longer than the run. Times are whole us (ge_us), as the summary's. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ge.h"

#define OUT_BUF (4u << 20)
#define ROW_MAX (GE_MAX_PATH_BYTES * 2 + 600)

struct out {
  int fd;
  char *buf;
  size_t len;
  int err;
};

static void flush(struct out *o) {
  size_t w = 0;
  while (w < o->len && !o->err) {
    ssize_t r = write(o->fd, o->buf + w, o->len - w);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      o->err = errno;
    else
      w += (size_t)r;
  }
  o->len = 0;
}

static char *u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10));
  while (n)
    *p++ = tmp[--n];
  return p;
}

int ge_output_write(const struct ge_loop *L, int fd, struct ge_err *e) {
  static const char *const status[] = {
      [GE_PENDING] = "error", [GE_WAIT] = "timeout", [GE_SEPARATE] = "timeout",
      [GE_OK] = "ok",         [GE_ERROR] = "error",  [GE_TIMEOUT] = "timeout"};
  const struct ge_plan *p = L->plan;
  char *buf = malloc(OUT_BUF);
  if (!buf) {
    ge_err_set(e, L->cfg->out, 0, NULL, "out of memory");
    return -1;
  }
  struct out o = {.fd = fd, .buf = buf};
  o.len = (size_t)(stpcpy(buf, GE_OUTPUT_COLUMNS "\n") - buf);
  for (size_t i = 0; i < p->n && !o.err; i++) {
    if (o.len + ROW_MAX > OUT_BUF)
      flush(&o);
    const struct ge_slot *s = &L->slots[i];
    const struct ge_template *t = &p->tmpls[p->tmpl[i]];
    int64_t intended = (int64_t)p->ts_us[i];
    int64_t sent = ge_us(s->sent_ns), recv = ge_us(s->recv_ns);
    char *q = buf + o.len;
    q = u64(q, p->devs[p->dev[i]].id);
    *q++ = ',';
    q = stpcpy(q, ge_wire_method_name(t->code));
    *q++ = ',';
    memcpy(q, p->text + p->uri_off[i], p->uri_len[i]);
    q += p->uri_len[i];
    *q++ = ',';
    q = u64(q, p->ts_us[i]);
    *q++ = ',';
    q = u64(q, (uint64_t)sent);
    *q++ = ',';
    if (s->recv_ns >= 0)
      q = u64(q, (uint64_t)recv);
    *q++ = ',';
    if (s->recv_ns >= 0)
      q = u64(q, (uint64_t)(recv - sent));
    *q++ = ',';
    if (s->recv_ns >= 0)
      q = u64(q, (uint64_t)(recv - intended));
    *q++ = ',';
    q = u64(q, (uint64_t)(sent - intended));
    *q++ = ',';
    q = stpcpy(q, status[s->state]);
    *q++ = ',';
    if (s->recv_ns >= 0) {
      q = u64(q, s->code >> 5);
      *q++ = '.';
      *q++ = (char)('0' + (s->code & 31) / 10);
      *q++ = (char)('0' + (s->code & 31) % 10);
    }
    *q++ = ',';
    q = u64(q, s->retrans);
    *q++ = ',';
    if (s->recv_ns >= 0 && s->service_us != UINT32_MAX)
      q = u64(q, s->service_us);
    *q++ = '\n';
    o.len = (size_t)(q - buf);
  }
  flush(&o);
  free(buf);
  if (o.err) {
    ge_err_set(e, L->cfg->out, 0, NULL, "write failed: %s", strerror(o.err));
    return -1;
  }
  return 0;
}
