/* devrate: open-loop CoAP/UDP load at one fixed rate, for finding the
 * rate a device sustains. Request i is due at t0 + i / RATE (constant
 * spacing, as wrk2 does); the busy loop sends every due request at once
 * (one sendmmsg for several when it fell behind, so the generator gets
 * cheaper per request exactly when it is loaded), reads replies without
 * blocking, and matches them by token. Response times are taken from the
 * intended send instant (coordinated omission corrected), so a generator
 * that fell behind shows up in them and in its own send lag, which is
 * reported too, with its CPU time. Prints one JSON object.
 * Benchmark tool only; the gateway emulator is the trace-driven GE. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchreq.h"

#define BATCH 64
#define HIST_US 1000000 /* 1 us buckets up to 1 s; above: the last one */
#define SOCK_BUF (4 << 20)

struct hist {
  uint32_t *n;
  uint64_t count;
  int64_t max_ns;
};

struct opts {
  struct sockaddr_in dst;
  const char *path;
  uint64_t rate;
  int64_t duration_ns, bound_ns, drain_ns;
  int con;
};

/* Everything the loop owns (one allocation, freed by main). */
struct run {
  int fd;
  uint64_t n, next, sent, send_errors, refused;
  uint64_t answered, ok, within, garbage, duplicates;
  int64_t t0, first_send, last_send, *sent_ns;
  uint8_t *seen;
  struct hist resp, lag;
  struct mmsghdr sm[BATCH], rm[BATCH];
  struct iovec siov[BATCH], riov[BATCH];
  uint8_t sbuf[BATCH][BENCHREQ_MAX], rbuf[BATCH][2048];
};

static int64_t now_ns(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static double cpu_s(void) {
  struct rusage ru;

  if (getrusage(RUSAGE_SELF, &ru) < 0)
    return -1;
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void hist_add(struct hist *h, int64_t ns) {
  int64_t us = ns < 0 ? 0 : ns / 1000;

  h->n[us < HIST_US ? us : HIST_US]++;
  h->count++;
  if (ns > h->max_ns)
    h->max_ns = ns;
}

/* The quantile (per mille) in whole us (the bucket's lower edge), -1 when
 * empty: the smallest value with at least ceil(count * q) values <= it. */
static int64_t hist_quantile(const struct hist *h, unsigned per_mille) {
  uint64_t want = (h->count * per_mille + 999) / 1000, acc = 0;

  if (h->count == 0)
    return -1;
  if (want == 0)
    want = 1;
  for (int64_t i = 0; i <= HIST_US; i++) {
    acc += h->n[i];
    if (acc >= want)
      return i;
  }
  return HIST_US;
}

static void hist_json(const char *name, const struct hist *h) {
  printf("\"%s\": {\"count\": %llu, \"p50\": %lld, \"p99\": %lld, "
         "\"p999\": %lld, \"max\": %lld}",
         name, (unsigned long long)h->count, (long long)hist_quantile(h, 500),
         (long long)hist_quantile(h, 990), (long long)hist_quantile(h, 999),
         (long long)(h->count ? h->max_ns / 1000 : -1));
}

static int64_t intended(const struct run *r, uint64_t rate, uint64_t i) {
  return r->t0 + (int64_t)(i * 1000000000ULL / rate);
}

static int usage(const char *why) {
  fprintf(stderr,
          "error: %s\nusage: devrate -r RATE [-p PORT] [-P PATH] "
          "[-d DURATION_MS] [-c] [-b BOUND_US] [-t DRAIN_MS]\n",
          why);
  return 2;
}

/* A whole number in [lo, hi] or -1. */
static long long num(const char *s, long long lo, long long hi) {
  char *end;
  long long v;

  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    return -1;
  return v;
}

static int parse(int argc, char **argv, struct opts *o) {
  long long v;
  int c;

  memset(o, 0, sizeof(*o));
  o->dst.sin_family = AF_INET;
  o->dst.sin_port = htons(5683);
  o->dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  o->path = "a";
  o->duration_ns = 2000000000;
  o->bound_ns = 5000000;
  o->drain_ns = 100000000;
  while ((c = getopt(argc, argv, "p:P:r:d:cb:t:")) != -1) {
    switch (c) {
    case 'p':
      if ((v = num(optarg, 1, 65535)) < 0)
        return usage("-p: a port 1..65535");
      o->dst.sin_port = htons((uint16_t)v);
      break;
    case 'P':
      if (strlen(optarg) > BENCHREQ_MAX_PATH)
        return usage("-P: at most 200 bytes");
      o->path = optarg;
      break;
    case 'r':
      if ((v = num(optarg, 1, 10000000)) < 0)
        return usage("-r: requests per second 1..10000000");
      o->rate = (uint64_t)v;
      break;
    case 'd':
      if ((v = num(optarg, 10, 600000)) < 0)
        return usage("-d: milliseconds 10..600000");
      o->duration_ns = v * 1000000;
      break;
    case 'c': o->con = 1; break;
    case 'b':
      if ((v = num(optarg, 1, HIST_US)) < 0)
        return usage("-b: microseconds 1..1000000");
      o->bound_ns = v * 1000;
      break;
    case 't':
      if ((v = num(optarg, 1, 60000)) < 0)
        return usage("-t: milliseconds 1..60000");
      o->drain_ns = v * 1000000;
      break;
    default: return usage("unknown option");
    }
  }
  if (optind != argc)
    return usage("unexpected argument");
  if (o->rate == 0)
    return usage("-r is required");
  return 0;
}

static int open_socket(const struct opts *o) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int sz = SOCK_BUF;

  if (fd < 0) {
    perror("error: socket");
    return -1;
  }
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)) < 0 ||
      connect(fd, (const struct sockaddr *)&o->dst, sizeof(o->dst)) < 0) {
    perror("error: socket setup");
    close(fd);
    return -1;
  }
  return fd;
}

