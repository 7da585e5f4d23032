/* Summary JSON (fields documented in README.md): counters (written by
 * counters.c), rates, the expected-versus-submitted inter-arrival
 * comparison of the paper's Table 1 and the memory the run took. The
 * distributions were counted while the run went on (hist.c: exact, so
 * Python recomputes the same percentiles from the CSV). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ge_format.h"
#include "http.h"
#include "json.h"
#include "north.h"
#include "obstab.h"
#include "stats.h"

/* Peak resident set of this program in kB: VmHWM of its own address
 * space. getrusage's ru_maxrss is kept across fork + exec, so it would
 * report the parent's size when that was larger (a Python harness). */
static long long peak_rss_kb(void) {
  long long kb = -1;
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    while (fgets(line, sizeof line, f))
      if (sscanf(line, "VmHWM: %lld kB", &kb) == 1)
        break;
    fclose(f);
  }
  struct rusage ru;
  if (kb < 0 && !getrusage(RUSAGE_SELF, &ru))
    kb = ru.ru_maxrss;
  return kb;
}

/* What bounds the GE's memory, and the peak it reached. */
static void memory_json(FILE *f, const struct ge_loop *L) {
  const struct ge_plan *p = L->plan;
  long long rss = peak_rss_kb();
  size_t hist = ge_hist_bytes(&p->rit_expected) +
                ge_hist_bytes(&L->rit_submitted) + ge_hist_bytes(&L->send_lag) +
                ge_hist_bytes(&L->response) + ge_hist_bytes(&L->latency) +
                ge_hist_bytes(&L->timer0);
  size_t sentq = 0;
  /* whole chunks of the peak, and the spare one */
  uint64_t win_bytes = ((L->win.peak + GE_CHUNK - 1) / GE_CHUNK + 1) *
                       GE_CHUNK * sizeof(struct ge_rec);
  for (size_t i = 0; i < p->npeer; i++)
    sentq += ge_sentq_bytes(&L->sq[i]);
  fprintf(f, "  \"peak_rss_bytes\": %lld,\n", rss < 0 ? -1 : rss * 1024);
  fprintf(f,
          "  \"memory\": {\"window_peak_requests\": %llu, "
          "\"window_peak_bytes\": %llu, \"output_buffer_peak_bytes\": %zu, "
          "\"output_writes\": %llu, \"feed_forced\": %llu, "
          "\"output_forced\": %llu, \"timer_heap_capacity\": %zu, "
          "\"hist_bytes\": %zu, \"reuse_fifo_bytes\": %zu, "
          "\"rto_forced\": %llu, \"obs_table_bytes\": %zu, "
          "\"notify_output_forced\": %llu},\n",
          (unsigned long long)L->win.peak, (unsigned long long)win_bytes,
          L->out.peak, (unsigned long long)L->out.writes,
          (unsigned long long)L->feed_forced,
          (unsigned long long)L->output_forced, L->heap.cap, hist, sentq,
          (unsigned long long)L->rto.forced, L->obs.n * sizeof(struct ge_obs),
          (unsigned long long)L->obs.out.forced);
}

/* How the requests reached the devices: directly, or through the gateway
 * (its endpoint as host:port) in a north-side mode; the local UDP sockets
 * shared by all devices, or per device (--north-sockets), and how many. */
static void north_json(FILE *f, const struct ge_loop *L) {
  const struct ge_config *cfg = L->cfg;
  char gw[GE_ADDR_TEXT_MAX];
  fprintf(f, "  \"north\": {\"protocol\": \"%s\", \"gateway\": ",
          cfg->north == GE_NORTH_HTTP ? "http" : "coap");
  if (cfg->gateway_text) {
    ge_north_authority(&cfg->gateway, gw);
    fprintf(f, "\"%s\"", gw);
  } else {
    fprintf(f, "null");
  }
  fprintf(f, ", \"mode\": \"%s\", \"sockets\": \"%s\", \"nsock\": %u},\n",
          ge_north_name(cfg->north), L->plan->per_device ? "per-device" : "one",
          L->nsock);
}

/* NSTART and PROBING_RATE (null: unlimited, none) and the requests they
 * held back. */
static void held_json(FILE *f, const struct ge_loop *L) {
  const struct ge_held_stats *h = &L->held;
  fprintf(f, "    \"nstart\": ");
  if (L->cfg->nstart)
    fprintf(f, "%u", L->cfg->nstart);
  else
    fprintf(f, "null");
  fprintf(f, ", \"probing_rate\": ");
  if (L->cfg->probing_rate)
    fprintf(f, "%lld", (long long)L->cfg->probing_rate);
  else
    fprintf(f, "null");
  fprintf(f,
          ",\n    \"held\": {\"nstart_waits\": %llu, \"probing_waits\": %llu, "
          "\"wait_max_us\": %llu, \"queue_max\": %llu, "
          "\"queue_timeouts\": %llu},\n",
          (unsigned long long)h->nstart_waits,
          (unsigned long long)h->probing_waits,
          (unsigned long long)h->wait_max_us, (unsigned long long)h->queue_max,
          (unsigned long long)h->queue_timeouts);
}

/* Congestion control: the strategy, the first timers of the CON
 * exchanges, and per peer its final RTO and the samples it was fed. */
