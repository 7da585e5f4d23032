/* Command line -> immutable config. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ge.h"

void ge_err_set(struct ge_err *e, const char *file, size_t line,
                const char *field, const char *fmt, ...) {
  int n = 0;
  if (file && line)
    n = snprintf(e->msg, sizeof e->msg, "%s:%zu: ", file, line);
  else if (file)
    n = snprintf(e->msg, sizeof e->msg, "%s: ", file);
  if (n < 0 || (size_t)n >= sizeof e->msg)
    n = 0;
  if (field) {
    int m = snprintf(e->msg + n, sizeof e->msg - n, "%s: ", field);
    if (m > 0 && (size_t)(n + m) < sizeof e->msg)
      n += m;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg + n, sizeof e->msg - n, fmt, ap);
  va_end(ap);
}

static const char usage[] =
    "usage: wotbench-ge --trace FILE --out FILE --summary FILE\n"
    "         [--type con|non] [--timeout-ms N] [--ack-timeout-ms N]\n"
    "         [--max-retransmit N] [--cpu N | --cpus LIST]\n"
    "         [--start-at EPOCH_US] [--hosts FILE] [--late-us N]\n"
    "         [--spin-us N] [--sched fifo|other] [--rt-prio N]\n"
    "         [--rt-budget RUNTIME_US/PERIOD_US] [--dump-plan FILE] "
    "[--quiet]\n";

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

int ge_cli_parse(int argc, char **argv, struct ge_config *cfg,
                 struct ge_err *e) {
  static const struct option opts[] = {
      {"trace", required_argument, 0, 't'},
      {"out", required_argument, 0, 'o'},
      {"summary", required_argument, 0, 's'},
      {"type", required_argument, 0, 'y'},
      {"timeout-ms", required_argument, 0, 'T'},
      {"ack-timeout-ms", required_argument, 0, 'A'},
      {"max-retransmit", required_argument, 0, 'R'},
      {"cpu", required_argument, 0, 'c'},
      {"cpus", required_argument, 0, 'C'},
      {"start-at", required_argument, 0, 'S'},
      {"hosts", required_argument, 0, 'H'},
      {"late-us", required_argument, 0, 'L'},
      {"spin-us", required_argument, 0, 'P'},
      {"dump-plan", required_argument, 0, 'D'},
      {"sched", required_argument, 0, 'X'},
      {"rt-prio", required_argument, 0, 'Q'},
      {"rt-budget", required_argument, 0, 'B'},
      {"quiet", no_argument, 0, 'q'},
      {"help", no_argument, 0, 'h'},
      {0, 0, 0, 0},
  };
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
  };
  opterr = 0;
  optind = 1;
  int c, li = -1;
  long long v;
  const char *why, *flag;
  char name[40];
  while ((c = getopt_long(argc, argv, ":", opts, &li)) != -1) {
    if (li >= 0)
      snprintf(name, sizeof name, "--%s", opts[li].name);
    else
      snprintf(name, sizeof name, "%s", argv[optind - 1]);
    li = -1;
    switch (c) {
    case 't': cfg->trace = optarg; break;
    case 'o': cfg->out = optarg; break;
    case 's': cfg->summary = optarg; break;
    case 'H': cfg->hosts = optarg; break;
    case 'D': cfg->dump_plan = optarg; break;
    case 'q': cfg->quiet = true; break;
    case 'h': fputs(usage, stdout); return 1;
    case 'y':
      if (!strcmp(optarg, "con"))
        cfg->coap_type = GE_CON;
      else if (!strcmp(optarg, "non"))
        cfg->coap_type = GE_NON;
      else
        goto bad_type;
      break;
    case 'T':
    case 'A':
      if (num(optarg, 1, 86400000, &v))
        goto bad_num;
      *(c == 'T' ? &cfg->timeout_ns : &cfg->ack_timeout_ns) = v * 1000000;
      break;
    case 'L':
      if (num(optarg, 0, 86400000000LL, &v))
        goto bad_num;
      cfg->late_us = v;
      break;
    case 'P':
      if (num(optarg, 0, 86400000000LL, &v))
        goto bad_num;
      cfg->spin_us = v;
      break;
    case 'X':
      if (!strcmp(optarg, "fifo") || !strcmp(optarg, "other"))
        cfg->sched_fifo = optarg[0] == 'f';
      else {
        ge_err_set(e, NULL, 0, "--sched", "'%s' is not fifo or other", optarg);
        return -1;
      }
      break;
    case 'Q':
      if (num(optarg, 1, 99, &v))
        goto bad_num;
      cfg->rt_prio = (int)v;
      break;
    case 'B': {
      const char *slash = strchr(optarg, '/');
      char head[24];
      long long p;
      size_t hl = slash ? (size_t)(slash - optarg) : 0;
      if (!slash || hl >= sizeof head)
        goto bad_budget;
      memcpy(head, optarg, hl);
      head[hl] = 0;
      if (num(head, 1, 1000000, &v) || num(slash + 1, 1, 1000000, &p) ||
          ge_rt_check_budget(v, p))
        goto bad_budget;
      cfg->rt_budget_us = v;
      cfg->rt_period_us = p;
      break;
    }
    case 'R':
      /* The retransmission counter is 8 bits; RFC default is 4. */
      if (num(optarg, 0, 20, &v))
        goto bad_num;
      cfg->max_retransmit = (unsigned)v;
      break;
    case 'c':
    case 'C':
      flag = c == 'c' ? "--cpu" : "--cpus";
      if (cfg->cpus_flag && strcmp(cfg->cpus_flag, flag)) {
        ge_err_set(e, NULL, 0, "--cpus",
                   "give --cpu N or --cpus LIST, not both");
        return -1;
      }
      if (c == 'c') {
        if (num(optarg, 0, CPU_SETSIZE - 1, &v))
          goto bad_num;
        CPU_ZERO(&cfg->cpus);
        CPU_SET((int)v, &cfg->cpus);
      } else if ((why = cpulist_parse(optarg, &cfg->cpus))) {
        ge_err_set(e, NULL, 0, "--cpus", "%s '%s'", why, optarg);
        return -1;
      }
      cfg->cpus_flag = flag;
      cfg->cpus_text = optarg;
      break;
    case 'S':
      if (num(optarg, 1, 9007199254740992LL, &v))
        goto bad_num;
      cfg->start_at_us = v;
      break;
    case ':':
      ge_err_set(e, NULL, 0, argv[optind - 1], "needs a value");
      return -1;
    default:
      ge_err_set(e, NULL, 0, name, "unknown option (see --help)");
      return -1;
    }
    continue;
  bad_type:
    ge_err_set(e, NULL, 0, "--type", "'%s' is not con or non", optarg);
    return -1;
  bad_num:
    ge_err_set(e, NULL, 0, name, "'%s' is out of range", optarg);
    return -1;
  bad_budget:
    ge_err_set(e, NULL, 0, "--rt-budget",
               "'%s' is not RUNTIME_US/PERIOD_US with a period of "
               "1000..1000000 and a runtime above 3 %% of it, at most the "
               "period",
               optarg);
    return -1;
  }
  if (cfg->sched_fifo && !cfg->rt_period_us) {
    ge_err_set(e, NULL, 0, "--rt-budget", "is required with --sched fifo");
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
