/* CoAP on the wire (RFC 7252): the constants the GE plans with, the
 * 12-byte request header, empty messages and pre-encoded templates. */
#ifndef GE_WIRE_H
#define GE_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* RFC 7252 section 4.8.2 with default parameters. */
#define GE_EXCHANGE_LIFETIME_NS 247000000000LL
#define GE_MID_SPACE 65536u
#define GE_TOKEN_LEN 8
#define GE_HDR_LEN (4 + GE_TOKEN_LEN)
#define GE_DGRAM_MAX 2048

enum { GE_CON = 0, GE_NON = 1, GE_ACK = 2, GE_RST = 3 };
/* The trace's OBS and UNOBS methods (RFC 7641): a GET with Observe 0 or 1.
 * Inside the GE they are method codes of their own in the reserved class
 * 7, so that their templates differ from a GET's; on the wire a GET. */
#define GE_CODE_OBS 0xE1
#define GE_CODE_UNOBS 0xE2
/* An observation's token: the run's salt with this bit flipped, then the
 * observation index (a request's: the salt, then the trace index). */
#define GE_OBS_SALT_BIT 0x80000000u
/* Observe option of a template: none, 0 (register), 1 (deregister). */
enum { GE_OBSERVE_NONE = 0, GE_OBSERVE_REGISTER, GE_OBSERVE_DEREGISTER };
/* The code a template's method code is sent as, and its Observe option. */
static inline uint8_t ge_wire_code(uint8_t code) {
  return code == GE_CODE_OBS || code == GE_CODE_UNOBS ? 1 /* GET */ : code;
}
static inline uint8_t ge_wire_observe(uint8_t code) {
  return code == GE_CODE_OBS     ? GE_OBSERVE_REGISTER
         : code == GE_CODE_UNOBS ? GE_OBSERVE_DEREGISTER
                                 : GE_OBSERVE_NONE;
}

void ge_wire_header(uint8_t out[GE_HDR_LEN], uint8_t type, uint8_t code,
                    uint16_t mid, uint32_t salt, uint32_t idx);
void ge_wire_empty(uint8_t out[4], uint8_t type, uint16_t mid);
/* What a request template carries: its options in number order (a text
 * of length 0, or port 0, leaves its option out) and the payload. */
struct ge_wire_req {
  const char *host; /* Uri-Host (3) */
  size_t hlen;
  uint8_t observe;  /* Observe (6): GE_OBSERVE_* */
  uint16_t port;    /* Uri-Port (7) */
  const char *path; /* "/a/b": Uri-Path (11), one per segment */
  size_t plen;
  const char *query; /* "k=v&x": Uri-Query (15), one per part */
  size_t qlen;
  const char *proxy_uri; /* Proxy-Uri (35) */
  size_t ulen;
  const char *scheme; /* Proxy-Scheme (39) */
  size_t slen;
  const char *payload; /* with Content-Format (12) text/plain */
  size_t paylen;
};
/* Encodes the options and payload; returns the length or 0 when it does
 * not fit (or a path or query cannot be split). */
size_t ge_wire_encode(uint8_t *out, size_t cap, const struct ge_wire_req *q);
/* Encodes Uri-Path, Content-Format, Uri-Query and payload; returns the
 * length or 0 when it does not fit. */
size_t ge_wire_template(uint8_t *out, size_t cap, const char *path, size_t plen,
                        const char *query, size_t qlen, const char *payload,
                        size_t paylen);
int ge_wire_method(const char *s, size_t len); /* code or -1 */
const char *ge_wire_method_name(uint8_t code);

#endif
