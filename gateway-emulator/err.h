/* The one error line every module reports through. */
#ifndef GE_ERR_H
#define GE_ERR_H

#include <stddef.h>

/* One formatted line "FILE:LINE: FIELD: what" (without "error: "). */
struct ge_err {
  char msg[600];
};

/* FILE and FIELD may be NULL, LINE 0: their parts are left out. */
void ge_err_set(struct ge_err *e, const char *file, size_t line,
                const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

#endif
