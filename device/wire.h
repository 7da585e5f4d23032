/* CoAP bytes in and out. Requests are parsed by libcoap (coap_pdu_parse into
 * one reusable PDU); responses are assembled from a 4-byte header, the
 * token and a pre-encoded tail because libcoap 4.3.1 has no public PDU
 * serializer. Only the network thread calls these (libcoap is not
 * thread-safe). */
#ifndef DEV_WIRE_H
#define DEV_WIRE_H

#include <coap3/coap.h>
#include <stddef.h>
#include <stdint.h>

#include "dev_format.h"

#define WIRE_CON 0
#define WIRE_NON 1
#define WIRE_ACK 2
#define WIRE_RST 3

/* Largest datagram the device builds: header, token, a few options and a
 * 1024-byte payload. */
#define WIRE_MAX_RESPONSE 1152

enum wire_kind {
  WIRE_GARBAGE,   /* not a CoAP message */
  WIRE_REQUEST,   /* method code 0.01..0.31 */
  WIRE_PING,      /* empty CON */
  WIRE_EMPTY_ACK, /* acknowledges one of our CON responses */
  WIRE_EMPTY_RST, /* rejects one of our CON responses */
  WIRE_OTHER,     /* well-formed but nothing for a server to do */
};

struct wire_request {
  uint8_t type, code, tkl;
  uint8_t path_overflow; /* joined Uri-Path longer than the table allows */
  uint8_t bad_option;    /* an unrecognised critical option */
  uint8_t has_block2;
  int32_t observe; /* the Observe option's value, -1 if absent */
  uint16_t mid;
  uint16_t path_len;
  uint32_t block2; /* raw Block2 value: NUM << 4 | M << 3 | SZX */
  uint8_t token[8];
  /* Uri-Path segments joined by '/', no leading '/' */
  char path[DEV_MAX_PATH_BYTES + 1];
};

enum wire_kind wire_parse(coap_pdu_t *pdu, const uint8_t *buf, size_t len,
                          struct wire_request *req);

/* Writes the 4-byte header and token; returns 4 + tkl. */
size_t wire_header(uint8_t *out, uint8_t type, uint8_t code, uint16_t mid,
                   const uint8_t *token, uint8_t tkl);

/* Options + payload of a resource's 2.xx responses: Content-Format
 * text/plain, option 65000 = service_us, payload `service_us=N` padded with
 * '.' (or cut) to payload_bytes when >= 0. Returns bytes written, 0 if
 * cap is too small. */
size_t wire_resource_tail(uint8_t *out, size_t cap, uint64_t service_us,
                          int32_t payload_bytes);

/* wire_resource_tail plus option 65001 = last_seq when last_seq >= 0. */
size_t wire_resource_tail_seq(uint8_t *out, size_t cap, uint64_t service_us,
                              int32_t payload_bytes, int64_t last_seq);

/* What a notification carries (RFC 7641). Times are epoch us. */
struct wire_notif {
  uint8_t type, tkl;
  uint16_t mid;
  const uint8_t *token;
  uint32_t seq; /* 24 bits */
  uint32_t max_age;
  uint64_t service_us;
  int32_t payload_bytes; /* pad with '.' to this, never cut; -1: none */
  int64_t t_us, e_us;
  uint64_t n;
};

/* A whole 2.05 notification: header, token, Observe, Content-Format,
 * Max-Age, 65000, payload `t=T;e=E;n=N`. Returns its length, 0 if cap is
 * too small. */
size_t wire_notification(uint8_t *out, size_t cap, const struct wire_notif *w);

/* Option 65000 alone, for a known resource's 4.05 / 5.03. */
size_t wire_error_tail(uint8_t *out, size_t cap, uint64_t service_us);

/* One Block2 slice of /.well-known/core (application/link-format). With
 * block2 < 0 and a listing that fits, no Block2 option is sent. Returns
 * bytes written or 0 when the block is past the end. */
size_t wire_wkc_tail(uint8_t *out, size_t cap, const uint8_t *links,
                     size_t links_len, int64_t block2);

#endif
