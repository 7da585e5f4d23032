"""The harness's part of the experiment spec (docs/spec.md): device groups'
container settings, gateway emulators, contention detection, placement,
phases, repetitions, sweeps and validity thresholds.

Every value is checked when the dataclasses are built; a bad one raises
:class:`wotbench.UserError` naming the file, line and key. The workload keys
belong to :mod:`wotbench.tracegen._spec`; this module only knows their names so
that an unknown key anywhere is an error.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from wotbench import _yamlsrc as yamlsrc
from wotbench._errors import UserError
from wotbench import _units as units
from wotbench._yamlsrc import YamlSource, field_name

TOP_KEYS = {"name", "workload", "devices", "gateway", "cd", "placement", "phases",
            "repetitions", "sweep", "validity"}
#: Device-group keys validated by wotbench.tracegen._spec.
WORKLOAD_GROUP_KEYS = {"name", "count", "rit", "service", "methods", "payload_bytes", "resources"}
HARNESS_GROUP_KEYS = {"mode", "threads", "queue", "cpus", "memory", "impairment"}
MODES = ("sleep", "busy")
GE_TYPES = ("con", "non")
#: Workload GEs per test: each needs a core, and one of the 8 GE addresses
#: reserved on every run network (the CD-GE takes another).
MAX_GES = 7
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")

Path_ = tuple[str | int, ...]


key_name = field_name


# --- small typed readers -------------------------------------------------

def _err(src: YamlSource, at: Path_, what: str) -> UserError:
    return src.error(what, *at)


def _mapping(v: Any, src: YamlSource, at: Path_, allowed: set[str]) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise _err(src, at, f"expected a mapping, got {type(v).__name__}")
    for k in v:
        if k not in allowed:
            raise _err(src, at + (k,), f"unknown key (allowed: {', '.join(sorted(allowed))})")
    return v


def _conv(src: YamlSource, at: Path_, fn: Callable[[Any], Any], v: Any) -> Any:
    try:
        return fn(v)
    except ValueError as exc:
        raise _err(src, at, str(exc)) from None


def _int(v: Any, src: YamlSource, at: Path_, lo: int, hi: int | None = None) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise _err(src, at, f"expected an integer, got {v!r}")
    if v < lo or (hi is not None and v > hi):
        raise _err(src, at, f"{v} is outside {lo}..{hi if hi is not None else 'inf'}")
    return v


def _bool(v: Any, src: YamlSource, at: Path_) -> bool:
    if not isinstance(v, bool):
        raise _err(src, at, f"expected true or false, got {v!r}")
    return v


def _choice(v: Any, src: YamlSource, at: Path_, choices: tuple[str, ...]) -> str:
    if v not in choices:
        raise _err(src, at, f"expected one of {', '.join(choices)}, got {v!r}")
    return v


# --- the spec ------------------------------------------------------------

@dataclass(frozen=True)
class Impairment:
    loss: float = 0.0                 # fraction 0..1
    delay_us: int = 0
    jitter_us: int = 0
    rate_bps: int | None = None

    @property
    def needs_netem(self) -> bool:
        return bool(self.delay_us or self.jitter_us or self.rate_bps)

    @property
    def active(self) -> bool:
        return self.loss > 0 or self.needs_netem

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> Impairment | None:
        m = _mapping(v, src, at, {"loss", "delay", "jitter", "rate"})
        if not m:
            return None
        imp = cls(
            loss=_conv(src, at + ("loss",), units.fraction, m["loss"]) if "loss" in m else 0.0,
            delay_us=_conv(src, at + ("delay",), units.duration_us, m["delay"]) if "delay" in m else 0,
            jitter_us=_conv(src, at + ("jitter",), units.duration_us, m["jitter"]) if "jitter" in m else 0,
            rate_bps=_conv(src, at + ("rate",), units.rate_bps, m["rate"]) if "rate" in m else None,
        )
        if imp.jitter_us and not imp.delay_us:
            raise _err(src, at + ("jitter",), "jitter needs a delay")
        return imp if imp.active else None


@dataclass(frozen=True)
class DeviceGroup:
    name: str
    count: int
    mode: str = "sleep"
    threads: int = 4
    queue: int | None = None
    nano_cpus: int | None = None
    memory_bytes: int = 32 << 20
    impairment: Impairment | None = None

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> DeviceGroup:
        m = _mapping(v, src, at, WORKLOAD_GROUP_KEYS | HARNESS_GROUP_KEYS)
        if "count" not in m:
            raise _err(src, at, "missing key 'count'")
        name = m.get("name", f"group{at[-1]}")
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise _err(src, at + ("name",), f"expected a short name of letters, digits, '_.-', got {name!r}")
        nano = None
        if "cpus" in m:
            c = m["cpus"]
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.01 <= c <= 1024:
                raise _err(src, at + ("cpus",), f"expected a CPU share like 0.5 (0.01..1024), got {c!r}")
            nano = round(c * 1e9)
        mem = cls.memory_bytes
        if "memory" in m:
            mem = _conv(src, at + ("memory",), units.size_bytes, m["memory"])
            if mem < 6 << 20:
                raise _err(src, at + ("memory",), "Docker needs at least 6m")
        return cls(
            name=name,
            count=_int(m["count"], src, at + ("count",), 1, 100_000),
            mode=_choice(m.get("mode", "sleep"), src, at + ("mode",), MODES),
            threads=_int(m.get("threads", 4), src, at + ("threads",), 1, 256),
            queue=_int(m["queue"], src, at + ("queue",), 1, 1 << 20) if "queue" in m else None,
            nano_cpus=nano,
            memory_bytes=mem,
            impairment=Impairment.build(m.get("impairment"), src, at + ("impairment",)),
        )


@dataclass(frozen=True)
class Gateway:
    instances: int = 1
    type: str = "con"
    timeout_us: int = 5_000_000
    ack_timeout_us: int | None = None
    max_retransmit: int | None = None

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> Gateway:
        m = _mapping(v, src, at, {"instances", "type", "timeout", "ack_timeout", "max_retransmit"})
        g = cls(
            instances=_int(m.get("instances", 1), src, at + ("instances",), 1, MAX_GES),
            type=_choice(m.get("type", "con"), src, at + ("type",), GE_TYPES),
            timeout_us=_conv(src, at + ("timeout",), units.duration_us, m.get("timeout", "5s")),
            ack_timeout_us=(_conv(src, at + ("ack_timeout",), units.duration_us, m["ack_timeout"])
                            if "ack_timeout" in m else None),
            max_retransmit=(_int(m["max_retransmit"], src, at + ("max_retransmit",), 0, 20)
                            if "max_retransmit" in m else None),
        )
        if g.timeout_us < 1000:
            raise _err(src, at + ("timeout",), "must be at least 1ms")
        return g


@dataclass(frozen=True)
class ContentionDetection:
    enabled: bool = True
    rit_us: int = 1_000_000
    service: str = "auto"             # 'auto' or the literal duration, for tracegen
    calibration_us: int = 10_000_000

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> ContentionDetection:
        m = _mapping(v, src, at, {"enabled", "rit", "service", "calibration"})
        service = m.get("service", "auto")
        if service != "auto":
            _conv(src, at + ("service",), units.duration_us, service)
        cd = cls(
            enabled=_bool(m.get("enabled", True), src, at + ("enabled",)),
            rit_us=_conv(src, at + ("rit",), units.duration_us, m.get("rit", "1s")),
            service=str(service),
            calibration_us=_conv(src, at + ("calibration",), units.duration_us,
                                 m.get("calibration", "10s")),
        )
        if cd.rit_us <= 0:
            raise _err(src, at + ("rit",), "must be positive")
        return cd


@dataclass(frozen=True)
class Placement:
    affinity: bool = True
    reserve: tuple[int, ...] = (0,)

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> Placement:
        m = _mapping(v, src, at, {"affinity", "reserve"})
        reserve = m.get("reserve", [0])
        if not isinstance(reserve, list):
            raise _err(src, at + ("reserve",), "expected a list of core numbers, e.g. [0]")
        cores = tuple(_int(c, src, at + ("reserve", i), 0, 4095) for i, c in enumerate(reserve))
        if len(set(cores)) != len(cores):
            raise _err(src, at + ("reserve",), "a core is listed twice")
        return cls(affinity=_bool(m.get("affinity", True), src, at + ("affinity",)), reserve=cores)


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
    def build(cls, v: Any, workload: Any, src: YamlSource, at: Path_) -> Phases | None:
        """None when the phases follow the trace (``workload.requests``)."""
        if v is None:
            dur = workload.get("duration") if isinstance(workload, Mapping) else None
            if dur is None:
                return None
            total = _conv(src, ("workload", "duration"), units.duration_us, dur)
            return cls(0, total, 0)
        m = _mapping(v, src, at, {"warmup", "measure", "cooldown"})
        if "measure" not in m:
            raise _err(src, at, "missing key 'measure'")
        p = cls(*(_conv(src, at + (k,), units.duration_us, m.get(k, "0s"))
                  for k in ("warmup", "measure", "cooldown")))
        if p.measure_us <= 0:
            raise _err(src, at + ("measure",), "must be positive")
        return p


@dataclass(frozen=True)
class Sweep:
    key: str
    path: Path_
    values: tuple[Any, ...]

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: Path_) -> Sweep | None:
        if v is None:
            return None
        m = _mapping(v, src, at, {"key", "values"})
        if "key" not in m or "values" not in m:
            raise _err(src, at, "needs both 'key' and 'values'")
        if not isinstance(m["key"], str):
            raise _err(src, at + ("key",), "expected a key path such as devices[0].count")
        path = parse_key_path(m["key"])
        if path is None or path[0] in ("sweep", "repetitions", "name"):
            raise _err(src, at + ("key",), f"cannot sweep {m['key']!r}")
        values = m["values"]
        if not isinstance(values, list) or not values:
            raise _err(src, at + ("values",), "expected a non-empty list")
        return cls(m["key"], path, tuple(values), at)

    at: Path_ = ("sweep",)            # where the sweep is written (its values at at + ("values", i))

    @classmethod
    def build_axes(cls, v: Any, src: YamlSource, at: Path_) -> tuple[Sweep, ...]:
        """One sweep (a mapping) or a grid (a list of them: every combination
        of their values, the first key varying slowest)."""
        if not isinstance(v, list):
            one = cls.build(v, src, at)
            return () if one is None else (one,)
        if not v:
            raise _err(src, at, "expected a sweep {key, values} or a non-empty list of them")
        axes = tuple(cls.build(item, src, at + (i,)) for i, item in enumerate(v))
        out = tuple(a for a in axes if a is not None)
        for i, a in enumerate(out):
            for b in out[:i]:
                if a.path[: len(b.path)] == b.path or b.path[: len(a.path)] == a.path:
                    raise _err(src, a.at + ("key",), f"overlaps the sweep of {b.key!r}")
        return out


def parse_key_path(text: str) -> Path_ | None:
    parts: list[str | int] = []
    for m in re.finditer(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]", text):
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
    rebuilt = key_name(tuple(parts))
    return tuple(parts) if parts and rebuilt == text and isinstance(parts[0], str) else None


@dataclass(frozen=True)
class HarnessSpec:
    name: str
    groups: tuple[DeviceGroup, ...]
    gateway: Gateway
    cd: ContentionDetection
    placement: Placement
    phases: Phases | None
    repetitions: int
    sweep: Sweep | None                # the first (or only) sweep axis
    validity: Mapping[str, Any]
    sweep_axes: tuple[Sweep, ...] = ()  # every axis of a grid sweep

    @property
    def device_count(self) -> int:
        return sum(g.count for g in self.groups)

    def group_of(self) -> list[int]:
        """Group index of every device id, in tracegen's numbering (groups in order)."""
        return [gi for gi, g in enumerate(self.groups) for _ in range(g.count)]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def build(cls, doc: Any, src: YamlSource) -> HarnessSpec:
        m = _mapping(doc, src, (), TOP_KEYS)
        if not m:
            raise _err(src, (), "the spec is empty")
        name = m.get("name", Path(src.name).stem)
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise _err(src, ("name",), f"expected a short name of letters, digits, '_.-', got {name!r}")
        devices = m.get("devices")
        if not isinstance(devices, list) or not devices:
            raise _err(src, ("devices",), "expected a non-empty list of device groups")
        groups = tuple(DeviceGroup.build(g, src, ("devices", i)) for i, g in enumerate(devices))
        seen: set[str] = set()
        for i, g in enumerate(groups):
            if g.name in seen:
                raise _err(src, ("devices", i, "name"), f"group name {g.name!r} used twice")
            seen.add(g.name)
        # The thresholds are reporting's; its reader checks names and values.
        from wotbench.reporting import parse_validity

        parse_validity(m.get("validity"), src)
        validity = m.get("validity") or {}
        axes = Sweep.build_axes(m.get("sweep"), src, ("sweep",))
        spec = cls(
            name=name,
            groups=groups,
            gateway=Gateway.build(m.get("gateway"), src, ("gateway",)),
            cd=ContentionDetection.build(m.get("cd"), src, ("cd",)),
            placement=Placement.build(m.get("placement"), src, ("placement",)),
            phases=Phases.build(m.get("phases"), m.get("workload"), src, ("phases",)),
            repetitions=_int(m.get("repetitions", 1), src, ("repetitions",), 1, 1000),
            sweep=(axes[0] if axes else None),
            validity=dict(validity),
            sweep_axes=axes,
        )
        if spec.gateway.instances > spec.device_count:
            raise _err(src, ("gateway", "instances"),
                            f"{spec.gateway.instances} GEs for {spec.device_count} devices")
        return spec


