/* The error-line formatter: "FILE:LINE: FIELD: what", each part optional,
 * truncated (never overflowing) at sizeof msg. */
#include <stdarg.h>
#include <stdio.h>

#include "err.h"

void ge_err_set(struct ge_err *e, const char *file, size_t line,
                const char *field, const char *fmt, ...) {
  int n = 0;
  if (file && line)
    n = snprintf(e->msg, sizeof e->msg, "%s:%zu: ", file, line);
  else if (file)
    n = snprintf(e->msg, sizeof e->msg, "%s: ", file);
  if (n < 0 || (size_t)n >= sizeof e->msg)
    n = 0;
  if (field) {
    int m = snprintf(e->msg + n, sizeof e->msg - (size_t)n, "%s: ", field);
    if (m > 0 && (size_t)n + (size_t)m < sizeof e->msg)
      n += m;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg + n, sizeof e->msg - (size_t)n, fmt, ap);
  va_end(ap);
}
