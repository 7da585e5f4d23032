/* --hosts: placeholder host name -> container address. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"
#include "ge_format.h"
#include "hosts.h"
#include "lines.h"

int ge_parse_port(const char *s, size_t len, uint16_t *port) {
  if (len == 0 || len > 5)
    return -1;
  unsigned v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  if (v == 0 || v > 65535)
    return -1;
  *port = (uint16_t)v;
  return 0;
}

int ge_parse_address(const char *s, size_t len, struct sockaddr_in6 *out,
                     bool *has_port, const char **why) {
  char buf[INET6_ADDRSTRLEN + 1];
  const char *host = s, *rest;
  size_t hlen;
  memset(out, 0, sizeof *out);
  out->sin6_family = AF_INET6;
  out->sin6_port = htons(GE_DEFAULT_COAP_PORT);
  *has_port = false;
  if (len && s[0] == '[') {
    const char *close = memchr(s, ']', len);
    if (!close) {
      *why = "'[' without ']'";
      return -1;
    }
    host = s + 1;
    hlen = (size_t)(close - host);
    rest = close + 1;
    if (hlen == 0 || hlen >= sizeof buf) {
      *why = "bad IPv6 address";
      return -1;
    }
    memcpy(buf, host, hlen);
    buf[hlen] = 0;
    if (inet_pton(AF_INET6, buf, &out->sin6_addr) != 1) {
      *why = "bad IPv6 address";
      return -1;
    }
  } else {
    const char *colon = memchr(s, ':', len);
    hlen = colon ? (size_t)(colon - s) : len;
    rest = s + hlen;
    struct in_addr a4;
    if (hlen == 0 || hlen >= sizeof buf) {
      *why = "bad IPv4 address";
      return -1;
    }
    memcpy(buf, host, hlen);
    buf[hlen] = 0;
    if (inet_pton(AF_INET, buf, &a4) != 1) {
      *why = "bad IPv4 address";
      return -1;
    }
    /* v4-mapped so that one AF_INET6 socket reaches both families. */
    out->sin6_addr.s6_addr[10] = 0xff;
    out->sin6_addr.s6_addr[11] = 0xff;
    memcpy(&out->sin6_addr.s6_addr[12], &a4, 4);
  }
  size_t rlen = len - (size_t)(rest - s);
  if (rlen == 0)
    return 0;
  uint16_t port;
  if (rest[0] != ':' || ge_parse_port(rest + 1, rlen - 1, &port)) {
    *why = "bad port (expected :1..65535)";
    return -1;
  }
  out->sin6_port = htons(port);
  *has_port = true;
  return 0;
}

static bool name_ok(const char *s, size_t len) {
  if (len == 0 || len >= sizeof(((struct ge_host *)0)->name))
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_'))
      return false;
  }
  return true;
}

const struct ge_host *ge_hosts_find(const struct ge_hosts *h, const char *name,
                                    size_t len) {
  for (size_t i = 0; i < h->n; i++)
    if (strlen(h->v[i].name) == len && !memcmp(h->v[i].name, name, len))
      return &h->v[i];
  return NULL;
}

int ge_hosts_parse_buf(struct ge_hosts *h, const char *name, const char *buf,
                       size_t len, struct ge_err *e) {
  struct ge_lines it = {buf, buf + len, 0};
  const char *p, *le;
  bool first = true;
  while (ge_next_line(&it, &p, &le)) {
    const size_t line = it.no;
    const char *comma = memchr(p, ',', (size_t)(le - p));
    if (!comma) {
      ge_err_set(e, name, line, "address", "missing (expected host,address)");
      return -1;
    }
    const char *a = comma + 1;
    while (a < le && *a == ' ')
      a++;
    size_t nlen = (size_t)(comma - p);
    if (first && nlen == 4 && !memcmp(p, "host", 4)) {
      first = false;
      continue;
    }
    first = false;
    if (!name_ok(p, nlen)) {
      ge_err_set(e, name, line, "host",
                 "'%.*s' is not a name of [A-Za-z0-9._-], 1..63 bytes",
                 (int)(nlen > 80 ? 80 : nlen), p);
      return -1;
    }
    if (ge_hosts_find(h, p, nlen)) {
      ge_err_set(e, name, line, "host", "'%.*s' appears twice", (int)nlen, p);
      return -1;
    }
    struct ge_host hv = {0};
    const char *why;
    if (ge_parse_address(a, (size_t)(le - a), &hv.addr, &hv.has_port, &why)) {
      ge_err_set(e, name, line, "address", "%s", why);
      return -1;
    }
    memcpy(hv.name, p, nlen);
    if ((h->n & (h->n + 1)) == 0 || h->n == 0) {
      /* grow at 0, 1, 3, 7, ...: capacity doubles */
      struct ge_host *nv = realloc(h->v, (2 * h->n + 2) * sizeof *nv);
      if (!nv) {
        ge_err_set(e, name, line, NULL, "out of memory");
        return -1;
      }
      h->v = nv;
    }
    h->v[h->n++] = hv;
  }
  return 0;
}

int ge_hosts_load(struct ge_hosts *h, const char *path, struct ge_err *e) {
  struct stat st;
  int fd = ge_open_input(path, &st, e);
  if (fd < 0)
    return -1;
  char *buf = NULL;
  size_t got = 0;
  if (!(buf = malloc((size_t)st.st_size + 1))) {
    ge_err_set(e, path, 0, NULL, "cannot read: %s", strerror(errno));
    goto err;
  }
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0) {
      ge_err_set(e, path, 0, NULL, "cannot read: %s",
                 r ? strerror(errno) : "file shrank");
      goto err;
    }
    got += (size_t)r;
  }
  close(fd);
  int rc = ge_hosts_parse_buf(h, path, buf, got, e);
  free(buf);
  return rc;
err:
  free(buf);
  close(fd);
  return -1;
}

void ge_hosts_free(struct ge_hosts *h) {
  free(h->v);
  h->v = NULL;
  h->n = 0;
}
