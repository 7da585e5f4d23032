/* Command line -> immutable config. One table holds every option (its
 * name, kind, where its value goes, unit and bounds); getopt_long's option
 * list, the value checks and the stores are generic over it. */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../device/buildinfo.h" /* one --build-info for both programs */
#include "cc.h"
#include "cli.h"
#include "hosts.h"
#include "http_req.h"
#include "north.h"
#include "rt.h"
#include "wire.h"

static const char usage[] =
    "usage: wotbench-ge --trace FILE --out FILE --summary FILE\n"
    "         [--type con|non] [--timeout-ms N] [--ack-timeout-ms N]\n"
    "         [--max-retransmit N] [--cpu N | --cpus LIST]\n"
    "         [--start-at EPOCH_US] [--hosts FILE] [--late-us N]\n"
    "         [--spin-us N] [--sched fifo|other] [--rt-prio N]\n"
    "         [--rt-budget RUNTIME_US/PERIOD_US] [--dump-plan FILE] "
    "[--quiet]\n"
    "         [--gateway ADDR:PORT --north coap-uri|coap-scheme|http]\n"
    "         [--north-sockets one|per-device]\n"
    "         [--http-path TEMPLATE] [--http-conns N]\n"
    "         [--congestion rfc7252|cocoa|cocoa-strong|basic-rto|linux-rto|"
    "peakhopper-rto]\n"
    "         [--ack-random-factor F] [--nstart N|unlimited]\n"
    "         [--probing-rate BYTES_PER_S] [--rto-out FILE]\n"
    "         [--notify-out FILE] [--observe-grace-ms N]\n"
    "       wotbench-ge --build-info   (the compiler, flags and git commit "
    "it was built\n"
    "                                   with, as one JSON line)\n";

enum kind {
  K_PATH,   /* the value as given */
  K_FLAG,   /* no value: true */
  K_NUM,    /* whole decimal in [lo, hi], stored times `unit` */
  K_CHOICE, /* words[i] -> vals[i] */
  K_CPU,    /* --cpu N: a one-CPU set */
  K_CPUS,   /* --cpus LIST (device/cpulist.c) */
  K_BUDGET, /* --rt-budget RUNTIME_US/PERIOD_US */
  K_ADDR,   /* --gateway IPv4[:port] | [IPv6][:port] (hosts.h syntax) */
  K_CC,     /* --congestion NAME: a strategy of cc.h's table */
  K_REAL,   /* a decimal number in [lo, hi] (a double) */
  K_NSTART, /* --nstart N in [lo, hi], or unlimited (0) */
  K_HELP,
  K_BUILD_INFO, /* --build-info: print device/buildinfo.h's line */
};
/* The type of the struct ge_config member at `off`. */
enum store { S_NONE, S_STR, S_BOOL, S_U8, S_INT, S_UNS, S_I64, S_DBL };

/* The words of a K_CHOICE option (up to NULL) and the value each
 * stores; `say` lists them for an error. */
struct choice {
  const char *words[5];
  long long vals[5];
  const char *say;
};
static const struct choice type_words = {
    {"con", "non"}, {GE_CON, GE_NON}, "con or non"};
static const struct choice sched_words = {
    {"fifo", "other"}, {1, 0}, "fifo or other"};
static const struct choice north_words = {
    {"coap-uri", "coap-scheme", "http"},
    {GE_NORTH_COAP_URI, GE_NORTH_COAP_SCHEME, GE_NORTH_HTTP},
    "coap-uri, coap-scheme or http"};

static const struct choice north_sockets_words = {
    {"one", "per-device"},
    {GE_NSOCK_ONE, GE_NSOCK_PER_DEVICE},
    "one or per-device"};

/* One option: its name, kind, where its value goes (type and offset in
 * struct ge_config), bounds and unit of a number, words of a choice. */
struct opt {
  const char *name;
  enum kind kind;
  enum store store;
  size_t off;
  long long lo, hi, unit;
  const struct choice *choice;
};

