/* The files the GE reads and writes. Inputs must be regular files: the
 * trace is mapped and scanned twice, and opening a FIFO for reading would
 * block. Outputs are written to a temporary file renamed onto the path
 * given, so that path must be nothing, or a regular file that is not an
 * input or another output: a rename onto the trace would destroy it, one
 * onto a device node would replace the node. An output is written as
 * FINAL.tmp.PID, fsync'ed and renamed into place only when complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "files.h"

int ge_open_input(const char *path, struct stat *st, struct ge_err *e) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    ge_err_set(e, path, 0, NULL, "cannot open: %s", strerror(errno));
    return -1;
  }
  if (fstat(fd, st)) {
    ge_err_set(e, path, 0, NULL, "cannot stat: %s", strerror(errno));
    close(fd);
    return -1;
  }
  if (!S_ISREG(st->st_mode)) {
    ge_err_set(e, path, 0, NULL,
               "is not a regular file (a FIFO, device "
               "or folder cannot be read twice)");
    close(fd);
    return -1;
  }
  return fd;
}

struct named {
  const char *field, *path;
  bool exists;
  struct stat st;
};

static bool same(const struct named *a, const struct named *b) {
  if (a->exists != b->exists)
    return false;
  if (!a->exists)
    return strcmp(a->path, b->path) == 0;
  return a->st.st_dev == b->st.st_dev && a->st.st_ino == b->st.st_ino;
}

/* An input: what it names (symlinks followed, as when it is read); one
 * that cannot be found is the loader's to report. */
static int look_in(struct named *n, struct ge_err *e) {
  (void)e;
  n->exists = n->path && stat(n->path, &n->st) == 0;
  return 0;
}

/* An output: nothing there, or a regular file (not a symlink) when it is
 * renamed onto (`renamed`); anything --dump-plan may write into. */
static int look_out(struct named *n, bool renamed, struct ge_err *e) {
  if (!n->path)
    return 0;
  if ((renamed ? lstat(n->path, &n->st) : stat(n->path, &n->st)) == 0) {
    n->exists = true;
    if (renamed && !S_ISREG(n->st.st_mode)) {
      ge_err_set(e, n->path, 0, n->field,
                 "is not a regular file (a device, FIFO, folder or "
                 "symlink): refusing to replace it");
      return -1;
    }
    return 0;
  }
  if (errno != ENOENT) {
    ge_err_set(e, n->path, 0, n->field, "cannot stat: %s", strerror(errno));
    return -1;
  }
  return 0;
}

int ge_check_outputs(const struct ge_config *cfg, struct ge_err *e) {
  struct named f[] = {
      {.field = "--trace", .path = cfg->trace},
      {.field = "--hosts", .path = cfg->hosts},
      {.field = "--out", .path = cfg->out},
      {.field = "--summary", .path = cfg->summary},
      {.field = "--rto-out", .path = cfg->rto_out},
      {.field = "--notify-out", .path = cfg->notify_out},
      {.field = "--dump-plan", .path = cfg->dump_plan},
  };
  enum { N_IN = 2, N = sizeof f / sizeof f[0] };
  for (size_t i = 0; i < N; i++)
    if (i < N_IN ? look_in(&f[i], e) : look_out(&f[i], i < N - 1, e))
      return -1;
  for (size_t i = N_IN; i < N; i++)
    for (size_t j = 0; j < i; j++)
      if (f[i].path && f[j].path && same(&f[i], &f[j])) {
        ge_err_set(e, f[i].path, 0, f[i].field,
                   "is the same file as %s: refusing to overwrite it",
                   f[j].field);
        return -1;
      }
  return 0;
}

int ge_tmp_open(struct ge_tmpfile *t, const char *final, const char *field,
                struct ge_err *e) {
  t->final = final;
  t->fd = -1;
  int n =
      snprintf(t->path, sizeof t->path, "%s.tmp.%ld", final, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof t->path) {
    ge_err_set(e, NULL, 0, field, "path too long");
    return -1;
  }
  t->fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (t->fd < 0) {
    ge_err_set(e, NULL, 0, field, "cannot create '%s': %s", t->path,
               strerror(errno));
    return -1;
  }
  return 0;
}

void ge_tmp_discard(struct ge_tmpfile *t) {
  if (t->fd >= 0) {
    close(t->fd);
    unlink(t->path);
    t->fd = -1;
  }
}

/* On disk before it takes the final name: a write the kernel took but
 * could not store (ENOSPC, EIO) shows here, not as a short file later. */
int ge_tmp_commit(struct ge_tmpfile *t, struct ge_err *e) {
  int rc = fsync(t->fd);
  int err = errno;
  if (close(t->fd) && !rc) {
    rc = -1;
    err = errno;
  }
  t->fd = -1;
  if (!rc && rename(t->path, t->final)) {
    rc = -1;
    err = errno;
  }
  if (rc) {
    ge_err_set(e, t->final, 0, NULL, "cannot finish: %s", strerror(err));
    unlink(t->path);
    return -1;
  }
  return 0;
}
