/* Resource CSV parser: header by name, one resource per row, every value
 * checked before anything is bound or started. */
#include "resources.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RES_MAX_COUNT (1u << 20)
#define RES_MAX_FIELDS 64
#define RES_FILE_MAX (256u << 20)

struct field {
  const char *s;
  size_t n;
};

static int fail(struct res_error *err, unsigned line, const char *field,
                const char *fmt, ...) {
  va_list ap;

  err->line = line;
  snprintf(err->field, sizeof(err->field), "%s", field);
  va_start(ap, fmt);
  vsnprintf(err->what, sizeof(err->what), fmt, ap);
  va_end(ap);
  return -1;
}

static struct field trim(const char *s, size_t n) {
  while (n && (*s == ' ' || *s == '\t')) {
    s++;
    n--;
  }
  while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
    n--;
  return (struct field){s, n};
}

static int field_is(struct field f, const char *name) {
  return f.n == strlen(name) && memcmp(f.s, name, f.n) == 0;
}

/* Splits one line on commas; returns the number of fields or -1 if > max. */
static int split(const char *s, size_t n, struct field *out, int max) {
  int k = 0;
  size_t start = 0;

  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == ',') {
      if (k == max)
        return -1;
      out[k++] = trim(s + start, i - start);
      start = i + 1;
    }
  }
  return k;
}

