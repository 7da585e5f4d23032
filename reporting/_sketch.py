"""Streaming statistics with bounded memory: quantiles that are exact while
the values fit a budget and then come from a log-linear histogram, and
uniform random samples of bounded size (bottom-k), both per group (device).

The histogram is HdrHistogram's idea done with the bits of a float64: the
bucket of ``|v|`` is its exponent and the top ``SUB_BITS`` bits of its
mantissa, so each power of two holds 2**SUB_BITS equal buckets and a
bucket's width is at most 2**-SUB_BITS of the values in it. Quantiles
report the bucket's midpoint, hence

    |q_approx - x| <= REL_ERROR * |x|     (REL_ERROR = 2**-(SUB_BITS+1) = 0.098 %)

for the order statistic x it stands for; numpy's linear interpolation
between two order statistics x_lo <= x_hi (``np.percentile``'s default)
is reproduced on the approximations, so the error of a percentile is at
most REL_ERROR * max(|x_lo|, |x_hi|). Values below 2**EMIN in magnitude
count as 0 (absolute error < 2**EMIN); values beyond 2**EMAX share the top
bucket, and every quantile is clipped to the exact min and max. Counts,
sums (means), min and max are always exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["SUB_BITS", "REL_ERROR", "EMIN", "EMAX", "bucket_of", "bucket_value", "hist_percentiles",
           "GroupQuantiles", "Dist", "BottomK"]

SUB_BITS = 9
REL_ERROR = 2.0 ** -(SUB_BITS + 1)
EMIN = -24
"""|v| < 2**-24 counts as 0 (R_d is a ratio; times are whole microseconds)."""
EMAX = 40
"""|v| >= 2**40 (12.7 days in us) shares the top bucket."""
_SHIFT = 52 - SUB_BITS
_K0 = (1023 + EMIN) << SUB_BITS
NPOS = (EMAX - EMIN) << SUB_BITS
NBUCKETS = 2 * NPOS + 1
ZERO = NPOS


def bucket_of(v: np.ndarray, nonnegative: bool = False) -> np.ndarray:
    """The bucket (0 .. NBUCKETS-1, monotone in v) of each finite value
    (``nonnegative``: the caller knows none is below 0, or -0.0: fewer passes)."""
    v = np.asarray(v, dtype=np.float64)
    a = v if nonnegative else np.abs(v)
    k = a.view(np.int64) >> _SHIFT
    k -= _K0 - 1                                      # 0: below 2**EMIN; 1..NPOS above
    np.clip(k, 0, NPOS, out=k)
    if nonnegative:
        k += ZERO
        return k
    return np.where(np.signbit(v), ZERO - k, ZERO + k)


def _bucket_values() -> npt.NDArray[np.float64]:
    k = np.arange(NPOS, dtype=np.int64) + _K0
    lo = (k << _SHIFT).view(np.float64)
    hi = ((k + 1) << _SHIFT).view(np.float64)
    mid = (lo + hi) / 2.0
    return np.concatenate([-mid[::-1], [0.0], mid])


_VALUES = _bucket_values()


def bucket_value(b: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """The value a bucket stands for (its midpoint; 0 for the zero bucket)."""
    return _VALUES[b]


def hist_percentiles(counts: np.ndarray, offset: int, q: Sequence[float] | np.ndarray,
                     vmin: float, vmax: float) -> np.ndarray:
    """Percentiles (0..100, numpy's linear method) of the values counted in
    ``counts`` (buckets ``offset .. offset+len-1``), clipped to [vmin, vmax]."""
    cum = np.cumsum(counts)
    n = int(cum[-1]) if cum.size else 0
    q = np.asarray(q, dtype=np.float64)
    if n == 0:
        return np.full(q.shape, np.nan)
    h = (n - 1) * q / 100.0
    lo = np.floor(h)
    x_lo = _VALUES[offset + np.searchsorted(cum, lo, side="right")]
    x_hi = _VALUES[offset + np.searchsorted(cum, np.ceil(h), side="right")]
    return np.clip(x_lo + (h - lo) * (x_hi - x_lo), vmin, vmax)


@dataclass(frozen=True)
class Dist:
    """n, sum, min, max (exact) and percentiles of one group's values."""

    n: int
    mean: float
    min: float
    max: float
    q: dict[float, float]
    exact: bool


def _grow(a: np.ndarray, n: int, fill: float = 0) -> np.ndarray:
    if a.shape[0] >= n:
        return a
    out = np.full((max(n, 2 * a.shape[0]), *a.shape[1:]), fill, dtype=a.dtype)
    out[:a.shape[0]] = a
    return out


class GroupQuantiles:
    """Values per group (0 .. groups-1): exact while at most ``exact_max``
    values in all are held, then per-group log-linear histograms over the
    buckets the values used so far (memory: groups x that span)."""

    def __init__(self, exact_max: int = 1 << 21) -> None:
        self.exact_max = exact_max
        self._vals: list[np.ndarray] = []
        self._grps: list[np.ndarray] = []
        self._held = 0
        self.groups = 0
        self.n = np.zeros(0, np.int64)
        self.sum = np.zeros(0, np.float64)
        self.vmin = np.inf
        self.vmax = -np.inf
        self._hist: np.ndarray | None = None   # (groups, span) int64
        self._off = 0

    @property
    def exact(self) -> bool:
        return self._hist is None

    def add(self, groups: np.ndarray, values: np.ndarray) -> None:
        """Add finite ``values``, ``groups[i]`` the group of ``values[i]``."""
        if values.size == 0:
            return
        g = np.asarray(groups, dtype=np.int64)
        top = int(g.max()) + 1
        if top > self.groups:
            self.groups = top
        self.n = _grow(self.n, self.groups)
        self.sum = _grow(self.sum, self.groups)
        self.n[:top] += np.bincount(g, minlength=top)
        self.sum[:top] += np.bincount(g, weights=values, minlength=top)
        lo = float(values.min())
        self.vmin = min(self.vmin, lo)
        self.vmax = max(self.vmax, float(values.max()))
        if self._hist is None:
            self._vals.append(np.asarray(values, dtype=np.float64))
            self._grps.append(g.astype(np.int32))
            self._held += values.size
            if self._held > self.exact_max:
                vals, grps = np.concatenate(self._vals), np.concatenate(self._grps)
                self._vals, self._grps, self._held = [], [], 0
                self._hist = np.zeros((0, 0), np.int64)
                self._count(grps.astype(np.int64), vals, self.vmin >= 0)
            return
        self._count(g, values, lo >= 0)

    def _count(self, g: np.ndarray, values: np.ndarray, nonnegative: bool) -> None:
        assert self._hist is not None
        b = bucket_of(values, nonnegative)
        lo, hi = int(b.min()), int(b.max()) + 1
        h = self._hist
        if h.shape[1] == 0:
            self._off, span = lo, hi - lo
            h = np.zeros((self.groups, span), np.int64)
        elif lo < self._off or hi > self._off + h.shape[1]:
            new_off = min(lo, self._off)
            span = max(hi, self._off + h.shape[1]) - new_off
            grown = np.zeros((h.shape[0], span), np.int64)
            grown[:, self._off - new_off:self._off - new_off + h.shape[1]] = h
            h, self._off = grown, new_off
        if h.shape[0] < self.groups:
            h = _grow(h, self.groups)
        span = h.shape[1]
        if self.groups == 1:                # one group (a GE's own stream): no flat index
            h[0] += np.bincount(b - self._off, minlength=span)
        else:
            flat = np.bincount(g * span + (b - self._off), minlength=self.groups * span)
            h[:self.groups] += flat.reshape(self.groups, span)
        self._hist = h

    def dists(self, q: Sequence[float]) -> list[Dist | None]:
        """Per group (None for a group without values)."""
        out: list[Dist | None] = [None] * self.groups
        if self._hist is None:
            if not self._vals:
                return out
            vals, grps = np.concatenate(self._vals), np.concatenate(self._grps)
            order = np.argsort(grps, kind="stable")
            vals, grps = vals[order], grps[order]
            bounds = np.flatnonzero(np.diff(grps)) + 1
            for s, e in zip(np.concatenate(([0], bounds)), np.concatenate((bounds, [grps.size])), strict=True):
                x = vals[s:e]
                qs = np.percentile(x, q) if q else []
                out[int(grps[s])] = Dist(int(x.size), float(x.mean()), float(x.min()), float(x.max()),
                                         dict(zip(q, map(float, qs), strict=True)), True)
            return out
        for i in range(self.groups):
            n = int(self.n[i])
            if n == 0:
                continue
            c = self._hist[i]
            nz = np.flatnonzero(c)
            vmin, vmax = float(_VALUES[self._off + nz[0]]), float(_VALUES[self._off + nz[-1]])
            qs = hist_percentiles(c, self._off, q, min(vmin, vmax), max(vmin, vmax)) if q else []
            out[i] = Dist(n, float(self.sum[i] / n), vmin, vmax, dict(zip(q, map(float, qs), strict=True)), False)
        return out

    def total(self, q: Sequence[float] | np.ndarray) -> Dist | None:
        """All groups together (min and max exact)."""
        n = int(self.n[:self.groups].sum())
        if n == 0:
            return None
        qs: np.ndarray
        if self._hist is None:
            x = np.concatenate(self._vals)
            qs = np.percentile(x, q) if len(q) else np.zeros(0)
            return Dist(n, float(x.mean()), float(x.min()), float(x.max()), dict(zip(q, map(float, qs), strict=True)),
                        True)
        qs = hist_percentiles(self._hist[:self.groups].sum(axis=0), self._off, q, self.vmin, self.vmax)
        return Dist(n, float(self.sum[:self.groups].sum() / n), self.vmin, self.vmax,
                    dict(zip(q, map(float, qs), strict=True)), False)


class BottomK:
    """A uniform random sample without replacement of at most ``k`` rows per
    group: each row gets a fixed-seed uniform key (in arrival order, so the
    sample does not depend on how the rows were chunked) and the ``k``
    smallest keys of each group are kept. ``k`` may shrink as groups appear."""

    def __init__(self, k: int, ncols: int, seed: int = 0) -> None:
        self.k = k
        self._rng = np.random.default_rng(seed)
        self._key = np.zeros(0)
        self._grp = np.zeros(0, np.int64)
        self._cols = [np.zeros(0) for _ in range(ncols)]
        self._thr = np.zeros(0)    # per group: keys at or above it cannot enter
        self._fresh = 0
        self._pruned_k = -1

    def keys(self, n: int) -> np.ndarray:
        """The keys of the next ``n`` rows (draw them in row order, then permute with the rows)."""
        return self._rng.random(n)

    def add(self, keys: np.ndarray, groups: np.ndarray, cols: Sequence[np.ndarray]) -> None:
        if keys.size == 0:
            return
        g = np.asarray(groups, dtype=np.int64)
        self._thr = _grow(self._thr, int(g.max()) + 1, np.inf)
        keep = keys < self._thr[g]
        self._key = np.concatenate([self._key, keys[keep]])
        self._grp = np.concatenate([self._grp, g[keep]])
        self._cols = [np.concatenate([c, x[keep]]) for c, x in zip(self._cols, cols, strict=True)]
        self._fresh += int(np.count_nonzero(keep))
        if self._fresh > max(1 << 16, self._key.size // 2):
            self._prune()

    def _prune(self) -> None:
        # (group, key) order by one float sort: keys are in [0, 1), so
        # group + key orders by group first; exact for groups < 2**20
        # (the key keeps 32 of its bits), else the two-key lexsort.
        if self._grp.size and int(self._grp.max()) < 1 << 20:
            order = np.argsort(self._grp + self._key)
        else:
            order = np.lexsort((self._key, self._grp))
        grp = self._grp[order]
        start = np.concatenate(([0], np.flatnonzero(np.diff(grp)) + 1))
        rank = np.arange(grp.size) - np.repeat(start, np.diff(np.concatenate((start, [grp.size]))))
        sel = order[rank < self.k]
        self._key, self._grp = self._key[sel], self._grp[sel]
        self._cols = [c[sel] for c in self._cols]
        full = np.bincount(self._grp, minlength=self._thr.size) >= self.k
        self._thr[:] = np.inf
        if full.any():
            last = np.full(self._thr.size, -np.inf)
            np.maximum.at(last, self._grp, self._key)
            self._thr[full] = last[full]
        self._fresh = 0
        self._pruned_k = self.k

    def sample(self, group: int = 0) -> list[np.ndarray]:
        """The kept rows of ``group`` (in key order)."""
        if self._fresh or self._pruned_k != self.k:
            self._prune()
        lo, hi = np.searchsorted(self._grp, [group, group + 1])   # sorted by (group, key) since the prune
        return [c[lo:hi] for c in self._cols]
