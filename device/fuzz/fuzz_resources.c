/* libFuzzer: the resource CSV parser must reject or accept any bytes
 * without crashing, and what it accepts must satisfy formats.md; an
 * observable resource's sampler draws at least 1 us and finite times. */
#include <stdlib.h>
#include <string.h>

#include "resources.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check_draws(const struct dev_resource *r) {
  struct notify_rng rng;

  notify_seed(&rng, r->seed);
  for (int k = 0; k < 16; k++) {
    int64_t ns = notify_draw_ns(&r->proc, &rng);

    if (ns < 1000 || ns > (int64_t)NOTIFY_MAX_US * 1000000)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  struct res_table t;
  struct res_error err;

  if (res_parse((const char *)data, size, &t, &err) < 0) {
    if (err.field[0] == '\0' || err.what[0] == '\0')
      abort();
    return 0;
  }
  for (size_t i = 0; i < t.count; i++) {
    const struct dev_resource *r = &t.items[i];

    if (r->path[0] != '/' || r->path_len > DEV_MAX_PATH_BYTES ||
        strlen(r->path) != r->path_len || r->service_us > DEV_MAX_SERVICE_US ||
        r->payload_bytes > DEV_MAX_PAYLOAD_BYTES || r->payload_bytes < -1 ||
        r->con_every > 1000 || r->max_age == 0 || r->proc.kind > NK_PARETO)
      abort();
    if (r->observable)
      check_draws(r);
  }
  res_free(&t);
  return 0;
}
