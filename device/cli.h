/* Command line -> immutable configuration. */
#ifndef DEV_CLI_H
#define DEV_CLI_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cpulist.h"

enum dev_mode { DEV_MODE_SLEEP, DEV_MODE_BUSY };

struct dev_config {
  struct sockaddr_storage listen;
  socklen_t listen_len;
  const char *listen_text;
  const char *resources_file;
  const char *stats_file; /* NULL: no JSON stats */
  const char *cpus_text;  /* --cpus LIST as given; NULL: affinity inherited */
  cpu_set_t cpus;         /* --cpus LIST parsed */
  enum dev_mode mode;
  unsigned threads;
  uint32_t queue_cap;
  uint32_t dedup_entries;
  int64_t exchange_lifetime_ns; /* --exchange-lifetime */
  uint32_t observers;           /* --observers: live observations at most */
  int64_t ack_timeout_ns;       /* --ack-timeout-ms (CON notifications) */
  int64_t obs_seq_start;        /* --obs-seq-start; -1: random */
  const char *dump_path;        /* --dump-notify PATH:N; NULL: serve */
  uint64_t dump_count;
};

/* Returns 0 (run), 1 (--help printed: exit 0) or 2 (error printed). */
int cli_parse(int argc, char **argv, struct dev_config *cfg);

#endif
