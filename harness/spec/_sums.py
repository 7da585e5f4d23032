"""Sums of floats in NumPy's order, in plain Python.

The spec's rates and means (an empirical file's mean, a workload's request
rate and mean service time) were NumPy sums; they are computed here without
NumPy, in the same order, so that they are the same floats to the last bit
(harness/tests/test_spec_without_numpy.py holds them to NumPy's).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import reduce

__all__ = ["numpy_sum"]

#: NumPy's pairwise summation sums blocks of at most this many values with 8 accumulators.
_BLOCK = 128
_LANES = 8


def numpy_sum(values: Sequence[float]) -> float:
    """``float(numpy.sum(values))`` of a 1-D float64 array: NumPy's pairwise
    summation (halves split at a multiple of 8 down to blocks of at most 128
    values; a block summed in 8 interleaved accumulators, then the rest)."""
    return _pairwise(values, 0, len(values))


def _pairwise(a: Sequence[float], lo: int, n: int) -> float:
    if n < _LANES:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= _BLOCK:
        end = lo + n - n % _LANES
        r = [reduce(operator.add, a[lo + j:end:_LANES]) for j in range(_LANES)]
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for i in range(end, lo + n):
            res += a[i]
        return res
    half = n // 2
    half -= half % _LANES
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)