#define AT(member) offsetof(struct ge_config, member)
#define MS 1000000LL                    /* ns per ms */
#define DAY_MS 86400000LL               /* one day */
#define DAY_US 86400000000LL            /* one day */
#define MAX_EPOCH_US 9007199254740992LL /* 2^53 */
static const struct opt table[] = {
    /* name, kind, store, where, lo, hi, unit, words */
    {"trace", K_PATH, S_STR, AT(trace), 0, 0, 1, NULL},
    {"out", K_PATH, S_STR, AT(out), 0, 0, 1, NULL},
    {"summary", K_PATH, S_STR, AT(summary), 0, 0, 1, NULL},
    {"type", K_CHOICE, S_U8, AT(coap_type), 0, 0, 1, &type_words},
    {"timeout-ms", K_NUM, S_I64, AT(timeout_ns), 1, DAY_MS, MS, NULL},
    {"ack-timeout-ms", K_NUM, S_I64, AT(ack_timeout_ns), 1, DAY_MS, MS, NULL},
    /* The retransmission counter is 8 bits; RFC default is 4. */
    {"max-retransmit", K_NUM, S_UNS, AT(max_retransmit), 0, 20, 1, NULL},
    {"cpu", K_CPU, S_NONE, 0, 0, CPU_SETSIZE - 1, 1, NULL},
    {"cpus", K_CPUS, S_NONE, 0, 0, 0, 1, NULL},
    {"start-at", K_NUM, S_I64, AT(start_at_us), 1, MAX_EPOCH_US, 1, NULL},
    {"hosts", K_PATH, S_STR, AT(hosts), 0, 0, 1, NULL},
    {"late-us", K_NUM, S_I64, AT(late_us), 0, DAY_US, 1, NULL},
    {"spin-us", K_NUM, S_I64, AT(spin_us), 0, DAY_US, 1, NULL},
    {"dump-plan", K_PATH, S_STR, AT(dump_plan), 0, 0, 1, NULL},
    {"sched", K_CHOICE, S_BOOL, AT(sched_fifo), 0, 0, 1, &sched_words},
    {"rt-prio", K_NUM, S_INT, AT(rt_prio), 1, 99, 1, NULL},
    {"rt-budget", K_BUDGET, S_NONE, 0, 0, 0, 1, NULL},
    {"quiet", K_FLAG, S_BOOL, AT(quiet), 0, 0, 1, NULL},
    {"gateway", K_ADDR, S_STR, AT(gateway_text), 0, 0, 1, NULL},
    {"north", K_CHOICE, S_U8, AT(north), 0, 0, 1, &north_words},
    {"north-sockets", K_CHOICE, S_U8, AT(north_sockets), 0, 0, 1,
     &north_sockets_words},
    {"http-path", K_PATH, S_STR, AT(http_path), 0, 0, 1, NULL},
    {"http-conns", K_NUM, S_UNS, AT(http_conns), 1, 4096, 1, NULL},
    {"congestion", K_CC, S_U8, AT(congestion), 0, 0, 1, NULL},
    {"ack-random-factor", K_REAL, S_DBL, AT(ack_random_factor), 1, 16, 1, NULL},
    {"nstart", K_NSTART, S_UNS, AT(nstart), 1, 65535, 1, NULL},
    {"probing-rate", K_NUM, S_I64, AT(probing_rate), 1, 1000000000, 1, NULL},
    {"rto-out", K_PATH, S_STR, AT(rto_out), 0, 0, 1, NULL},
    {"notify-out", K_PATH, S_STR, AT(notify_out), 0, 0, 1, NULL},
    {"observe-grace-ms", K_NUM, S_I64, AT(observe_grace_ns), 0, DAY_MS, MS,
     NULL},
    {"help", K_HELP, S_NONE, 0, 0, 0, 1, NULL},
    {"build-info", K_BUILD_INFO, S_NONE, 0, 0, 0, 1, NULL},
};
#undef AT
#define NOPT (sizeof table / sizeof table[0])
/* getopt_long returns OPT_BASE + the option's index in the table. */
#define OPT_BASE 256

