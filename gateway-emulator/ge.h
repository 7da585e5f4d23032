/* wotbench-ge internals: the three tiers of state (immutable config, the
 * loaded plan, the loop's own struct with a bounded window of requests) and
 * the functions of each file. */
#ifndef GE_H
#define GE_H

#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../device/cpulist.h" /* one --cpus LIST syntax for both programs */
#include "ge_format.h"

/* Line walker shared by the trace and hosts parsers: yields each line that
 * is neither blank nor a '#' comment, with trailing CR and spaces trimmed,
 * and counts every line (`no`) for error messages. Inline: the trace parser
 * runs it 10 million times. */
struct ge_lines {
  const char *p, *end;
  size_t no;
};

static inline bool ge_next_line(struct ge_lines *it, const char **ls,
                                const char **le) {
  while (it->p < it->end) {
    const char *s = it->p;
    const char *nl = memchr(s, '\n', (size_t)(it->end - s));
    const char *e = nl ? nl : it->end;
    it->p = nl ? nl + 1 : it->end;
    it->no++;
    while (e > s && (e[-1] == '\r' || e[-1] == ' '))
      e--;
    if (e == s || *s == '#')
      continue;
    *ls = s;
    *le = e;
    return true;
  }
  return false;
}

/* RFC 7252 section 4.8.2 with default parameters. */
#define GE_EXCHANGE_LIFETIME_NS 247000000000LL
#define GE_MID_SPACE 65536u
#define GE_TOKEN_LEN 8
#define GE_HDR_LEN (4 + GE_TOKEN_LEN)
#define GE_RECV_BATCH 32
#define GE_DGRAM_MAX 2048

/* ---- errors (every file) ------------------------------------------- */

/* One formatted line "FILE:LINE: FIELD: what" (without "error: "). */
struct ge_err {
  char msg[600];
};
void ge_err_set(struct ge_err *e, const char *file, size_t line,
                const char *field, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* ---- cli.c ---------------------------------------------------------- */

struct ge_config {
  const char *trace, *out, *summary, *hosts, *dump_plan;
  uint8_t coap_type; /* 0 = CON, 1 = NON (RFC 7252 type numbers) */
  int64_t timeout_ns, ack_timeout_ns, late_us;
  unsigned max_retransmit;
  const char *cpus_flag; /* "--cpu" or "--cpus" as given; NULL: not pinned */
  const char *cpus_text; /* its value */
  cpu_set_t cpus;        /* its CPUs */
  int cpu;               /* the one CPU of a one-CPU set; -1: none */
  int64_t start_at_us;   /* -1: start as soon as loaded */
  int64_t spin_us;       /* -1: always spin; else block while the next send
                            is more than this far away */
  bool sched_fifo;       /* --sched fifo */
  int rt_prio;           /* --rt-prio, 1..99 */
  int64_t rt_budget_us, rt_period_us; /* --rt-budget R/P; 0: not given */
  bool quiet;
};
/* 0 ok, 1 help printed, -1 bad usage (message in e). */
int ge_cli_parse(int argc, char **argv, struct ge_config *cfg,
                 struct ge_err *e);

/* ---- hosts.c -------------------------------------------------------- */

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

/* ---- hist.c: exact distribution of integer values in bounded memory -- */

/* Counts per value in 4 KB pages of 1024 consecutive values, found by a
 * hash of value / 1024: memory follows the spread of the values, not how
 * many were added, and every order statistic is exact. */
#define GE_HIST_PAGE_BITS 10
struct ge_hist {
  uint64_t *keys;   /* page number + 1; 0 = empty slot */
  uint32_t **pages; /* parallel to keys */
  size_t npages, cap;
  uint64_t n, max;
  unsigned __int128 sum;
  uint64_t last_key; /* page number + 1 of last_page (0: none) */
  uint32_t *last_page;
};
int ge_hist_add(struct ge_hist *h, uint64_t v); /* -1: out of memory */
size_t ge_hist_bytes(const struct ge_hist *h);
/* `  "name": {count, mean, p5, p50, p95, p99, max}` (or null), percentiles
 * interpolated linearly between order statistics as NumPy's default. */
void ge_hist_json(FILE *f, const char *name, const struct ge_hist *h,
                  bool more);
void ge_hist_free(struct ge_hist *h);

/* ---- plan.c: what the trace asks for, resolved and numbered ---------- */

struct ge_template {
  uint64_t hash;
  uint32_t off, len;         /* encoded options + payload in tbytes */
  uint32_t key_off, key_len; /* method byte + path?query + \n + payload */
  uint8_t code;              /* CoAP method code */
};
struct ge_device {
  uint32_t id, peer;
  uint32_t auth_off, auth_len; /* first authority text seen, in abytes */
};
/* A peer is one destination endpoint; message IDs are planned per peer
 * because a server deduplicates by (source endpoint, MID). */
struct ge_peer {
  struct sockaddr_in6 addr;
  uint32_t count;      /* requests to this peer */
  uint32_t window_max; /* most requests in any EXCHANGE_LIFETIME */
  uint32_t in_window;  /* scan: requests in the current window */
  uint32_t k;          /* local sockets this peer rotates through */
  uint16_t mid0;
};
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

  unsigned nsock;
  bool frozen;      /* after the scan: a lookup that would add is an error */
  bool text_mapped; /* text is a file mapping (pages may be given back) */
};
int64_t ge_plan_find_device(const struct ge_plan *p, uint32_t id);
/* New device bound to addr (auth: its authority text, copied). */
int64_t ge_plan_add_device(struct ge_plan *p, uint32_t id, const char *auth,
                           uint32_t auth_len, const struct sockaddr_in6 *addr);
