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

void ge_wire_header(uint8_t out[GE_HDR_LEN], uint8_t type, uint8_t code,
                    uint16_t mid, uint32_t salt, uint32_t idx);
void ge_wire_empty(uint8_t out[4], uint8_t type, uint16_t mid);
/* Encodes Uri-Path, Content-Format, Uri-Query and payload; returns the
 * length or 0 when it does not fit. */
size_t ge_wire_template(uint8_t *out, size_t cap, const char *path, size_t plen,
                        const char *query, size_t qlen, const char *payload,
                        size_t paylen);
int ge_wire_method(const char *s, size_t len); /* code or -1 */
const char *ge_wire_method_name(uint8_t code);

#endif
