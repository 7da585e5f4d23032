/* A numeric-only getaddrinfo() and freeaddrinfo() for the two static
 * programs (wotbench-ge compiles this file too, like cpulist.c).
 *
 * Why: libcoap's net.o, which every libcoap program links, calls
 * getaddrinfo() to resolve host names; neither program ever gives it a
 * name (both parse their --host addresses with inet_pton). In a static
 * link glibc's getaddrinfo.o brings a link warning ("requires at runtime
 * the shared libraries from the glibc version used for linking") and the
 * NSS machinery. Defining both functions here keeps that object out, so
 * the static link can be held to -Wl,--fatal-warnings.
 *
 * What it does: a numeric IPv4 or IPv6 host (or none: the wildcard with
 * AI_PASSIVE, else the loopback) and a numeric port (or none: 0) give one
 * result; a host name gives EAI_NONAME and a service name EAI_SERVICE.
 * gai_strerror() stays glibc's. No header: <netdb.h> declares both. */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* One result and its address in one allocation (freeaddrinfo frees it). */
struct noresolv_ai {
  struct addrinfo ai;
  struct sockaddr_storage addr;
};

/* "5683" -> 5683; -1 for anything but 1 to 5 decimal digits up to 65535. */
static long noresolv_port(const char *service) {
  if (service == NULL)
    return 0;
  size_t n = strlen(service);
  if (n == 0 || n > 5 || strspn(service, "0123456789") != n)
    return -1;
  long port = strtol(service, NULL, 10);
  return port <= 65535 ? port : -1;
}

/* The address of host (or of no host) in *ss for the family asked (or any);
 * returns the family found, or AF_UNSPEC when host is not numeric. */
static int noresolv_addr(const char *host, int want, int passive,
                         struct sockaddr_storage *ss) {
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (host == NULL) {
    if (want == AF_INET6) {
      v6->sin6_addr = passive ? in6addr_any : in6addr_loopback;
      return AF_INET6;
    }
    v4->sin_addr.s_addr = htonl(passive ? INADDR_ANY : INADDR_LOOPBACK);
    return AF_INET;
  }
  if (want != AF_INET6 && inet_pton(AF_INET, host, &v4->sin_addr) == 1)
    return AF_INET;
  if (want != AF_INET && inet_pton(AF_INET6, host, &v6->sin6_addr) == 1)
    return AF_INET6;
  return AF_UNSPEC;
}

int getaddrinfo(const char *restrict node, const char *restrict service,
                const struct addrinfo *restrict hints,
                struct addrinfo **restrict res) {
  int want = hints ? hints->ai_family : AF_UNSPEC;
  int flags = hints ? hints->ai_flags : 0;
  if (want != AF_UNSPEC && want != AF_INET && want != AF_INET6)
    return EAI_FAMILY;
  long port = noresolv_port(service);
  if (port < 0)
    return EAI_SERVICE;
  struct noresolv_ai *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return EAI_MEMORY;
  int family = noresolv_addr(node, want, (flags & AI_PASSIVE) != 0, &r->addr);
  if (family == AF_UNSPEC) {
    free(r);
    return EAI_NONAME;
  }
  if (family == AF_INET) {
    struct sockaddr_in *v4 = (struct sockaddr_in *)&r->addr;
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    r->ai.ai_addrlen = sizeof(*v4);
  } else {
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&r->addr;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    r->ai.ai_addrlen = sizeof(*v6);
  }
  r->ai.ai_family = family;
  r->ai.ai_socktype =
      hints && hints->ai_socktype ? hints->ai_socktype : SOCK_DGRAM;
  r->ai.ai_protocol = hints ? hints->ai_protocol : 0;
  r->ai.ai_addr = (struct sockaddr *)&r->addr;
  *res = &r->ai;
  return 0;
}

void freeaddrinfo(struct addrinfo *ai) {
  while (ai != NULL) {
    struct addrinfo *next = ai->ai_next;
    free(ai); /* ai is the first member of its struct noresolv_ai */
    ai = next;
  }
}