/* Template index for (method, path, query, payload); -1 with why. */
int64_t ge_plan_template(struct ge_plan *p, uint8_t code, const char *path,
                         size_t plen, const char *query, size_t qlen,
                         const char *payload, size_t paylen, const char **why);
/* Sockets and the first message ID of every peer (needs the counts and
 * window maxima of the scan); freezes the tables. */
int ge_plan_finish(struct ge_plan *p, uint32_t mid_seed);
int64_t ge_plan_peer_of_addr(const struct ge_plan *p,
                             const struct sockaddr_in6 *a);
/* The n-th request of a peer (its rank) goes out on this socket with this
 * message ID. */
static inline unsigned ge_plan_sock(const struct ge_peer *pr, uint32_t rank) {
  return (unsigned)((rank / GE_MID_SPACE) % pr->k);
}
static inline uint16_t ge_plan_mid(const struct ge_peer *pr, uint32_t rank) {
  return (uint16_t)(pr->mid0 + rank);
}
/* Rank of the request sent on socket s to peer with this MID, given that
 * the peer's first `sent` requests went out; -1 when none. */
int64_t ge_plan_mid_lookup(const struct ge_plan *p, uint32_t peer, unsigned s,
                           uint16_t mid, uint32_t sent);
int ge_plan_dump(const struct ge_plan *p, const struct ge_hosts *h,
                 const char *path, struct ge_err *e);
void ge_plan_free(struct ge_plan *p);

/* ---- trace.c -------------------------------------------------------- */

/* One request line of the trace. */
struct ge_req {
  uint64_t ts_us, uri_off; /* uri_off: the URI text in plan->text */
  uint32_t dev, tmpl;
  uint16_t uri_len;
};
/* A cursor over the trace text, line by line. Pages behind it are given
 * back (MADV_DONTNEED) so that reading a trace of any length keeps only a
 * few MB of it resident. */
struct ge_cursor {
  const char *name;
  struct ge_lines it;
  bool seen_content;
  uint64_t prev_ts;
  size_t n; /* requests returned */
  size_t released;
};
void ge_cursor_init(struct ge_cursor *c, const struct ge_plan *p,
                    const char *name);
/* 1: the next request in *r; 0: end of the trace; -1: bad line (e).
 * Before ge_plan_finish it adds devices and templates; after it, the
 * tables are frozen and a line naming anything new is an error. */
int ge_cursor_next(struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e);
/* Same for an already frozen plan (run time, --dump-plan). */
int ge_cursor_read(const struct ge_plan *p, struct ge_cursor *c,
                   const struct ge_hosts *h, struct ge_req *r,
                   struct ge_err *e);
