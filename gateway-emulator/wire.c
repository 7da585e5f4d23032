/* CoAP encoding. libcoap 4.3.1 has no public serializer, and its session
 * layer would impose NSTART=1 and its own MIDs, so requests are built from
 * a pre-encoded template (options via libcoap's public coap_split_path /
 * coap_split_query / coap_opt_encode) behind a 12-byte header written in
 * the hot path. Parsing uses coap_pdu_parse (recv.c). */
#include <stdbool.h>
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

/* One option `number` after option *last; bytes written or (size_t)-1. */
static size_t one(uint8_t *out, size_t cap, unsigned number, unsigned *last,
                  const void *value, size_t len) {
  size_t n = coap_opt_encode(out, cap, (uint16_t)(number - *last), value, len);
  if (!n)
    return (size_t)-1;
  *last = number;
  return n;
}

/* "/a/b" (Uri-Path) or "k=v&x" (Uri-Query) as one option per segment via
 * libcoap's splitters; bytes written or (size_t)-1. */
static size_t split(uint8_t *out, size_t cap, unsigned number, unsigned *last,
                    const char *s, size_t len) {
  uint8_t segs[4 * GE_MAX_PATH_BYTES + 64];
  size_t segl = sizeof segs;
  /* "/a/b": libcoap expects the path without its leading slash; "/" alone
   * means no Uri-Path option at all. */
  if (number == COAP_OPTION_URI_PATH && len && s[0] == '/') {
    s++;
    len--;
  }
  if (!len)
    return 0;
  int rc = number == COAP_OPTION_URI_PATH
               ? coap_split_path((const uint8_t *)s, len, segs, &segl)
               : coap_split_query((const uint8_t *)s, len, segs, &segl);
  if (rc < 0)
    return (size_t)-1;
  return reencode(out, cap, segs, segl, number, last);
}

/* The options of q in number order; bytes written or (size_t)-1. */
static size_t options(uint8_t *out, size_t cap, const struct ge_wire_req *q) {
  uint8_t port[2], deregister = COAP_OBSERVE_CANCEL;
  size_t portlen = coap_encode_var_safe(port, sizeof port, q->port);
  const struct {
    unsigned number;
    const void *value;
    size_t len;
    bool present;
  } opt[] = {
      {COAP_OPTION_URI_HOST, q->host, q->hlen, q->hlen > 0},
      /* register: 0, a zero-length uint; deregister: 1 */
      {COAP_OPTION_OBSERVE, &deregister,
       q->observe == GE_OBSERVE_DEREGISTER ? 1 : 0,
       q->observe != GE_OBSERVE_NONE},
      {COAP_OPTION_URI_PORT, port, portlen, q->port != 0},
      {COAP_OPTION_URI_PATH, q->path, q->plen, q->plen > 0},
      /* text/plain (0): a zero-length uint */
      {COAP_OPTION_CONTENT_FORMAT, NULL, 0, q->paylen > 0},
      {COAP_OPTION_URI_QUERY, q->query, q->qlen, q->qlen > 0},
      {COAP_OPTION_PROXY_URI, q->proxy_uri, q->ulen, q->ulen > 0},
      {COAP_OPTION_PROXY_SCHEME, q->scheme, q->slen, q->slen > 0},
  };
  unsigned last = 0;
  size_t w = 0;
  for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
    unsigned num = opt[i].number;
    if (!opt[i].present)
      continue;
    size_t n =
        num == COAP_OPTION_URI_PATH || num == COAP_OPTION_URI_QUERY
            ? split(out + w, cap - w, num, &last, opt[i].value, opt[i].len)
            : one(out + w, cap - w, num, &last, opt[i].value, opt[i].len);
    if (n == (size_t)-1)
      return n;
    w += n;
  }
  return w;
}

size_t ge_wire_encode(uint8_t *out, size_t cap, const struct ge_wire_req *q) {
  size_t w = options(out, cap, q);
  if (w == (size_t)-1)
    return 0;
  if (q->paylen) {
    if (w + 1 + q->paylen > cap)
      return 0;
    out[w++] = 0xFF; /* payload marker */
    memcpy(out + w, q->payload, q->paylen);
    w += q->paylen;
  }
  return w;
}

size_t ge_wire_template(uint8_t *out, size_t cap, const char *path, size_t plen,
                        const char *query, size_t qlen, const char *payload,
                        size_t paylen) {
  const struct ge_wire_req q = {.path = path,
                                .plen = plen,
                                .query = query,
                                .qlen = qlen,
                                .payload = payload,
                                .paylen = paylen};
  return ge_wire_encode(out, cap, &q);
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
  if (len == 3 && !memcmp(s, "OBS", 3))
    return GE_CODE_OBS;
  if (len == 5 && !memcmp(s, "UNOBS", 5))
    return GE_CODE_UNOBS;
  return -1;
}

const char *ge_wire_method_name(uint8_t code) {
  switch (code) {
  case COAP_REQUEST_CODE_GET: return "GET";
  case COAP_REQUEST_CODE_PUT: return "PUT";
  case COAP_REQUEST_CODE_POST: return "POST";
  case GE_CODE_OBS: return "OBS";
  case GE_CODE_UNOBS: return "UNOBS";
  default: return "DELETE";
  }
}
