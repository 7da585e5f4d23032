/* libFuzzer: any datagram through the request parser, then the response
 * the device would build for it (the answer to a deregistration and a
 * notification too); every response must parse back with libcoap and
 * echo the token, a notification its Observe seq. */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "registry.h"
#include "resources.h"
#include "tx.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static const char table_csv[] = "path,service_us,payload_bytes\n"
                                "/a,0,\n"
                                "/b/c,1000,1024\n"
                                "/o,0,1024\n"
                                "/d,2100000,0\n"
                                "/e,5,3\n"
                                "/long/listing/entry/number/one,7,\n";

static struct registry reg;
static coap_pdu_t *in, *out;

static void setup(void) {
  struct res_table t;
  struct res_error err;

  coap_startup();
  coap_set_log_level(LOG_EMERG);
  if (res_parse(table_csv, sizeof(table_csv) - 1, &t, &err) < 0 ||
      registry_build(&reg, &t) < 0)
    abort();
  res_free(&t);
  in = coap_pdu_init(0, 0, 0, 2048);
  out = coap_pdu_init(0, 0, 0, 2048);
  if (in == NULL || out == NULL)
    abort();
}

static void check(struct recipe *rc, const struct wire_request *q) {
  uint8_t buf[WIRE_MAX_RESPONSE];
  size_t n = tx_build(buf, rc, &reg);
  coap_bin_const_t tok;

  if (n == 0 || n > sizeof(buf) || !coap_pdu_parse(COAP_PROTO_UDP, buf, n, out))
    abort();
  tok = coap_pdu_get_token(out);
  if (tok.length != q->tkl || (q->tkl && memcmp(tok.s, q->token, q->tkl) != 0))
    abort();
}

/* A notification with values taken from the request, the largest stamps
 * and the resource's payload size. */
static void check_notification(const struct recipe *rc,
                               const struct wire_request *q) {
  uint8_t buf[WIRE_MAX_RESPONSE];
  uint32_t seq = ((uint32_t)q->mid << 8 | q->tkl) & 0xffffffu;
  struct wire_notif w = {
      .type = q->type,
      .tkl = q->tkl,
      .mid = q->mid,
      .token = q->token,
      .seq = seq,
      .max_age = q->block2,
      .service_us = rc->res->service_us,
      .payload_bytes = rc->res->payload_bytes,
      .t_us = INT64_MAX,
      .e_us = INT64_MIN,
      .n = UINT64_MAX,
  };
  size_t n = wire_notification(buf, sizeof(buf), &w);
  coap_opt_iterator_t it;
  coap_opt_t *o;

  if (n == 0 || !coap_pdu_parse(COAP_PROTO_UDP, buf, n, out))
    abort();
  o = coap_check_option(out, COAP_OPTION_OBSERVE, &it);
  if (o == NULL ||
      coap_decode_var_bytes(coap_opt_value(o), coap_opt_length(o)) != seq)
    abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
  struct wire_request q;
  struct recipe rc;

  if (reg.ctx == NULL)
    setup();
  if (size > 2048 || wire_parse(in, data, size, &q) != WIRE_REQUEST)
    return 0;
  memset(&rc, 0, sizeof(rc));
  rc.type = WIRE_ACK;
  rc.mid = q.mid;
  rc.tkl = q.tkl;
  memcpy(rc.token, q.token, sizeof(rc.token));
  rc.code = 0x45;
  rc.block2 = q.has_block2 ? (int32_t)q.block2 : -1;
  rc.kind = RC_WKC;
  check(&rc, &q);
  rc.res = registry_find(&reg, q.path, q.path_len);
  if (rc.res != NULL) {
    rc.kind = RC_OK;
    check(&rc, &q);
    rc.kind = RC_ERR;
    check(&rc, &q);
    rc.kind = RC_UNOBS;
    rc.block2 = q.observe >= 0 && q.observe <= 0xffffff ? q.observe : -1;
    check(&rc, &q);
    check_notification(&rc, &q);
  }
  return 0;
}
