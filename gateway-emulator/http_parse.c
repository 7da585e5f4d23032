/* The HTTP/1.1 response parser: lines (status, headers, chunk sizes,
 * trailers) are gathered into a bounded buffer, bodies are skipped by
 * count. Strict where framing is at stake (RFC 9112 section 6): a
 * Content-Length that is not one decimal number, two that differ, both
 * it and chunked, a transfer coding other than a final "chunked", folded
 * header lines and bad chunk sizes are malformed; a response with neither
 * runs to the close. */
#include <string.h>
#include <strings.h>

#include "http_parse.h"

enum {
  ST_STATUS = 0, /* the status line (empty lines before it are skipped) */
  ST_HEADER,     /* header lines up to the empty one */
  ST_BODY,       /* Content-Length bytes left */
  ST_EOF_BODY,   /* no length: the body ends with the connection */
  ST_CHUNK_SIZE, /* a chunk-size line */
  ST_CHUNK_DATA, /* chunk bytes left */
  ST_CHUNK_END,  /* the CRLF after a chunk */
  ST_TRAILER,    /* trailer lines up to the empty one */
};

void ge_hp_reset(struct ge_hp *h) {
  h->st = ST_STATUS;
  h->chunked = h->have_len = h->close = false;
  h->status = 0;
  h->left = 0;
  h->llen = 0;
  h->why = NULL;
}

static int bad(struct ge_hp *h, const char *why) {
  h->why = why;
  return GE_HP_BAD;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* "HTTP/1.x SSS[ reason]" */
static int status_line(struct ge_hp *h, const char *s, size_t n) {
  if (n == 0)
    return GE_HP_MORE; /* an empty line before the status line */
  if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || !is_digit(s[7]) ||
      s[8] != ' ' || !is_digit(s[9]) || !is_digit(s[10]) || !is_digit(s[11]) ||
      (n > 12 && s[12] != ' '))
    return bad(h, "bad status line");
  unsigned st = (unsigned)(s[9] - '0') * 100 + (unsigned)(s[10] - '0') * 10 +
                (unsigned)(s[11] - '0');
  if (st < 100 || st > 599)
    return bad(h, "status out of range");
  h->status = (uint16_t)st;
  h->chunked = h->have_len = false;
  h->close = s[7] == '0'; /* HTTP/1.0: close unless keep-alive */
  h->st = ST_HEADER;
  return GE_HP_MORE;
}

/* Does the comma-separated list v[0, n) end with (last) or hold the
 * token tok (case-insensitive, OWS around the items)? */
static bool has_token(const char *v, size_t n, const char *tok, bool last) {
  size_t tl = strlen(tok), i = 0;
  bool found = false;
  while (i <= n) {
    size_t j = i;
    while (j < n && v[j] != ',')
      j++;
    size_t a = i, b = j;
    while (a < b && (v[a] == ' ' || v[a] == '\t'))
      a++;
    while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
      b--;
    bool is = b - a == tl && !strncasecmp(v + a, tok, tl);
    found = last ? is : found || is;
    i = j + 1;
  }
  return found;
}

static int content_length(struct ge_hp *h, const char *v, size_t n) {
  uint64_t x = 0;
  if (n == 0 || n > 18)
    return bad(h, "bad Content-Length");
  for (size_t i = 0; i < n; i++) {
    if (!is_digit(v[i]))
      return bad(h, "bad Content-Length");
    x = x * 10 + (uint64_t)(v[i] - '0');
  }
  if (h->have_len && x != h->left)
    return bad(h, "two different Content-Lengths");
  h->have_len = true;
  h->left = x;
  return GE_HP_MORE;
}

/* One header line: name ":" OWS value OWS. */
static int header(struct ge_hp *h, const char *s, size_t n) {
  if (s[0] == ' ' || s[0] == '\t')
    return bad(h, "folded header line");
  const char *colon = memchr(s, ':', n);
  if (!colon || colon == s)
    return bad(h, "header line without a name");
  size_t nl = (size_t)(colon - s);
  for (size_t i = 0; i < nl; i++)
    if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
      return bad(h, "bad header name");
  const char *v = colon + 1, *end = s + n;
  while (v < end && (*v == ' ' || *v == '\t'))
    v++;
  while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
    end--;
  size_t vl = (size_t)(end - v);
  if (nl == 14 && !strncasecmp(s, "content-length", nl))
    return content_length(h, v, vl);
  if (nl == 17 && !strncasecmp(s, "transfer-encoding", nl)) {
    if (!has_token(v, vl, "chunked", true))
      return bad(h, "transfer coding other than chunked");
    h->chunked = true;
  } else if (nl == 10 && !strncasecmp(s, "connection", nl)) {
    if (has_token(v, vl, "close", false))
      h->close = true;
    else if (has_token(v, vl, "keep-alive", false))
      h->close = false;
  }
  return GE_HP_MORE;
}

