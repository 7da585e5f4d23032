/* CoAP encoding. libcoap 4.3.1 has no public serializer, and its session
 * layer would impose NSTART=1 and its own MIDs, so requests are built from
 * a pre-encoded template (options via libcoap's public coap_split_path /
 * coap_split_query / coap_opt_encode) behind a 12-byte header written in
 * the hot path. Parsing uses coap_pdu_parse (recv.c). */
#include <string.h>

#include <coap3/coap.h>

#include "ge_format.h"
#include "wire.h"

void ge_wire_header(uint8_t out[GE_HDR_LEN], uint8_t type, uint8_t code,
                    uint16_t mid, uint32_t salt, uint32_t idx) {
  out[0] = (uint8_t)(0x40 | (type << 4) | GE_TOKEN_LEN);
  out[1] = code;
  out[2] = (uint8_t)(mid >> 8);
  out[3] = (uint8_t)mid;
  /* token = per-run salt, request index: a reply maps to its request
   * with no lookup table, and stale replies from another run do not. */
  out[4] = (uint8_t)(salt >> 24);
  out[5] = (uint8_t)(salt >> 16);
  out[6] = (uint8_t)(salt >> 8);
  out[7] = (uint8_t)salt;
  out[8] = (uint8_t)(idx >> 24);
  out[9] = (uint8_t)(idx >> 16);
  out[10] = (uint8_t)(idx >> 8);
  out[11] = (uint8_t)idx;
}

void ge_wire_empty(uint8_t out[4], uint8_t type, uint16_t mid) {
  out[0] = (uint8_t)(0x40 | (type << 4));
  out[1] = 0;
  out[2] = (uint8_t)(mid >> 8);
  out[3] = (uint8_t)mid;
}

/* coap_split_* emit every segment with delta 0; re-encode them with the
 * real option number. Returns bytes written, or (size_t)-1. */
static size_t reencode(uint8_t *out, size_t cap, const uint8_t *segs,
                       size_t seglen, unsigned number, unsigned *last) {
  size_t w = 0, r = 0;
  while (r < seglen) {
    coap_option_t o;
    size_t used = coap_opt_parse(segs + r, seglen - r, &o);
    if (!used)
      return (size_t)-1;
    r += used;
    size_t n = coap_opt_encode(out + w, cap - w, (uint16_t)(number - *last),
                               o.value, o.length);
    if (!n)
      return (size_t)-1;
    w += n;
    *last = number;
  }
  return w;
}

size_t ge_wire_template(uint8_t *out, size_t cap, const char *path, size_t plen,
                        const char *query, size_t qlen, const char *payload,
                        size_t paylen) {
  uint8_t segs[4 * GE_MAX_PATH_BYTES + 64];
  size_t w = 0, segl, n;
  unsigned last = 0;
  /* "/a/b": libcoap expects the path without its leading slash; "/" alone
   * means no Uri-Path option at all. */
  if (plen && path[0] == '/') {
    path++;
    plen--;
  }
  if (plen) {
    segl = sizeof segs;
    if (coap_split_path((const uint8_t *)path, plen, segs, &segl) < 0)
      return 0;
    n = reencode(out + w, cap - w, segs, segl, COAP_OPTION_URI_PATH, &last);
    if (n == (size_t)-1)
      return 0;
    w += n;
  }
  if (paylen) {
    /* Content-Format text/plain (0): a zero-length uint */
    n = coap_opt_encode(out + w, cap - w,
                        (uint16_t)(COAP_OPTION_CONTENT_FORMAT - last), NULL, 0);
    if (!n)
      return 0;
    w += n;
    last = COAP_OPTION_CONTENT_FORMAT;
  }
  if (qlen) {
    segl = sizeof segs;
    if (coap_split_query((const uint8_t *)query, qlen, segs, &segl) < 0)
      return 0;
    n = reencode(out + w, cap - w, segs, segl, COAP_OPTION_URI_QUERY, &last);
    if (n == (size_t)-1)
      return 0;
    w += n;
  }
  if (paylen) {
    if (w + 1 + paylen > cap)
      return 0;
    out[w++] = 0xFF; /* payload marker */
    memcpy(out + w, payload, paylen);
    w += paylen;
  }
  return w;
}

int ge_wire_method(const char *s, size_t len) {
  if (len == 3 && !memcmp(s, "GET", 3))
    return COAP_REQUEST_CODE_GET;
  if (len == 3 && !memcmp(s, "PUT", 3))
    return COAP_REQUEST_CODE_PUT;
  if (len == 4 && !memcmp(s, "POST", 4))
    return COAP_REQUEST_CODE_POST;
  if (len == 6 && !memcmp(s, "DELETE", 6))
    return COAP_REQUEST_CODE_DELETE;
  return -1;
}

const char *ge_wire_method_name(uint8_t code) {
  switch (code) {
  case COAP_REQUEST_CODE_GET: return "GET";
  case COAP_REQUEST_CODE_PUT: return "PUT";
  case COAP_REQUEST_CODE_POST: return "POST";
  default: return "DELETE";
  }
}
