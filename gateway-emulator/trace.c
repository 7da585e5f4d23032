/* Trace CSV (docs/formats.md) -> requests. A cursor parses the mapped
 * text line by line by hand; the scan runs one over the whole trace
 * before anything is sent (every line checked, the tables and counts
 * built), the loop runs another while sending.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "ge_format.h"
#include "north.h"
#include "trace.h"
#include "wire.h"

struct field {
  const char *s;
  size_t len;
};

static bool digits(struct field f, uint64_t max, uint64_t *out) {
  if (f.len == 0 || f.len > 16)
    return false;
  uint64_t v = 0;
  for (size_t i = 0; i < f.len; i++) {
    unsigned d = (unsigned)(f.s[i] - '0');
    if (d > 9)
      return false;
    v = v * 10 + d;
  }
  if (v > max)
    return false;
  *out = v;
  return true;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c |= 0x20;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Printable ASCII without the characters CSV or URI syntax reserve here,
 * and every '%' followed by two hex digits (libcoap assumes that). */
static const char *check_uri_part(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= 0x20 || c >= 0x7f || c == '"' || c == '#')
      return "contains a space, quote, '#' or non-printable byte";
    if (c == '%' &&
        (i + 2 >= len || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0))
      return "bad percent-encoding";
  }
  return NULL;
}

static bool numeric_v4(const char *s, size_t len) {
  for (size_t i = 0; i < len; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || s[i] == '.'))
      return false;
  return true;
}

/* Authority text -> endpoint: numeric IPv4, [IPv6], or a --hosts name.
 * A port in the hosts file wins over the URI's (the hosts file is the
 * deployment map); otherwise the URI port, otherwise 5683. */
static const char *resolve(const char *a, size_t len, const struct ge_hosts *h,
                           struct sockaddr_in6 *out) {
  bool has_port;
  const char *why = NULL;
  size_t hlen = len;
  if (len && a[0] == '[') {
    if (ge_parse_address(a, len, out, &has_port, &why))
      return why;
    return NULL;
  }
  const char *colon = memchr(a, ':', len);
  if (colon)
    hlen = (size_t)(colon - a);
  if (hlen == 0)
    return "empty host";
  if (numeric_v4(a, hlen))
    return ge_parse_address(a, len, out, &has_port, &why) ? why : NULL;
  const struct ge_host *hv = h ? ge_hosts_find(h, a, hlen) : NULL;
  if (!hv)
    return "host is not numeric and not in --hosts";
  uint16_t port = GE_DEFAULT_COAP_PORT;
  if (colon && ge_parse_port(colon + 1, len - hlen - 1, &port))
    return "bad port (expected :1..65535)";
  *out = hv->addr;
  if (!hv->has_port)
    out->sin6_port = htons(port);
  return NULL;
}

static struct field trim(const char *s, const char *e) {
  while (s < e && *s == ' ')
    s++;
  while (e > s && e[-1] == ' ')
    e--;
  return (struct field){s, (size_t)(e - s)};
}

/* Splits a line at commas into at most 5 trimmed fields; -1 when more. */
static int split(const char *s, const char *le, struct field f[5], size_t *nf) {
  *nf = 0;
  for (const char *fs = s;;) {
    const char *c = memchr(fs, ',', (size_t)(le - fs));
    if (*nf == 5)
      return -1;
    f[(*nf)++] = trim(fs, c ? c : le);
    if (!c)
      return 0;
    fs = c + 1;
  }
}

static bool is_header(struct ge_cursor *c, const struct field *f0) {
  if (c->seen_content)
    return false;
  c->seen_content = true;
  return f0->len == 9 && !memcmp(f0->s, "device_id", 9);
}

/* One content line being parsed: where it is (for errors), its fields,
 * and what each step made of them. */
struct line {
  const char *name;
  size_t no;
  struct field f[5];
  size_t nf;
  uint64_t id, ts;
  int code;
  const char *uri, *auth, *slash, *qm; /* coap://AUTH/PATH?QUERY */
  size_t alen, plen, qlen;
  struct field pay;
};

/* At most 40 bytes of a field, for an error message. */
#define SHOWN(fl) (int)((fl).len > 40 ? 40 : (fl).len), (fl).s

