/* libFuzzer: the HTTP/1.1 response parser (http_parse.c) on bytes from a
 * gateway. Byte 0 picks the piece size the bytes arrive in; the rest is
 * what the connection delivers. The parser must never take more than it
 * is given, end only final responses (200..599), and give the same events
 * whether the bytes come at once or in pieces.
 *
 * Built with -DGE_HTTP_PARSE_MAIN it is a plain program instead (no
 * libFuzzer): stdin is the connection, argv[1] the piece size, and each
 * event is printed (the unit tests' path, tests/test_http_north.py). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_parse.h"

/* Events: 'D' status close, 'B', then the end-of-stream result. */
struct trail {
  char v[4096];
  size_t n;
};

static void note(struct trail *t, const struct ge_hp *h, int rc) {
  if (t->n + 16 > sizeof t->v)
    return;
  if (rc == GE_HP_DONE)
    t->n += (size_t)snprintf(t->v + t->n, 16, "D%u%c ", h->status,
                             h->close ? 'c' : 'k');
  else if (rc == GE_HP_BAD)
    t->n += (size_t)snprintf(t->v + t->n, 16, "B ");
}

/* Feeds data in pieces of `piece` bytes, responses one after another as
 * on one keep-alive connection, until malformed or the end. */
static void run(const uint8_t *d, size_t n, size_t piece, struct trail *t) {
  static struct ge_hp h;
  ge_hp_reset(&h);
  t->n = 0;
  size_t off = 0;
  while (off < n) {
    size_t len = n - off < piece ? n - off : piece, used = 0;
    int rc = ge_hp_feed(&h, d + off, len, &used);
    if (used > len || (rc == GE_HP_MORE && used != len) ||
        (rc == GE_HP_DONE && (h.status < 200 || h.status > 599)))
      abort();
    off += used;
    note(t, &h, rc);
    if (rc == GE_HP_BAD)
      return;
    if (rc == GE_HP_DONE)
      ge_hp_reset(&h);
  }
  int rc = ge_hp_eof(&h);
  note(t, &h, rc);
  if (t->n + 2 < sizeof t->v)
    t->v[t->n++] = rc == GE_HP_MORE ? 'M' : 'E';
  t->v[t->n] = 0;
}

#ifndef GE_HTTP_PARSE_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct trail whole, pieces;
  if (size < 1)
    return 0;
  size_t piece = (size_t)(data[0] % 17) + 1;
  run(data + 1, size - 1, size, &whole);
  run(data + 1, size - 1, piece, &pieces);
  if (whole.n != pieces.n || memcmp(whole.v, pieces.v, whole.n) != 0)
    abort();
  return 0;
}
#else
int main(int argc, char **argv) {
  static uint8_t buf[1 << 20];
  static struct trail t;
  size_t n = fread(buf, 1, sizeof buf, stdin);
  size_t piece = argc > 1 ? (size_t)strtoul(argv[1], NULL, 10) : n + 1;
  run(buf, n, piece ? piece : 1, &t);
  puts(t.v);
  return 0;
}
#endif
