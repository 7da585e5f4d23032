/* The request the device benchmarks send: a GET of one Uri-Path segment
 * with a 4-byte token carrying a sequence number, MID = its low 16 bits
 * (the device keys duplicates on peer + MID + token, so a wrapped MID with
 * a new token is a new request). Shared by devload and devrate. */
#ifndef DEV_BENCHREQ_H
#define DEV_BENCHREQ_H

#include <stdint.h>
#include <string.h>

#define BENCHREQ_MAX_PATH 200
#define BENCHREQ_MAX (8 + 2 + BENCHREQ_MAX_PATH)

/* Writes the request for seq into out (>= BENCHREQ_MAX bytes); path has
 * at most BENCHREQ_MAX_PATH bytes. Returns its length. */
static inline size_t benchreq_build(uint8_t *out, int con, uint32_t seq,
                                    const char *path) {
  size_t n = strlen(path), pos = 8;

  out[0] = (uint8_t)(0x40 | (con ? 0 : 1) << 4 | 4);
  out[1] = 1; /* GET */
  out[2] = (uint8_t)(seq >> 8);
  out[3] = (uint8_t)seq;
  memcpy(out + 4, &seq, 4);
  if (n < 13) {
    out[pos++] = (uint8_t)(11 << 4 | n);
  } else {
    out[pos++] = (uint8_t)(11 << 4 | 13);
    out[pos++] = (uint8_t)(n - 13);
  }
  /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): an option value */
  memcpy(out + pos, path, n); /* has no terminator on the wire */
  return pos + n;
}

/* The sequence number of a reply to such a request: 1 and *seq set when
 * buf is a CoAP message (version 1) with a 4-byte token, else 0. */
static inline int benchreq_reply_seq(const uint8_t *buf, size_t len,
                                     uint32_t *seq) {
  if (len < 8 || (buf[0] >> 6) != 1 || (buf[0] & 0x0f) != 4)
    return 0;
  memcpy(seq, buf + 4, 4);
  return 1;
}

#endif
