/* Request parsing through libcoap's public API, response bytes by hand. */
#include "wire.h"

#include <stdio.h>
#include <string.h>

#define OPT_OBSERVE 6
#define OPT_CONTENT_FORMAT 12
#define OPT_MAX_AGE 14
#define OPT_BLOCK2 23
#define OPT_SIZE2 28
#define CF_TEXT_PLAIN 0
#define CF_LINK_FORMAT 40
#define PAYLOAD_MARKER 0xff
#define WKC_MAX_SZX 6 /* 1024-byte blocks: fits the datagram budget */

/* Critical (odd) options the device understands or may safely ignore:
 * If-Match, Uri-Host, If-None-Match, Uri-Port, Uri-Path, Uri-Query, Accept,
 * Block2, Block1. Any other critical option must be rejected with 4.02
 * (RFC 7252 5.4.1). */
static int critical_known(uint16_t n) {
  switch (n) {
  case 1:
  case 3:
  case 5:
  case 7:
  case 11:
  case 15:
  case 17:
  case 23:
  case 27: return 1;
  default: return (n & 1) == 0;
  }
}

static void read_options(coap_pdu_t *pdu, struct wire_request *req) {
  coap_opt_iterator_t it;
  coap_opt_t *opt;
  int seen_path = 0;

  coap_option_iterator_init(pdu, &it, COAP_OPT_ALL);
  while ((opt = coap_option_next(&it)) != NULL) {
    uint32_t n = coap_opt_length(opt);
    const uint8_t *v = coap_opt_value(opt);

    if (it.number == COAP_OPTION_URI_PATH) {
      size_t need = req->path_len + (seen_path ? 1u : 0u) + n;

      /* Segments are joined with '/', the way libcoap stores a
       * resource's uri_path (no leading '/'). */
      if (req->path_overflow || need > DEV_MAX_PATH_BYTES) {
        req->path_overflow = 1;
        continue;
      }
      if (seen_path)
        req->path[req->path_len++] = '/';
      memcpy(req->path + req->path_len, v, n);
      req->path_len = (uint16_t)(req->path_len + n);
      req->path[req->path_len] = '\0';
      seen_path = 1;
    } else if (it.number == OPT_OBSERVE) {
      /* Values other than 0 and 1 mean a plain GET (RFC 7641 2). */
      if (n <= 3)
        req->observe = (int32_t)coap_decode_var_bytes(v, n);
    } else if (it.number == OPT_BLOCK2) {
      if (n <= 3) {
        req->has_block2 = 1;
        req->block2 = coap_decode_var_bytes(v, n);
      } else {
        req->bad_option = 1;
      }
    } else if (!critical_known(it.number)) {
      req->bad_option = 1;
    }
  }
}

enum wire_kind wire_parse(coap_pdu_t *pdu, const uint8_t *buf, size_t len,
                          struct wire_request *req) {
  coap_bin_const_t tok;
  unsigned code;

  if (!coap_pdu_parse(COAP_PROTO_UDP, buf, len, pdu))
    return WIRE_GARBAGE;
  req->type = (uint8_t)coap_pdu_get_type(pdu);
  code = (unsigned)coap_pdu_get_code(pdu);
  req->code = (uint8_t)code;
  req->mid = (uint16_t)coap_pdu_get_mid(pdu);
  if (code == 0) {
    switch (req->type) {
    case WIRE_CON: return WIRE_PING;
    case WIRE_ACK: return WIRE_EMPTY_ACK;
    case WIRE_RST: return WIRE_EMPTY_RST;
    default: return WIRE_OTHER;
    }
  }
  if ((code >> 5) != 0 || req->type > WIRE_NON)
    return WIRE_OTHER;
  tok = coap_pdu_get_token(pdu);
  req->tkl = (uint8_t)tok.length;
  memcpy(req->token, tok.s, tok.length);
  req->path_len = 0;
  req->path[0] = '\0';
  req->path_overflow = req->bad_option = req->has_block2 = 0;
  req->block2 = 0;
  req->observe = -1;
  read_options(pdu, req);
  return WIRE_REQUEST;
}

size_t wire_header(uint8_t *out, uint8_t type, uint8_t code, uint16_t mid,
                   const uint8_t *token, uint8_t tkl) {
  out[0] = (uint8_t)(1u << 6 | (unsigned)type << 4 | tkl);
  out[1] = code;
  out[2] = (uint8_t)(mid >> 8);
  out[3] = (uint8_t)mid;
  if (tkl)
    memcpy(out + 4, token, tkl);
  return 4u + tkl;
}

/* Appends one uint option; returns the new length or 0 on overflow. */
static size_t put_uint(uint8_t *out, size_t pos, size_t cap, uint16_t *last,
                       uint16_t num, uint32_t value) {
  uint8_t v[4];
  unsigned vl = coap_encode_var_safe(v, sizeof(v), value);
  size_t w;

  if (pos >= cap)
    return 0;
  w = coap_opt_encode(out + pos, cap - pos, (uint16_t)(num - *last), v, vl);
  if (w == 0)
    return 0;
  *last = num;
  return pos + w;
}

