/* libFuzzer: the trace loader (every line check, host resolution,
 * template encoding via libcoap, and the MID / socket plan). */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "ge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char hosts_csv[] = "host,address\ndev-1,127.0.0.1:5700\n"
                                  "dev-2,[::1]\n";
  struct ge_hosts h = {0};
  struct ge_plan p = {0};
  struct ge_err e;
  coap_set_log_level(LOG_EMERG);
  if (ge_hosts_parse_buf(&h, "hosts", hosts_csv, sizeof hosts_csv - 1, &e))
    abort();
  /* The second half of the input doubles as a hosts file. */
  struct ge_hosts h2 = {0};
  ge_hosts_parse_buf(&h2, "h2", (const char *)data, size, &e);
  ge_hosts_free(&h2);
  /* exact-size copy so ASan sees any read past the end */
  char *buf = malloc(size ? size : 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  if (ge_trace_parse_buf(&p, "trace", buf, size, &h, &e) == 0) {
    if (ge_plan_finish(&p, 7) == 0)
      for (size_t i = 0; i < p.n; i++) {
        const struct ge_peer *pr = &p.peers[p.devs[p.dev[i]].peer];
        if (p.sock[i] >= pr->k || p.tmpls[p.tmpl[i]].len > GE_DGRAM_MAX)
          abort();
      }
  } else if (!strchr(e.msg, ':')) {
    abort(); /* every rejection names FILE:LINE */
  }
  ge_plan_free(&p);
  ge_hosts_free(&h);
  free(buf);
  return 0;
}
