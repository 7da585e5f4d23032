/* HTTP/1.1 responses from the gateway (outside input): a pure parser,
 * bytes in, one event out per call, no syscalls and no allocation, so
 * that fuzz-ge-http runs it alone. It reads the status line, the headers
 * it needs (Content-Length, Transfer-Encoding: chunked, Connection:
 * close) and skips the body (by length, chunked, or up to the close).
 * Interim 1xx responses (100 Continue) are skipped. */
#ifndef GE_HTTP_PARSE_H
#define GE_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest status, header or chunk-size line accepted. */
#define GE_HP_LINE_MAX 4096

enum ge_hp_result {
  GE_HP_BAD = -1, /* malformed: the connection cannot be trusted further */
  GE_HP_MORE = 0, /* every byte taken, the response is not complete yet */
  GE_HP_DONE = 1, /* a final response is complete (status, close below) */
};

struct ge_hp {
  uint8_t st; /* where in the response (http_parse.c) */
  bool chunked, have_len, close;
  uint16_t status; /* of the final response, 100..599 */
  uint64_t left;   /* body or chunk bytes still to skip */
  uint32_t llen;   /* bytes of the current line so far */
  char line[GE_HP_LINE_MAX];
  const char *why; /* what was malformed (GE_HP_BAD) */
};

/* Ready for the next response on the connection. */
void ge_hp_reset(struct ge_hp *h);
/* Takes bytes of the response; *used: how many were taken (all of them
 * unless GE_HP_DONE ended the response before the end of buf). */
int ge_hp_feed(struct ge_hp *h, const uint8_t *buf, size_t len, size_t *used);
/* The peer closed: GE_HP_DONE when the body runs to the close (no length,
 * not chunked), GE_HP_BAD when a response was cut short, GE_HP_MORE when
 * nothing of a response had arrived. */
int ge_hp_eof(struct ge_hp *h);

#endif
