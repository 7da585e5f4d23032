/* libFuzzer: the trace loader (every line check, host resolution,
 * template encoding via libcoap, the scan's counts and windows, the MID /
 * socket plan) and the run-time cursor over the same text. */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "hosts.h"
#include "plan.h"
#include "trace.h"
#include "wire.h"

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
  /* A third of the inputs go through a gateway (north.c's templates). */
  bool has_port;
  const char *why;
  p.north = (uint8_t)(size % 3); /* direct, coap-uri, coap-scheme */
  p.has_gateway = p.north != 0;
  if (ge_parse_address("[::1]:5690", 10, &p.gateway, &has_port, &why))
    abort();
  if (ge_trace_parse_buf(&p, "trace", buf, size, &h, &e) == 0) {
    if (p.has_gateway && p.npeer != 1)
      abort(); /* every request goes to the gateway */
    if (ge_plan_finish(&p, 7) == 0) {
      /* the run-time cursor reads back exactly what the scan counted */
      uint32_t *rank = calloc(p.npeer, sizeof *rank);
      if (!rank)
        abort();
      struct ge_cursor c;
      struct ge_req r;
      ge_cursor_init(&c, &p, "trace");
      while (ge_cursor_read(&p, &c, &h, &r, &e) == 1) {
        const struct ge_peer *pr = &p.peers[p.devs[r.dev].peer];
        if (ge_plan_sock(pr, rank[p.devs[r.dev].peer]++) >= pr->k ||
            p.tmpls[r.tmpl].len > GE_DGRAM_MAX || r.ts_us < p.ts_first ||
            r.ts_us > p.ts_last)
          abort();
      }
      if (c.n != p.n)
        abort();
      for (size_t q = 0; q < p.npeer; q++)
        if (rank[q] != p.peers[q].count ||
            p.peers[q].window_max > p.peers[q].count ||
            (p.peers[q].count && !p.peers[q].window_max))
          abort();
      free(rank);
    }
  } else if (!strchr(e.msg, ':')) {
    abort(); /* every rejection names FILE:LINE */
  }
  ge_plan_free(&p);
  ge_hosts_free(&h);
  free(buf);
  return 0;
}