@dataclass(frozen=True)
class RunSpec:
    """One test: the spec document as run (sweep value substituted) and its
    validated harness part."""

    doc: Mapping[str, Any]
    source: YamlSource
    harness: HarnessSpec
    label: str                 # e.g. "devices[0].count=10 rep=1"
    sweep_value: Any = None
    repetition: int = 1
    scale: str = "full"        # the spec's scale (harness/_scales.py)

    def yaml(self) -> str:
        return yaml.safe_dump(dict(self.doc), sort_keys=False)


def _substitute(doc: Any, path: Path_, value: Any, src: YamlSource, sweep_at: Path_) -> Any:
    out = copy.deepcopy(doc)
    node = out
    for i, part in enumerate(path[:-1]):
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            raise _err(src, sweep_at, f"{key_name(path[: i + 1])} does not exist in the spec") from None
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise _err(src, sweep_at, f"{key_name(path)} does not exist in the spec")
    elif not isinstance(node, dict):
        raise _err(src, sweep_at, f"{key_name(path[:-1])} is not a mapping")
    node[last] = value
    return out


def _validate_workload(src: YamlSource) -> None:
    """The workload keys are tracegen's: its validator sees every variant."""
    from wotbench.tracegen import _spec as tspec

    tspec.from_source(src)


