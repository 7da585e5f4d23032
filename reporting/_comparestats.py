"""The statistics of `wotbench compare`: the difference B - A of two samples
with a confidence interval, each function seeded and in bounded memory.

- :func:`hl_shift`: the Hodges-Lehmann shift (the median of every pairwise
  difference y_j - x_i) and its distribution-free interval from the
  Mann-Whitney statistic's normal approximation (the order statistics
  k and nm - k + 1 of the nm differences). Nothing of size nm is built:
  the k-th difference is found by bisection on its value, counting the
  differences below a value with one ``searchsorted`` (O((n+m) log n) a
  step), then snapped to the exact difference.
- :func:`quantile_diff`: a quantile's difference with a percentile-bootstrap
  interval. The bootstrap distribution of a sample's k-th order statistic
  is known exactly (P(X*_(k) <= x_(j)) = P(Binomial(n, j/n) >= k)), so each
  replicate is one draw from it: the same result as resampling n values
  per replicate, in O(n) memory.
- :func:`proportion_diff`: a difference of two proportions (error rate),
  bootstrapped the same exact way (a resample's count is Binomial(n, p)).
- :func:`mean_diff`: a difference of two means of per-second counts
  (throughput), Welch's normal interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Estimate", "hl_shift", "mw_rank", "order_quantile", "quantile_diff", "proportion_diff", "mean_diff",
           "BOOTSTRAP"]

#: Bootstrap replicates of each interval (draws, not resamples: cheap).
BOOTSTRAP = 10_000


@dataclass(frozen=True)
class Estimate:
    """B - A: the point estimate and its (1 - alpha) confidence interval."""

    diff: float
    lo: float
    hi: float
    p_value: float | None = None
    """The two-sided Mann-Whitney p-value (Hodges-Lehmann rows only)."""

    @property
    def significant(self) -> bool:
        """The interval excludes 0."""
        return self.lo > 0 or self.hi < 0


def _count_le(x: np.ndarray, y: np.ndarray, d: float) -> int:
    """#{(i, j): y_j - x_i <= d} for sorted ``x``."""
    return int(x.size * y.size - np.searchsorted(x, y - d, side="left").sum())


def _kth_diff(x: np.ndarray, y: np.ndarray, k: int, whole: bool = False) -> float:
    """The k-th smallest (1-based) of the pairwise differences y_j - x_i,
    ``x`` and ``y`` sorted; ``whole``: every value is a whole number."""
    lo, hi = float(y[0] - x[-1]), float(y[-1] - x[0])
    if _count_le(x, y, lo) >= k:
        return lo
    # Invariant: count(<= lo) < k <= count(<= hi). Whole numbers: bisect to hi - lo = 1, and hi
    # is the answer; else to a width of 1e-9 relative, then snap to the difference there.
    for _ in range(200):
        mid = math.floor((lo + hi) / 2) if whole else lo + (hi - lo) / 2
        if mid <= lo or mid >= hi or (not whole and hi - lo <= 1e-9 * max(1.0, abs(hi))):
            break
        if _count_le(x, y, mid) >= k:
            hi = mid
        else:
            lo = mid
    if whole:
        return hi
    # The largest difference <= hi: for each y_j the smallest x_i >= y_j - hi.
    idx = np.searchsorted(x, y - hi, side="left")
    ok = idx < x.size
    return float(np.max(y[ok] - x[idx[ok]]))


def mw_rank(n: int, m: int, alpha: float) -> int:
    """k of the Mann-Whitney (1 - alpha) interval of the Hodges-Lehmann
    shift (the k-th and (nm - k + 1)-th smallest pairwise differences), by
    the normal approximation; below 1 when n and m values are too few for
    an interval at that confidence (4 and 4 at alpha 0.05)."""
    nm = n * m
    z = float(stats.norm.ppf(1 - alpha / 2))
    return int(math.floor(nm / 2 - z * math.sqrt(nm * (n + m + 1) / 12)))


