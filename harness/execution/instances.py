"""``gateway.instances: auto``: how many GEs a test gets.

auto = clamp(ceil(peak / (capacity * headroom)), 1, GE cores), where peak
is the trace's highest request rate in any 100 ms window (sliding, over
the whole merged trace), capacity is one GE's measured rate on this host
(:mod:`wotbench.host.gecap`) and the GE cores are the cores the plan can give
GEs of their own (also at most one GE per device and
:data:`~wotbench.spec.MAX_GES`). With a single GE core nothing needs
measuring: the answer is 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wotbench.host.gecap import MARGIN, GeCapacity
from wotbench.reporting import WINDOW_US, peak_rps

__all__ = ["WINDOW_US", "HEADROOM", "InstancesAuto", "peak_rps", "choose", "effective_capacity", "ge_cores_available"]

#: A GE is planned at this share of its measured capacity: the calibration
#: is short and quiet, a run is long and shares the host.
HEADROOM = 0.7


def choose(peak: float, capacity: float | None, headroom: float, limits: dict[str, int]) -> tuple[int, str]:
    """(GEs, what decided it): ``peak`` when the need fits ``limits`` (e.g.
    cores, devices, max), else the name of the tightest limit. Without a
    capacity (not measured) the limits decide."""
    bound = min(limits.values())
    tight = min(limits, key=lambda k: limits[k])
    if bound <= 1:
        return 1, tight
    need = (max(1, math.ceil(peak / (capacity * headroom))) if capacity and capacity > 0
            else bound + 1)
    return (need, "peak") if need <= bound else (bound, tight)


def effective_capacity(cal: GeCapacity | None, lag_limit_us: float) -> tuple[float | None, str]:
    """One GE's capacity for a send-lag limit, and a note when no rate tried
    kept the lag within it (host noise, not the rate: the lowest rate tried
    is then taken, so that noise does not multiply the GEs)."""
    if cal is None:
        return None, ""
    cap = cal.capacity(lag_limit_us)
    if cap > 0 or not cal.points:
        return cap, ""
    low = cal.points[0][0]
    return low, (f"no calibration rate kept the p99 send lag within {lag_limit_us * MARGIN:.0f} us "
                 f"(p99 {cal.points[0][1]:.0f} us at {low:,.0f} req/s: a noisy host); that rate taken as capacity")


def ge_cores_available(distinct_cores: Callable[[int], int], most: int) -> int:
    """The most GEs (up to ``most``) that each get a core of their own:
    ``distinct_cores(k)`` is how many distinct cores the plan gives k GEs."""
    best = 1
    for k in range(2, most + 1):
        if distinct_cores(k) != k:
            break
        best = k
    return best


@dataclass(frozen=True)
class InstancesAuto:
    """The decision, as manifest.json's ``instances_auto`` and plan's line."""

    peak_rps: float
    window_ms: float
    capacity_rps: float | None
    headroom: float
    chosen: int
    bounded_by: str                  # peak, cores, devices or max_ges
    ge_cores: int
    calibration: GeCapacity | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        c = self.calibration
        return {"peak_rps": self.peak_rps, "window_ms": self.window_ms, "capacity_rps": self.capacity_rps,
                "headroom": self.headroom, "chosen": self.chosen, "bounded_by": self.bounded_by,
                "ge_cores": self.ge_cores,
                "calibrated_at": c.measured_at if c else None,
                "cache": str(c.path) if c and c.path else None,
                "calibration_points": [list(p) for p in c.points] if c else None,
                **({"note": self.note} if self.note else {})}

    def render(self) -> str:
        c = self.calibration
        cap = (f"GE capacity {self.capacity_rps:,.0f} req/s on this host, calibrated "
               f"{c.measured_at[:10]}, cache {c.path}" if c is not None and self.capacity_rps is not None
               else f"GE capacity not measured: {'one device' if self.bounded_by == 'devices' else 'one GE core'}"
                    " leaves no choice")
        why = {"peak": f"{self.headroom:.0%} of it per GE", "cores": "bounded by the cores",
               "devices": "one GE per device at most", "max_ges": "the most GEs a run has"}[self.bounded_by]
        cores = f"{self.ge_cores} core{'s' if self.ge_cores != 1 else ''} for GEs"
        note = f"; {self.note}" if self.note else ""
        return (f"GEs: {self.chosen} (auto: trace peak {self.peak_rps:,.0f} req/s in "
                f"{self.window_ms:.0f} ms windows; {cap}; {cores}; {why}{note})")