/* Whole-string unsigned decimal within [lo, hi]. */
static int num(const char *s, long long lo, long long hi, long long *out) {
  char *end;
  if (!*s || *s == '-' || *s == '+' || *s == ' ')
    return -1;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || v > (unsigned long long)hi || (long long)v < lo)
    return -1;
  *out = (long long)v;
  return 0;
}

/* A double into the member the option names. */
static void put_real(struct ge_config *cfg, const struct opt *o, double d) {
  memcpy((char *)cfg + o->off, &d, sizeof d);
}

/* The value v (or s) into the member the option names. */
static void put(struct ge_config *cfg, const struct opt *o, long long v,
                const char *s) {
  char *at = (char *)cfg + o->off;
  bool b = v != 0;
  uint8_t u8 = (uint8_t)v;
  int i = (int)v;
  unsigned u = (unsigned)v;
  int64_t i64 = v;
  switch (o->store) {
  case S_NONE: break;
  case S_STR: memcpy(at, &s, sizeof s); break;
  case S_BOOL: memcpy(at, &b, sizeof b); break;
  case S_U8: memcpy(at, &u8, sizeof u8); break;
  case S_INT: memcpy(at, &i, sizeof i); break;
  case S_UNS: memcpy(at, &u, sizeof u); break;
  case S_I64: memcpy(at, &i64, sizeof i64); break;
  case S_DBL: put_real(cfg, o, (double)v); break;
  }
}

static int choice(struct ge_config *cfg, const struct opt *o, const char *arg,
                  const char *name, struct ge_err *e) {
  const struct choice *ch = o->choice;
  for (size_t i = 0; i < 5 && ch->words[i]; i++)
    if (!strcmp(arg, ch->words[i])) {
      put(cfg, o, ch->vals[i], NULL);
      return 0;
    }
  ge_err_set(e, NULL, 0, name, "'%s' is not %s", arg, ch->say);
  return -1;
}

/* --cpu N or --cpus LIST (one of the two). */
static int cpus(struct ge_config *cfg, const struct opt *o, const char *arg,
                const char *name, struct ge_err *e) {
  const char *flag = o->kind == K_CPU ? "--cpu" : "--cpus", *why;
  long long v;
  if (cfg->cpus_flag && strcmp(cfg->cpus_flag, flag) != 0) {
    ge_err_set(e, NULL, 0, "--cpus", "give --cpu N or --cpus LIST, not both");
    return -1;
  }
  if (o->kind == K_CPU) {
    if (num(arg, o->lo, o->hi, &v)) {
      ge_err_set(e, NULL, 0, name, "'%s' is out of range", arg);
      return -1;
    }
    CPU_ZERO(&cfg->cpus);
    CPU_SET((int)v, &cfg->cpus);
  } else if ((why = cpulist_parse(arg, &cfg->cpus))) {
    ge_err_set(e, NULL, 0, "--cpus", "%s '%s'", why, arg);
    return -1;
  }
  cfg->cpus_flag = flag;
  cfg->cpus_text = arg;
  return 0;
}

/* --congestion NAME: one of cc.h's strategies. */
static int congestion(struct ge_config *cfg, const struct opt *o,
                      const char *arg, struct ge_err *e) {
  int s = ge_cc_parse(arg);
  if (s < 0) {
    ge_err_set(e, NULL, 0, "--congestion",
               "'%s' is not rfc7252, cocoa, cocoa-strong, basic-rto, "
               "linux-rto or peakhopper-rto",
               arg);
    return -1;
  }
  put(cfg, o, s, NULL);
  return 0;
}

/* A whole decimal number (digits, at most one '.') within [lo, hi]. */
static int real(struct ge_config *cfg, const struct opt *o, const char *arg,
                const char *name, struct ge_err *e) {
  char *end;
  size_t digits = strspn(arg, "0123456789.");
  double d = strtod(arg, &end);
  if (!*arg || digits != strlen(arg) || *end || !(d >= (double)o->lo) ||
      !(d <= (double)o->hi)) {
    ge_err_set(e, NULL, 0, name, "'%s' is not a number in %lld..%lld", arg,
               o->lo, o->hi);
    return -1;
  }
  put_real(cfg, o, d);
  return 0;
}

