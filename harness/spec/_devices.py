"""Device groups (``devices:``): the containers' settings, their network
impairment and, through :class:`GroupWorkload`, their workload."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec import budget
from wotbench.spec._workload import GROUP_KEYS, GroupWorkload, read_group
from wotbench.spec._yaml import KeyPath, YamlSource
from wotbench.spec.distributions import DistributionSpec

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

MODES = ("sleep", "busy")
#: Keys of a device group read here (the rest are the workload's, GROUP_KEYS).
CONTAINER_KEYS = frozenset({"name", "count", "mode", "threads", "queue", "cpus", "memory", "impairment"})
#: Devices per group: each is a container (also what tracegen's --devices may ask for).
MAX_COUNT = budget.MAX_GROUP_DEVICES


#: The rates a device's link can be shaped to (tbf, harness/engine/netimpair.py).
MIN_RATE_BPS, MAX_RATE_BPS = 8_000, 100 * 10**9


@dataclass(frozen=True)
class Impairment:
    loss: float = 0.0                 # fraction 0..1
    delay_us: int = 0
    jitter_us: int = 0
    rate_bps: int | None = None

    @property
    def needs_netem(self) -> bool:
        """Delay and jitter need netem (rate is tbf, loss iptables without it)."""
        return bool(self.delay_us or self.jitter_us)

    @property
    def active(self) -> bool:
        return self.loss > 0 or self.needs_netem or bool(self.rate_bps)

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Impairment | None:
        m = read.mapping(v, src, at, {"loss", "delay", "jitter", "rate"})
        if not m:
            return None
        imp = cls(
            loss=read.value(units.parse_fraction, m["loss"], src, at + ("loss",)) if "loss" in m else 0.0,
            delay_us=read.duration(m["delay"], src, at + ("delay",)) if "delay" in m else 0,
            jitter_us=read.duration(m["jitter"], src, at + ("jitter",)) if "jitter" in m else 0,
            rate_bps=read.value(units.parse_rate, m["rate"], src, at + ("rate",)) if "rate" in m else None,
        )
        if imp.rate_bps is not None and not MIN_RATE_BPS <= imp.rate_bps <= MAX_RATE_BPS:
            raise src.error(f"rate {imp.rate_bps} bit/s is outside {MIN_RATE_BPS // 1000}kbit .. "
                            f"{MAX_RATE_BPS // 10**9}gbit (tbf must pass a full 1514-byte frame)", *at, "rate")
        if imp.jitter_us and not imp.delay_us:
            raise src.error("jitter needs a delay", *at, "jitter")
        return imp if imp.active else None


@dataclass(frozen=True)
class DeviceGroup:
    """One group of identical devices: container settings and, when read
    from a spec, the group's workload (``rit``, ``service``, ... read
    through to it)."""

    name: str
    count: int
    mode: str = "sleep"
    threads: int = 4
    queue: int | None = None
    nano_cpus: int | None = None
    memory_bytes: int = 32 << 20
    impairment: Impairment | None = None
    workload: GroupWorkload | None = None

    def __post_init__(self) -> None:
        w = self.workload
        if w is not None and (w.name, w.count) != (self.name, self.count):
            raise ValueError(f"group {self.name!r}: its workload is of group {w.name!r} "
                             f"({w.count} devices, not {self.count})")

    def _work(self) -> GroupWorkload:
        if self.workload is None:
            raise AttributeError(f"device group {self.name!r} was built without a workload")
        return self.workload

    @property
    def rit(self) -> DistributionSpec | None:
        return self._work().rit

    @property
    def service(self) -> DistributionSpec | None:
        """None in a replay (``workload.replay``): the capture gives the service times."""
        return self._work().service

    @property
    def methods(self) -> tuple[tuple[str, float], ...]:
        return self._work().methods

    @property
    def payload_bytes(self) -> int:
        return self._work().payload_bytes

    @property
    def resources(self) -> int:
        return self._work().resources

    @property
    def resource_service_us(self) -> npt.NDArray[np.int64]:
        return self._work().resource_service_us

    @property
    def resource_mean_us(self) -> float:
        return self._work().resource_mean_us

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath, replay: bool = False) -> DeviceGroup:
        """The group at ``at``; in a replay (``replay``) its workload keys are refused."""
        m = read.mapping(v, src, at, CONTAINER_KEYS | GROUP_KEYS)
        if "count" not in m:
            raise src.error("missing (the number of devices)", *at, "count")
        name = read.name(m.get("name", f"group{at[-1]}"), src, at + ("name",))
        count = read.integer(m["count"], src, at + ("count",), 1, MAX_COUNT)
        nano = None
        if "cpus" in m:
            c = m["cpus"]
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.01 <= c <= 1024:
                raise src.error(f"expected a CPU share like 0.5 (0.01..1024), got {units.short(c)}", *at, "cpus")
            nano = round(c * 1e9)
        mem = cls.memory_bytes
        if "memory" in m:
            mem = read.value(units.parse_size, m["memory"], src, at + ("memory",))
            if mem < 6 << 20:
                raise src.error("Docker needs at least 6m", *at, "memory")
        return cls(
            name=name,
            count=count,
            mode=read.choice(m.get("mode", "sleep"), src, at + ("mode",), MODES),
            threads=read.integer(m.get("threads", 4), src, at + ("threads",), 1, 256),
            queue=read.integer(m["queue"], src, at + ("queue",), 1, 1 << 20) if "queue" in m else None,
            nano_cpus=nano,
            memory_bytes=mem,
            impairment=Impairment.build(m.get("impairment"), src, at + ("impairment",)),
            workload=read_group(m, name, count, src, at, replay),
        )


def read_groups(v: Any, src: YamlSource, replay: bool = False) -> tuple[DeviceGroup, ...]:
    """The ``devices`` list: one or more groups with distinct names (``replay``:
    the spec replays a capture, its groups give names and counts only)."""
    if v is None:
        raise src.error("missing 'devices' (a list of device groups)", "devices")
    if not isinstance(v, list):
        raise src.error("must be a list of device groups", "devices")
    if not v:
        raise src.error("zero devices: give at least one device group", "devices")
    groups = tuple(DeviceGroup.build(g, src, ("devices", i), replay) for i, g in enumerate(v))
    seen: set[str] = set()
    for i, g in enumerate(groups):
        if g.name in seen:
            raise src.error(f"group name {g.name!r} used twice", "devices", i, "name")
        seen.add(g.name)
    return groups
