/* What a binary was built from and how: `--build-info` of wotbench-ge and
 * wotbench-device (docs/run-layout.md, "disclosure"). The Makefile passes
 * the facts as macros when it compiles buildinfo.c (WB_CFLAGS, WB_LDFLAGS,
 * WB_GIT_COMMIT, WB_GIT_DIRTY); the compiler names itself. One copy for
 * both programs: wotbench-ge compiles this file too. */
#ifndef BUILDINFO_H
#define BUILDINFO_H

#include <stdio.h>

/* Writes one JSON line to out: {"program", "compiler", "cflags",
 * "ldflags", "git_commit", "git_dirty"}; a fact the build did not pass is
 * null. git_dirty: whether the C sources (gateway-emulator/, device/,
 * Makefile) had uncommitted changes at build time. Returns 0, or -1 when
 * the write failed (errno set). */
int buildinfo_print(FILE *out, const char *program);

#endif