/* device_id and send_ts_us (integers in range, times non-decreasing) and
 * the method. */
static int check_columns(struct ge_cursor *c, struct line *ln,
                         struct ge_err *e) {
  if (!digits(ln->f[0], GE_MAX_DEVICE_ID, &ln->id)) {
    ge_err_set(e, ln->name, ln->no, "device_id",
               "'%.*s' is not an integer in 0..2147483647", SHOWN(ln->f[0]));
    return -1;
  }
  if (!digits(ln->f[1], GE_MAX_SEND_TS_US, &ln->ts)) {
    ge_err_set(e, ln->name, ln->no, "send_ts_us",
               "'%.*s' is not an integer in 0..2^53", SHOWN(ln->f[1]));
    return -1;
  }
  if (ln->ts < c->prev_ts) {
    ge_err_set(e, ln->name, ln->no, "send_ts_us",
               "%llu is before the previous line's %llu (must be "
               "non-decreasing)",
               (unsigned long long)ln->ts, (unsigned long long)c->prev_ts);
    return -1;
  }
  c->prev_ts = ln->ts;
  ln->code = ge_wire_method(ln->f[2].s, ln->f[2].len);
  if (ln->code < 0) {
    ge_err_set(e, ln->name, ln->no, "method",
               "'%.*s' is not GET, PUT, POST, DELETE, OBS or UNOBS",
               SHOWN(ln->f[2]));
    return -1;
  }
  return 0;
}

/* coap://HOST[:PORT]/path[?query], within the length limits. */
static int check_uri(struct line *ln, struct ge_err *e) {
  const char *u = ln->f[3].s, *ue = ln->f[3].s + ln->f[3].len, *why;
  if (ln->f[3].len < 7 || memcmp(u, "coap://", 7) != 0) {
    ge_err_set(e, ln->name, ln->no, "uri", "must start with coap://");
    return -1;
  }
  ln->uri = u;
  ln->auth = u + 7;
  ln->slash = memchr(ln->auth, '/', (size_t)(ue - ln->auth));
  if (!ln->slash) {
    ge_err_set(e, ln->name, ln->no, "uri",
               "missing path (expected coap://HOST[:PORT]/path)");
    return -1;
  }
  ln->qm = memchr(ln->slash, '?', (size_t)(ue - ln->slash));
  const char *pe = ln->qm ? ln->qm : ue;
  ln->plen = (size_t)(pe - ln->slash);
  ln->qlen = ln->qm ? (size_t)(ue - ln->qm - 1) : 0;
  ln->alen = (size_t)(ln->slash - ln->auth);
  if (ln->plen > GE_MAX_PATH_BYTES || ln->qlen > GE_MAX_PATH_BYTES) {
    ge_err_set(e, ln->name, ln->no, "uri", "path or query longer than %d bytes",
               GE_MAX_PATH_BYTES);
    return -1;
  }
  if ((why = check_uri_part(ln->auth, (size_t)(ue - ln->auth)))) {
    ge_err_set(e, ln->name, ln->no, "uri", "%s", why);
    return -1;
  }
  return 0;
}

/* The optional fifth field: printable, at most GE_MAX_PAYLOAD_BYTES. */
static int check_payload(struct line *ln, struct ge_err *e) {
  ln->pay = (struct field){"", 0};
  if (ln->nf < 5)
    return 0;
  ln->pay = ln->f[4];
  if (ln->pay.len > GE_MAX_PAYLOAD_BYTES) {
    ge_err_set(e, ln->name, ln->no, "payload", "longer than %d bytes",
               GE_MAX_PAYLOAD_BYTES);
    return -1;
  }
  for (size_t i = 0; i < ln->pay.len; i++)
    if (ln->pay.s[i] < 0x20 || ln->pay.s[i] > 0x7e) {
      ge_err_set(e, ln->name, ln->no, "payload", "non-printable byte");
      return -1;
    }
  return 0;
}

