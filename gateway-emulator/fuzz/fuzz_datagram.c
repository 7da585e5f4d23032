/* libFuzzer: the datagram handler, as if received on a GE socket with a
 * small plan in flight. Byte 0 picks the source and socket, and whether
 * the plan goes through a gateway from a socket per device (0x20); the
 * rest is the datagram. The handler must count and ignore anything
 * unexpected. */
#include <stdlib.h>
#include <string.h>

#include <coap3/coap.h>

#include "north.h"
#include "obstab.h"
#include "plan.h"
#include "recv.h"
#include "state.h"
#include "trace.h"
#include "wire.h"

static const char trace[] = "device_id,send_ts_us,method,uri\n"
                            "0,0,GET,coap://127.0.0.1:5700/a\n"
                            "1,10,PUT,coap://[::1]:5701/b?x=1,pay\n"
                            "0,20,POST,coap://127.0.0.1:5700/c/d\n"
                            "2,30,DELETE,coap://127.0.0.1:5702/\n"
                            "0,40,OBS,coap://127.0.0.1:5700/o\n"
                            "0,50,UNOBS,coap://127.0.0.1:5700/o\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  coap_set_log_level(LOG_EMERG);
  struct ge_plan p = {0};
  if (data[0] &
      0x20) { /* --gateway 127.0.0.1:5683 --north-sockets per-device */
    p.has_gateway = p.per_device = true;
    p.north = GE_NORTH_COAP_URI;
    p.gateway = (struct sockaddr_in6){.sin6_family = AF_INET6,
                                      .sin6_port = htons(5683)};
    p.gateway.sin6_addr.s6_addr[10] = p.gateway.sin6_addr.s6_addr[11] = 0xff;
    p.gateway.sin6_addr.s6_addr[12] = 127;
    p.gateway.sin6_addr.s6_addr[15] = 1;
  }
  struct ge_err e;
  struct ge_config cfg = {.coap_type = (data[0] & 0x80) ? GE_NON : GE_CON,
                          .timeout_ns = 1000000,
                          .ack_timeout_ns = 1000000,
                          .max_retransmit = 4};
  if (ge_trace_parse_buf(&p, "t", trace, sizeof trace - 1, NULL, &e) ||
      ge_plan_finish(&p, 1))
    abort();
  struct ge_loop L;
  if (ge_state_init(&L, &cfg, &p, NULL, 0xdeadbeef, 5, -1) ||
      ge_obs_init(&L.obs, p.nobs, -1, 64, 16384) ||
      ge_state_feed(&L, 6, &e) != 6)
    abort();
  /* the first five requests are in flight, the OBS row (4) among them;
   * with bit 0x10 its UNOBS went out too: the observation (token
   * 5eadbeef00000000) is registering or cancelling */
  for (uint32_t i = 0; i < 5; i++) {
    struct ge_rec *s = ge_win_at(&L.win, i);
    s->state = GE_WAIT;
    L.peer_sent[p.devs[s->dev].peer]++;
    L.next++;
    L.outstanding++;
  }
  ge_obs_sent(&L, 0, GE_CODE_OBS, 0, ge_win_at(&L.win, 4)->tmpl, 50);
  if (data[0] & 0x10)
    ge_obs_sent(&L, 0, GE_CODE_UNOBS, 0, ge_win_at(&L.win, 5)->tmpl, 60);
  struct sockaddr_in6 src = p.peers[(data[0] & 3) % p.npeer].addr;
  if ((data[0] & 3) == 3)
    src.sin6_port = 1; /* unknown source */
  unsigned sock = (data[0] >> 2) & 1;
  /* exact-size copy so ASan sees any read past the end */
  uint8_t *buf = malloc(size - 1 ? size - 1 : 1);
  if (!buf)
    abort();
  memcpy(buf, data + 1, size - 1);
  ge_recv_datagram(&L, buf, size - 1, (data[0] & 0x40) != 0, &src, sock, 100);
  ge_recv_datagram(&L, buf, size - 1, false, &src, sock, 200); /* duplicate */
  if (L.outstanding > 5 || L.ackq.n > GE_RECV_BATCH ||
      L.obs.out.len > L.obs.c.notifications)
    abort();
  free(buf);
  ge_obs_free(&L.obs);
  ge_state_free(&L);
  ge_plan_free(&p);
  return 0;
}
