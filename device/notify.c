/* Samplers of the notification process (notify.h). */
#include "notify.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct {
  const char *name;
  uint8_t kind, nparams;
} kinds[] = {
    {"det", NK_DET, 1},         {"exp", NK_EXP, 1},
    {"uniform", NK_UNIFORM, 2}, {"lognormal", NK_LOGNORMAL, 2},
    {"pareto", NK_PARETO, 2},
};

static int int_us(const char *s, size_t n, double *out) {
  uint64_t v = 0;

  if (n == 0 || n > 13)
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v < NOTIFY_MIN_US || v > NOTIFY_MAX_US)
    return -1;
  *out = (double)v;
  return 0;
}

/* A plain decimal (digits, one optional '.'), finite, > min. */
static int decimal(const char *s, size_t n, double min, double *out) {
  char buf[32];
  int dots = 0;
  double v = 0, scale = 1;

  if (n == 0 || n >= sizeof(buf))
    return -1;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '.' && dots++ == 0)
      continue;
    if (s[i] < '0' || s[i] > '9')
      return -1;
    if (dots)
      scale /= 10;
    v = dots ? v + (s[i] - '0') * scale : v * 10 + (s[i] - '0');
  }
  if (!(v > min) || v > 1e6 || (n == 1 && dots))
    return -1;
  *out = v;
  return 0;
}

/* Splits "a:b:c" into at most 3 parts; returns the count or -1. */
static int parts(const char *s, size_t n, const char *p[3], size_t len[3]) {
  int k = 0;
  size_t start = 0;

  for (size_t i = 0; i <= n; i++) {
    if (i == n || s[i] == ':') {
      if (k == 3)
        return -1;
      p[k] = s + start;
      len[k++] = i - start;
      start = i + 1;
    }
  }
  return k;
}

static int params(struct notify_proc *p, const char *v[3], size_t l[3],
                  char *why, size_t cap) {
  double x;

  if (int_us(v[1], l[1], &p->a) < 0) {
    snprintf(why, cap, "'%.*s' is not an integer us %d..%llu",
             (int)(l[1] > 40 ? 40 : l[1]), v[1], NOTIFY_MIN_US,
             (unsigned long long)NOTIFY_MAX_US);
    return -1;
  }
  switch (p->kind) {
  case NK_UNIFORM:
    if (int_us(v[2], l[2], &p->b) < 0 || p->b < p->a) {
      snprintf(why, cap, "B must be an integer us >= A");
      return -1;
    }
    return 0;
  case NK_LOGNORMAL:
    if (decimal(v[2], l[2], 0, &x) < 0) {
      snprintf(why, cap, "CV must be a decimal > 0");
      return -1;
    }
    p->b = sqrt(log1p(x * x));            /* sigma */
    p->a = log(p->a) - p->b * p->b / 2.0; /* mu */
    return 0;
  case NK_PARETO:
    if (decimal(v[2], l[2], 1, &x) < 0) {
      snprintf(why, cap, "ALPHA must be a decimal > 1");
      return -1;
    }
    p->a = p->a * (x - 1) / x; /* x_m */
    p->b = x;
    return 0;
  default: return 0;
  }
}

int notify_parse(const char *s, size_t n, struct notify_proc *p, char *why,
                 size_t cap) {
  const char *v[3];
  size_t l[3];
  int k = parts(s, n, v, l);

  memset(p, 0, sizeof(*p));
  for (size_t i = 0; k > 0 && i < sizeof(kinds) / sizeof(kinds[0]); i++) {
    if (strlen(kinds[i].name) != l[0] || memcmp(kinds[i].name, v[0], l[0]) != 0)
      continue;
    if (k != kinds[i].nparams + 1) {
      snprintf(why, cap, "%s takes %d parameter(s) after ':'", kinds[i].name,
               kinds[i].nparams);
      return -1;
    }
    p->kind = kinds[i].kind;
    return params(p, v, l, why, cap);
  }
  snprintf(why, cap,
           "expected det:N, exp:N, uniform:A:B, lognormal:N:CV or "
           "pareto:N:ALPHA");
  return -1;
}

uint64_t notify_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t notify_hash(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;

  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
  return h;
}

void notify_seed(struct notify_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    seed = notify_mix(seed);
    r->s[i] = seed;
  }
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0)
    r->s[0] = 1;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t notify_next(struct notify_rng *r) {
  uint64_t *s = r->s, out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in (0, 1]: never 0, so log and pow stay finite. */
static double unit(struct notify_rng *r) {
  return ((double)(notify_next(r) >> 11) + 1.0) * 0x1.0p-53;
}

int64_t notify_draw_ns(const struct notify_proc *p, struct notify_rng *r) {
  double us;

  switch (p->kind) {
  case NK_EXP: us = -p->a * log(unit(r)); break;
  case NK_UNIFORM: us = p->a + (unit(r) - 0x1.0p-53) * (p->b - p->a); break;
  case NK_LOGNORMAL: {
    double z = sqrt(-2.0 * log(unit(r))) * cos(2.0 * M_PI * unit(r));

    us = exp(p->a + p->b * z);
    break;
  }
  case NK_PARETO: us = p->a * pow(unit(r), -1.0 / p->b); break;
  default: us = p->a;
  }
  if (!(us >= 1.0))
    us = 1.0;
  if (us > (double)NOTIFY_MAX_US * 1000)
    us = (double)NOTIFY_MAX_US * 1000;
  return (int64_t)(us * 1000.0);
}