/* OBS and UNOBS: no payload, and CoAP toward the devices. */
static int check_observe(const struct ge_plan *p, const struct line *ln,
                         struct ge_err *e) {
  if (!ge_wire_observe((uint8_t)ln->code))
    return 0;
  if (p->north == GE_NORTH_HTTP) {
    ge_err_set(e, ln->name, ln->no, "method",
               "%.*s: Observe needs CoAP (not --north http)", SHOWN(ln->f[2]));
    return -1;
  }
  if (ln->pay.len) {
    ge_err_set(e, ln->name, ln->no, "payload", "%.*s takes no payload",
               SHOWN(ln->f[2]));
    return -1;
  }
  return 0;
}

/* A device seen before at another authority text: it must still resolve
 * to the same endpoint. */
static int same_endpoint(const struct ge_plan *p, int64_t d,
                         const struct sockaddr_in6 *addr, const struct line *ln,
                         struct ge_err *e) {
  const struct sockaddr_in6 *had = &p->devs[d].addr;
  if (had->sin6_port == addr->sin6_port &&
      !memcmp(&had->sin6_addr, &addr->sin6_addr, 16))
    return 0;
  const struct ge_device *dv = &p->devs[d];
  ge_err_set(e, ln->name, ln->no, "uri",
             "device %llu was at '%.*s' on an earlier line; every "
             "line of a device must name the same host and port",
             (unsigned long long)ln->id, (int)dv->auth_len,
             p->abytes + dv->auth_off);
  return -1;
}

/* The line's device: found by id (same authority text), or its authority
 * resolved and the device added (scan) or checked against the endpoint
 * it had. The device index, or -1 (e). */
static int64_t bind_device(struct ge_plan *p, const struct ge_hosts *h,
                           const struct line *ln, struct ge_err *e) {
  int64_t d = ge_plan_find_device(p, (uint32_t)ln->id);
  if (d >= 0 && p->devs[d].auth_len == ln->alen &&
      !memcmp(p->abytes + p->devs[d].auth_off, ln->auth, ln->alen))
    return d;
  struct sockaddr_in6 addr;
  const char *why = resolve(ln->auth, ln->alen, h, &addr);
  if (why) {
    ge_err_set(e, ln->name, ln->no, "uri", "'%.*s': %s", (int)ln->alen,
               ln->auth, why);
    return -1;
  }
  if (d >= 0)
    return same_endpoint(p, d, &addr, ln, e) ? -1 : d;
  d = ge_plan_add_device(p, (uint32_t)ln->id, ln->auth, (uint32_t)ln->alen,
                         &addr);
  if (d < 0)
    ge_err_set(e, ln->name, ln->no, NULL, "%s",
               p->frozen ? "device not in the scanned trace (was the "
                           "file changed?)"
                         : "out of memory");
  return d;
}

/* One content line -> *r: 1, or 0 for the header line, or -1 (e). */
static int parse_line(struct ge_plan *p, struct ge_cursor *c,
                      const struct ge_hosts *h, const char *s, const char *le,
                      struct ge_req *r, struct ge_err *e) {
  struct line ln = {.name = c->name, .no = c->it.no};
  const char *why;
  if (split(s, le, ln.f, &ln.nf)) {
    ge_err_set(e, ln.name, ln.no, "payload", "contains a comma");
    return -1;
  }
  if (is_header(c, &ln.f[0]))
    return 0;
  if (ln.nf < 4) {
    static const char *const names[] = {"device_id", "send_ts_us", "method",
                                        "uri"};
    ge_err_set(e, ln.name, ln.no, names[ln.nf],
               "missing (expected %s[,payload])", GE_TRACE_COLUMNS);
    return -1;
  }
  if (check_columns(c, &ln, e) || check_uri(&ln, e) || check_payload(&ln, e) ||
      check_observe(p, &ln, e))
    return -1;
  int64_t d = bind_device(p, h, &ln, e);
  if (d < 0)
    return -1;
  int64_t t = ge_plan_template(p, (uint8_t)ln.code, (uint32_t)d, ln.slash,
                               ln.plen, ln.qm ? ln.qm + 1 : "", ln.qlen,
                               ln.pay.s, ln.pay.len, &why);
  if (t < 0) {
    ge_err_set(e, ln.name, ln.no, "uri", "%s", why);
    return -1;
  }
  r->ts_us = ln.ts;
  r->uri_off = (uint64_t)(ln.uri - p->text);
  r->uri_len = (uint16_t)ln.f[3].len;
  r->dev = (uint32_t)d;
  r->tmpl = (uint32_t)t;
  r->obs = UINT32_MAX;
  return 1;
}

