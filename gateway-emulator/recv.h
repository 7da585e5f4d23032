/* One received datagram -> state update (no syscalls; fuzzed). */
#ifndef GE_RECV_H
#define GE_RECV_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "state.h"

void ge_recv_datagram(struct ge_loop *L, const uint8_t *buf, size_t len,
                      bool truncated, const struct sockaddr_in6 *src,
                      unsigned sock, int64_t now);

#endif
