"""Statistics of a generated workload, for expected.json (all vectorised).

Percentiles use NumPy's default definition (linear interpolation between
order statistics), computed per segment for many devices at once.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PERCENTILES", "segment_percentiles", "rit_by_segment", "counts_percentiles", "summary"]

#: Percentiles reported for RITs and service times.
PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95, 99)


def summary(mean: float | None, pct: np.ndarray | None) -> dict[str, float | None]:
    """``{"mean_us": .., "p5_us": .., ...}``; None where undefined (fewer than 1 sample)."""
    out: dict[str, float | None] = {"mean_us": None if mean is None or not np.isfinite(mean) else float(mean)}
    for p, v in zip(PERCENTILES, pct if pct is not None else [None] * len(PERCENTILES)):
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
    v = sorted_vals.astype(np.float64)
    out[ok] = v[s + lo] + (v[s + hi] - v[s + lo]) * frac
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
    keep = np.ones(d.size, dtype=bool)
    cut = ends[(counts > 0) & (ends < t_grouped.size)] - 1
    keep[cut] = False
    d = d[keep]
    seg = np.repeat(np.arange(counts.size, dtype=np.int64), n_rit)
    top = int(d.max()) if d.size else 0
    bits_v = max(1, top.bit_length())
    bits_s = max(1, int(counts.size - 1).bit_length())
    if bits_v + bits_s <= 31:
        key = (seg.astype(np.int32) << bits_v) | d.astype(np.int32)
        key.sort()
        return (key & ((1 << bits_v) - 1)).astype(np.int64), n_rit
    if bits_v + bits_s <= 63:
        key = (seg << bits_v) | d
        key.sort()
        return key & ((1 << bits_v) - 1), n_rit
    order = np.lexsort((d, seg))
    return d[order], n_rit


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

    def order_stat(j: np.ndarray) -> np.ndarray:
        # The j-th smallest sample (0-based) is the first value whose cumulative count exceeds j.
        if cum.size * j.shape[1] <= 1 << 24:
            idx = (cum[:, None, :] <= j[:, :, None]).sum(axis=2)
        else:
            idx = np.stack([np.searchsorted(c, jr, side="right") for c, jr in zip(cum, j)])
        return v[np.minimum(idx, v.size - 1)]

    vl = order_stat(lo)
    vh = order_stat(np.minimum(hi, n[ok][:, None] - 1))
    out[ok] = vl + (vh - vl) * (pos - lo)
    return out
