/* The resource CSV (docs/formats.md): parsing only, no I/O in res_parse so
 * that the fuzzer can drive it. */
#ifndef DEV_RESOURCES_H
#define DEV_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "dev_format.h"
#include "notify.h"

struct dev_resource {
  char path[DEV_MAX_PATH_BYTES + 1]; /* with the leading '/' */
  uint16_t path_len;
  int32_t payload_bytes; /* -1: no payload_bytes column or empty cell */
  uint64_t service_us;
  unsigned line;
  /* Observe (the optional observe columns; observable = 0 when the
   * observe_rit cell is empty or absent) */
  uint8_t observable;
  uint16_t con_every; /* notify_type: 0 non, 1 con, N non:N */
  uint32_t max_age;   /* seconds (Max-Age option) */
  uint64_t seed;      /* observe_seed; 0 when empty */
  struct notify_proc proc;
};

struct res_table {
  struct dev_resource *items;
  size_t count;
  size_t cap;
};

/* Where and why a file was rejected. */
struct res_error {
  unsigned line;
  char field[24];
  char what[112];
};

/* Parses a whole file image. Returns 0, or -1 with *err filled (and *out
 * freed). */
int res_parse(const char *buf, size_t len, struct res_table *out,
              struct res_error *err);
void res_free(struct res_table *t);

/* Reads and parses FILE; on failure prints `error: FILE:LINE: FIELD: what`
 * and returns -1. */
int res_load(const char *file, struct res_table *out);

#endif