/* --nstart N (at most N CON exchanges in flight per peer) or unlimited,
 * stored as 0 (the default). */
static int nstart(struct ge_config *cfg, const struct opt *o, const char *arg,
                  const char *name, struct ge_err *e) {
  long long v = 0;
  if (strcmp(arg, "unlimited") != 0 && num(arg, o->lo, o->hi, &v)) {
    ge_err_set(e, NULL, 0, name, "'%s' is not %lld..%lld or unlimited", arg,
               o->lo, o->hi);
    return -1;
  }
  put(cfg, o, v, NULL);
  return 0;
}

/* --gateway ADDR[:PORT]: the endpoint every request goes to. */
static int gateway(struct ge_config *cfg, const struct opt *o, const char *arg,
                   struct ge_err *e) {
  bool has_port;
  const char *why = "bad address";
  if (ge_parse_address(arg, strlen(arg), &cfg->gateway, &has_port, &why)) {
    ge_err_set(e, NULL, 0, "--gateway",
               "'%s': %s (expected IPv4[:port] or [IPv6][:port])", arg, why);
    return -1;
  }
  put(cfg, o, 0, arg);
  return 0;
}

static int budget(struct ge_config *cfg, const char *arg, struct ge_err *e) {
  const char *slash = strchr(arg, '/');
  char head[24];
  long long r, p;
  size_t hl = slash ? (size_t)(slash - arg) : 0;
  if (slash && hl < sizeof head) {
    memcpy(head, arg, hl);
    head[hl] = 0;
    if (!num(head, 1, 1000000, &r) && !num(slash + 1, 1, 1000000, &p) &&
        !ge_rt_check_budget(r, p)) {
      cfg->rt_budget_us = r;
      cfg->rt_period_us = p;
      return 0;
    }
  }
  ge_err_set(e, NULL, 0, "--rt-budget",
             "'%s' is not RUNTIME_US/PERIOD_US with a period of "
             "1000..1000000 and a runtime above 3 %% of it, at most the "
             "period",
             arg);
  return -1;
}

/* One option with its value: 0, 1 (help or build info printed) or -1
 * (e). */
static int apply(struct ge_config *cfg, const struct opt *o, const char *arg,
                 struct ge_err *e) {
  char name[40];
  long long v;
  snprintf(name, sizeof name, "--%s", o->name);
  switch (o->kind) {
  case K_PATH: put(cfg, o, 0, arg); return 0;
  case K_FLAG: put(cfg, o, 1, NULL); return 0;
  case K_HELP: fputs(usage, stdout); return 1;
  case K_BUILD_INFO:
    if (buildinfo_print(stdout, "wotbench-ge") == 0)
      return 1;
    ge_err_set(e, NULL, 0, name, "cannot write to stdout");
    return -1;
  case K_CHOICE: return choice(cfg, o, arg, name, e);
  case K_CPU:
  case K_CPUS: return cpus(cfg, o, arg, name, e);
  case K_BUDGET: return budget(cfg, arg, e);
  case K_ADDR: return gateway(cfg, o, arg, e);
  case K_CC: return congestion(cfg, o, arg, e);
  case K_REAL: return real(cfg, o, arg, name, e);
  case K_NSTART: return nstart(cfg, o, arg, name, e);
  case K_NUM: break;
  }
  if (num(arg, o->lo, o->hi, &v)) {
    ge_err_set(e, NULL, 0, name, "'%s' is out of range", arg);
    return -1;
  }
  put(cfg, o, v * o->unit, NULL);
  return 0;
}

/* --http-path and --http-conns: only with --north http, which gets
 * their defaults. */