/* The observation of an OBS or UNOBS row: OBS rows are numbered in
 * order; an UNOBS row's is the scan's pairing (a frozen plan only). */
static int observation(const struct ge_plan *p, struct ge_cursor *c,
                       struct ge_req *r, struct ge_err *e) {
  uint8_t obs = ge_wire_observe(p->tmpls[r->tmpl].code);
  if (obs == GE_OBSERVE_REGISTER) {
    r->obs = (uint32_t)c->nobs++;
  } else if (obs == GE_OBSERVE_DEREGISTER && p->frozen) {
    if (c->nunobs >= p->nunobs) {
      ge_err_set(e, c->name, c->it.no, "method",
                 "UNOBS not in the scanned trace (was the file changed?)");
      return -1;
    }
    r->obs = p->unobs_pair[c->nunobs++];
  }
  return 0;
}

void ge_cursor_init(struct ge_cursor *c, const struct ge_plan *p,
                    const char *name) {
  *c = (struct ge_cursor){.name = name,
                          .it = {p->text, p->text + p->text_len, 0}};
}

int ge_cursor_next(struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e) {
  const char *s, *le;
  while (ge_next_line(&c->it, &s, &le)) {
    int got = parse_line(p, c, h, s, le, r, e);
    if (got < 0 || (got && observation(p, c, r, e)))
      return -1;
    if (got) {
      c->n++;
      return 1;
    }
  }
  return 0;
}

int ge_cursor_read(const struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e) {
  /* A frozen plan is only read: every adding path checks `frozen` first. */
  if (!p->frozen) {
    ge_err_set(e, c->name, c->it.no, NULL, "plan not finished");
    return -1;
  }
  return ge_cursor_next((struct ge_plan *)p, c, h, r, e);
}

/* The scan's second cursor, EXCHANGE_LIFETIME behind the first over lines
 * the first has checked: only the device's peer and the time. */
static void trail_next(const struct ge_plan *p, struct ge_cursor *c,
                       uint64_t *ts, uint32_t *peer) {
  const char *s, *le;
  while (ge_next_line(&c->it, &s, &le)) {
    struct field f[5];
    size_t nf;
    split(s, le, f, &nf);
    if (is_header(c, &f[0]))
      continue;
    uint64_t id = 0;
    digits(f[0], GE_MAX_DEVICE_ID, &id);
    digits(f[1], GE_MAX_SEND_TS_US, ts);
    *peer = p->devs[ge_plan_find_device(p, (uint32_t)id)].peer;
    c->n++;
    return;
  }
}

/* The scan pairs an OBS or UNOBS row with its partner (plan.c). */
static int pair_row(struct ge_plan *p, const struct ge_cursor *c,
                    struct ge_req *r, struct ge_err *e) {
  const char *u = p->text + r->uri_off + 7; /* after coap:// */
  const char *slash = memchr(u, '/', r->uri_len - 7);
  size_t key_off = (size_t)(slash - p->text);
  size_t key_len = r->uri_len - (key_off - r->uri_off);
  const char *why = NULL;
  uint64_t other = 0;
  int rc =
      ge_plan_obs_row(p, p->tmpls[r->tmpl].code, r->dev, (uint32_t)(c->n - 1),
                      c->it.no, key_off, key_len, &r->obs, &why, &other);
  if (rc == -2)
    ge_err_set(e, c->name, c->it.no, NULL, "out of memory");
  else if (rc && other)
    ge_err_set(e, c->name, c->it.no, "method", "%s (on line %llu)", why,
               (unsigned long long)other);
  else if (rc)
    ge_err_set(e, c->name, c->it.no, "method", "%s", why);
  return rc ? -1 : 0;
}

void ge_text_release(const struct ge_plan *p, size_t *released, size_t upto) {
  const size_t page = 4096, step = 256u << 10;
  if (!p->text_mapped)
    return;
  size_t to = upto >= p->text_len ? p->text_len : upto & ~(page - 1);
  if (to <= *released || (to - *released < step && to < p->text_len))
    return;
  /* Unlocked first (the keeper locks ahead of the loop: keep.h; locked
   * pages refuse MADV_DONTNEED). MADV_DONTNEED on a read-only private file
   * mapping drops our copy of the pages; a later read faults them in again
   * from the page cache. A failure only leaves them resident (or locked
   * until the unmap), so it is not an error. */
  (void)munlock((char *)p->text + *released, to - *released);
  (void)madvise((char *)p->text + *released, to - *released, MADV_DONTNEED);
  *released = to;
}

