"""How many GEs a run whose GE fell behind would have needed.

A GE that is behind its schedule sends as fast as it can, so its send rate
while behind is what one GE keeps up to on that host: the most sends in a
100 ms bin (by send time, inside the measurement phase) in which every
send was later than the send-lag limit. With the trace's peak rate (the
most intended sends of all GEs in any sliding 100 ms window) the need is
ceil(peak / that rate). Fewer needed than ran means the rate was not the
cause (a stall, a shared core).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from wotbench.spec import MAX_GES

__all__ = ["WINDOW_US", "peak_rps", "behind_rate", "ges_needed", "ges_needed_from_peak"]

#: The window of the trace's peak rate (also gateway.instances: auto's).
WINDOW_US = 100_000


def peak_rps(t_us: np.ndarray, window_us: int = WINDOW_US) -> float:
    """The most requests in any window ``[t, t + window_us)`` starting at a
    request, as a rate (req/s)."""
    t = np.sort(np.asarray(t_us, dtype=np.float64))
    if t.size == 0:
        return 0.0
    counts = np.searchsorted(t, t + window_us, side="left") - np.arange(t.size)
    return float(counts.max()) * 1e6 / window_us


def behind_rate(sent: np.ndarray, send_lag: np.ndarray, window: tuple[float, float], limit_us: float,
                bin_us: int = WINDOW_US) -> float | None:
    """The highest send rate (req/s) of one GE over the whole bins of
    ``window`` in which every send lagged more than ``limit_us``; None when
    no bin was wholly behind."""
    s = np.asarray(sent, dtype=np.float64)
    lag = np.asarray(send_lag, dtype=np.float64)
    keep = np.isfinite(s) & (s >= window[0]) & (s < window[1])
    s, lag = s[keep], lag[keep]
    whole = int((window[1] - window[0]) // bin_us)
    if s.size == 0 or whole == 0:
        return None
    b = ((s - window[0]) // bin_us).astype(np.int64)
    inside = b < whole
    counts = np.bincount(b[inside], minlength=whole)
    late = np.bincount(b[inside], weights=(lag[inside] > limit_us).astype(np.float64), minlength=whole)
    behind = (counts > 0) & (late == counts)
    return float(counts[behind].max()) * 1e6 / bin_us if behind.any() else None


def ges_needed(intended: Sequence[np.ndarray], behind_rps: Sequence[float | None],
               window_us: int = WINDOW_US) -> dict[str, Any] | None:
    """summary.json's ``ges_needed``: the trace's peak (all GEs' intended
    sends), what one GE kept up to while behind (the best of the GEs that
    were), how many GEs that makes, and the sentence the send-lag check
    adds. None when no GE was ever wholly behind."""
    if not [r for r in behind_rps if r]:
        return None
    peak = peak_rps(np.concatenate([np.asarray(x, dtype=np.float64) for x in intended])
                    if intended else np.zeros(0), window_us)
    return ges_needed_from_peak(peak, behind_rps, window_us)


def ges_needed_from_peak(peak: float, behind_rps: Sequence[float | None], window_us: int = WINDOW_US,
                         exact: bool = True) -> dict[str, Any] | None:
    """:func:`ges_needed` from the peak rate; ``exact=False`` when the peak
    came from millisecond bins (too many sends to hold: _stream.PeakBins)."""
    rates = [r for r in behind_rps if r]
    if not rates:
        return None
    kept = max(rates)
    need = max(1, math.ceil(peak / kept))
    ran = len(behind_rps)
    what = (f"trace peak {'~' if not exact else ''}{peak:,.0f} req/s in {window_us // 1000} ms windows, "
            f"one GE kept up to {kept:,.0f} req/s")
    if need > ran:
        sentence = f"would have needed {need} GEs ({what})"
        if need > MAX_GES:
            sentence += f"; a run has at most {MAX_GES}: split the devices over more tests or hosts"
    else:
        sentence = (f"{ran} GE{'s' if ran > 1 else ''} had the capacity ({what}): the rate was not the "
                    "cause; look for stalls or a shared core")
    return {"peak_rps": peak, "peak_exact": exact, "window_ms": window_us / 1000, "kept_up_rps": kept, "ges": ran,
            "needed": need, "sentence": sentence}
