/* Resource table -> libcoap registry, pre-encoded tails, link-format. */
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* Tail budget per resource: two options (<= 1 + 6 bytes), 0xFF and the
 * largest payload. */
#define TAIL_MAX (16 + DEV_MAX_PAYLOAD_BYTES)

static int add_resource(struct registry *reg, const struct dev_resource *r,
                        size_t i) {
  /* libcoap keys resources by the path without its leading '/'. */
  coap_str_const_t *uri =
      coap_new_str_const((const uint8_t *)r->path + 1, r->path_len - 1u);
  coap_resource_t *res;

  if (uri == NULL)
    return -1;
  res = coap_resource_init(uri, COAP_RESOURCE_FLAGS_RELEASE_URI);
  if (res == NULL) {
    coap_delete_str_const(uri);
    return -1;
  }
  coap_add_attr(res, coap_make_str_const("ct"), coap_make_str_const("0"), 0);
  coap_resource_set_userdata(res, &reg->entries[i]);
  coap_add_resource(reg->ctx, res);
  return 0;
}

static int append_link(struct registry *reg, const struct dev_resource *r,
                       size_t *cap) {
  coap_resource_t *res;
  coap_str_const_t key = {(size_t)r->path_len - 1u,
                          (const uint8_t *)r->path + 1};
  size_t need = (size_t)r->path_len + 16, offset = 0, len;
  coap_print_status_t st;

  res = coap_get_resource_from_uri_path(reg->ctx, &key);
  if (res == NULL)
    return -1;
  if (reg->links_len + need + 1 > *cap) {
    size_t ncap = (*cap ? *cap * 2 : 4096) + need;
    uint8_t *p = realloc(reg->links, ncap);

    if (p == NULL)
      return -1;
    reg->links = p;
    *cap = ncap;
  }
  if (reg->links_len)
    reg->links[reg->links_len++] = ',';
  len = *cap - reg->links_len;
  st = coap_print_link(res, reg->links + reg->links_len, &len, &offset);
  if (st & (COAP_PRINT_STATUS_ERROR | COAP_PRINT_STATUS_TRUNC))
    return -1;
  reg->links_len += COAP_PRINT_OUTPUT_LENGTH(st);
  return 0;
}

/* Tails are packed into one arena (a million resources must not cost a
 * full-payload slot each); pointers are set once it stops moving. */
static int append_tail(struct registry *reg, size_t i,
                       const struct dev_resource *r, size_t *used,
                       size_t *cap) {
  uint8_t tmp[TAIL_MAX];
  size_t n =
      wire_resource_tail(tmp, sizeof(tmp), r->service_us, r->payload_bytes);

  if (n == 0)
    return -1;
  if (*used + n > *cap) {
    size_t ncap = *cap * 2 + TAIL_MAX;
    uint8_t *p = realloc(reg->tails, ncap);

    if (p == NULL)
      return -1;
    reg->tails = p;
    *cap = ncap;
  }
  memcpy(reg->tails + *used, tmp, n);
  reg->entries[i].tail_off = *used;
  reg->entries[i].tail_len = (uint16_t)n;
  *used += n;
  return 0;
}

int registry_build(struct registry *reg, const struct res_table *t) {
  size_t cap = 0, tused = 0, tcap = 0;

  memset(reg, 0, sizeof(*reg));
  reg->ctx = coap_new_context(NULL);
  reg->entries = calloc(t->count, sizeof(*reg->entries));
  if (reg->ctx == NULL || reg->entries == NULL)
    goto oom;
  reg->count = t->count;
  for (size_t i = 0; i < t->count; i++) {
    const struct dev_resource *r = &t->items[i];
    struct reg_entry *e = &reg->entries[i];

    e->service_us = r->service_us;
    e->payload_bytes = r->payload_bytes;
    e->index = (uint32_t)i;
    e->observable = r->observable;
    e->con_every = r->con_every;
    e->max_age = r->max_age;
    e->seed = r->seed ^ notify_hash(r->path, r->path_len);
    e->proc = r->proc;
    e->service_ns = (int64_t)r->service_us * 1000;
    e->err_tail_len = (uint8_t)wire_error_tail(e->err_tail, sizeof(e->err_tail),
                                               r->service_us);
    if (append_tail(reg, i, r, &tused, &tcap) < 0 || e->err_tail_len == 0)
      goto oom;
    if (add_resource(reg, r, i) < 0 || append_link(reg, r, &cap) < 0)
      goto oom;
  }
  for (size_t i = 0; i < t->count; i++)
    reg->entries[i].tail = reg->tails + reg->entries[i].tail_off;
  return 0;
oom:
  fprintf(stderr, "error: out of memory building %zu resources\n", t->count);
  registry_free(reg);
  return -1;
}

void registry_free(struct registry *reg) {
  if (reg->ctx != NULL)
    coap_free_context(reg->ctx);
  free(reg->entries);
  free(reg->tails);
  free(reg->links);
  memset(reg, 0, sizeof(*reg));
}

const struct reg_entry *registry_find(const struct registry *reg,
                                      const char *path, size_t len) {
  coap_str_const_t key = {len, (const uint8_t *)path};
  coap_resource_t *res = coap_get_resource_from_uri_path(reg->ctx, &key);

  return res ? coap_resource_get_userdata(res) : NULL;
}