static void congestion_json(FILE *f, const struct ge_loop *L) {
  const struct ge_plan *p = L->plan;
  char addr[GE_ADDR_TEXT_MAX];
  fprintf(f,
          "  \"congestion\": {\"strategy\": \"%s\", "
          "\"ack_random_factor\": %.17g,\n",
          ge_cc_name((enum ge_cc_strategy)L->cfg->congestion),
          L->cfg->ack_random_factor);
  held_json(f, L);
  fprintf(f, "  ");
  ge_hist_json(f, "timer0_us", &L->timer0, true);
  fprintf(f, "    \"peers\": [");
  for (size_t i = 0; i < p->npeer; i++) {
    const struct ge_cc_peer *cp = &L->ccp[i];
    ge_north_authority(&p->peers[i].addr, addr);
    fprintf(f,
            "%s\n      {\"peer\": \"%s\", \"exchanges\": %llu, "
            "\"rto_us\": %lld, \"samples_strong\": %llu, "
            "\"samples_weak\": %llu, \"samples_unused\": %llu, "
            "\"aging_steps\": %llu}",
            i ? "," : "", addr, (unsigned long long)cp->exchanges,
            (long long)(ge_cc_rto(&cp->cc) / 1000),
            (unsigned long long)cp->strong, (unsigned long long)cp->weak,
            (unsigned long long)cp->unused,
            (unsigned long long)cp->cc.aging_steps);
  }
  fprintf(f, "]},\n");
}

int ge_stats_write(const struct ge_loop *L, int fd, struct ge_err *e) {
  const struct ge_plan *p = L->plan;
  const struct ge_config *cfg = L->cfg;
  size_t n = p->n;
  char cpus[CPULIST_TEXT_MAX];
  int dfd = dup(fd);
  FILE *f = dfd >= 0 ? fdopen(dfd, "w") : NULL;
  if (!f) {
    ge_err_set(e, cfg->summary, 0, NULL, "cannot write: %s", strerror(errno));
    if (dfd >= 0)
      close(dfd);
    return -1;
  }
  double intended_span = n > 1 ? (double)(p->ts_last - p->ts_first) : 0;
  double sent_span = n > 1 ? (double)(L->sent_prev_us - L->sent_first_us) : 0;
  fprintf(f,
          "{\n  \"format\": %d,\n  \"tool\": \"wotbench-ge\",\n  \"trace\": ",
          GE_SUMMARY_FORMAT);
  ge_json_str(f, cfg->trace);
  cpulist_format(&L->cpus, cpus, sizeof cpus); /* any set fits */
  fprintf(f,
          ",\n  \"type\": \"%s\",\n"
          "  \"config\": {\"timeout_ms\": %lld, \"ack_timeout_ms\": %lld, "
          "\"max_retransmit\": %u, \"cpu\": %d, \"cpus\": \"%s\", "
          "\"late_us\": %lld, \"start_at_us\": %lld, \"spin_us\": %lld},\n",
          cfg->coap_type == GE_CON ? "con" : "non",
          (long long)(cfg->timeout_ns / 1000000),
          (long long)(cfg->ack_timeout_ns / 1000000), cfg->max_retransmit,
          cfg->cpu, cpus, (long long)cfg->late_us, (long long)cfg->start_at_us,
          (long long)cfg->spin_us);
  fprintf(
      f,
      "  \"start_epoch_us\": %lld,\n  \"devices\": %zu,\n  \"peers\": %zu,\n"
      "  \"sockets\": %u,\n  \"templates\": %zu,\n",
      (long long)L->start_epoch_us, p->ndev, p->npeer, p->nsock, p->ntmpl);
  fprintf(f, "  \"requests\": %zu,\n", n);
  ge_counters_json(f, &L->c); /* right after requests (test_counters.py) */
  north_json(f, L);
  ge_http_json(f, L);
  ge_rt_json(f, &L->rt);
  congestion_json(f, L);
  ge_obs_json(f, &L->obs);
  memory_json(f, L);
  ge_keep_json(f, &L->keep);
  fprintf(f, "  \"duration_s\": %.6f,\n  \"send_span_s\": %.6f,\n",
          (double)(L->t_end - L->t0) / 1e9, sent_span / 1e6);
  if (intended_span > 0)
    fprintf(f, "  \"target_rate_rps\": %.3f,\n",
            (double)(n - 1) * 1e6 / intended_span);
  else
    fprintf(f, "  \"target_rate_rps\": null,\n");
  if (sent_span > 0)
    fprintf(f, "  \"achieved_rate_rps\": %.3f,\n",
            (double)(n - 1) * 1e6 / sent_span);
  else
    fprintf(f, "  \"achieved_rate_rps\": null,\n");
  ge_hist_json(f, "rit_expected_us", &p->rit_expected, true);
  ge_hist_json(f, "rit_submitted_us", &L->rit_submitted, true);
  ge_hist_json(f, "send_lag_us", &L->send_lag, true);
  ge_hist_json(f, "response_us", &L->response, true);
  ge_hist_json(f, "latency_intended_us", &L->latency, false);
  fprintf(f, "}\n");
  int bad = ferror(f);
  if (fclose(f) || bad) {
    ge_err_set(e, cfg->summary, 0, NULL, "write failed: %s", strerror(errno));
    return -1;
  }
  return 0;
}