/* Gives back the pages of p->text below `upto` (a byte offset) that are
 * whole and not given back yet, in steps of at least 256 KB. */
void ge_text_release(const struct ge_plan *p, size_t *released, size_t upto);

struct ge_trace_src {
  void *map;
  size_t len;
};
/* Maps the trace and scans it: every line checked, devices, peers and
 * templates built, counts, EXCHANGE_LIFETIME window maxima and the
 * expected inter-arrival distribution; nothing per request is kept. */
int ge_trace_load(struct ge_plan *p, struct ge_trace_src *src, const char *path,
                  const struct ge_hosts *h, struct ge_err *e);
int ge_trace_parse_buf(struct ge_plan *p, const char *name, const char *buf,
                       size_t len, const struct ge_hosts *h, struct ge_err *e);
void ge_trace_unmap(struct ge_trace_src *src);

/* ---- wire.c --------------------------------------------------------- */

enum { GE_CON = 0, GE_NON = 1, GE_ACK = 2, GE_RST = 3 };
void ge_wire_header(uint8_t out[GE_HDR_LEN], uint8_t type, uint8_t code,
                    uint16_t mid, uint32_t salt, uint32_t idx);
void ge_wire_empty(uint8_t out[4], uint8_t type, uint16_t mid);
/* Encodes Uri-Path, Content-Format, Uri-Query and payload; returns the
 * length or 0 when it does not fit. */
size_t ge_wire_template(uint8_t *out, size_t cap, const char *path, size_t plen,
                        const char *query, size_t qlen, const char *payload,
                        size_t paylen);
int ge_wire_method(const char *s, size_t len); /* code or -1 */
const char *ge_wire_method_name(uint8_t code);

/* ---- timers.c: binary min-heap, lazy deletion ----------------------- */

struct ge_timer {
  int64_t deadline, interval; /* ns, monotonic */
  uint32_t idx;
  uint8_t gen;
};
struct ge_heap {
  struct ge_timer *v;
  size_t n, cap;
};
int ge_heap_push(struct ge_heap *h, struct ge_timer t);
void ge_heap_pop(struct ge_heap *h, struct ge_timer *out);
void ge_heap_free(struct ge_heap *h);

/* ---- rt.c: SCHED_FIFO, the RT-budget bucket, stalls ----------------- */

struct ge_rt {
  bool requested_fifo, fifo; /* asked for; in force */
  bool given;                /* FIFO set on it from outside (its supervisor) */
  int priority;
  char error[160]; /* why FIFO was refused ("" when it was not) */
  int64_t budget_us, period_us;
  /* leaky bucket of running time (ns), only under FIFO */
  int64_t drain_ppm, cap_ns, half_ns, level_ns;
  int64_t last_ns; /* last tick: running since then */
  /* running time per window of one period (duty_max) */
  int64_t window_ns, window_start_ns, window_run_ns, duty_max_ns;
  uint64_t yields, stalls;
  int64_t yield_ns, stall_max_ns, stall_total_ns;
  long nivcsw; /* involuntary switches at the last check; -1: unknown */
};
/* A loop gap longer than this is checked for a stall. */
#define GE_RT_STALL_GAP_NS 1000000
/* FIFO given from outside must be in force this long before the start. */
#define GE_RT_WAIT_SLACK_NS 2000000
/* 0 when RUNTIME/PERIOD is a usable budget (period 1 ms..1 s). */
int ge_rt_check_budget(int64_t runtime_us, int64_t period_us);
void ge_rt_init(struct ge_rt *rt, const struct ge_config *cfg);
/* Switches to SCHED_FIFO when asked, or waits until `deadline` (monotonic
 * ns) for it to be given from outside; else records why not. */
int ge_rt_enter(struct ge_rt *rt, int64_t deadline);
void ge_rt_leave(struct ge_rt *rt, int64_t now); /* back to SCHED_OTHER */
void ge_rt_gap(struct ge_rt *rt, int64_t dt);    /* slow path of the tick */
void ge_rt_blocked(struct ge_rt *rt, int64_t from, int64_t to);
/* Under FIFO with the bucket half full: blocks in a gap before next_ns
 * (waking on a reply on epfd), or yields while the bucket is full. */