static int check_http(struct ge_config *cfg, struct ge_err *e) {
  const char *why;
  if (cfg->north != GE_NORTH_HTTP && (cfg->http_path || cfg->http_conns)) {
    ge_err_set(e, NULL, 0, cfg->http_path ? "--http-path" : "--http-conns",
               "requires --north http");
    return -1;
  }
  if (cfg->http_path && (why = ge_http_req_check(cfg->http_path))) {
    ge_err_set(e, NULL, 0, "--http-path", "'%s' %s", cfg->http_path, why);
    return -1;
  }
  if (cfg->north == GE_NORTH_HTTP && !cfg->http_path)
    cfg->http_path = "/proxy/" GE_HTTP_URI_VAR;
  if (cfg->north == GE_NORTH_HTTP && !cfg->http_conns)
    cfg->http_conns = 32;
  return 0;
}

/* What the options together must give. */
static int check(int argc, char **argv, struct ge_config *cfg,
                 struct ge_err *e) {
  if (cfg->sched_fifo && !cfg->rt_period_us) {
    ge_err_set(e, NULL, 0, "--rt-budget", "is required with --sched fifo");
    return -1;
  }
  if (!cfg->north != !cfg->gateway_text) {
    ge_err_set(e, NULL, 0, cfg->north ? "--north" : "--gateway", "requires %s",
               cfg->north ? "--gateway" : "--north");
    return -1;
  }
  if (cfg->north_sockets && (!cfg->north || cfg->north == GE_NORTH_HTTP)) {
    ge_err_set(e, NULL, 0, "--north-sockets", "requires --north %s",
               cfg->north ? "coap-uri or coap-scheme (not http)"
                          : "coap-uri or coap-scheme and --gateway");
    return -1;
  }
  if (check_http(cfg, e))
    return -1;
  if (cfg->north == GE_NORTH_HTTP && (cfg->nstart || cfg->probing_rate)) {
    ge_err_set(e, NULL, 0, cfg->nstart ? "--nstart" : "--probing-rate",
               "is for CoAP requests (not --north http: its pool bounds "
               "the requests in flight)");
    return -1;
  }
  if (optind < argc) {
    ge_err_set(e, NULL, 0, argv[optind], "unexpected argument");
    return -1;
  }
  if (!cfg->trace) {
    ge_err_set(e, NULL, 0, "--trace", "is required");
    return -1;
  }
  if (cfg->cpus_flag && CPU_COUNT(&cfg->cpus) == 1)
    for (int i = 0; i < CPU_SETSIZE; i++)
      if (CPU_ISSET(i, &cfg->cpus))
        cfg->cpu = i;
  if (!cfg->dump_plan && (!cfg->out || !cfg->summary)) {
    ge_err_set(e, NULL, 0, cfg->out ? "--summary" : "--out", "is required");
    return -1;
  }
  return 0;
}

int ge_cli_parse(int argc, char **argv, struct ge_config *cfg,
                 struct ge_err *e) {
  struct option opts[NOPT + 1];
  for (size_t i = 0; i < NOPT; i++)
    opts[i] =
        (struct option){table[i].name,
                        table[i].kind == K_FLAG || table[i].kind == K_HELP ||
                                table[i].kind == K_BUILD_INFO
                            ? no_argument
                            : required_argument,
                        NULL, OPT_BASE + (int)i};
  opts[NOPT] = (struct option){0};
  *cfg = (struct ge_config){
      .coap_type = GE_CON,
      .timeout_ns = 5000LL * 1000000,
      .ack_timeout_ns = 2000LL * 1000000,
      .late_us = 100,
      .max_retransmit = 4,
      .cpu = -1,
      .start_at_us = -1,
      .spin_us = -1,
      .rt_prio = 50,
      .congestion = GE_CC_rfc7252,
      .ack_random_factor = 1.5,
      .observe_grace_ns = 2000LL * 1000000,
  };
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
    if (c == ':') {
      ge_err_set(e, NULL, 0, argv[optind - 1], "needs a value");
      return -1;
    }
    if (c < OPT_BASE || c >= OPT_BASE + (int)NOPT) {
      ge_err_set(e, NULL, 0, argv[optind - 1], "unknown option (see --help)");
      return -1;
    }
    int rc = apply(cfg, &table[c - OPT_BASE], optarg, e);
    if (rc)
      return rc;
  }
  return check(argc, argv, cfg, e);
}