def expand(src: YamlSource, scale: str | None = None) -> list[RunSpec]:
    """Every test the spec asks for (sweep values x repetitions) at ``scale``
    (default the body as written, ``full``), each validated, in run order.
    Nothing is started before all are valid."""
    from wotbench import _scales as scales

    src, scale_name = scales.apply(src, scale)
    src = _without_capacity(src)
    doc = src.data
    base = HarnessSpec.build(doc, src)
    variants: list[tuple[Any, YamlSource, Any, str]] = []
    if not base.sweep_axes:
        variants.append((doc, src, None, ""))
    else:
        axes = base.sweep_axes
        for idx in itertools.product(*(range(len(a.values)) for a in axes)):
            vdoc: Any = doc
            lines = dict(src.lines)
            for a, i in zip(axes, idx):
                at = a.at + ("values", i)
                vdoc = _substitute(vdoc, a.path, a.values[i], src, at)
                # A bad swept value is reported at its line in the sweep's values.
                lines = {p: ln for p, ln in lines.items() if p[: len(a.path)] != a.path}
                lines[a.path] = src.line(*at) or 0
            del vdoc["sweep"]
            values = tuple(a.values[i] for a, i in zip(axes, idx))
            vsrc = YamlSource(src.name, vdoc, src.base_dir, lines)
            label = " ".join(f"{a.key}={v}" for a, v in zip(axes, values))
            variants.append((vdoc, vsrc, values[0] if len(values) == 1 else values, label))
    runs: list[RunSpec] = []
    for vdoc, vsrc, value, label in variants:
        hs = HarnessSpec.build(vdoc, vsrc)
        _validate_workload(vsrc)
        for rep in range(1, base.repetitions + 1):
            text = " ".join(x for x in (label, f"rep={rep}" if base.repetitions > 1 else "") if x)
            runs.append(RunSpec(vdoc, vsrc, hs, text, value, rep, scale_name))
    return runs


def _without_capacity(src: YamlSource) -> YamlSource:
    """``capacity:`` belongs to `wotbench capacity` (harness/_capacity.py); it
    is validated here too so that `run` and `plan` reject a bad one."""
    doc = src.data
    if not isinstance(doc, Mapping) or "capacity" not in doc:
        return src
    from wotbench._capacity import CapacitySpec

    CapacitySpec.build(doc["capacity"], src)
    rest = {k: v for k, v in doc.items() if k != "capacity"}
    lines = {p: ln for p, ln in src.lines.items() if not p or p[0] != "capacity"}
    return YamlSource(src.name, rest, src.base_dir, lines)


def load(path: str | Path, scale: str | None = None) -> list[RunSpec]:
    return expand(yamlsrc.load(path), scale)
