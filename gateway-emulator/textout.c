/* What the GE's streamed CSVs share (textout.h). */
#include <errno.h>
#include <unistd.h>

#include "textout.h"

char *ge_put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do
    tmp[n++] = (char)('0' + v % 10);
  while ((v /= 10));
  while (n)
    *p++ = tmp[--n];
  return p;
}

char *ge_put_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return ge_put_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return ge_put_u64(p, (uint64_t)v);
}

ssize_t ge_write_piece(int fd, const char *buf, size_t n) {
  ssize_t w;
  do
    w = write(fd, buf, n);
  while (w < 0 && errno == EINTR);
  return w;
}
