"""Arrival instants of many independent request streams, fully vectorised.

A renewal stream (iid RITs) is a row of a (streams x k) matrix of draws,
cumulatively summed; k covers the horizon with a wide margin, and rows that
fall short get more columns (rare, so the common case is one matrix). The
first value of each row is the stationary time to the first arrival,
U(0,1) times a length-biased draw, as if the stream had been running
forever: the streams do not start in lock-step at t = 0 and a test of
length T holds T / mean requests on average, however short. It is an
offset, not an RIT, so it never enters RIT statistics.

MMPP-2 (on/off bursts): alternating exponential sojourns in the on and off
states; each state has its own RIT distribution. The arrivals of one state
are a renewal stream on that state's own clock (the on-periods laid end to
end), mapped back to real time. For exponential RITs this is exactly a
two-state Markov-modulated Poisson process; for others the stream of a
state continues across its periods.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # the distributions call back into this module (their ``arrivals``)
    from wotbench.tracegen._registry import Distribution

__all__ = ["arrivals", "renewal", "mmpp2"]

# Rows per batch are chosen so that one batch of draws stays near this many
# values (64 MB of float64): memory stays flat however long the trace.
_BATCH_VALUES = 1 << 23
# Streams this short (in draws) are cut with one boolean mask rather than row by row.
_MASK_MAX_K = 256


def arrivals(dist: Distribution, n_streams: int, horizon_us: float,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Arrival instants in [0, horizon_us) of ``n_streams`` independent streams.

    Returns ``(times, counts)``: float64 microseconds grouped by stream
    (stream 0 first) and ascending within each stream, and the number of
    arrivals of each stream. Each kind says how its streams are drawn
    (``Distribution.arrivals``): a renewal stream of iid draws, or a process.
    """
    return dist.arrivals(n_streams, horizon_us, rng)


def renewal(dist: Distribution, n_streams: int, horizon_us: float,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Renewal streams of ``dist``'s iid draws, each started in its stationary phase."""
    expect = horizon_us / dist.mean_us()
    k = int(expect * 1.02 + 6.0 * math.sqrt(expect) + 16)
    if k >= _BATCH_VALUES:
        return _long_streams(dist, n_streams, horizon_us, rng)
    rows = max(1, min(n_streams, _BATCH_VALUES // (k + 1)))
    pieces: list[np.ndarray] = []
    counts = np.empty(n_streams, dtype=np.int64)
    for lo in range(0, n_streams, rows):
        hi = min(n_streams, lo + rows)
        cum = dist.sample(rng, (hi - lo, k + 1))
        cum[:, 0] = _phase(dist, hi - lo, rng)
        np.cumsum(cum, axis=1, out=cum)
        short = np.flatnonzero(cum[:, -1] < horizon_us)
        if not short.size and k < _MASK_MAX_K:
            # Many short rows: one mask beats a Python step per row. Each row
            # is ascending, so its kept values are a prefix, in row order.
            inside = cum < horizon_us
            counts[lo:hi] = inside.sum(axis=1)
            pieces.append(cum[inside])
            continue
        extra: dict[int, np.ndarray] = {}
        if short.size:
            extra = dict(zip(short.tolist(), _extend(dist, cum[short, -1], horizon_us, k, rng), strict=True))
        for i in range(hi - lo):
            row = cum[i]
            if i in extra:
                row = np.concatenate((row, extra[i]))
            c = int(np.searchsorted(row, horizon_us, side="left"))
            counts[lo + i] = c
            pieces.append(row[:c])
        del cum
    return (np.concatenate(pieces) if pieces else np.empty(0)), counts


def _phase(dist: Distribution, n: int, rng: np.random.Generator) -> np.ndarray:
    """Time to each stream's first arrival, as if it had been running forever."""
    phase: npt.NDArray[np.float64] = rng.random(n) * dist.sample_length_biased(rng, n)
    return phase


def _long_streams(dist: Distribution, n_streams: int, horizon_us: float,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Streams too long for one batch: each one in blocks of draws, carrying the time."""
    pieces: list[np.ndarray] = []
    counts = np.empty(n_streams, dtype=np.int64)
    for i in range(n_streams):
        carry, first, total = 0.0, True, 0
        while carry < horizon_us:
            block = dist.sample(rng, _BATCH_VALUES)
            if first:
                block[0] = _phase(dist, 1, rng)[0]
                first = False
            np.cumsum(block, out=block)
            block += carry
            carry = float(block[-1])
            keep = block[:int(np.searchsorted(block, horizon_us, side="left"))]
            pieces.append(keep)
            total += keep.size
        counts[i] = total
    return np.concatenate(pieces), counts


def _extend(dist: Distribution, last: np.ndarray, horizon_us: float, k: int,
            rng: np.random.Generator) -> list[np.ndarray]:
    """More arrivals for rows whose draws ended (at ``last``) before the horizon."""
    parts: list[list[np.ndarray]] = [[] for _ in range(last.size)]
    carry = last.copy()
    idx = np.arange(last.size)
    while idx.size:
        more = dist.sample(rng, (idx.size, k))
        np.cumsum(more, axis=1, out=more)
        more += carry[idx, None]
        for j, r in enumerate(idx.tolist()):
            parts[r].append(more[j])
        carry[idx] = more[:, -1]
        idx = idx[more[:, -1] < horizon_us]
    return [np.concatenate(p) for p in parts]


def mmpp2(on: Distribution, off: Distribution, t_on: float, t_off: float, n_streams: int, horizon_us: float,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Streams of the on/off process (RITs ``on`` and ``off``, mean sojourns
    ``t_on`` and ``t_off``), one after the other."""
    parts = [_mmpp2_stream(on, off, t_on, t_off, horizon_us, rng) for _ in range(n_streams)]
    counts = np.array([p.size for p in parts], dtype=np.int64)
    times = np.concatenate(parts) if parts else np.empty(0)
    return times, counts


def _mmpp2_stream(on: Distribution, off: Distribution, t_on: float, t_off: float, horizon_us: float,
                  rng: np.random.Generator) -> np.ndarray:
    cycle = t_on + t_off
    n = int(horizon_us / cycle * 1.2 + 6.0 * math.sqrt(horizon_us / cycle) + 4)
    start_on = bool(rng.random() < t_on / cycle)
    while True:
        on_len = rng.exponential(t_on, n)
        off_len = rng.exponential(t_off, n)
        pair = (on_len, off_len) if start_on else (off_len, on_len)
        sojourn = np.column_stack(pair).reshape(-1)
        ends = np.cumsum(sojourn)
        if ends[-1] >= horizon_us:
            break
        n *= 2
    starts = ends - sojourn
    is_on = np.zeros(sojourn.size, dtype=bool)
    is_on[0 if start_on else 1::2] = True
    live = starts < horizon_us
    out: list[np.ndarray] = []
    for state, sub in ((True, on), (False, off)):
        sel = live & (is_on == state)
        st = starts[sel]
        length = np.minimum(ends[sel], horizon_us) - st
        clock_end = np.cumsum(length)
        if clock_end.size == 0 or clock_end[-1] <= 0:
            continue
        v, _ = renewal(sub, 1, float(clock_end[-1]), rng)
        period = np.searchsorted(clock_end, v, side="right")
        out.append(st[period] + (v - (clock_end[period] - length[period])))
    times = np.concatenate(out) if out else np.empty(0)
    times.sort()
    return times