int ge_trace_parse_buf(struct ge_plan *p, const char *name, const char *buf,
                       size_t len, const struct ge_hosts *h, struct ge_err *e) {
  p->text = buf;
  p->text_len = len;
  struct ge_cursor hi, lo;
  ge_cursor_init(&hi, p, name);
  ge_cursor_init(&lo, p, name);
  const uint64_t life_us = GE_EXCHANGE_LIFETIME_NS / 1000;
  struct ge_req r;
  uint64_t lo_ts = 0, prev = 0;
  uint32_t lo_peer = 0;
  bool lo_read = false;
  int got;
  while ((got = ge_cursor_next(p, &hi, h, &r, e)) == 1) {
    if (hi.n > UINT32_MAX - 1) {
      ge_err_set(e, name, hi.it.no, NULL, "more than 2^32-2 requests");
      return -1;
    }
    if (ge_wire_observe(p->tmpls[r.tmpl].code) && pair_row(p, &hi, &r, e))
      return -1;
    /* Requests per peer in the closed window [ts - 247 s, ts]: the same
     * count as two pointers per peer, since the trace is time-ordered. */
    struct ge_peer *pr = &p->peers[p->devs[r.dev].peer];
    pr->count++;
    pr->in_window++;
    for (;;) {
      if (!lo_read) {
        trail_next(p, &lo, &lo_ts, &lo_peer);
        lo_read = true;
      }
      if (r.ts_us - lo_ts <= life_us)
        break;
      p->peers[lo_peer].in_window--;
      lo_read = false;
    }
    if (pr->in_window > pr->window_max)
      pr->window_max = pr->in_window;
    if (hi.n == 1)
      p->ts_first = r.ts_us;
    else if (ge_hist_add(&p->rit_expected, r.ts_us - prev)) {
      ge_err_set(e, name, hi.it.no, NULL, "out of memory");
      return -1;
    }
    prev = p->ts_last = r.ts_us;
    if ((hi.n & 4095) == 0) {
      ge_text_release(p, &hi.released, (size_t)(hi.it.p - buf));
      ge_text_release(p, &lo.released, (size_t)(lo.it.p - buf));
    }
  }
  if (got < 0)
    return -1;
  p->n = hi.n;
  uint64_t open_line = 0;
  if (ge_plan_obs_done(p, &open_line)) {
    ge_err_set(e, name, open_line, "method",
               "OBS without a later UNOBS of the same device and uri");
    return -1;
  }
  if (p->n == 0) {
    ge_err_set(e, name, hi.it.no ? hi.it.no : 1, "device_id",
               "the trace has no requests");
    return -1;
  }
  size_t all = 0;
  ge_text_release(p, &all, len);
  return 0;
}

int ge_trace_load(struct ge_plan *p, struct ge_trace_src *src, const char *path,
                  const struct ge_hosts *h, struct ge_err *e) {
  src->map = NULL;
  src->len = 0;
  struct stat st;
  int fd = ge_open_input(path, &st, e);
  if (fd < 0)
    return -1;
  if (st.st_size == 0) {
    close(fd);
    ge_err_set(e, path, 1, "device_id", "the trace has no requests");
    return -1;
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) {
    ge_err_set(e, path, 0, NULL, "cannot map: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL) && errno != EINVAL) {
    ge_err_set(e, path, 0, NULL, "madvise: %s", strerror(errno));
    munmap(m, (size_t)st.st_size);
    close(fd);
    return -1;
  }
  src->fd = fd;
  src->map = m;
  src->len = (size_t)st.st_size;
  p->text_mapped = true;
  return ge_trace_parse_buf(p, path, m, src->len, h, e);
}

void ge_trace_unmap(struct ge_trace_src *src) {
  if (src->map) {
    munmap(src->map, src->len);
    (void)close(src->fd); /* read-only: nothing to flush */
  }
  src->map = NULL;
}
