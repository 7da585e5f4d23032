/* --build-info: the facts the Makefile compiled in, as one JSON line. */
#include "buildinfo.h"

#include <errno.h>

/* Built without the Makefile (e.g. clang-tidy): those facts are unknown. */
#ifndef WB_CFLAGS
#define WB_CFLAGS NULL
#endif
#ifndef WB_LDFLAGS
#define WB_LDFLAGS NULL
#endif
#ifndef WB_GIT_COMMIT
#define WB_GIT_COMMIT NULL
#endif
#ifndef WB_GIT_DIRTY
#define WB_GIT_DIRTY (-1)
#endif

#if defined(__clang__)
#define WB_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define WB_COMPILER "gcc " __VERSION__
#else
#define WB_COMPILER NULL
#endif

/* s as a JSON string (quotes, backslashes and control bytes escaped), or
 * null for NULL or "". */
static void put_str(FILE *out, const char *s) {
  if (s == NULL || *s == '\0') {
    fputs("null", out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20)
      fprintf(out, "\\u%04x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
}

int buildinfo_print(FILE *out, const char *program) {
  static const char *const dirty[] = {"null", "false", "true"};
  fputs("{\"program\": ", out);
  put_str(out, program);
  fputs(", \"compiler\": ", out);
  put_str(out, WB_COMPILER);
  fputs(", \"cflags\": ", out);
  put_str(out, WB_CFLAGS);
  fputs(", \"ldflags\": ", out);
  put_str(out, WB_LDFLAGS);
  fputs(", \"git_commit\": ", out);
  put_str(out, WB_GIT_COMMIT);
  fprintf(out, ", \"git_dirty\": %s}\n",
          dirty[WB_GIT_DIRTY < 0   ? 0
                : WB_GIT_DIRTY > 0 ? 2
                                   : 1]);
  if (fflush(out) != 0 || ferror(out)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
