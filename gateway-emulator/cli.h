/* Command line -> the immutable configuration (the first tier of state). */
#ifndef GE_CLI_H
#define GE_CLI_H

#include <netinet/in.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "../device/cpulist.h" /* one --cpus LIST syntax for both programs */
#include "err.h"

struct ge_config {
  const char *trace, *out, *summary, *hosts, *dump_plan;
  const char *rto_out; /* --rto-out FILE: the per-exchange RTO log; NULL */
  uint8_t coap_type;   /* 0 = CON, 1 = NON (RFC 7252 type numbers) */
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
  uint8_t north;               /* --north: enum ge_north (north.h) */
  const char *gateway_text;    /* --gateway as given; NULL: direct */
  struct sockaddr_in6 gateway; /* its endpoint (port 5683 if none given) */
  uint8_t north_sockets;       /* --north-sockets: enum ge_north_sockets */
  const char *http_path;       /* --http-path TEMPLATE (--north http) */
  unsigned http_conns;         /* --http-conns N, 1..4096 (--north http) */
  uint8_t congestion;          /* --congestion: enum ge_cc_strategy (cc.h) */
  double ack_random_factor;    /* --ack-random-factor F, 1.0..16.0 */
  unsigned nstart;             /* --nstart N, 1..65535; 0: unlimited */
  int64_t probing_rate;        /* --probing-rate BYTES_PER_S; 0: none */
  const char *notify_out;      /* --notify-out FILE: the notify CSV */
  int64_t observe_grace_ns;    /* --observe-grace-ms: after Max-Age */
};

/* 0 ok, 1 help printed, -1 bad usage (message in e). */
int ge_cli_parse(int argc, char **argv, struct ge_config *cfg,
                 struct ge_err *e);

#endif
