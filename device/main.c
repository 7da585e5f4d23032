/* wotbench-device: a CoAP server whose resources answer after a configured
 * service time. Order matters: every input is validated before the socket
 * is bound; the CPU affinity is set first, and signals are routed to a
 * signalfd after coap_startup(), both before any thread exists (so workers
 * inherit the affinity and the blocked mask). */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <coap3/coap.h>

#include "cli.h"
#include "counters.h"
#include "cpulist.h"
#include "loop.h"
#include "registry.h"
#include "resources.h"

#define SOCK_BUF_BYTES (4 << 20)

static int open_socket(const struct dev_config *cfg) {
  int family = cfg->listen.ss_family;
  int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int zero = 0, bufsz = SOCK_BUF_BYTES;

  if (fd < 0) {
    perror("error: socket");
    return -1;
  }
  /* [::] also takes IPv4 clients (as v4-mapped addresses). */
  if (family == AF_INET6 &&
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
    goto err;
  /* Bursts of a load generator outrun one recvmmsg batch; the kernel
   * caps these at rmem_max/wmem_max, which is fine. */
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz)) < 0)
    goto err;
  if (bind(fd, (const struct sockaddr *)&cfg->listen, cfg->listen_len) < 0) {
    fprintf(stderr, "error: --listen: cannot bind %s: %s\n", cfg->listen_text,
            strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
err:
  perror("error: setsockopt");
  close(fd);
  return -1;
}

static int open_signalfd(void) {
  sigset_t set;
  int fd;

  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0) {
    fputs("error: pthread_sigmask failed\n", stderr);
    return -1;
  }
  fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0)
    perror("error: signalfd");
  return fd;
}

/* --cpus, or the affinity inherited: either way the one in force is
 * written to text (LIST syntax) for the records. Returns 0, 1 (a syscall
 * failed) or 2 (--cpus names a CPU this process may not use). */
static int set_affinity(const struct dev_config *cfg, char *text, size_t cap) {
  char why[1024];
  cpu_set_t got;
  int rc;

  if (cfg->cpus_text != NULL) {
    rc = cpulist_pin(cfg->cpus_text, &cfg->cpus, &got, why, sizeof(why));
    if (rc != 0) {
      fprintf(stderr, "error: --cpus: %s\n", why);
      return rc;
    }
  } else if (sched_getaffinity(0, sizeof(got), &got) != 0) {
    perror("error: sched_getaffinity");
    return 1;
  }
  cpulist_format(&got, text, cap);
  return 0;
}

/* --dump-notify PATH:N: the draws the first registration of PATH would
 * make (the same seed), for tests of the samplers. */
static int dump_notify(const struct dev_config *cfg,
                       const struct res_table *t) {
  size_t len = (size_t)(strrchr(cfg->dump_path, ':') - cfg->dump_path);

  for (size_t i = 0; i < t->count; i++) {
    const struct dev_resource *r = &t->items[i];
    struct notify_rng rng;

    if (r->path_len != len || memcmp(r->path, cfg->dump_path, len) != 0)
      continue;
    if (!r->observable)
      break;
    notify_seed(&rng, notify_mix(r->seed ^ notify_hash(r->path, len)));
    for (uint64_t k = 0; k < cfg->dump_count; k++)
      printf("%lld\n", (long long)notify_draw_ns(&r->proc, &rng));
    return fflush(stdout) == 0 ? 0 : 1;
  }
  fprintf(stderr, "error: --dump-notify: no observable resource '%.*s'\n",
          (int)len, cfg->dump_path);
  return 2;
}

int main(int argc, char **argv) {
  struct dev_config cfg;
  struct res_table table;
  struct registry reg;
  struct dev_counters counters;
  static struct dev_hists hists; /* 22 KB: zeroed, off the stack */
  char cpus[CPULIST_TEXT_MAX];
  int rc = cli_parse(argc, argv, &cfg), sock = -1, sigfd = -1, status = 1;

  if (rc != 0)
    return rc == 1 ? 0 : 2;
  rc = set_affinity(&cfg, cpus, sizeof(cpus));
  if (rc != 0)
    return rc;
  if (res_load(cfg.resources_file, &table) < 0)
    return 2;
  if (cfg.dump_path != NULL) {
    rc = dump_notify(&cfg, &table);
    res_free(&table);
    return rc;
  }
  coap_startup();
  coap_set_log_level(LOG_EMERG); /* garbage datagrams must not spam stderr */
  memset(&counters, 0, sizeof(counters));
  if (registry_build(&reg, &table) < 0)
    goto out_table;
  sigfd = open_signalfd();
  if (sigfd < 0)
    goto out_reg;
  sock = open_socket(&cfg);
  if (sock < 0)
    goto out_sig;
  fprintf(stderr,
          "wotbench-device: %zu resources on %s, %s mode, %u threads, "
          "cpus %s\n",
          reg.count, cfg.listen_text,
          cfg.mode == DEV_MODE_BUSY ? "busy" : "sleep", cfg.threads, cpus);
  if (loop_run(&cfg, &reg, sock, sigfd, &counters, &hists) == 0)
    status = 0;
  counters_print(stderr, &counters);
  if (cfg.stats_file &&
      counters_write_json(cfg.stats_file, cpus, &counters, &hists) < 0)
    status = 1;
  close(sock);
out_sig:
  close(sigfd);
out_reg:
  registry_free(&reg);
out_table:
  res_free(&table);
  coap_cleanup();
  return status;
}
