"""The spec sections around the devices: gateway emulators, contention
detection, placement, phases and sweeps (docs/spec.md). Each is a frozen
dataclass with a ``build`` that reads its section of the document."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource, parse_key_path

GE_TYPES = ("con", "non")
#: The GE's --congestion strategies (gateway-emulator/README.md, "Congestion control").
CONGESTION = ("rfc7252", "cocoa", "cocoa-strong", "basic-rto", "linux-rto", "peakhopper-rto")
#: The GE's --nstart and --probing-rate bounds.
MAX_NSTART, MAX_PROBING_BPS = 65535, 10**9
_PROBING_RE = re.compile(r"\s*(\d+)\s*(B/s|kB/s|MB/s)\s*")
_PROBING_UNIT = {"B/s": 1, "kB/s": 1000, "MB/s": 10**6}
#: Workload GEs per test: each needs a core, and one of the 8 GE addresses
#: reserved on every run network (the CD-GE takes another).
MAX_GES = 7


@dataclass(frozen=True)
class Gateway:
    instances: int = 1
    """The GEs to run; with ``auto`` a placeholder until the plan decides
    (wotbench.execution.instances: trace peak, measured GE capacity, cores)."""
    auto: bool = True
    """``instances: auto`` (the default): the plan chooses how many GEs."""
    type: str = "con"
    timeout_us: int = 5_000_000
    ack_timeout_us: int | None = None
    max_retransmit: int | None = None
    scheduler: str = "normal"
    """The GEs' scheduler: ``auto`` (SCHED_FIFO where the host gives Docker an
    RT budget), ``fifo`` (required: plan fails without it) or ``normal``."""
    congestion: str = "rfc7252"
    """The workload GEs' --congestion (RFC 7252's fixed timers: today's behaviour)."""
    nstart: int | None = None
    """The workload GEs' --nstart; None: unlimited (the default, today's behaviour)."""
    probing_rate: int | None = None
    """The workload GEs' --probing-rate in bytes/s; None: none."""
    ack_random_factor: float | None = None
    """The workload GEs' --ack-random-factor; None: the GE's default, 1.5."""

    def congestion_args(self) -> list[str]:
        """The workload GEs' congestion-control arguments (never the CD-GE's)."""
        argv = ["--congestion", self.congestion, "--nstart", "unlimited" if self.nstart is None else str(self.nstart)]
        if self.probing_rate is not None:
            argv += ["--probing-rate", str(self.probing_rate)]
        if self.ack_random_factor is not None:
            argv += ["--ack-random-factor", str(self.ack_random_factor)]
        return argv

    def congestion_record(self) -> dict[str, Any]:
        """What manifest.json records of them."""
        return {"strategy": self.congestion, "nstart": self.nstart, "probing_rate_bytes_per_s": self.probing_rate,
                "ack_random_factor": self.ack_random_factor if self.ack_random_factor is not None else 1.5,
                "applies_to": "workload GEs (not the CD-GE)"}

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Gateway:
        m = read.mapping(v, src, at, {"instances", "type", "timeout", "ack_timeout", "max_retransmit",
                                      "scheduler", "congestion", "nstart", "probing_rate", "ack_random_factor"})
        g = cls(
            instances=(1 if m.get("instances", "auto") == "auto" else
                       read.integer(m["instances"], src, at + ("instances",), 1, MAX_GES)
                       if not isinstance(m["instances"], str) else
                       _no_instances(m["instances"], src, at + ("instances",))),
            auto=m.get("instances", "auto") == "auto",
            type=read.choice(m.get("type", "con"), src, at + ("type",), GE_TYPES),
            timeout_us=read.duration(m.get("timeout", "5s"), src, at + ("timeout",)),
            ack_timeout_us=(read.duration(m["ack_timeout"], src, at + ("ack_timeout",))
                            if "ack_timeout" in m else None),
            max_retransmit=(read.integer(m["max_retransmit"], src, at + ("max_retransmit",), 0, 20)
                            if "max_retransmit" in m else None),
            scheduler=read.choice(m.get("scheduler", "normal"), src, at + ("scheduler",), GE_SCHEDULERS),
            congestion=read.choice(m.get("congestion", "rfc7252"), src, at + ("congestion",), CONGESTION),
            nstart=_nstart(m.get("nstart", "unlimited"), src, at + ("nstart",)),
            probing_rate=(_probing_rate(m["probing_rate"], src, at + ("probing_rate",))
                          if m.get("probing_rate", "none") != "none" else None),
            ack_random_factor=(_ack_random_factor(m["ack_random_factor"], src, at + ("ack_random_factor",))
                               if "ack_random_factor" in m else None),
        )
        if g.timeout_us < 1000:
            raise src.error("must be at least 1ms", *at, "timeout")
        return g