static int parse_uint(struct field f, uint64_t max, uint64_t *out) {
  uint64_t v = 0;

  if (f.n == 0 || f.n > 20)
    return -1;
  for (size_t i = 0; i < f.n; i++) {
    uint64_t d = (uint64_t)(f.s[i] - '0');

    if (f.s[i] < '0' || f.s[i] > '9' || v > (max - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

/* RFC 3986 pchar without percent-encoding (requests carry decoded Uri-Path
 * segments, so an encoded path could never match), plus '/'. */
static int path_char_ok(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
      (c >= '0' && c <= '9'))
    return 1;
  return c != 0 && strchr("-._~!$&'()*+;=:@/", c) != NULL;
}

static int check_path(struct field f, unsigned line, struct res_error *err) {
  static const char wkc[] = "/.well-known/core";

  if (f.n == 0 || f.s[0] != '/')
    return fail(err, line, "path", "must start with '/'");
  if (f.n > DEV_MAX_PATH_BYTES)
    return fail(err, line, "path", "longer than %d bytes", DEV_MAX_PATH_BYTES);
  for (size_t i = 0; i < f.n; i++)
    if (!path_char_ok((unsigned char)f.s[i]))
      return fail(err, line, "path", "character 0x%02x not allowed",
                  (unsigned char)f.s[i]);
  if (f.n == sizeof(wkc) - 1 && memcmp(f.s, wkc, f.n) == 0)
    return fail(err, line, "path", "%s is served by the device itself", wkc);
  return 0;
}

struct header {
  int path, service, payload, rit, type, max_age, seed, nfields;
};

static int parse_header(struct field *fs, int n, unsigned line,
                        struct header *h, struct res_error *err) {
  h->path = h->service = h->payload = -1;
  h->rit = h->type = h->max_age = h->seed = -1;
  h->nfields = n;
  for (int i = 0; i < n; i++) {
    int *slot = field_is(fs[i], "path")            ? &h->path
                : field_is(fs[i], "service_us")    ? &h->service
                : field_is(fs[i], "payload_bytes") ? &h->payload
                : field_is(fs[i], "observe_rit")   ? &h->rit
                : field_is(fs[i], "notify_type")   ? &h->type
                : field_is(fs[i], "max_age")       ? &h->max_age
                : field_is(fs[i], "observe_seed")  ? &h->seed
                                                   : NULL;
    if (slot == NULL)
      continue;
    if (*slot >= 0)
      return fail(err, line, "header", "column '%.*s' repeated", (int)fs[i].n,
                  fs[i].s);
    *slot = i;
  }
  if (h->path < 0)
    return fail(err, line, "header", "no 'path' column (expected %s)",
                DEV_RESOURCE_COLUMNS);
  if (h->service < 0)
    return fail(err, line, "header", "no 'service_us' column (expected %s)",
                DEV_RESOURCE_COLUMNS);
  return 0;
}

/* The cell of column col, empty when the file has no such column. */
static struct field cell(struct field *fs, int col) {
  return col >= 0 ? fs[col] : (struct field){"", 0};
}

static int parse_notify_type(struct field f, uint16_t *out) {
  uint64_t v;

  if (f.n == 0 || field_is(f, "non")) {
    *out = 0;
    return 0;
  }
  if (field_is(f, "con")) {
    *out = 1;
    return 0;
  }
  if (f.n < 5 || memcmp(f.s, "non:", 4) != 0 ||
      parse_uint((struct field){f.s + 4, f.n - 4}, 1000, &v) < 0 || v == 0)
    return -1;
  *out = (uint16_t)v;
  return 0;
}

#define CELL(f) (int)((f).n > 40 ? 40 : (f).n), (f).s

/* The observe columns; an empty observe_rit leaves the resource plain but
 * the other cells are still checked. */
static int parse_observe(struct field *fs, unsigned line,
                         const struct header *h, struct dev_resource *r,
                         struct res_error *err) {
  struct field rit = cell(fs, h->rit), age = cell(fs, h->max_age);
  struct field seed = cell(fs, h->seed), type = cell(fs, h->type);
  char why[96];
  uint64_t v;

  memset(&r->proc, 0, sizeof(r->proc));
  r->observable = rit.n > 0;
  if (r->observable &&
      notify_parse(rit.s, rit.n, &r->proc, why, sizeof(why)) < 0)
    return fail(err, line, "observe_rit", "'%.*s': %s", CELL(rit), why);
  if (parse_notify_type(type, &r->con_every) < 0)
    return fail(err, line, "notify_type",
                "'%.*s' is not non, con or non:N (N 1..1000)", CELL(type));
  r->max_age = 60;
  if (age.n > 0) {
    if (parse_uint(age, 4294967295ULL, &v) < 0 || v == 0)
      return fail(err, line, "max_age",
                  "'%.*s' is not an integer 1..4294967295 (seconds)",
                  CELL(age));
    r->max_age = (uint32_t)v;
  }
  r->seed = 0;
  if (seed.n > 0 && parse_uint(seed, UINT64_MAX, &r->seed) < 0)
    return fail(err, line, "observe_seed", "'%.*s' is not a decimal uint64",
                CELL(seed));
  return 0;
}

static int parse_row(struct field *fs, int n, unsigned line,
                     const struct header *h, struct dev_resource *r,
                     struct res_error *err) {
  uint64_t v;

  if (n != h->nfields)
    return fail(err, line, "row", "%d fields, header has %d", n, h->nfields);
  if (check_path(fs[h->path], line, err) < 0)
    return -1;
  memcpy(r->path, fs[h->path].s, fs[h->path].n);
  r->path[fs[h->path].n] = '\0';
  r->path_len = (uint16_t)fs[h->path].n;
  if (parse_uint(fs[h->service], DEV_MAX_SERVICE_US, &r->service_us) < 0)
    return fail(err, line, "service_us", "'%.*s' is not an integer 0..%llu",
                (int)(fs[h->service].n > 40 ? 40 : fs[h->service].n),
                fs[h->service].s, (unsigned long long)DEV_MAX_SERVICE_US);
  r->payload_bytes = -1;
  if (h->payload >= 0 && fs[h->payload].n > 0) {
    if (parse_uint(fs[h->payload], DEV_MAX_PAYLOAD_BYTES, &v) < 0)
      return fail(err, line, "payload_bytes", "'%.*s' is not an integer 0..%d",
                  (int)(fs[h->payload].n > 40 ? 40 : fs[h->payload].n),
                  fs[h->payload].s, DEV_MAX_PAYLOAD_BYTES);
    r->payload_bytes = (int32_t)v;
  }
  r->line = line;
  return parse_observe(fs, line, h, r, err);
}

static int cmp_path(const void *a, const void *b) {
  const struct dev_resource *x = *(const struct dev_resource *const *)a;
  const struct dev_resource *y = *(const struct dev_resource *const *)b;
  int c = strcmp(x->path, y->path);

  return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Sorting pointers keeps the table in file order (that order is the
 * /.well-known/core order) while finding duplicates in n log n. */
static int check_unique(const struct res_table *t, struct res_error *err) {
  const struct dev_resource **v;
  int rc = 0;

  if (t->count < 2)
    return 0;
  v = malloc(t->count * sizeof(const struct dev_resource *));
  if (v == NULL)
    return fail(err, 0, "path", "out of memory");
  for (size_t i = 0; i < t->count; i++)
    v[i] = &t->items[i];
  qsort(v, t->count, sizeof(const struct dev_resource *), cmp_path);
  for (size_t i = 1; i < t->count && rc == 0; i++)
    if (strcmp(v[i - 1]->path, v[i]->path) == 0)
      rc = fail(err, v[i]->line, "path", "'%s' already defined on line %u",
                v[i]->path, v[i - 1]->line);
  free(v);
  return rc;
}

static int push(struct res_table *t, const struct dev_resource *r) {
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct dev_resource *p = realloc(t->items, cap * sizeof(*p));

    if (p == NULL)
      return -1;
    t->items = p;
    t->cap = cap;
  }
  t->items[t->count++] = *r;
  return 0;
}

int res_parse(const char *buf, size_t len, struct res_table *out,
              struct res_error *err) {
  struct field fs[RES_MAX_FIELDS];
  struct header h = {-1, -1, -1, -1, -1, -1, -1, 0};
  struct dev_resource r;
  unsigned line = 0;
  size_t pos = 0;
  int have_header = 0;

  memset(out, 0, sizeof(*out));
  while (pos < len) {
    const char *s = buf + pos;
    const char *nl = memchr(s, '\n', len - pos);
    size_t n = nl ? (size_t)(nl - s) : len - pos;
    struct field whole = trim(s, n);
    int k;

    pos += n + 1;
    line++;
    if (whole.n == 0 || whole.s[0] == '#')
      continue;
    if (memchr(whole.s, '"', whole.n) != NULL) {
      fail(err, line, have_header ? "row" : "header",
           "quoted fields are not supported");
      goto bad;
    }
    k = split(s, n, fs, RES_MAX_FIELDS);
    if (k < 0) {
      fail(err, line, have_header ? "row" : "header", "more than %d fields",
           RES_MAX_FIELDS);
      goto bad;
    }
    if (!have_header) {
      if (parse_header(fs, k, line, &h, err) < 0)
        goto bad;
      have_header = 1;
      continue;
    }
    if (out->count == RES_MAX_COUNT) {
      fail(err, line, "row", "more than %u resources", RES_MAX_COUNT);
      goto bad;
    }
    if (parse_row(fs, k, line, &h, &r, err) < 0)
      goto bad;
    if (push(out, &r) < 0) {
      fail(err, line, "row", "out of memory");
      goto bad;
    }
  }
  if (!have_header) {
    fail(err, line ? line : 1, "header", "missing (expected %s)",
         DEV_RESOURCE_COLUMNS);
    goto bad;
  }
  if (out->count == 0) {
    fail(err, line, "path", "no resources");
    goto bad;
  }
  if (check_unique(out, err) < 0)
    goto bad;
  return 0;
bad:
  res_free(out);
  return -1;
}

void res_free(struct res_table *t) {
  free(t->items);
  memset(t, 0, sizeof(*t));
}

static char *read_all(const char *file, size_t *len, const char **why) {
  struct stat st;
  char *buf = NULL;
  size_t got = 0;
  int fd = open(file, O_RDONLY | O_CLOEXEC);

  *why = NULL;
  if (fd < 0)
    goto sys;
  if (fstat(fd, &st) < 0)
    goto sys;
  if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
    goto out;
  }
  if ((uint64_t)st.st_size > RES_FILE_MAX) {
    *why = "larger than 256 MiB";
    goto out;
  }
  buf = malloc((size_t)st.st_size + 1);
  if (buf == NULL)
    goto sys;
  while (got < (size_t)st.st_size) {
    ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      goto sys;
    if (n == 0)
      break;
    got += (size_t)n;
  }
  *len = got;
  close(fd);
  return buf;
sys:
  *why = strerror(errno);
out:
  free(buf);
  if (fd >= 0)
    close(fd);
  return NULL;
}

int res_load(const char *file, struct res_table *out) {
  struct res_error err;
  const char *why;
  size_t len = 0;
  char *buf = read_all(file, &len, &why);
  int rc;

  if (buf == NULL) {
    fprintf(stderr, "error: %s:0: resources: %s\n", file, why);
    return -1;
  }
  rc = res_parse(buf, len, out, &err);
  free(buf);
  if (rc < 0)
    fprintf(stderr, "error: %s:%u: %s: %s\n", file, err.line, err.field,
            err.what);
  return rc;
}
