/* wotbench-hog's arguments: getopt_long, strict decimal integers, and the
 * checks between them; a bad argument is one `error: FIELD: what` line. */
#include "hog_cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOG_MAX_THREADS 1024u
#define HOG_MIN_BUFFER 4096ull
#define HOG_MAX_BUFFER (1ull << 40)
/* Epoch instants up to the year 2286 (10^16 us). */
#define HOG_MAX_EPOCH_US 10000000000000000ll

static const char usage[] =
    "usage: wotbench-hog --kind cpu|membw --threads N --start-at EPOCH_US "
    "--end-at EPOCH_US [--buffer BYTES]\n"
    "  --kind cpu|membw    busy loops, or streaming reads+writes over a "
    "buffer\n"
    "  --threads N         hog threads, 1..1024\n"
    "  --start-at EPOCH_US CLOCK_REALTIME instant the threads start (us)\n"
    "  --end-at EPOCH_US   instant they stop (exclusive, after --start-at)\n"
    "  --buffer BYTES      membw only (required there): bytes per thread\n";

static int bad(const char *field, const char *what, const char *value) {
  if (value == NULL)
    fprintf(stderr, "error: %s: %s\n", field, what);
  else
    fprintf(stderr, "error: %s: %s '%s'\n", field, what, value);
  return 2;
}

/* A decimal integer in [min, max], nothing else (no sign, no spaces). */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out) {
  char *end;
  unsigned long long v;

  if (*s < '0' || *s > '9' || strlen(s) > 20)
    return -1;
  v = strtoull(s, &end, 10);
  if (*end != '\0' || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

const char *hog_kind_name(enum hog_kind kind) {
  return kind == HOG_CPU ? "cpu" : "membw";
}

static int check(const struct hog_config *cfg, int seen_kind, int seen_start,
                 int seen_end, int seen_threads, const char *buffer) {
  if (!seen_kind)
    return bad("--kind", "missing (cpu or membw)", NULL);
  if (!seen_threads)
    return bad("--threads", "missing (1..1024)", NULL);
  if (!seen_start)
    return bad("--start-at", "missing (epoch microseconds)", NULL);
  if (!seen_end)
    return bad("--end-at", "missing (epoch microseconds)", NULL);
  if (cfg->end_at_us <= cfg->start_at_us)
    return bad("--end-at", "must be after --start-at", NULL);
  if (cfg->kind == HOG_MEMBW && buffer == NULL)
    return bad("--buffer", "required with --kind membw", NULL);
  if (cfg->kind == HOG_CPU && buffer != NULL)
    return bad("--buffer", "only with --kind membw, got", buffer);
  return 0;
}

int hog_parse_args(int argc, char **argv, struct hog_config *cfg) {
  static const struct option opts[] = {
      {"kind", required_argument, NULL, 'k'},
      {"threads", required_argument, NULL, 't'},
      {"start-at", required_argument, NULL, 's'},
      {"end-at", required_argument, NULL, 'e'},
      {"buffer", required_argument, NULL, 'b'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c, seen_kind = 0, seen_start = 0, seen_end = 0, seen_threads = 0;
  const char *buffer = NULL;
  uint64_t v;

  memset(cfg, 0, sizeof *cfg);
  opterr = 0;
  optind = 1;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'k':
      if (strcmp(optarg, "cpu") == 0)
        cfg->kind = HOG_CPU;
      else if (strcmp(optarg, "membw") == 0)
        cfg->kind = HOG_MEMBW;
      else
        return bad("--kind", "expected cpu or membw, got", optarg);
      seen_kind = 1;
      break;
    case 't':
      if (parse_u64(optarg, 1, HOG_MAX_THREADS, &v) != 0)
        return bad("--threads", "expected an integer 1..1024, got", optarg);
      cfg->threads = (unsigned)v;
      seen_threads = 1;
      break;
    case 's':
    case 'e':
      if (parse_u64(optarg, 0, HOG_MAX_EPOCH_US, &v) != 0)
        return bad(c == 's' ? "--start-at" : "--end-at",
                   "expected epoch microseconds, got", optarg);
      if (c == 's') {
        cfg->start_at_us = (int64_t)v;
        seen_start = 1;
      } else {
        cfg->end_at_us = (int64_t)v;
        seen_end = 1;
      }
      break;
    case 'b':
      if (parse_u64(optarg, HOG_MIN_BUFFER, HOG_MAX_BUFFER, &v) != 0)
        return bad("--buffer", "expected bytes 4096..2^40, got", optarg);
      cfg->buffer = v & ~63ull; /* whole cache lines */
      buffer = optarg;
      break;
    case 'h': fputs(usage, stderr); return 2;
    default:
      return bad("argument", "unknown or missing its value:",
                 argv[optind - 1 < argc ? optind - 1 : argc - 1]);
    }
  }
  if (optind < argc)
    return bad("argument", "unexpected", argv[optind]);
  return check(cfg, seen_kind, seen_start, seen_end, seen_threads, buffer);
}
