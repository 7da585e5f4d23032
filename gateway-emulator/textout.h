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
/* One write(2) of at most max bytes of buf[*start, *end) to fd, retried
 * on EINTR; *start advances, and both go back to 0 once all is out (the
 * next rows are formatted from the top). Returns the bytes written, 0
 * with nothing to write, or -1 with *err set (errno); an *err already
 * set is returned again as -1. */
ssize_t ge_text_flush(int fd, char *buf, size_t *start, size_t *end, size_t max,
                      int *err);

#endif