int ge_rt_idle(struct ge_rt *rt, int epfd, int64_t next_ns, struct ge_err *e);
void ge_rt_json(FILE *f, const struct ge_rt *rt);

void ge_rt_windows(struct ge_rt *rt, int64_t now);

/* Once per loop iteration, no syscall: the time since the last tick was
 * running time. A long gap goes to the slow path (was it preempted?). */
static inline void ge_rt_tick(struct ge_rt *rt, int64_t now) {
  int64_t dt = now - rt->last_ns;
  if (dt <= 0)
    return;
  rt->last_ns = now;
  if (now - rt->window_start_ns >= rt->window_ns)
    ge_rt_windows(rt, now);
  rt->window_run_ns += dt;
  if (rt->fifo)
    rt->level_ns += dt - dt * rt->drain_ppm / 1000000;
  if (dt > GE_RT_STALL_GAP_NS)
    ge_rt_gap(rt, dt);
}

static inline bool ge_rt_wants_idle(const struct ge_rt *rt) {
  return rt->fifo && rt->level_ns >= rt->half_ns;
}

/* ---- the loop's state (loop.c, recv.c) ------------------------------ */

enum ge_state {
  GE_PENDING = 0, /* not sent yet */
  GE_WAIT,        /* sent, waiting for a response (or an empty ACK) */
  GE_SEPARATE,    /* empty ACK seen, waiting for the separate response */
  GE_OK,
  GE_ERROR,
  GE_TIMEOUT,
};
/* Every counter of the loop, in summary JSON order: adding a counter is one
 * line here, and the struct field, its summary key and its part of the
 * stderr line follow (counters.c). GE_COUNTERS are top-level summary keys;
 * GE_GARBAGE_COUNTERS are datagrams counted and ignored, by kind, in the
 * summary's "garbage" object (with their "total"). */
#define GE_COUNTERS(X)                                                         \
  X(ok)                                                                        \
  X(timeouts)                                                                  \
  X(errors)                                                                    \
  X(send_errors)                                                               \
  X(retransmissions)                                                           \
  X(late_sends)                                                                \
  X(empty_acks)                                                                \
  X(rsts)                                                                      \
  X(acks_sent)                                                                 \
  X(ack_send_errors)                                                           \
  X(mid_reuse_early) /* (socket, peer, MID) reused within 247 s */
#define GE_GARBAGE_COUNTERS(X)                                                 \
  X(truncated)                                                                 \
  X(unparseable)                                                               \
  X(unknown_source)                                                            \
  X(unknown_token)                                                             \
  X(wrong_source)                                                              \
  X(unmatched_empty_ack)                                                       \
  X(unmatched_rst)                                                             \
  X(unexpected_message)                                                        \
  X(late_response)                                                             \
  X(duplicate_response)
struct ge_counters {
#define GE_COUNTER_FIELD(name) uint64_t name;
  GE_COUNTERS(GE_COUNTER_FIELD)
  GE_GARBAGE_COUNTERS(GE_COUNTER_FIELD)
#undef GE_COUNTER_FIELD
};

/* ---- ring.c: a growable FIFO ring ----------------------------------- */

/* Elements of `size` bytes (the same size in every call on one ring) in a
 * power-of-two ring; a push into a full ring doubles it (`first` elements
 * the first time) and unwraps it to start at 0. */
struct ge_ring {
  unsigned char *buf;
  size_t cap, head, len; /* elements */
};
int ge_ring_grow(struct ge_ring *r, size_t size, size_t first); /* -1: OOM */
void ge_ring_free(struct ge_ring *r);
/* The i-th element from the front (i < len). */
static inline void *ge_ring_at(const struct ge_ring *r, size_t size, size_t i) {
  return r->buf + ((r->head + i) & (r->cap - 1)) * size;
}
/* A slot for a new element at the back; NULL: out of memory. */
static inline void *ge_ring_push(struct ge_ring *r, size_t size, size_t first) {
  if (r->len == r->cap && ge_ring_grow(r, size, first))
    return NULL;
  return ge_ring_at(r, size, r->len++);
}
/* Drops the front element (len > 0). */
static inline void ge_ring_pop(struct ge_ring *r) {
  r->head = (r->head + 1) & (r->cap - 1);
  r->len--;
}