def hl_shift(x: np.ndarray, y: np.ndarray, alpha: float) -> Estimate:
    """The Hodges-Lehmann shift of ``y`` against ``x`` (y - x), its
    Mann-Whitney interval (normal approximation without the ties'
    correction, which makes it slightly wider) and the Mann-Whitney p-value."""
    xs, ys = np.sort(np.asarray(x, dtype=np.float64)), np.sort(np.asarray(y, dtype=np.float64))
    n, m = xs.size, ys.size
    nm = n * m
    whole = bool(np.all(xs == np.round(xs)) and np.all(ys == np.round(ys))
                 and max(abs(xs[0]), abs(xs[-1]), abs(ys[0]), abs(ys[-1])) < 2.0**50)

    def kth(k: int) -> float:
        return _kth_diff(xs, ys, k, whole)

    est = kth((nm + 1) // 2) if nm % 2 else (kth(nm // 2) + kth(nm // 2 + 1)) / 2
    k = mw_rank(n, m, alpha)
    if k < 1:           # too few values for this confidence: the interval is every difference
        lo, hi = float(ys[0] - xs[-1]), float(ys[-1] - xs[0])
    else:
        lo, hi = kth(k), kth(nm - k + 1)
    p = float(stats.mannwhitneyu(ys, xs, alternative="two-sided", method="asymptotic").pvalue)
    return Estimate(est, lo, hi, p)


def _rank(n: int, q: float) -> int:
    return min(n, max(1, math.ceil(q * n)))


def order_quantile(xs: np.ndarray, q: float) -> float:
    """The q-quantile of sorted ``xs``: its k-th smallest, k = ceil(q n)."""
    return float(xs[_rank(xs.size, q) - 1])


def _order_stat_draws(xs: np.ndarray, q: float, rng: np.random.Generator, reps: int) -> tuple[float, np.ndarray]:
    """The q-quantile of sorted ``xs`` (order_quantile) and ``reps`` draws
    from its exact bootstrap distribution."""
    n = xs.size
    k = _rank(n, q)
    j = np.arange(n + 1)
    cdf = np.asarray(stats.binom.sf(k - 1, n, j / n), dtype=np.float64)   # P(X*_(k) <= x_(j)); 0 at j = 0
    cdf[-1] = 1.0
    pick = np.searchsorted(cdf, rng.random(reps), side="left")
    return order_quantile(xs, q), xs[np.clip(pick, 1, n) - 1]


def _interval(draws: np.ndarray, alpha: float) -> tuple[float, float]:
    lo, hi = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    return float(lo), float(hi)


def quantile_diff(x: np.ndarray, y: np.ndarray, q: float, alpha: float, rng: np.random.Generator,
                  reps: int = BOOTSTRAP) -> tuple[float, float, Estimate]:
    """The q-quantiles of ``x`` and ``y`` and their difference with a
    percentile-bootstrap interval."""
    qa, da = _order_stat_draws(np.sort(np.asarray(x, dtype=np.float64)), q, rng, reps)
    qb, db = _order_stat_draws(np.sort(np.asarray(y, dtype=np.float64)), q, rng, reps)
    lo, hi = _interval(db - da, alpha)
    return qa, qb, Estimate(qb - qa, lo, hi)


def proportion_diff(ka: int, na: int, kb: int, nb: int, alpha: float, rng: np.random.Generator,
                    reps: int = BOOTSTRAP) -> Estimate:
    """The difference of the proportions kb/nb - ka/na, bootstrapped."""
    pa, pb = ka / na, kb / nb
    draws = rng.binomial(nb, pb, reps) / nb - rng.binomial(na, pa, reps) / na
    lo, hi = _interval(draws, alpha)
    return Estimate(pb - pa, lo, hi)


def mean_diff(a: np.ndarray, b: np.ndarray, alpha: float) -> Estimate:
    """mean(b) - mean(a) with Welch's normal interval (a single value each:
    no spread known, an infinite interval)."""
    d = float(b.mean() - a.mean())
    if a.size < 2 or b.size < 2:
        return Estimate(d, -math.inf, math.inf)
    se = math.sqrt(float(a.var(ddof=1)) / a.size + float(b.var(ddof=1)) / b.size)
    z = float(stats.norm.ppf(1 - alpha / 2))
    return Estimate(d, d - z * se, d + z * se)
