/* Summary JSON (fields documented in README.md): counters (written by
 * counters.c), rates, and the expected-versus-submitted inter-arrival
 * comparison of the paper's Table 1. Percentiles interpolate linearly
 * between order statistics, as NumPy's default does, so Python can
 * recompute them exactly. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ge.h"

/* LSD radix sort, skipping byte positions where all keys agree. */
static int sort_u64(uint64_t *v, size_t n) {
  uint64_t *tmp = malloc(n * sizeof *tmp), *src = v, *dst = tmp;
  if (!tmp)
    return -1;
  for (unsigned shift = 0; shift < 64; shift += 8) {
    size_t count[256] = {0};
    for (size_t i = 0; i < n; i++)
      count[(src[i] >> shift) & 0xff]++;
    if (count[(src[0] >> shift) & 0xff] == n)
      continue;
    size_t sum = 0;
    for (unsigned b = 0; b < 256; b++) {
      size_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 0xff]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != v)
    memcpy(v, src, n * sizeof *v);
  free(tmp);
  return 0;
}

/* q in [0,1] of sorted v, in the unit of v. */
static double pct(const uint64_t *v, size_t n, double q) {
  double pos = q * (double)(n - 1);
  size_t lo = (size_t)pos;
  size_t hi = lo + 1 < n ? lo + 1 : n - 1;
  double f = pos - (double)lo;
  return (double)v[lo] + ((double)v[hi] - (double)v[lo]) * f;
}

/* Distribution of n values in us as a JSON object; sorts v. */
static void dist(FILE *f, const char *name, uint64_t *v, size_t n,
                 bool with_mean, bool more) {
  fprintf(f, "  \"%s\": ", name);
  if (n == 0 || sort_u64(v, n)) {
    fprintf(f, "null%s\n", more ? "," : "");
    return;
  }
  long double sum = 0;
  for (size_t i = 0; i < n; i++)
    sum += v[i];
  fprintf(f, "{\"count\": %zu", n);
  if (with_mean)
    fprintf(f, ", \"mean\": %.3f", (double)(sum / n));
  static const struct {
    const char *k;
    double q;
  } qs[] = {{"p5", .05}, {"p50", .5}, {"p95", .95}, {"p99", .99}};
  for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++)
    fprintf(f, ", \"%s\": %.3f", qs[i].k, pct(v, n, qs[i].q));
  fprintf(f, ", \"max\": %llu}%s\n", (unsigned long long)v[n - 1],
          more ? "," : "");
}

void ge_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

int ge_stats_write(const struct ge_loop *L, int fd, struct ge_err *e) {
  const struct ge_plan *p = L->plan;
  const struct ge_config *cfg = L->cfg;
  size_t n = p->n;
  char cpus[CPULIST_TEXT_MAX];
  uint64_t *v = malloc((n ? n : 1) * sizeof *v);
  int dfd = dup(fd);
  FILE *f = dfd >= 0 ? fdopen(dfd, "w") : NULL;
  if (!v || !f) {
    ge_err_set(e, cfg->summary, 0, NULL, "cannot write: %s", strerror(errno));
    free(v);
    if (dfd >= 0 && !f)
      close(dfd);
    if (f)
      fclose(f);
    return -1;
  }
  double intended_span = n > 1 ? (double)(p->ts_us[n - 1] - p->ts_us[0]) : 0;
  double sent_span = n > 1 ? (double)(ge_us(L->slots[n - 1].sent_ns) -
                                      ge_us(L->slots[0].sent_ns))
                           : 0;
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
  ge_counters_json(f, &L->c);
  ge_rt_json(f, &L->rt);
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

  size_t m = 0;
  for (size_t i = 1; i < n; i++)
    v[m++] = p->ts_us[i] - p->ts_us[i - 1];
  dist(f, "rit_expected_us", v, m, true, true);
  m = 0;
  for (size_t i = 1; i < n; i++)
    v[m++] =
        (uint64_t)(ge_us(L->slots[i].sent_ns) - ge_us(L->slots[i - 1].sent_ns));
  dist(f, "rit_submitted_us", v, m, true, true);
  for (size_t i = 0; i < n; i++)
    v[i] = (uint64_t)(ge_us(L->slots[i].sent_ns) - (int64_t)p->ts_us[i]);
  dist(f, "send_lag_us", v, n, true, true);
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (L->slots[i].recv_ns >= 0)
      v[m++] =
          (uint64_t)(ge_us(L->slots[i].recv_ns) - ge_us(L->slots[i].sent_ns));
  dist(f, "response_us", v, m, true, true);
  m = 0;
  for (size_t i = 0; i < n; i++)
    if (L->slots[i].recv_ns >= 0)
      v[m++] = (uint64_t)(ge_us(L->slots[i].recv_ns) - (int64_t)p->ts_us[i]);
  dist(f, "latency_intended_us", v, m, true, false);
  fprintf(f, "}\n");
  free(v);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    ge_err_set(e, cfg->summary, 0, NULL, "write failed: %s", strerror(errno));
    return -1;
  }
  return 0;
}