/* ---- window.c: the requests in memory ------------------------------- */

/* One request from the moment it is parsed (ahead of its send) until its
 * CSV row is written. */
struct ge_rec {
  int64_t sent_ns, recv_ns; /* relative to t0; recv < 0: none */
  uint64_t ts_us, uri_off;
  uint32_t dev, tmpl, service_us; /* service_us UINT32_MAX: none */
  uint16_t uri_len, mid, sock;
  uint8_t state, code, retrans, gen;
};
/* Requests [base, end) of the trace, in chunks of GE_CHUNK held in a
 * ring; the oldest chunk is freed once all its rows are written. */
#define GE_CHUNK_BITS 12
#define GE_CHUNK (1u << GE_CHUNK_BITS)
struct ge_window {
  struct ge_rec **ring; /* chunk c at ring[c & (cap - 1)] */
  size_t cap;
  uint64_t base, end;
  struct ge_rec *spare; /* one freed chunk kept for reuse */
  uint64_t peak;        /* most requests in memory at once */
};
static inline struct ge_rec *ge_win_at(const struct ge_window *w, uint64_t i) {
  return &w->ring[(i >> GE_CHUNK_BITS) & (w->cap - 1)][i & (GE_CHUNK - 1)];
}
struct ge_rec *ge_win_push(struct ge_window *w); /* NULL: out of memory */
void ge_win_drop_chunk(struct ge_window *w);     /* base += GE_CHUNK */
void ge_win_free(struct ge_window *w);

/* Per peer: the trace indices of its requests in memory, by rank, so that
 * an empty ACK or RST (MID, no token) finds its request. */
struct ge_rankq {
  struct ge_ring r; /* uint32_t trace indices */
  uint32_t lo;      /* rank of the front */
};
int ge_rankq_push(struct ge_rankq *q, uint32_t idx); /* the next rank */
void ge_rankq_pop(struct ge_rankq *q);
int64_t ge_rankq_find(const struct ge_rankq *q, uint32_t rank);
void ge_rankq_free(struct ge_rankq *q);

/* ---- reuse.c: early MID reuse, in bounded memory -------------------- */

/* Per peer whose requests outnumber one MID cycle (K * 65536): the send
 * instants of its last sends within EXCHANGE_LIFETIME, as varint deltas,
 * so that a send can tell whether the request one cycle before it went
 * out less than 247 s earlier. */
struct ge_sentq {
  struct ge_ring r; /* bytes */
  uint32_t count, front_rank;
  int64_t front_ns, back_ns;
};
/* Records the send of `rank` at t (ns); *early: rank - cycle went out
 * within EXCHANGE_LIFETIME before t. -1: out of memory. */
int ge_sentq_send(struct ge_sentq *q, uint32_t rank, uint64_t cycle, int64_t t,
                  bool *early);
size_t ge_sentq_bytes(const struct ge_sentq *q);
void ge_sentq_free(struct ge_sentq *q);

/* ---- output.c: the per-request CSV, written while the run goes on --- */

struct ge_out {
  int fd;
  char *buf;
  size_t start, len; /* buf[start, len): formatted, not written yet */
  uint64_t row;      /* next row to format (trace index) */
  size_t released;   /* trace text given back below this offset */
  size_t peak;       /* most bytes formatted and not yet written */
  uint64_t written, writes;
  int err; /* errno of a failed write */
};
#define GE_OUT_BUF (1u << 20)
struct ge_ackq {
  struct {
    struct sockaddr_in6 to;
    uint16_t sock, mid;
  } v[GE_RECV_BATCH];
  unsigned n;
};
/* Responses to requests whose rows are written already: whether they had
 * timed out (late_response) is kept for the last 2^24 requests. */