/* Sends every request due by now. Returns 0 or -1 (message printed). */
static int send_due(struct run *r, const struct opts *o, int64_t now) {
  uint64_t due =
      now < r->t0 ? 0 : (uint64_t)(now - r->t0) * o->rate / 1000000000u + 1;

  if (due > r->n)
    due = r->n;
  while (r->next < due) {
    unsigned k = due - r->next < BATCH ? (unsigned)(due - r->next) : BATCH;
    int got;
    int64_t t;

    memset(r->sm, 0, sizeof(r->sm[0]) * k);
    for (unsigned i = 0; i < k; i++) {
      r->siov[i].iov_base = r->sbuf[i];
      r->siov[i].iov_len =
          benchreq_build(r->sbuf[i], o->con, (uint32_t)(r->next + i), o->path);
      r->sm[i].msg_hdr.msg_iov = &r->siov[i];
      r->sm[i].msg_hdr.msg_iovlen = 1;
    }
    got = sendmmsg(r->fd, r->sm, k, 0);
    t = now_ns();
    if (got < 0) {
      if (errno == EINTR)
        continue;
      if (errno == ECONNREFUSED) {
        r->refused++; /* an ICMP error of an earlier send: nobody listens */
      } else if (errno != EAGAIN && errno != ENOBUFS) {
        perror("error: sendmmsg");
        return -1;
      }
      /* The first of the batch is lost; the rest are tried again. */
      r->send_errors++;
      got = 1;
    } else {
      for (int i = 0; i < got; i++) {
        uint64_t seq = r->next + (uint64_t)i;

        r->sent_ns[seq] = t;
        hist_add(&r->lag, t - intended(r, o->rate, seq));
      }
      if (r->sent == 0)
        r->first_send = t;
      r->last_send = t;
      r->sent += (uint64_t)got;
    }
    r->next += (uint64_t)got;
  }
  return 0;
}

static void on_reply(struct run *r, const struct opts *o, const uint8_t *b,
                     size_t len, int64_t t) {
  uint32_t seq;
  int64_t rt;

  if (!benchreq_reply_seq(b, len, &seq) || seq >= r->next ||
      r->sent_ns[seq] == 0) {
    r->garbage++;
    return;
  }
  if (r->seen[seq]) {
    r->duplicates++;
    return;
  }
  r->seen[seq] = 1;
  r->answered++;
  r->ok += (b[1] >> 5) == 2;
  rt = t - intended(r, o->rate, seq);
  r->within += rt <= o->bound_ns;
  hist_add(&r->resp, rt);
}

/* Reads every reply waiting. Returns 0 or -1 (message printed). */
static int receive(struct run *r, const struct opts *o) {
  for (;;) {
    int got;
    int64_t t;

    memset(r->rm, 0, sizeof(r->rm));
    for (int i = 0; i < BATCH; i++) {
      r->riov[i].iov_base = r->rbuf[i];
      r->riov[i].iov_len = sizeof(r->rbuf[i]);
      r->rm[i].msg_hdr.msg_iov = &r->riov[i];
      r->rm[i].msg_hdr.msg_iovlen = 1;
    }
    got = recvmmsg(r->fd, r->rm, BATCH, MSG_DONTWAIT, NULL);
    t = now_ns();
    if (got < 0) {
      if (errno == EINTR)
        continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
      if (errno == ECONNREFUSED) {
        r->refused++;
        continue;
      }
      perror("error: recvmmsg");
      return -1;
    }
    for (int i = 0; i < got; i++)
      on_reply(r, o, r->rbuf[i], r->rm[i].msg_len, t);
    if (got < BATCH)
      return 0;
  }
}

