/* getopt_long, defaults and validation; a bad flag is one
 * `error: FIELD: what` line, before any resource is read or socket bound. */
#include "cli.h"

#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buildinfo.h"
#include "dedup.h"
#include "dev_format.h"

#define MAX_THREADS 1024u
#define MAX_QUEUE (1u << 24)
#define MAX_DEDUP (1u << 24)

static const char usage[] =
    "usage: wotbench-device [--listen ADDR:PORT] --resources FILE "
    "[--mode sleep|busy]\n"
    "                       [--threads N] [--queue N] [--dedup-entries N] "
    "[--stats FILE]\n"
    "                       [--exchange-lifetime SECONDS] [--cpus LIST]\n"
    "                       [--observers N] [--ack-timeout-ms MS] "
    "[--obs-seq-start N]\n"
    "  --listen ADDR:PORT     IPv4 or [IPv6] address and UDP port "
    "(default 0.0.0.0:5683)\n"
    "  --resources FILE       resource CSV: path,service_us[,payload_bytes]\n"
    "  --mode sleep|busy      emulate service time sleeping or burning "
    "thread CPU (sleep)\n"
    "  --threads N            worker threads serving in parallel (4)\n"
    "  --queue N              requests waiting for a worker before 5.03 "
    "(65536)\n"
    "  --dedup-entries N      remembered exchanges for duplicate detection "
    "(262144)\n"
    "  --exchange-lifetime S  seconds an exchange is remembered, 1..3600 "
    "(247: RFC 7252's\n"
    "                         EXCHANGE_LIFETIME with the default transmission "
    "parameters)\n"
    "  --stats FILE           write the final counts as JSON (atomically)\n"
    "  --cpus LIST            run every thread on exactly these CPUs, e.g. "
    "1 or 0-3 or 1,3-5\n"
    "                         (default: the affinity inherited)\n"
    "  --observers N          live observations (RFC 7641) at most, "
    "1..16777216 (65536)\n"
    "  --ack-timeout-ms MS    CON notifications' ACK_TIMEOUT, 1..60000 (2000; "
    "for tests)\n"
    "  --obs-seq-start N      every observation's first Observe seq, "
    "0..16777215\n"
    "                         (default: random per observation; for tests)\n"
    "  --dump-notify PATH:N   print the first N inter-event times (ns) of "
    "PATH's first\n"
    "                         observation, one a line, and exit\n"
    "  --build-info           print the compiler, flags and git commit this "
    "binary was\n"
    "                         built with, as one JSON line, and exit\n";

static int bad(const char *field, const char *what, const char *value) {
  fprintf(stderr, "error: %s: %s '%s'\n", field, what, value);
  return 2;
}

static int parse_count(const char *s, unsigned long min, unsigned long max,
                       unsigned long *out) {
  char *end;
  unsigned long v;

  if (*s < '0' || *s > '9')
    return -1;
  v = strtoul(s, &end, 10);
  if (*end != '\0' || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

/* ADDR:PORT with ADDR numeric IPv4 or [IPv6]. */
static int parse_listen(const char *s, struct dev_config *cfg) {
  char host[INET6_ADDRSTRLEN + 1];
  const char *colon, *start = s;
  unsigned long port;
  size_t n;

  if (*s == '[') {
    const char *close = strchr(s, ']');

    if (close == NULL || close[1] != ':')
      return -1;
    start = s + 1;
    n = (size_t)(close - start);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (colon == NULL)
      return -1;
    n = (size_t)(colon - s);
  }
  if (n == 0 || n >= sizeof(host))
    return -1;
  memcpy(host, start, n);
  host[n] = '\0';
  if (parse_count(colon + 1, 0, 65535, &port) < 0)
    return -1;
  memset(&cfg->listen, 0, sizeof(cfg->listen));
  if (*s == '[') {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&cfg->listen;

    if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
      return -1;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((uint16_t)port);
    cfg->listen_len = sizeof(*a);
  } else {
    struct sockaddr_in *a = (struct sockaddr_in *)&cfg->listen;

    if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
      return -1;
    a->sin_family = AF_INET;
    a->sin_port = htons((uint16_t)port);
    cfg->listen_len = sizeof(*a);
  }
  return 0;
}

/* --observers, --ack-timeout-ms, --obs-seq-start: 0 or -1 (printed). */
static int parse_observe_flag(int c, const char *s, struct dev_config *cfg) {
  unsigned long v;

  if (c == 'o') {
    if (parse_count(s, 1, MAX_DEDUP, &v) < 0)
      return -bad("--observers", "expected an integer 1..16777216, got", s);
    cfg->observers = (uint32_t)v;
  } else if (c == 'a') {
    if (parse_count(s, 1, 60000, &v) < 0)
      return -bad("--ack-timeout-ms", "expected an integer 1..60000, got", s);
    cfg->ack_timeout_ns = (int64_t)v * 1000000LL;
  } else if (c == 'D') {
    const char *colon = strrchr(s, ':');

    if (colon == NULL || colon == s ||
        parse_count(colon + 1, 1, 100000000, &v) < 0)
      return -bad("--dump-notify", "expected PATH:N (N 1..100000000), got", s);
    cfg->dump_path = s;
    cfg->dump_count = v;
  } else {
    if (parse_count(s, 0, 0xffffff, &v) < 0)
      return -bad("--obs-seq-start", "expected an integer 0..16777215, got", s);
    cfg->obs_seq_start = (int64_t)v;
  }
  return 0;
}

/* What the options together must give, after getopt: 0 or 2. */
static int check_config(int argc, char **argv, struct dev_config *cfg) {
  if (optind < argc)
    return bad("argument", "unexpected", argv[optind]);
  if (cfg->resources_file == NULL) {
    fprintf(stderr, "error: --resources: required (a CSV %s)\n",
            DEV_RESOURCE_COLUMNS);
    return 2;
  }
  if (parse_listen(cfg->listen_text, cfg) < 0)
    return bad("--listen", "expected IPv4:PORT or [IPv6]:PORT, got",
               cfg->listen_text);
  return 0;
}

static const struct option opts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"resources", required_argument, NULL, 'r'},
    {"mode", required_argument, NULL, 'm'},
    {"threads", required_argument, NULL, 't'},
    {"queue", required_argument, NULL, 'q'},
    {"dedup-entries", required_argument, NULL, 'd'},
    {"exchange-lifetime", required_argument, NULL, 'x'},
    {"stats", required_argument, NULL, 's'},
    {"cpus", required_argument, NULL, 'c'},
    {"observers", required_argument, NULL, 'o'},
    {"ack-timeout-ms", required_argument, NULL, 'a'},
    {"obs-seq-start", required_argument, NULL, 'S'},
    {"dump-notify", required_argument, NULL, 'D'},
    {"help", no_argument, NULL, 'h'},
    {"build-info", no_argument, NULL, 'B'},
    {NULL, 0, NULL, 0},
};

