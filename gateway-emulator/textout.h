/* What the GE's streamed CSVs share (output.c, rtolog.c, obsout.c):
 * hand-rolled decimal formatting and one piece of a buffer written out. */
#ifndef GE_TEXTOUT_H
#define GE_TEXTOUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* v in decimal at p; returns the end (at most 20 bytes written). */
char *ge_put_u64(char *p, uint64_t v);
/* v in decimal at p, '-' first when negative; returns the end. */
char *ge_put_i64(char *p, int64_t v);
/* One write(2) of buf[0, n) to fd, retried on EINTR: the bytes written,
 * or -1 (errno). */
ssize_t ge_write_piece(int fd, const char *buf, size_t n);

#endif
