/* The second tier of state: the plan, what the trace asks for, resolved
 * and numbered (device and endpoint tables, request templates, the socket
 * and message-ID plan). Immutable once ge_plan_finish froze it. */
#ifndef GE_PLAN_H
#define GE_PLAN_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hist.h"
#include "wire.h"

struct ge_template {
  uint64_t hash;
  uint32_t off, len;         /* encoded options + payload in tbytes */
  uint32_t key_off, key_len; /* method byte, owner (4 bytes: the device
                                through a gateway), path?query\npayload */
  uint8_t code;              /* CoAP method code */
};
struct ge_device {
  uint32_t id, peer; /* peer: the device's endpoint, or the gateway's */
  uint32_t auth_off, auth_len; /* first authority text seen, in abytes */
  struct sockaddr_in6 addr;    /* the device's own endpoint */
};
/* A peer is one destination endpoint; message IDs are planned per peer
 * because a server deduplicates by (source endpoint, MID). */
struct ge_peer {
  struct sockaddr_in6 addr;
  uint32_t count;      /* requests to this peer */
  uint32_t window_max; /* most requests in any EXCHANGE_LIFETIME */
  uint32_t in_window;  /* scan: requests in the current window */
  uint32_t k;          /* local sockets this peer rotates through */
  uint32_t sock0;      /* the first of them: 0, or per device its own */
  uint16_t mid0;
};
/* One observation (RFC 7641): an OBS row and the UNOBS row that closes
 * it, by trace index; numbered by the OBS row's ordinal. */
struct ge_plan_obs {
  uint32_t reg_row, dereg_row, dev;
};
/* The scan's pairing of OBS and UNOBS rows by (device, path?query). */
struct ge_obs_pair {
  uint64_t line;     /* the open OBS row's line */
  uint64_t key_off;  /* path?query in text */
  uint32_t dev, obs; /* obs: the open observation, UINT32_MAX none */
  uint16_t key_len;
};
/* Most observations of one GE (bad input beyond). */
#define GE_PLAN_OBS_MAX 262144u
/* Most local UDP sockets of a run (struct ge_rec holds a 16-bit index). */
#define GE_PLAN_SOCK_MAX 60000
/* The plan holds no per-request array: requests are read from the mapped
 * trace text by a cursor (trace.c), twice: once to check and count
 * everything before anything is sent, once while sending. */
struct ge_plan {
  const char *text; /* the mapped trace (URIs are printed from it) */
  size_t text_len;
  size_t n;
  uint64_t ts_first, ts_last;
  struct ge_hist rit_expected; /* trace inter-arrival times */

  struct ge_device *devs;
  size_t ndev, devcap;
  uint32_t *dev_hash;
  size_t dev_hash_cap;
  char *abytes; /* authority texts of the devices */
  size_t abytes_len, abytes_cap;

  struct ge_peer *peers;
  size_t npeer, peercap;
  uint32_t *peer_hash;
  size_t peer_hash_cap;

  struct ge_template *tmpls;
  size_t ntmpl, tmplcap;
  uint32_t *tmpl_hash;
  size_t tmpl_hash_cap;
  uint8_t *tbytes;
  size_t tbytes_len, tbytes_cap;

  /* Set before the scan: with a gateway every request goes to it (one
   * peer), and its template names the device (north.h). */
  uint8_t north; /* enum ge_north */
  bool has_gateway;
  /* --north-sockets per-device: a peer per device (each the gateway) on
   * sockets of its own, so that a proxy keeping one upstream session per
   * client endpoint (libcoap 4.3.1) sees each device as a client. */
  bool per_device;
  struct sockaddr_in6 gateway;

  /* Observe: empty (NULL, 0) when the trace has no OBS rows. */
  struct ge_plan_obs *obs;
  size_t nobs, obscap;
  uint32_t *unobs_pair; /* per UNOBS row in trace order: its observation */
  size_t nunobs, unobscap;
  struct ge_obs_pair *pairs; /* scan only (freed by ge_plan_obs_done) */
  size_t npair, paircap;
  uint32_t *pair_hash;
  size_t pair_hash_cap;

  unsigned nsock;
  uint32_t *sock_peer; /* per_device: the peer of each socket */
  bool frozen;         /* after the scan: a lookup that would add is an error */
  bool text_mapped;    /* text is a file mapping (pages may be given back) */
};

int64_t ge_plan_find_device(const struct ge_plan *p, uint32_t id);
/* New device bound to addr (auth: its authority text, copied); its peer
 * is addr, or the gateway. */
int64_t ge_plan_add_device(struct ge_plan *p, uint32_t id, const char *auth,
                           uint32_t auth_len, const struct sockaddr_in6 *addr);
/* Template index for (method, path, query, payload), and through a
 * gateway also for device `dev`; -1 with why. */
int64_t ge_plan_template(struct ge_plan *p, uint8_t code, uint32_t dev,
                         const char *path, size_t plen, const char *query,
                         size_t qlen, const char *payload, size_t paylen,
                         const char **why);
/* Sockets and the first message ID of every peer (needs the counts and
 * window maxima of the scan); freezes the tables. 0, -1 too many requests
 * per peer within EXCHANGE_LIFETIME, -2 more than GE_PLAN_SOCK_MAX
 * sockets, -3 out of memory. */
int ge_plan_finish(struct ge_plan *p, uint32_t mid_seed);
/* The peer a datagram from `a` on local socket `sock` answers for: by
 * address, or per device by socket (and address); -1 when none. */
int64_t ge_plan_peer_of(const struct ge_plan *p, const struct sockaddr_in6 *a,
                        unsigned sock);
/* The n-th request of a peer (its rank) goes out on this socket with this
 * message ID. */
static inline unsigned ge_plan_sock(const struct ge_peer *pr, uint32_t rank) {
  return pr->sock0 + (unsigned)((rank / GE_MID_SPACE) % pr->k);
}
static inline uint16_t ge_plan_mid(const struct ge_peer *pr, uint32_t rank) {
  return (uint16_t)(pr->mid0 + rank);
}
/* Rank of the request sent on socket s to peer with this MID, given that
 * the peer's first `sent` requests went out; -1 when none. */
int64_t ge_plan_mid_lookup(const struct ge_plan *p, uint32_t peer, unsigned s,
                           uint16_t mid, uint32_t sent);
/* The scan meets an OBS or UNOBS row (code GE_CODE_OBS / GE_CODE_UNOBS)
 * of device `dev` at trace index `row`, line `line`, URI path?query at
 * text offset key_off: it opens or closes the pair's observation, whose
 * index goes to *obs. 0; -1 bad input (*why, *other: the line of the OBS
 * still open); -2 out of memory. */
int ge_plan_obs_row(struct ge_plan *p, uint8_t code, uint32_t dev, uint32_t row,
                    uint64_t line, uint64_t key_off, size_t key_len,
                    uint32_t *obs, const char **why, uint64_t *other);
/* After the scan: the line of the first OBS never closed (true), or
 * false; the pairing tables are freed either way. */
bool ge_plan_obs_done(struct ge_plan *p, uint64_t *line);
void ge_plan_free(struct ge_plan *p);

#endif
