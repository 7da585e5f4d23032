/* The device's resources: libcoap's resource registry for lookup by
 * Uri-Path, plus the response tails and the /.well-known/core listing,
 * all built once at startup and read-only afterwards. */
#ifndef DEV_REGISTRY_H
#define DEV_REGISTRY_H

#include <coap3/coap.h>
#include <stddef.h>
#include <stdint.h>

#include "resources.h"

struct reg_entry {
  uint64_t service_us;
  int32_t payload_bytes; /* -1: the default payload */
  uint32_t index;        /* in file order */
  /* Observe: the resource's notification process (observable = 0: none) */
  uint8_t observable;
  uint16_t con_every; /* 0 non, 1 con, N: every N-th notification CON */
  uint32_t max_age;
  uint64_t seed; /* observe_seed ^ the path's hash */
  struct notify_proc proc;
  int64_t service_ns;
  const uint8_t *tail; /* options + payload of a 2.xx response */
  size_t tail_off;
  uint16_t tail_len;
  uint8_t err_tail_len;
  uint8_t err_tail[7]; /* option 65000 alone */
};

struct registry {
  coap_context_t *ctx;
  struct reg_entry *entries; /* file order */
  size_t count;
  uint8_t *tails;
  uint8_t *links; /* RFC 6690 link-format listing */
  size_t links_len;
};

/* Returns 0 or -1 (message printed). Needs coap_startup() first. */
int registry_build(struct registry *reg, const struct res_table *t);
void registry_free(struct registry *reg);

/* path: Uri-Path segments joined by '/', without the leading '/'. */
const struct reg_entry *registry_find(const struct registry *reg,
                                      const char *path, size_t len);

#endif
