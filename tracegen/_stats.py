"""Statistics of a generated workload, for expected.json (all vectorised).

Percentiles use NumPy's default definition (linear interpolation between
order statistics), computed per segment for many devices at once.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["PERCENTILES", "segment_percentiles", "rit_by_segment", "counts_percentiles", "summary",
           "percentiles_inplace"]

#: Percentiles reported for RITs and service times.
PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95, 99)

_Int = TypeVar("_Int", np.int32, np.int64)


def summary(mean: float | None, pct: np.ndarray | None) -> dict[str, float | None]:
    """``{"mean_us": .., "p5_us": .., ...}``; None where undefined (fewer than 1 sample)."""
    out: dict[str, float | None] = {"mean_us": None if mean is None or not np.isfinite(mean) else float(mean)}
    for p, v in zip(PERCENTILES, pct if pct is not None else [None] * len(PERCENTILES), strict=True):
        out[f"p{p}_us"] = None if v is None or not np.isfinite(v) else float(v)
    return out


def segment_percentiles(sorted_vals: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Percentiles (segments x PERCENTILES) of consecutive ascending segments; NaN if empty."""
    counts = np.asarray(counts, dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    q = np.asarray(PERCENTILES, dtype=np.float64) / 100.0
    out = np.full((counts.size, q.size), np.nan)
    ok = counts > 0
    if not ok.any() or sorted_vals.size == 0:
        return out
    c = counts[ok][:, None]
    s = starts[ok][:, None]
    pos = q[None, :] * (c - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, c - 1)
    frac = pos - lo
    vl = sorted_vals[s + lo].astype(np.float64)
    vh = sorted_vals[s + hi].astype(np.float64)
    out[ok] = vl + (vh - vl) * frac
    return out


def rit_by_segment(t_grouped: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """RITs of each stream, each stream's RITs sorted ascending, and their counts.

    ``t_grouped`` holds the send times of stream 0, then stream 1, ... each
    ascending; ``counts`` the number of sends of each stream.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_rit = np.maximum(counts - 1, 0)
    if t_grouped.size < 2:
        return np.empty(0, dtype=np.int64), n_rit
    d = np.diff(t_grouped)
    ends = np.cumsum(counts)
    # Drop the differences that straddle two streams.
    d = np.delete(d, ends[(counts > 0) & (ends < t_grouped.size)] - 1)
    top = int(d.max()) if d.size else 0
    bits_v = max(1, top.bit_length())
    bits_s = max(1, int(counts.size - 1).bit_length())
    # Sort every stream's RITs at once: one sort of (stream, value) keys,
    # in 32 bits when they fit (about twice as fast as 64).
    if bits_v + bits_s <= 31:
        return _sort_by_stream(d.astype(np.int32), n_rit, bits_v), n_rit
    if bits_v + bits_s <= 63:
        return _sort_by_stream(d.astype(np.int64), n_rit, bits_v), n_rit
    seg = np.repeat(np.arange(counts.size, dtype=np.int64), n_rit)
    return d[np.lexsort((d, seg))], n_rit


def _sort_by_stream(key: npt.NDArray[_Int], n_rit: npt.NDArray[np.int64], bits_v: int) -> npt.NDArray[_Int]:
    """Sort each stream's values (``n_rit[i]`` of stream i, in stream order)
    in place: stream i's index goes in the bits above ``bits_v``."""
    key |= np.repeat(np.arange(n_rit.size, dtype=key.dtype) << bits_v, n_rit)
    key.sort()
    key &= (1 << bits_v) - 1
    return key


def percentiles_inplace(a: np.ndarray) -> np.ndarray | None:
    """PERCENTILES of ``a`` (NumPy's linear definition), partitioning ``a`` in place
    instead of copying it as np.percentile does; None if ``a`` is empty."""
    n = a.size
    if n == 0:
        return None
    pos = np.asarray(PERCENTILES, dtype=np.float64) / 100.0 * (n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    a.partition(np.unique(np.concatenate((lo, hi))))
    vl, vh = a[lo].astype(np.float64), a[hi].astype(np.float64)
    return vl + (vh - vl) * (pos - lo)


def counts_percentiles(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Percentiles of samples given as counts per value (rows x len(values)); values ascending."""
    counts = np.atleast_2d(counts).astype(np.int64)
    cum = np.cumsum(counts, axis=1)
    n = cum[:, -1]
    q = np.asarray(PERCENTILES, dtype=np.float64) / 100.0
    out = np.full((counts.shape[0], q.size), np.nan)
    ok = n > 0
    if not ok.any():
        return out
    cum = cum[ok]
    pos = q[None, :] * (n[ok][:, None] - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = lo + 1
    v = values.astype(np.float64)

    def order_stat(j: np.ndarray) -> npt.NDArray[np.float64]:
        # The j-th smallest sample (0-based) is the first value whose cumulative count exceeds j.
        idx: npt.NDArray[np.intp]
        if cum.size * j.shape[1] <= 1 << 24:
            idx = (cum[:, None, :] <= j[:, :, None]).sum(axis=2)
        else:
            idx = np.stack([np.searchsorted(c, jr, side="right") for c, jr in zip(cum, j, strict=True)])
        return v[np.minimum(idx, v.size - 1)]

    vl = order_stat(lo)
    vh = order_stat(np.minimum(hi, n[ok][:, None] - 1))
    out[ok] = vl + (vh - vl) * (pos - lo)
    return out
