/* Trace CSV (docs/formats.md) -> plan. A hot path: a 10-million-line trace
 * is mapped once and parsed by hand in a single pass, every line checked
 * before anything is sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ge.h"

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

int ge_trace_parse_buf(struct ge_plan *p, const char *name, const char *buf,
                       size_t len, const struct ge_hosts *h, struct ge_err *e) {
  const char *end = buf + len;
  size_t lines = 1;
  for (const char *q = buf; (q = memchr(q, '\n', (size_t)(end - q))); q++)
    lines++;
  if (ge_plan_reserve(p, lines)) {
    ge_err_set(e, name, 0, NULL, "out of memory for %zu lines", lines);
    return -1;
  }
  p->text = buf;
  struct ge_lines it = {buf, end, 0};
  const char *s, *le;
  uint64_t prev_ts = 0;
  bool seen_content = false;
  const char *why;
  while (ge_next_line(&it, &s, &le)) {
    const size_t line = it.no;
    struct field f[5];
    size_t nf = 0;
    for (const char *fs = s;;) {
      const char *c = memchr(fs, ',', (size_t)(le - fs));
      if (nf == 5) {
        ge_err_set(e, name, line, "payload", "contains a comma");
        return -1;
      }
      f[nf++] = trim(fs, c ? c : le);
      if (!c)
        break;
      fs = c + 1;
    }
    if (!seen_content && f[0].len == 9 && !memcmp(f[0].s, "device_id", 9)) {
      seen_content = true;
      continue;
    }
    seen_content = true;
    if (nf < 4) {
      static const char *const names[] = {"device_id", "send_ts_us", "method",
                                          "uri"};
      ge_err_set(e, name, line, names[nf], "missing (expected %s[,payload])",
                 GE_TRACE_COLUMNS);
      return -1;
    }
    uint64_t id, ts;
    if (!digits(f[0], GE_MAX_DEVICE_ID, &id)) {
      ge_err_set(e, name, line, "device_id",
                 "'%.*s' is not an integer in 0..2147483647",
                 (int)(f[0].len > 40 ? 40 : f[0].len), f[0].s);
      return -1;
    }
    if (!digits(f[1], GE_MAX_SEND_TS_US, &ts)) {
      ge_err_set(e, name, line, "send_ts_us",
                 "'%.*s' is not an integer in 0..2^53",
                 (int)(f[1].len > 40 ? 40 : f[1].len), f[1].s);
      return -1;
    }
    if (ts < prev_ts) {
      ge_err_set(e, name, line, "send_ts_us",
                 "%llu is before the previous line's %llu (must be "
                 "non-decreasing)",
                 (unsigned long long)ts, (unsigned long long)prev_ts);
      return -1;
    }
    prev_ts = ts;
    int code = ge_wire_method(f[2].s, f[2].len);
    if (code < 0) {
      ge_err_set(e, name, line, "method",
                 "'%.*s' is not GET, PUT, POST or DELETE",
                 (int)(f[2].len > 40 ? 40 : f[2].len), f[2].s);
      return -1;
    }
    const char *u = f[3].s, *ue = f[3].s + f[3].len;
    if (f[3].len < 7 || memcmp(u, "coap://", 7)) {
      ge_err_set(e, name, line, "uri", "must start with coap://");
      return -1;
    }
    const char *auth = u + 7;
    const char *slash = memchr(auth, '/', (size_t)(ue - auth));
    if (!slash) {
      ge_err_set(e, name, line, "uri",
                 "missing path (expected coap://HOST[:PORT]/path)");
      return -1;
    }
    const char *qm = memchr(slash, '?', (size_t)(ue - slash));
    const char *pe = qm ? qm : ue;
    size_t plen = (size_t)(pe - slash), qlen = qm ? (size_t)(ue - qm - 1) : 0;
    if (plen > GE_MAX_PATH_BYTES || qlen > GE_MAX_PATH_BYTES) {
      ge_err_set(e, name, line, "uri", "path or query longer than %d bytes",
                 GE_MAX_PATH_BYTES);
      return -1;
    }
    if ((why = check_uri_part(auth, (size_t)(ue - auth)))) {
      ge_err_set(e, name, line, "uri", "%s", why);
      return -1;
    }
    struct field pay = {"", 0};
    if (nf == 5) {
      pay = f[4];
      if (pay.len > GE_MAX_PAYLOAD_BYTES) {
        ge_err_set(e, name, line, "payload", "longer than %d bytes",
                   GE_MAX_PAYLOAD_BYTES);
        return -1;
      }
      for (size_t i = 0; i < pay.len; i++)
        if (pay.s[i] < 0x20 || pay.s[i] > 0x7e) {
          ge_err_set(e, name, line, "payload", "non-printable byte");
          return -1;
        }
    }
    size_t alen = (size_t)(slash - auth);
    int64_t d = ge_plan_find_device(p, (uint32_t)id);
    if (d < 0 || p->devs[d].auth_len != alen ||
        memcmp(buf + p->devs[d].auth_off, auth, alen)) {
      struct sockaddr_in6 addr;
      if ((why = resolve(auth, alen, h, &addr))) {
        ge_err_set(e, name, line, "uri", "'%.*s': %s", (int)alen, auth, why);
        return -1;
      }
      if (d < 0) {
        d = ge_plan_add_device(p, (uint32_t)id, (uint64_t)(auth - buf),
                               (uint32_t)alen, &addr);
        if (d < 0) {
          ge_err_set(e, name, line, NULL, "out of memory");
          return -1;
        }
      } else {
        const struct sockaddr_in6 *had = &p->peers[p->devs[d].peer].addr;
        if (had->sin6_port != addr.sin6_port ||
            memcmp(&had->sin6_addr, &addr.sin6_addr, 16)) {
          const struct ge_device *dv = &p->devs[d];
          ge_err_set(e, name, line, "uri",
                     "device %llu was at '%.*s' on an earlier line; every "
                     "line of a device must name the same host and port",
                     (unsigned long long)id, (int)dv->auth_len,
                     buf + dv->auth_off);
          return -1;
        }
      }
    }
    int64_t t = ge_plan_template(p, (uint8_t)code, slash, plen,
                                 qm ? qm + 1 : "", qlen, pay.s, pay.len, &why);
    if (t < 0) {
      ge_err_set(e, name, line, "uri", "%s", why);
      return -1;
    }
    size_t i = p->n++;
    p->ts_us[i] = ts;
    p->uri_off[i] = (uint64_t)(u - buf);
    p->uri_len[i] = (uint16_t)f[3].len;
    p->dev[i] = (uint32_t)d;
    p->tmpl[i] = (uint32_t)t;
  }
  if (p->n == 0) {
    ge_err_set(e, name, it.no ? it.no : 1, "device_id",
               "the trace has no requests");
    return -1;
  }
  if (p->n > UINT32_MAX - 1) {
    ge_err_set(e, name, it.no, NULL, "more than 2^32-2 requests");
    return -1;
  }
  return 0;
}

int ge_trace_load(struct ge_plan *p, struct ge_trace_src *src, const char *path,
                  const struct ge_hosts *h, struct ge_err *e) {
  src->map = NULL;
  src->len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    ge_err_set(e, path, 0, NULL, "cannot open: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st)) {
    ge_err_set(e, path, 0, NULL, "cannot stat: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (st.st_size == 0) {
    close(fd);
    ge_err_set(e, path, 1, "device_id", "the trace has no requests");
    return -1;
  }
  void *m = mmap(NULL, (size_t)st.st_size, PROT_READ,
                 MAP_PRIVATE | MAP_POPULATE, fd, 0);
  close(fd);
  if (m == MAP_FAILED) {
    ge_err_set(e, path, 0, NULL, "cannot map: %s", strerror(errno));
    return -1;
  }
  if (madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL) && errno != EINVAL) {
    ge_err_set(e, path, 0, NULL, "madvise: %s", strerror(errno));
    munmap(m, (size_t)st.st_size);
    return -1;
  }
  src->map = m;
  src->len = (size_t)st.st_size;
  return ge_trace_parse_buf(p, path, m, src->len, h, e);
}

void ge_trace_unmap(struct ge_trace_src *src) {
  if (src->map)
    munmap(src->map, src->len);
  src->map = NULL;
}
