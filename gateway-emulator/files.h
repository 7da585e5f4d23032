/* The files the GE reads (regular files only) and writes (through a
 * temporary file renamed into place, never over an input). */
#ifndef GE_FILES_H
#define GE_FILES_H

#include <sys/stat.h>

#include "cli.h"
#include "err.h"

/* Opens an input for reading: a regular file only (never blocks on a
 * FIFO). Returns the fd, or -1 with the reason in e. */
int ge_open_input(const char *path, struct stat *st, struct ge_err *e);
/* No output is an input or another output, and --out / --summary are
 * nothing yet or regular files: 0, or -1 with the reason in e. */
int ge_check_outputs(const struct ge_config *cfg, struct ge_err *e);

/* An output being written: FINAL.tmp.PID until it is committed. */
struct ge_tmpfile {
  const char *final;
  char path[4096];
  int fd;
};
/* Creates FINAL.tmp.PID (`field` names the option in errors): 0 or -1. */
int ge_tmp_open(struct ge_tmpfile *t, const char *final, const char *field,
                struct ge_err *e);
/* fsync, close and rename onto FINAL; on failure the file is removed. */
int ge_tmp_commit(struct ge_tmpfile *t, struct ge_err *e);
/* Closes and removes a file not committed (no-op once committed). */
void ge_tmp_discard(struct ge_tmpfile *t);

#endif
