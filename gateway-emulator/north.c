/* The north side's modes and the options of a proxied request: Proxy-Uri
 * "coap://<device address>:<port><path>[?query]" (RFC 7252 section 5.7.2,
 * 5.10.2), or Proxy-Scheme "coap" with Uri-Host, Uri-Port, Uri-Path and
 * Uri-Query (section 6.4). The device address is the literal one the
 * trace or hosts file gave, so the gateway resolves no names. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "north.h"
#include "wire.h"

const char *ge_north_name(uint8_t mode) {
  switch (mode) {
  case GE_NORTH_COAP_URI: return "coap-uri";
  case GE_NORTH_COAP_SCHEME: return "coap-scheme";
  case GE_NORTH_HTTP: return "http";
  default: return "direct";
  }
}

/* The host part alone: "127.0.0.1" or "[::1]". Its length. */
static size_t host_text(const struct sockaddr_in6 *a,
                        char out[GE_ADDR_TEXT_MAX]) {
  char ip[INET6_ADDRSTRLEN];
  if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
    inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], ip, sizeof ip);
    return (size_t)snprintf(out, GE_ADDR_TEXT_MAX, "%s", ip);
  }
  inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
  return (size_t)snprintf(out, GE_ADDR_TEXT_MAX, "[%s]", ip);
}

size_t ge_north_authority(const struct sockaddr_in6 *a,
                          char out[GE_ADDR_TEXT_MAX]) {
  size_t n = host_text(a, out);
  return n + (size_t)snprintf(out + n, GE_ADDR_TEXT_MAX - n, ":%u",
                              (unsigned)ntohs(a->sin6_port));
}

size_t ge_north_coap_uri(char *out, size_t cap, const struct sockaddr_in6 *dev,
                         const char *path, size_t plen, const char *query,
                         size_t qlen) {
  char auth[GE_ADDR_TEXT_MAX];
  ge_north_authority(dev, auth);
  int n = snprintf(out, cap, "coap://%s%.*s%s%.*s", auth, (int)plen, path,
                   qlen ? "?" : "", (int)qlen, query);
  return n < 0 || (size_t)n >= cap ? 0 : (size_t)n;
}

size_t ge_north_template(uint8_t *out, size_t cap, uint8_t mode, uint8_t code,
                         const struct sockaddr_in6 *dev, const char *path,
                         size_t plen, const char *query, size_t qlen,
                         const char *payload, size_t paylen, const char **why) {
  char uri[GE_PROXY_URI_MAX + 1], host[GE_ADDR_TEXT_MAX];
  struct ge_wire_req q = {
      .payload = payload, .paylen = paylen, .observe = ge_wire_observe(code)};
  if (mode == GE_NORTH_COAP_URI) {
    q.proxy_uri = uri;
    q.ulen = ge_north_coap_uri(uri, sizeof uri, dev, path, plen, query, qlen);
    if (!q.ulen) {
      *why = "the Proxy-Uri would be longer than CoAP's 1034 bytes";
      return 0;
    }
  } else {
    q.path = path;
    q.plen = plen;
    q.query = query;
    q.qlen = qlen;
  }
  if (mode == GE_NORTH_COAP_SCHEME) {
    q.host = host;
    q.hlen = host_text(dev, host);
    q.port = ntohs(dev->sin6_port);
    q.scheme = "coap";
    q.slen = 4;
  }
  size_t n = ge_wire_encode(out, cap, &q);
  if (!n && (q.ulen || q.hlen || plen > 1 || qlen || paylen))
    *why = "cannot be encoded as CoAP options (bad segment or too long)";
  return n;
}
