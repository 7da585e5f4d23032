"""The ``capacity:`` section (docs/spec.md, example in ``wotbench.studies.capacity_search``):
what `wotbench capacity` varies (``devices[N].count`` or ``devices[N].rate``),
the range and resolution of the search, and the response-time objective.
The search itself is ``wotbench.studies.capacity_search``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._devices import DeviceGroup
from wotbench.spec._yaml import KeyPath, YamlSource

if TYPE_CHECKING:
    import numpy as np

KEYS = {"vary", "start", "max", "resolution", "max_probes", "objective"}
STATS = ("mean", "p50", "p90", "p95", "p99")
_VARY_RE = re.compile(r"devices\[([0-9]+)\]\.(count|rate)", re.ASCII)
#: RIT families whose mean can be set from a rate without changing their shape.
RATE_FAMILIES = ("exp", "det")


@dataclass(frozen=True)
class Objective:
    stat: str            # one of STATS
    limit_us: int

    def value_us(self, response_us: np.ndarray) -> float | None:
        if response_us.size == 0:
            return None
        if self.stat == "mean":
            return float(response_us.mean())
        import numpy as np  # here, not at the top: reading a spec does not load NumPy

        return float(np.percentile(response_us, float(self.stat[1:])))


@dataclass(frozen=True)
class CapacitySpec:
    vary: str
    group: int
    kind: str            # "count" | "rate"
    start: float
    maximum: float
    resolution: float
    max_probes: int
    objectives: tuple[Objective, ...]

    @property
    def integer(self) -> bool:
        return self.kind == "count"

    @property
    def unit(self) -> str:
        return "devices" if self.kind == "count" else "requests/s per device"

    @property
    def path(self) -> KeyPath:
        """The spec key a probe sets: the group's count, or its RIT for a rate."""
        return ("devices", self.group, "count" if self.kind == "count" else "rit")

    def probe_value(self, group: DeviceGroup, x: float) -> Any:
        """The value of :attr:`path` in the probe of ``x``."""
        if self.kind == "count":
            return int(x)
        assert group.rit is not None
        return f"{group.rit.kind}:{max(1, round(1e6 / x))}us"

    @classmethod
    def build(cls, v: Any, src: YamlSource, groups: Sequence[DeviceGroup], rit_scope: str) -> CapacitySpec:
        at: KeyPath = ("capacity",)
        m = read.mapping(v, src, at, KEYS)
        if not m:
            raise src.error("expected a mapping with vary, start, max and objective", *at)
        for k in ("vary", "start", "max", "objective"):
            if k not in m:
                raise src.error(f"missing key {k!r}", *at)
        group, kind = _vary(m["vary"], src, groups, rit_scope)
        integer = kind == "count"
        start = read.number(m["start"], src, at + ("start",), integer=integer, positive=True)
        maximum = read.number(m["max"], src, at + ("max",), integer=integer, positive=True)
        if maximum < start:
            raise src.error(f"{maximum} is below start ({start})", *at, "max")
        if integer and maximum > 100_000:
            raise src.error("at most 100000 devices", *at, "max")
        resolution = read.number(m.get("resolution", 1), src, at + ("resolution",), integer=integer,
                                 positive=True)
        mp = m.get("max_probes", 12)
        if isinstance(mp, bool) or not isinstance(mp, int) or not 1 <= mp <= 100:
            raise src.error(f"expected an integer 1..100, got {units.short(mp)}", *at, "max_probes")
        return cls(str(m["vary"]), group, kind, start, maximum, resolution, mp,
                   _objectives(m["objective"], src, at + ("objective",)))


def _vary(v: Any, src: YamlSource, groups: Sequence[DeviceGroup], rit_scope: str) -> tuple[int, str]:
    at: KeyPath = ("capacity", "vary")
    m = _VARY_RE.fullmatch(str(v))
    if m is None:
        raise src.error(f"expected devices[N].count or devices[N].rate, got {units.short(v)}", *at)
    group, kind = int(m.group(1)), m.group(2)
    if group >= len(groups):
        raise src.error(f"devices[{group}] does not exist in the spec", *at)
    if kind == "rate":
        if rit_scope != "device":
            raise src.error("a per-device rate needs workload.rit_scope: device", *at)
        rit = groups[group].rit
        if rit is None or rit.kind not in RATE_FAMILIES:
            raise src.error(f"a rate is set through devices[{group}].rit, which must be "
                            f"{' or '.join(f'{f}:<mean>' for f in RATE_FAMILIES)} "
                            f"(got {rit.text if rit else None!r})", *at)
    return group, kind


def _objectives(v: Any, src: YamlSource, at: KeyPath) -> tuple[Objective, ...]:
    if not isinstance(v, dict) or not v:
        raise src.error(f"expected a mapping such as {{p95: 50ms}} (statistics: {', '.join(STATS)})", *at)
    out = []
    for stat, limit in v.items():
        if stat not in STATS:
            raise src.error(f"unknown statistic (one of {', '.join(STATS)})", *at, stat)
        limit_us = read.value(units.parse_duration, limit, src, at + (stat,))
        if limit_us <= 0:
            raise src.error("must be positive", *at, stat)
        out.append(Objective(stat, limit_us))
    return tuple(out)
