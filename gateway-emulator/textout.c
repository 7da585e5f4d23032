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

ssize_t ge_text_flush(int fd, char *buf, size_t *start, size_t *end, size_t max,
                      int *err) {
  if (*err)
    return -1;
  size_t n = *end - *start < max ? *end - *start : max;
  if (!n)
    return 0;
  ssize_t w;
  do
    w = write(fd, buf + *start, n);
  while (w < 0 && errno == EINTR);
  if (w < 0) {
    *err = errno;
    return -1;
  }
  *start += (size_t)w;
  if (*start == *end)
    *start = *end = 0;
  return w;
}
