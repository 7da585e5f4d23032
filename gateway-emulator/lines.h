/* The line walker shared by the trace and hosts parsers. Header only:
 * the trace parser runs it 10 million times. */
#ifndef GE_LINES_H
#define GE_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* Yields each line that is neither blank nor a '#' comment, with trailing
 * CR and spaces trimmed, and counts every line (`no`) for error messages. */
struct ge_lines {
  const char *p, *end;
  size_t no;
};

static inline bool ge_next_line(struct ge_lines *it, const char **ls,
                                const char **le) {
  while (it->p < it->end) {
    const char *s = it->p;
    const char *nl = memchr(s, '\n', (size_t)(it->end - s));
    const char *e = nl ? nl : it->end;
    it->p = nl ? nl + 1 : it->end;
    it->no++;
    while (e > s && (e[-1] == '\r' || e[-1] == ' '))
      e--;
    if (e == s || *s == '#')
      continue;
    *ls = s;
    *le = e;
    return true;
  }
  return false;
}

#endif
