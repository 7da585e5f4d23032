/* A UDP peer address as recvmmsg gives it and sendmmsg takes it. */
#ifndef DEV_PEER_H
#define DEV_PEER_H

#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

struct peer {
  union {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
  } u;
  socklen_t len;
};

/* The peer as IPv6 (IPv4 mapped) address + port, the identity RFC 7252
 * deduplication keys on. */
static inline void peer_key(const struct peer *p, uint8_t addr[16],
                            uint16_t *port) {
  if (p->u.sa.sa_family == AF_INET6) {
    memcpy(addr, &p->u.in6.sin6_addr, 16);
    *port = p->u.in6.sin6_port;
    return;
  }
  memset(addr, 0, 10);
  addr[10] = addr[11] = 0xff;
  memcpy(addr + 12, &p->u.in.sin_addr, 4);
  *port = p->u.in.sin_port;
}

static inline int peer_equal(const struct peer *a, const struct peer *b) {
  uint8_t x[16], y[16];
  uint16_t px, py;

  peer_key(a, x, &px);
  peer_key(b, y, &py);
  return px == py && memcmp(x, y, 16) == 0;
}

#endif