static void set_defaults(struct dev_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->listen_text = "0.0.0.0:5683";
  cfg->mode = DEV_MODE_SLEEP;
  cfg->threads = 4;
  cfg->queue_cap = 65536;
  cfg->dedup_entries = 262144;
  cfg->exchange_lifetime_ns = DD_LIFETIME_NS;
  cfg->observers = 65536;
  cfg->ack_timeout_ns = 2000000000LL;
  cfg->obs_seq_start = -1;
}

int cli_parse(int argc, char **argv, struct dev_config *cfg) {
  unsigned long v;
  int c;

  set_defaults(cfg);
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":l:r:m:t:q:d:x:s:c:o:a:S:D:hB", opts,
                          NULL)) != -1) {
    switch (c) {
    case 'l': cfg->listen_text = optarg; break;
    case 'r': cfg->resources_file = optarg; break;
    case 'm':
      if (strcmp(optarg, "sleep") == 0)
        cfg->mode = DEV_MODE_SLEEP;
      else if (strcmp(optarg, "busy") == 0)
        cfg->mode = DEV_MODE_BUSY;
      else
        return bad("--mode", "expected sleep or busy, got", optarg);
      break;
    case 't':
      if (parse_count(optarg, 1, MAX_THREADS, &v) < 0)
        return bad("--threads", "expected an integer 1..1024, got", optarg);
      cfg->threads = (unsigned)v;
      break;
    case 'q':
      if (parse_count(optarg, 1, MAX_QUEUE, &v) < 0)
        return bad("--queue", "expected an integer 1..16777216, got", optarg);
      cfg->queue_cap = (uint32_t)v;
      break;
    case 'd':
      if (parse_count(optarg, 1, MAX_DEDUP, &v) < 0)
        return bad("--dedup-entries", "expected an integer 1..16777216, got",
                   optarg);
      cfg->dedup_entries = (uint32_t)v;
      break;
    case 'x':
      if (parse_count(optarg, 1, 3600, &v) < 0)
        return bad("--exchange-lifetime", "expected whole seconds 1..3600, got",
                   optarg);
      cfg->exchange_lifetime_ns = (int64_t)v * 1000000000LL;
      break;
    case 's': cfg->stats_file = optarg; break;
    case 'o':
    case 'a':
    case 'S':
    case 'D':
      if (parse_observe_flag(c, optarg, cfg) < 0)
        return 2;
      break;
    case 'c': {
      const char *why = cpulist_parse(optarg, &cfg->cpus);

      if (why != NULL)
        return bad("--cpus", why, optarg);
      cfg->cpus_text = optarg;
      break;
    }
    case 'h': fputs(usage, stdout); return 1;
    case 'B':
      if (buildinfo_print(stdout, "wotbench-device") == 0)
        return 1;
      return bad("--build-info", "cannot write to", "stdout");
    case ':': return bad("option", "missing value for", argv[optind - 1]);
    default: return bad("option", "unknown option", argv[optind - 1]);
    }
  }
  return check_config(argc, argv, cfg);
}