GE_SCHEDULERS = ("auto", "fifo", "normal")


def _nstart(v: Any, src: YamlSource, at: KeyPath) -> int | None:
    """``unlimited`` (None) or 1..65535 exchanges in flight per peer."""
    if v == "unlimited":
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_NSTART:
        raise src.error(f"expected unlimited or a number 1..{MAX_NSTART}, got {units.short(v)}", *at)
    return v


def _probing_rate(v: Any, src: YamlSource, at: KeyPath) -> int:
    """Bytes per second: ``1B/s``, ``10kB/s``, ``1MB/s`` (1 .. 10^9 B/s)."""
    m = _PROBING_RE.fullmatch(v) if isinstance(v, str) else None
    bps = int(m.group(1)) * _PROBING_UNIT[m.group(2)] if m else 0
    if not 1 <= bps <= MAX_PROBING_BPS:
        raise src.error(f"expected none or a rate such as 1B/s, 10kB/s (1B/s .. 1000MB/s), got {units.short(v)}", *at)
    return bps


def _ack_random_factor(v: Any, src: YamlSource, at: KeyPath) -> float:
    """RFC 7252 ACK_RANDOM_FACTOR, 1.0 .. 16 (the GE's range; 1.0: no dithering)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1.0 <= v <= 16.0:
        raise src.error(f"expected a number 1.0 .. 16 (1.0: no dithering), got {units.short(v)}", *at)
    return float(v)


def _no_instances(v: str, src: YamlSource, at: KeyPath) -> int:
    raise src.error(f"expected auto or a number of GEs 1..{MAX_GES}, got {units.short(v)}", *at)


@dataclass(frozen=True)
class ContentionDetection:
    enabled: bool = True
    rit_us: int = 100_000
    service: str = "auto"
    """As written: ``auto`` (the devices' mean service time) or a duration."""
    calibration_us: int = 10_000_000
    service_us: int | None = None
    """The CD node's service time; None with ``auto``."""

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> ContentionDetection:
        m = read.mapping(v, src, at, {"enabled", "rit", "service", "calibration"})
        service = m.get("service", "auto")
        cd = cls(
            enabled=read.boolean(m.get("enabled", True), src, at + ("enabled",)),
            rit_us=read.duration(m.get("rit", "100ms"), src, at + ("rit",)),
            service=str(service),
            calibration_us=read.duration(m.get("calibration", "10s"), src, at + ("calibration",)),
            service_us=None if service == "auto" else read.duration(service, src, at + ("service",)),
        )
        if cd.rit_us <= 0:
            raise src.error(f"must be > 0, got {units.short(m.get('rit'))}", *at, "rit")
        return cd

    def workload(self) -> dict[str, Any]:
        """The CD workload's arguments of :class:`wotbench.spec.WorkloadSpec`."""
        return {"cd_rit_us": self.rit_us, "cd_service_us": self.service_us,
                "cd_calibration_us": self.calibration_us}


@dataclass(frozen=True)
class Placement:
    affinity: bool = True
    reserve: tuple[int, ...] = (0,)

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Placement:
        m = read.mapping(v, src, at, {"affinity", "reserve"})
        reserve = m.get("reserve", [0])
        if not isinstance(reserve, list):
            raise src.error("expected a list of core numbers, e.g. [0]", *at, "reserve")
        cores = tuple(read.integer(c, src, at + ("reserve", i), 0, 4095) for i, c in enumerate(reserve))
        if len(set(cores)) != len(cores):
            raise src.error("a core is listed twice", *at, "reserve")
        return cls(affinity=read.boolean(m.get("affinity", True), src, at + ("affinity",)),
                   reserve=cores)


#: ``report.drift``'s values.
REPORT_DRIFT = ("auto", "always")


@dataclass(frozen=True)
class ReportOptions:
    """What the run's report shows beyond its defaults (docs/spec.md,
    "report"). ``drift``: ``auto`` shows the drift analysis for a run of
    5 min or more whose series drifted; ``always`` for any run of 30 s or
    more (what a soak is for, even at its 40 s ci scale)."""

    drift: str = "auto"

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> ReportOptions:
        m = read.mapping(v, src, at, {"drift"})
        return cls(drift=read.choice(m.get("drift", "auto"), src, at + ("drift",), REPORT_DRIFT))


@dataclass(frozen=True)
class Phases:
    warmup_us: int
    measure_us: int
    cooldown_us: int

    @property
    def total_us(self) -> int:
        return self.warmup_us + self.measure_us + self.cooldown_us

    def windows(self) -> dict[str, list[int]]:
        w, m = self.warmup_us, self.measure_us
        return {"warmup": [0, w], "measure": [w, w + m], "cooldown": [w + m, self.total_us]}

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Phases | None:
        """None when the spec has no ``phases`` (they follow the workload)."""
        if v is None:
            return None
        m = read.mapping(v, src, at, {"warmup", "measure", "cooldown"})
        if "measure" not in m:
            raise src.error("missing key 'measure'", *at)
        p = cls(*(read.duration(m.get(k, "0s"), src, at + (k,)) for k in ("warmup", "measure", "cooldown")))
        if p.measure_us <= 0:
            raise src.error("must be positive", *at, "measure")
        return p


@dataclass(frozen=True)
class Sweep:
    key: str
    path: KeyPath
    values: tuple[Any, ...]
    at: KeyPath = ("sweep",)
    """Where the sweep is written (its values at ``at + ("values", i)``)."""

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Sweep:
        m = read.mapping(v, src, at, {"key", "values"})
        if "key" not in m or "values" not in m:
            raise src.error("needs both 'key' and 'values'", *at)
        if not isinstance(m["key"], str):
            raise src.error("expected a key path such as devices[0].count", *at, "key")
        path = parse_key_path(m["key"])
        if path is None or path[0] in ("sweep", "repetitions", "name", "capacity"):
            raise src.error(f"cannot sweep {units.short(m['key'])}", *at, "key")
        values = m["values"]
        if not isinstance(values, list) or not values:
            raise src.error("expected a non-empty list", *at, "values")
        return cls(m["key"], path, tuple(values), at)

    @classmethod
    def build_axes(cls, v: Any, src: YamlSource, at: KeyPath) -> tuple[Sweep, ...]:
        """One sweep (a mapping) or a grid (a list of them: every combination
        of their values, the first key varying slowest)."""
        if v is None:
            return ()
        if not isinstance(v, list):
            return (cls.build(v, src, at),)
        if not v:
            raise src.error("expected a sweep {key, values} or a non-empty list of them", *at)
        axes = tuple(cls.build(item, src, at + (i,)) for i, item in enumerate(v))
        for i, a in enumerate(axes):
            for b in axes[:i]:
                if a.path[: len(b.path)] == b.path or b.path[: len(a.path)] == a.path:
                    raise src.error(f"overlaps the sweep of {b.key!r}", *a.at, "key")
        return axes
