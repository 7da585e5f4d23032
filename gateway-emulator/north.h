/* The north side: how the GE reaches the devices. Directly (each request
 * to its device), or through a gateway under test: a CoAP forward proxy
 * (RFC 7252 section 5.7.2) addressed by Proxy-Uri or by Proxy-Scheme with
 * Uri-Host and Uri-Port, or an HTTP-to-CoAP cross-proxy. This module
 * names the modes and builds a proxied request's template. */
#ifndef GE_NORTH_H
#define GE_NORTH_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

enum ge_north {
  GE_NORTH_DIRECT = 0, /* no --gateway */
  GE_NORTH_COAP_URI,   /* --north coap-uri */
  GE_NORTH_COAP_SCHEME,
  GE_NORTH_HTTP,
};
/* --north-sockets: the gateway sees one client (the GE's shared sockets)
 * or one per device (each device's requests from sockets of its own). */
enum ge_north_sockets {
  GE_NSOCK_UNSET = 0, /* not given: one */
  GE_NSOCK_ONE,
  GE_NSOCK_PER_DEVICE,
};
/* RFC 7252 section 5.10: Proxy-Uri is 1..1034 bytes. */
#define GE_PROXY_URI_MAX 1034
/* "[v6]:65535" or "a.b.c.d:65535" and its NUL. */
#define GE_ADDR_TEXT_MAX 56

/* "direct", "coap-uri", "coap-scheme", "http". */
const char *ge_north_name(uint8_t mode);
/* The address as a URI authority (host and port): "127.0.0.1:5683",
 * "[::1]:5683" (v4-mapped addresses as IPv4). Its length. */
size_t ge_north_authority(const struct sockaddr_in6 *a,
                          char out[GE_ADDR_TEXT_MAX]);
/* "coap://<authority of dev><path>[?query]" into out, NUL-terminated:
 * its length, or 0 when it does not fit in cap bytes with the NUL. */
size_t ge_north_coap_uri(char *out, size_t cap, const struct sockaddr_in6 *dev,
                         const char *path, size_t plen, const char *query,
                         size_t qlen);
/* Options and payload of one request to device `dev` in this mode (direct
 * and http: Uri-Path / Uri-Query as to the device itself), with the
 * Observe option of method `code` (wire.h). Its length, or 0 with the
 * reason in *why. */
size_t ge_north_template(uint8_t *out, size_t cap, uint8_t mode, uint8_t code,
                         const struct sockaddr_in6 *dev, const char *path,
                         size_t plen, const char *query, size_t qlen,
                         const char *payload, size_t paylen, const char **why);

#endif