size_t wire_resource_tail(uint8_t *out, size_t cap, uint64_t service_us,
                          int32_t payload_bytes) {
  return wire_resource_tail_seq(out, cap, service_us, payload_bytes, -1);
}

size_t wire_resource_tail_seq(uint8_t *out, size_t cap, uint64_t service_us,
                              int32_t payload_bytes, int64_t last_seq) {
  char text[32];
  uint16_t last = 0;
  size_t pos, plen;
  int n = snprintf(text, sizeof(text), "service_us=%llu",
                   (unsigned long long)service_us);

  if (n < 0 || (size_t)n >= sizeof(text))
    return 0;
  pos = put_uint(out, 0, cap, &last, OPT_CONTENT_FORMAT, CF_TEXT_PLAIN);
  if (pos)
    pos = put_uint(out, pos, cap, &last, DEV_SERVICE_TIME_OPTION,
                   (uint32_t)service_us);
  if (pos && last_seq >= 0)
    pos =
        put_uint(out, pos, cap, &last, DEV_LAST_SEQ_OPTION, (uint32_t)last_seq);
  plen = payload_bytes < 0 ? (size_t)n : (size_t)payload_bytes;
  if (pos == 0 || (plen && pos + 1 + plen > cap))
    return 0;
  if (plen == 0)
    return pos;
  out[pos++] = PAYLOAD_MARKER;
  if (plen <= (size_t)n) {
    memcpy(out + pos, text, plen);
  } else {
    memcpy(out + pos, text, (size_t)n);
    memset(out + pos + n, '.', plen - (size_t)n);
  }
  return pos + plen;
}

size_t wire_notification(uint8_t *out, size_t cap, const struct wire_notif *w) {
  char text[80];
  uint16_t last = 0;
  size_t pos, plen;
  int n =
      snprintf(text, sizeof(text), "t=%lld;e=%lld;n=%llu", (long long)w->t_us,
               (long long)w->e_us, (unsigned long long)w->n);

  if (n < 0 || (size_t)n >= sizeof(text) || cap < 4u + w->tkl)
    return 0;
  pos = wire_header(out, w->type, DEV_CODE_CONTENT, w->mid, w->token, w->tkl);
  pos = put_uint(out, pos, cap, &last, OPT_OBSERVE, w->seq & 0xffffffu);
  if (pos)
    pos = put_uint(out, pos, cap, &last, OPT_CONTENT_FORMAT, CF_TEXT_PLAIN);
  if (pos)
    pos = put_uint(out, pos, cap, &last, OPT_MAX_AGE, w->max_age);
  if (pos)
    pos = put_uint(out, pos, cap, &last, DEV_SERVICE_TIME_OPTION,
                   (uint32_t)w->service_us);
  plen = w->payload_bytes > n ? (size_t)w->payload_bytes : (size_t)n;
  if (pos == 0 || pos + 1 + plen > cap)
    return 0;
  out[pos++] = PAYLOAD_MARKER;
  memcpy(out + pos, text, (size_t)n);
  memset(out + pos + n, '.', plen - (size_t)n);
  return pos + plen;
}

size_t wire_error_tail(uint8_t *out, size_t cap, uint64_t service_us) {
  uint16_t last = 0;

  return put_uint(out, 0, cap, &last, DEV_SERVICE_TIME_OPTION,
                  (uint32_t)service_us);
}

size_t wire_wkc_tail(uint8_t *out, size_t cap, const uint8_t *links,
                     size_t links_len, int64_t block2) {
  uint16_t last = 0;
  uint32_t num = 0, szx = WKC_MAX_SZX;
  size_t pos, bsize, start, n;
  int blockwise = block2 >= 0 || links_len > ((size_t)16 << WKC_MAX_SZX);

  if (block2 >= 0) {
    num = (uint32_t)block2 >> 4;
    szx = (uint32_t)block2 & 7;
    if (szx > WKC_MAX_SZX)
      szx = WKC_MAX_SZX;
  }
  bsize = (size_t)16 << szx;
  start = (size_t)num * bsize;
  if (blockwise && start >= links_len && !(start == 0 && links_len == 0))
    return 0;
  n = blockwise ? links_len - start : links_len;
  if (n > bsize)
    n = bsize;
  pos = put_uint(out, 0, cap, &last, OPT_CONTENT_FORMAT, CF_LINK_FORMAT);
  if (pos && blockwise) {
    uint32_t more = start + n < links_len;

    pos =
        put_uint(out, pos, cap, &last, OPT_BLOCK2, num << 4 | more << 3 | szx);
    if (pos)
      pos = put_uint(out, pos, cap, &last, OPT_SIZE2, (uint32_t)links_len);
  }
  if (pos == 0 || (n && pos + 1 + n > cap))
    return 0;
  if (n == 0)
    return pos;
  out[pos++] = PAYLOAD_MARKER;
  memcpy(out + pos, links + start, n);
  return pos + n;
}