/* The empty line after the headers: how the body is framed. */
static int headers_end(struct ge_hp *h) {
  if (h->status < 200) {
    if (h->status == 101)
      return bad(h, "101 Switching Protocols was not asked for");
    h->st = ST_STATUS; /* interim: the final response follows */
    return GE_HP_MORE;
  }
  if (h->chunked && h->have_len)
    return bad(h, "both Content-Length and chunked");
  if (h->status == 204 || h->status == 304)
    return GE_HP_DONE;
  if (h->chunked) {
    h->st = ST_CHUNK_SIZE;
  } else if (h->have_len) {
    h->st = ST_BODY;
    if (!h->left)
      return GE_HP_DONE;
  } else {
    h->st = ST_EOF_BODY;
    h->close = true;
  }
  return GE_HP_MORE;
}

/* "HEX[;ext]" */
static int chunk_size(struct ge_hp *h, const char *s, size_t n) {
  uint64_t x = 0;
  size_t i = 0;
  for (; i < n && i < 16; i++) {
    char c = s[i];
    unsigned d;
    if (is_digit(c))
      d = (unsigned)(c - '0');
    else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
      d = (unsigned)((c | 0x20) - 'a' + 10);
    else
      break;
    x = x * 16 + d;
  }
  size_t j = i;
  while (j < n && (s[j] == ' ' || s[j] == '\t'))
    j++;
  if (i == 0 || (j < n && s[j] != ';'))
    return bad(h, "bad chunk size");
  h->left = x;
  h->st = x ? ST_CHUNK_DATA : ST_TRAILER;
  return GE_HP_MORE;
}

/* A complete line (without its CR LF) in the state it ends. */
static int line(struct ge_hp *h, const char *s, size_t n) {
  switch (h->st) {
  case ST_STATUS: return status_line(h, s, n);
  case ST_HEADER: return n ? header(h, s, n) : headers_end(h);
  case ST_CHUNK_SIZE: return chunk_size(h, s, n);
  case ST_CHUNK_END:
    if (n)
      return bad(h, "chunk longer than its size");
    h->st = ST_CHUNK_SIZE;
    return GE_HP_MORE;
  case ST_TRAILER: return n ? GE_HP_MORE : GE_HP_DONE;
  default: return bad(h, "line in a body");
  }
}

/* Body bytes: skips up to len of them; *rc DONE at the end of a
 * Content-Length body. */
static size_t skip(struct ge_hp *h, size_t len, int *rc) {
  if (h->st == ST_EOF_BODY)
    return len;
  size_t k = h->left < len ? (size_t)h->left : len;
  h->left -= k;
  if (!h->left) {
    if (h->st == ST_BODY)
      *rc = GE_HP_DONE;
    else
      h->st = ST_CHUNK_END;
  }
  return k;
}

/* Line bytes up to and including the next LF: how many were taken. */
static size_t gather(struct ge_hp *h, const uint8_t *b, size_t len, int *rc) {
  const uint8_t *lf = memchr(b, '\n', len);
  size_t take = lf ? (size_t)(lf - b) + 1 : len;
  size_t keep = lf ? take - 1 : take;
  if (h->llen + keep > GE_HP_LINE_MAX) {
    *rc = bad(h, "line too long");
    return take;
  }
  memcpy(h->line + h->llen, b, keep);
  h->llen += (uint32_t)keep;
  if (lf) {
    size_t n = h->llen;
    if (n && h->line[n - 1] == '\r')
      n--;
    h->llen = 0;
    *rc = line(h, h->line, n);
  }
  return take;
}

int ge_hp_feed(struct ge_hp *h, const uint8_t *buf, size_t len, size_t *used) {
  size_t i = 0;
  int rc = GE_HP_MORE;
  while (i < len && rc == GE_HP_MORE) {
    if (h->st == ST_BODY || h->st == ST_EOF_BODY || h->st == ST_CHUNK_DATA)
      i += skip(h, len - i, &rc);
    else
      i += gather(h, buf + i, len - i, &rc);
  }
  *used = i;
  return rc;
}

int ge_hp_eof(struct ge_hp *h) {
  if (h->st == ST_EOF_BODY)
    return GE_HP_DONE;
  if (h->st == ST_STATUS && h->llen == 0)
    return GE_HP_MORE;
  return bad(h, "connection closed mid-response");
}