static void report(const struct run *r, const struct opts *o, double cpu,
                   double wall) {
  double span = (double)(r->last_send - r->first_send) / 1e9;
  double sched = (double)(intended(r, o->rate, r->n - 1) - r->t0) / 1e9;

  printf("{\"rate_target\": %llu, \"duration_s\": %.3f, \"type\": \"%s\", "
         "\"scheduled\": %llu, \"sent\": %llu, \"send_errors\": %llu, "
         "\"refused\": %llu, \"answered\": %llu, \"ok\": %llu, "
         "\"bound_us\": %lld, \"within_bound\": %llu, "
         "\"within_bound_fraction\": %.6f, \"garbage\": %llu, "
         "\"duplicates\": %llu, \"achieved_send_rate\": %.1f, "
         "\"reply_rate\": %.1f, ",
         (unsigned long long)o->rate, (double)o->duration_ns / 1e9,
         o->con ? "con" : "non", (unsigned long long)r->n,
         (unsigned long long)r->sent, (unsigned long long)r->send_errors,
         (unsigned long long)r->refused, (unsigned long long)r->answered,
         (unsigned long long)r->ok, (long long)(o->bound_ns / 1000),
         (unsigned long long)r->within, (double)r->within / (double)r->n,
         (unsigned long long)r->garbage, (unsigned long long)r->duplicates,
         r->sent > 1 && span > 0 ? (double)(r->sent - 1) / span : 0.0,
         sched > 0 ? (double)r->answered / sched : 0.0);
  hist_json("response_us", &r->resp);
  printf(", ");
  hist_json("send_lag_us", &r->lag);
  printf(", \"gen_cpu_s\": %.3f, \"gen_wall_s\": %.3f}\n", cpu, wall);
}

/* The open loop; 0 or -1 (message printed). */
static int run_loop(struct run *r, const struct opts *o) {
  double cpu0 = cpu_s();
  int64_t end;

  /* Fault the per-request arrays in now, not inside the loop. */
  memset(r->sent_ns, 0, r->n * sizeof(*r->sent_ns));
  memset(r->seen, 0, r->n);
  r->t0 = now_ns() + 1000000;
  end = intended(r, o->rate, r->n - 1) + o->drain_ns;
  for (;;) {
    int64_t now = now_ns();

    if (r->next < r->n && send_due(r, o, now) < 0)
      return -1;
    if (receive(r, o) < 0)
      return -1;
    if (r->next == r->n && now >= end) {
      report(r, o, cpu_s() - cpu0, (double)(now_ns() - r->t0) / 1e9);
      return 0;
    }
  }
}

int main(int argc, char **argv) {
  struct opts o;
  struct run *r;
  int rc = parse(argc, argv, &o);
  uint64_t n;

  if (rc)
    return rc;
  n = (uint64_t)o.duration_ns * o.rate / 1000000000u;
  if (n < 1)
    n = 1;
  if (n > UINT32_MAX)
    return usage("more than 2^32 requests (-r times -d)");
  r = calloc(1, sizeof(*r));
  if (r == NULL) {
    fputs("error: out of memory\n", stderr);
    return 1;
  }
  r->n = n;
  r->fd = -1;
  r->sent_ns = malloc(n * sizeof(*r->sent_ns)); /* zeroed by run_loop */
  r->seen = malloc(n);
  r->resp.n = calloc(HIST_US + 1, sizeof(uint32_t));
  r->lag.n = calloc(HIST_US + 1, sizeof(uint32_t));
  rc = 1;
  if (!r->sent_ns || !r->seen || !r->resp.n || !r->lag.n)
    fputs("error: out of memory\n", stderr);
  else if ((r->fd = open_socket(&o)) >= 0)
    rc = run_loop(r, &o) == 0 ? 0 : 1;
  if (r->fd >= 0)
    close(r->fd);
  free(r->sent_ns);
  free(r->seen);
  free(r->resp.n);
  free(r->lag.n);
  free(r);
  return rc;
}
