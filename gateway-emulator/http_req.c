/* HTTP/1.1 request bytes. The template's {coap_uri} becomes
 * coap://<device address>:<port><path>[?query] (north.c), inserted as is
 * (no percent-encoding: the path and query are URI text already, and the
 * address is literal, IPv6 in brackets, so the gateway resolves no name). */
#include <stdio.h>
#include <string.h>

#include "http_req.h"
#include "north.h"

const char *ge_http_req_check(const char *t) {
  size_t n = strlen(t), vl = strlen(GE_HTTP_URI_VAR);
  if (!n || t[0] != '/')
    return "must start with /";
  if (n > GE_HTTP_TEMPLATE_MAX)
    return "is longer than 512 bytes";
  unsigned vars = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)t[i];
    if (c <= ' ' || c >= 0x7f)
      return "holds a space, a control or a non-ASCII byte";
    if (c == '{') {
      if (strncmp(t + i, GE_HTTP_URI_VAR, vl) != 0)
        return "has a { that does not start {coap_uri}";
      i += vl - 1;
      if (++vars > GE_HTTP_URI_VARS_MAX)
        return "has {coap_uri} more than 4 times";
    } else if (c == '}') {
      return "has a } outside {coap_uri}";
    }
  }
  return NULL;
}

/* Appends n bytes at *w if they fit: 0, or -1. */
static int put(char *out, size_t cap, size_t *w, const void *s, size_t n) {
  if (*w + n > cap)
    return -1;
  memcpy(out + *w, s, n);
  *w += n;
  return 0;
}

/* The target: the template with every {coap_uri} filled in. */
static int target(char *out, size_t cap, size_t *w, const char *tmpl,
                  const char *uri, size_t ulen) {
  size_t vl = strlen(GE_HTTP_URI_VAR);
  for (const char *t = tmpl; *t;) {
    const char *v = strstr(t, GE_HTTP_URI_VAR);
    size_t lit = v ? (size_t)(v - t) : strlen(t);
    if (put(out, cap, w, t, lit))
      return -1;
    if (!v)
      break;
    if (put(out, cap, w, uri, ulen))
      return -1;
    t = v + vl;
  }
  return 0;
}

size_t ge_http_req_format(char *out, size_t cap, const char *tmpl,
                          const char *host, const char *method,
                          const struct sockaddr_in6 *dev, const char *pq,
                          size_t pq_len) {
  const char *end = pq + pq_len, *qm = memchr(pq, '?', pq_len);
  const char *nl = qm ? memchr(qm, '\n', (size_t)(end - qm)) : NULL;
  if (!nl)
    return 0;
  char uri[GE_PROXY_URI_MAX];
  size_t pl = (size_t)(qm - pq), ql = (size_t)(nl - qm - 1);
  size_t ulen = ge_north_coap_uri(uri, sizeof uri, dev, pl ? pq : "/",
                                  pl ? pl : 1, qm + 1, ql);
  size_t paylen = (size_t)(end - nl - 1), w = 0;
  char head[96], cl[48];
  int hl = snprintf(head, sizeof head, " HTTP/1.1\r\nHost: %s\r\n", host);
  int cll = snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", paylen);
  if (!ulen || hl < 0 || cll < 0 || put(out, cap, &w, method, strlen(method)) ||
      put(out, cap, &w, " ", 1) || target(out, cap, &w, tmpl, uri, ulen) ||
      put(out, cap, &w, head, (size_t)hl) ||
      put(out, cap, &w, cl, (size_t)cll) || put(out, cap, &w, nl + 1, paylen))
    return 0;
  return w;
}
