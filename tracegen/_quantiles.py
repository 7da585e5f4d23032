"""Per-key quantiles of non-negative integer samples in bounded memory.

A key's samples are kept as they are while it has at most
:data:`EXACT_SAMPLES` of them: its quantiles are then NumPy's (linear
interpolation), exactly. Past that the key's samples become a sparse
log-linear histogram: values below ``2 ** (SUB_BITS + 1)`` (512 us) in
buckets of one, above in :data:`SUB_BITS`-bit buckets (256 per power of
two), each read as its midpoint, so a quantile is within
``2 ** -(SUB_BITS + 1)`` (0.2 %) of the exact one, relative. Memory per
key: at most EXACT_SAMPLES values, or one count per bucket hit (at most
256 per power of two the samples span).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["EXACT_SAMPLES", "SUB_BITS", "Quantiles"]

EXACT_SAMPLES = 4096
SUB_BITS = 8
_SUB = 1 << SUB_BITS


def _bucket(v: np.ndarray) -> np.ndarray:
    """The bucket of each value (int64 >= 0)."""
    _, bits = np.frexp(v.astype(np.float64))          # exact: the values are below 2 ** 53
    e = np.maximum(bits.astype(np.int64) - (SUB_BITS + 1), 0)
    return e * _SUB + (v >> e)


def _value(b: np.ndarray) -> np.ndarray:
    """The value a bucket stands for: itself below 2 ** (SUB_BITS + 1), else its midpoint."""
    e = np.maximum(b // _SUB - 1, 0)
    m = b - e * _SUB
    return np.where(e == 0, b, ((m << e) + ((m + 1) << e) - 1) / 2.0).astype(np.float64)


@dataclass
class Quantiles:
    """Samples added per key (:meth:`add`); quantiles read per key."""

    count: int = 0
    total: int = 0
    _raw: dict[int, list[np.ndarray]] = field(default_factory=dict)
    _n: dict[int, int] = field(default_factory=dict)
    _hist: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    _one: dict[int, list[int]] = field(default_factory=dict)     # add_one's values not yet added

    def add_one(self, key: int, value: int) -> None:
        """One sample (gathered, added a thousand at a time)."""
        got = self._one.setdefault(key, [])
        got.append(value)
        if len(got) >= 1024:
            self._flush()

    def _flush(self) -> None:
        one, self._one = self._one, {}
        for key, values in one.items():
            self.add(np.full(len(values), key, np.int64), np.array(values, np.int64))

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """One sample per (key, value) pair."""
        if not keys.size:
            return
        self.count += int(values.size)
        self.total += int(values.sum())
        order = np.argsort(keys, kind="stable")
        k, v = keys[order], values[order].astype(np.int64)
        uniq, start = np.unique(k, return_index=True)
        ends = np.append(start[1:], k.size)
        for key, a, b in zip(uniq.tolist(), start.tolist(), ends.tolist(), strict=True):
            self._add(key, v[a:b])

    def _add(self, key: int, part: np.ndarray) -> None:
        if key in self._hist:
            self._merge(key, part)
            return
        self._raw.setdefault(key, []).append(part)
        n = self._n[key] = self._n.get(key, 0) + int(part.size)
        if n > EXACT_SAMPLES:
            self._hist[key] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            self._merge(key, np.concatenate(self._raw.pop(key)))

    def _merge(self, key: int, part: np.ndarray) -> None:
        buckets, counts = self._hist[key]
        b, inv = np.unique(np.concatenate((buckets, _bucket(part))), return_inverse=True)
        c = np.bincount(inv, weights=np.concatenate((counts, np.ones(part.size, np.int64))), minlength=b.size)
        self._hist[key] = (b, c.astype(np.int64))

    def keys(self) -> list[int]:
        self._flush()
        return sorted([*self._raw, *self._hist])

    def has(self, key: int) -> bool:
        self._flush()
        return key in self._n

    def exact(self, key: int) -> bool:
        self._flush()
        return key not in self._hist

    def percentiles(self, key: int, qs: list[float]) -> list[float]:
        """The ``qs`` percentiles (0..100) of the key's samples, linear
        interpolation between ranks as ``np.percentile``."""
        self._flush()
        raw = self._raw.get(key)
        if raw is not None:
            return [float(x) for x in np.percentile(np.concatenate(raw), qs)]
        buckets, counts = self._hist[key]
        cum = np.cumsum(counts)
        values = _value(buckets)
        out = []
        for q in qs:
            pos = q / 100.0 * (int(cum[-1]) - 1)
            lo = int(np.floor(pos))
            hi = min(lo + 1, int(cum[-1]) - 1)
            a, b = values[np.searchsorted(cum, [lo + 1, hi + 1])]
            out.append(float(a + (b - a) * (pos - lo)))
        return out

    def median(self, key: int) -> float:
        return self.percentiles(key, [50.0])[0]
