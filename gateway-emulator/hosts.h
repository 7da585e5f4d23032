/* Address syntax and the --hosts file: placeholder host name -> address. */
#ifndef GE_HOSTS_H
#define GE_HOSTS_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct ge_host {
  char name[64];
  struct sockaddr_in6 addr; /* v4 addresses are v4-mapped */
  bool has_port;
};
struct ge_hosts {
  struct ge_host *v;
  size_t n;
};

/* Parses "IPv4", "IPv4:port", "[IPv6]", "[IPv6]:port". Returns 0 or -1
 * with a reason in *why. */
int ge_parse_address(const char *s, size_t len, struct sockaddr_in6 *out,
                     bool *has_port, const char **why);
int ge_parse_port(const char *s, size_t len, uint16_t *port); /* 1..65535 */
int ge_hosts_load(struct ge_hosts *h, const char *path, struct ge_err *e);
int ge_hosts_parse_buf(struct ge_hosts *h, const char *name, const char *buf,
                       size_t len, struct ge_err *e);
const struct ge_host *ge_hosts_find(const struct ge_hosts *h, const char *name,
                                    size_t len);
void ge_hosts_free(struct ge_hosts *h);

#endif