#define GE_DONE_BITS 24
struct ge_loop {
  const struct ge_config *cfg;
  const struct ge_plan *plan;
  const struct ge_hosts *hosts;
  struct ge_cursor cur; /* the next line to parse */
  bool feed_done;
  struct ge_window win;
  struct ge_rankq *rq;   /* per peer */
  struct ge_sentq *sq;   /* per peer (used when it outnumbers a cycle) */
  uint32_t *peer_parsed; /* per peer: requests parsed so far */
  uint32_t *peer_sent;   /* per peer: requests sent so far */
  uint64_t *timed_out;   /* ring of 2^GE_DONE_BITS bits */
  struct ge_out out;
  struct ge_hist rit_submitted, send_lag, response, latency;
  int64_t sent_first_us, sent_prev_us;
  uint64_t feed_forced;   /* parses forced in front of a due send */
  uint64_t output_forced; /* rows formatted in front of the sends (backlog) */
  bool oom;
  struct ge_heap heap;
  struct ge_counters c;
  struct ge_ackq ackq;
  struct coap_pdu_t *pdu; /* one reusable parse target */
  uint32_t salt;
  uint64_t rng;
  int *socks;
  unsigned nsock;
  int epfd;
  int64_t t0, t_end; /* monotonic ns */
  int64_t start_epoch_us;
  cpu_set_t cpus; /* the CPU affinity in force during the run */
  struct ge_rt rt;
  size_t next, outstanding;
  size_t undrained;   /* sends since the replies were last read */
  int64_t drained_at; /* monotonic ns of that last read */
  const volatile sig_atomic_t *stop; /* SIGINT / SIGTERM: abandon the run */
};
/* State without sockets (the fuzz harness uses this alone); out_fd < 0:
 * no CSV. */
int ge_loop_init(struct ge_loop *L, const struct ge_config *cfg,
                 const struct ge_plan *p, const struct ge_hosts *h,
                 uint32_t salt, uint64_t seed, int out_fd);
/* Parses up to max more requests into the window: the count, or -1. */
#define GE_FEED_AHEAD 4096 /* requests parsed ahead of the sends */
long ge_loop_feed(struct ge_loop *L, unsigned max, struct ge_err *e);
int ge_loop_open(struct ge_loop *L, struct ge_err *e);
int ge_loop_run(struct ge_loop *L, struct ge_err *e);
void ge_loop_free(struct ge_loop *L);
void ge_loop_finish(struct ge_loop *L, uint32_t idx, uint8_t state);

/* recv.c: one received datagram -> state update (no syscalls). */
void ge_recv_datagram(struct ge_loop *L, const uint8_t *buf, size_t len,
                      bool truncated, const struct sockaddr_in6 *src,
                      unsigned sock, int64_t now);

/* ---- counters.c, stats.c, output.c --------------------------------- */

/* s as a JSON string (quotes and escapes). */
void ge_json_str(FILE *f, const char *s);
/* The counters as summary JSON members, one "  key: value,\n" line each,
 * then the "garbage" object. */
void ge_counters_json(FILE *f, const struct ge_counters *c);
/* The end-of-run stderr line: "wotbench-ge: N requests in T s: key=value
 * ... garbage=TOTAL" with the summary's keys. */
void ge_counters_print(FILE *f, const struct ge_counters *c, size_t requests,
                       double seconds);

int ge_stats_write(const struct ge_loop *L, int fd, struct ge_err *e);
/* The CSV while the run goes on: header into the buffer; formats up to
 * max final rows in trace order (freeing chunks behind them); one write
 * of up to max bytes. */
int ge_out_open(struct ge_out *o, int fd);
size_t ge_out_format(struct ge_loop *L, size_t max);
int ge_out_write(struct ge_out *o, size_t max);
bool ge_out_full(const struct ge_out *o); /* no room for another row */
/* After the loop: every remaining row, everything written. */
int ge_out_finish(struct ge_loop *L, struct ge_err *e);
void ge_out_free(struct ge_out *o);

/* ---- clock ---------------------------------------------------------- */

#include <time.h>
/* Every time the GE reports is whole microseconds, truncated, so that the
 * CSV (integer us per docs/formats.md) and the summary agree exactly. */
static inline int64_t ge_us(int64_t ns) { return ns / 1000; }

static inline int64_t ge_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* CLOCK_REALTIME in ns: the clock of the kernel's receive stamps. */
static inline int64_t ge_real_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
