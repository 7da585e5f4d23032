"""validate-cd's reference detector: what the devices' own requests show.

The contention detector watches the CD node, not the devices. To tell a
detector that misses from an episode that cannot be seen in a trial at
all, each trial's devices' R - S is also put to a change test that needs
neither the CD node nor any other trial: a scan for one segment of the
measurement phase in which more requests than elsewhere exceed the
phase's own ``QUANTILE`` of R - S (the tail a doubled p99 lives in).

For every segment ``[a, b)`` on a ``GRID_US`` grid (both it and the rest
of the phase at least ``MIN_SEGMENT_US`` long) the Bernoulli log-likelihood
ratio of "a higher exceedance rate inside than outside" against "one rate"
is computed; the statistic is its maximum over the segments. Its p-value
is a permutation test: the exceedance labels shuffled over the same
request times (``PERMUTATIONS``, a fixed seed), which is exact when the
requests of a quiet trial are exchangeable. A shuffle is drawn as what
the statistic reads of it, the exceedances per grid bin (multivariate
hypergeometric over the bins' request counts: the same distribution), so
the work grows with the grid, not with the requests. The segment of the maximum is
the change's place; its start is the onset. Parameters are set here, not
chosen on the trials. Pure and vectorised.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from wotbench.studies import vcd_truth as truth

__all__ = ["QUANTILE", "GRID_US", "MIN_SEGMENT_US", "PERMUTATIONS", "ALPHA", "RULE", "Scan", "scan"]

QUANTILE = 0.98
GRID_US = 0.5e6
MIN_SEGMENT_US = 2e6
PERMUTATIONS = 999
#: A change is declared at p <= ALPHA (the false-alarm target, vcd_score.FA_MAX).
ALPHA = 0.05
#: At most this many grid edges (a longer phase gets a coarser grid).
_MAX_EDGES = 100
#: Permutations per block (bounds the memory to ~ block x segments floats).
_BLOCK = 100

RULE = (f"the devices' own change test: the share of requests whose R - S exceeds the phase's own "
        f"q{QUANTILE * 100:g}, higher in one segment (on a {GRID_US / 1e6:g} s grid, it and the rest >= "
        f"{MIN_SEGMENT_US / 1e6:g} s) than outside it; max Bernoulli log-likelihood ratio, p-value by "
        f"{PERMUTATIONS} permutations of the exceedances over the request times; a change at p <= {ALPHA:g}, "
        "its onset the segment's start; no CD node and no other trial used")


@dataclass(frozen=True)
class Scan:
    n: int
    """Requests scanned."""
    p_value: float
    llr: float
    start_us: float | None
    """The segment of the maximum, us from the measurement start (None: no segment)."""
    end_us: float | None
    exceed_in: float
    """Share of the segment's requests above the threshold."""
    exceed_out: float

    @property
    def changed(self) -> bool:
        return self.p_value <= ALPHA

    def to_dict(self) -> dict[str, Any]:
        d = {**asdict(self), "changed": self.changed}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _xlogx(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """k log(k/n) + (n-k) log(1-k/n), 0 log 0 = 0 (the Bernoulli maximum log-likelihood)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(k > 0, k * np.log(k / n), 0.0)
        b = np.where(n - k > 0, (n - k) * np.log((n - k) / n), 0.0)
    return a + b


def _llr(counts: np.ndarray, sizes: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Per row of ``counts`` (exceedances up to each edge) the one-sided LLR of every segment."""
    a, b = pairs[:, 0], pairs[:, 1]
    total, n = counts[:, -1:], sizes[-1]
    k_in = counts[:, b] - counts[:, a]
    n_in = (sizes[b] - sizes[a]).astype(np.float64)
    k_out, n_out = total - k_in, n - n_in
    llr = _xlogx(k_in, n_in) + _xlogx(k_out, n_out) - _xlogx(total, np.full_like(total, float(n)))
    return np.where(k_in * n_out > k_out * n_in, llr, 0.0)


def scan(rs: truth.DeviceRS, seed: int = 0) -> Scan:
    """The change test of one trial's devices' R - S (module docstring)."""
    order = np.argsort(rs.t_us, kind="stable")
    t, x = rs.t_us[order], rs.rs_us[order]
    if t.size < 2:
        return Scan(int(t.size), 1.0, math.nan, None, None, math.nan, math.nan)
    span = float(t[-1] - t[0])
    grid = max(GRID_US, span / (_MAX_EDGES - 1))
    # The grid from the first request, closed just after the last (its last bin may be short).
    edges = np.append(t[0] + np.arange(0.0, span, grid), t[-1] + 1.0)
    sizes = np.searchsorted(t, edges, side="left")
    sizes[-1] = t.size
    a, b = np.triu_indices(edges.size, 1)
    length = edges[b] - edges[a]
    ok = (length >= MIN_SEGMENT_US) & (edges[-1] - edges[0] - length >= MIN_SEGMENT_US)
    pairs = np.stack([a[ok], b[ok]], axis=1)
    exceed = x > np.quantile(x, QUANTILE)
    if pairs.size == 0 or not exceed.any():
        return Scan(int(t.size), 1.0, 0.0, None, None, math.nan, math.nan)
    zero = np.zeros(1, dtype=np.int64)
    observed = _llr(np.concatenate([zero, np.cumsum(exceed)])[sizes][None, :], sizes, pairs)[0]
    best = int(np.argmax(observed))
    stat = float(observed[best])
    rng = np.random.default_rng(seed)
    hits = 0
    bins = np.diff(sizes)
    k_all = int(np.count_nonzero(exceed))
    for done in range(0, PERMUTATIONS, _BLOCK):
        m = min(_BLOCK, PERMUTATIONS - done)
        per_bin = rng.multivariate_hypergeometric(bins, k_all, size=m, method="marginals")
        c = np.concatenate([np.zeros((m, 1), dtype=np.int64), np.cumsum(per_bin, axis=1)], axis=1)
        hits += int(np.count_nonzero(_llr(c, sizes, pairs).max(axis=1) >= stat - 1e-9))
    i, j = pairs[best]
    inside = slice(int(sizes[i]), int(sizes[j]))
    n_in = sizes[j] - sizes[i]
    k_in = int(np.count_nonzero(exceed[inside]))
    return Scan(int(t.size), (1 + hits) / (1 + PERMUTATIONS), stat, float(edges[i]), float(edges[j]),
                k_in / n_in if n_in else math.nan,
                (k_all - k_in) / (t.size - n_in) if t.size > n_in else math.nan)
