"""The ``interference`` section (docs/spec.md, docs/interference.md): noisy
neighbours started at known instants of the measurement phase. Each entry
is one kind of hog (CPU busy loops or memory-bandwidth streams) on a set
of cores: the devices', the CD node's, the GEs' or listed core ids, on
every host with devices or one swarm node. Where the cores are is decided
at plan time (:mod:`wotbench.execution.phases._interfere`); here, only the spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource

__all__ = ["Interference", "read_interference", "KINDS", "CORE_ROLES", "MIN_BUFFER"]

KINDS = ("cpu", "membw")
#: Named core sets: the host's device cores, its CD node's cpuset, its GE cores.
CORE_ROLES = ("devices", "cd", "ge")
#: The smallest ``buffer: auto`` (bytes per thread).
MIN_BUFFER = 64 << 20
MAX_THREADS = 64
_KEYS = {"name", "kind", "threads", "cores", "node", "start", "end", "buffer"}


@dataclass(frozen=True)
class Interference:
    """One noisy neighbour: ``threads`` hogs of ``kind`` on ``cores`` from
    ``start_us`` to ``end_us`` (exclusive) after the measurement starts."""

    name: str
    kind: str
    threads: int
    cores: str | tuple[int, ...]
    """A name of :data:`CORE_ROLES` or host core ids."""
    start_us: int
    end_us: int
    node: str | None = None
    """A swarm node's hostname; None: every host that has devices."""
    buffer: int | None = None
    """membw: bytes per thread; None: auto (2 x the host's LLC, at least 64 MiB); cpu: None."""
    index: int = 0
    """Its position in the list: errors found later name ``interference[index]``."""

    @property
    def at(self) -> str:
        return f"interference[{self.index}]"

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath, measure_us: int) -> Interference:
        m = read.mapping(v, src, at, _KEYS)
        if not m:
            raise src.error("expected a mapping with at least 'kind'", *at)
        if "kind" not in m:
            raise src.error("missing key 'kind' (cpu or membw)", *at)
        kind = read.choice(m["kind"], src, at + ("kind",), KINDS)
        index = int(at[-1]) if at and isinstance(at[-1], int) else 0
        start = read.duration(m.get("start", "0s"), src, at + ("start",))
        end = read.duration(m["end"], src, at + ("end",)) if "end" in m else measure_us
        if start < 0:
            raise src.error(f"must be >= 0, got {units.short(m.get('start'))}", *at, "start")
        if "end" in m and end > measure_us:
            raise src.error(f"past the end of the measurement phase ({measure_us / 1e6:g} s), "
                            f"got {units.short(m['end'])}", *at, "end")
        if start >= end:
            raise src.error(f"must be before end ({end / 1e6:g} s), got {units.short(m.get('start'))}",
                            *at, "start")
        buffer = None
        if "buffer" in m:
            if kind != "membw":
                raise src.error("only for kind membw", *at, "buffer")
            if m["buffer"] != "auto":
                buffer = read.value(lambda x, f: _size(x, f), m["buffer"], src, at + ("buffer",))
        node = m.get("node")
        if node is not None and (not isinstance(node, str) or not node):
            raise src.error(f"expected a node's hostname, got {units.short(node)}", *at, "node")
        return cls(
            name=read.name(m.get("name", f"{kind}-{index}"), src, at + ("name",)),
            kind=kind,
            threads=read.integer(m.get("threads", 1), src, at + ("threads",), 1, MAX_THREADS),
            cores=_cores(m.get("cores", "devices"), src, at + ("cores",)),
            start_us=start, end_us=end, node=node, buffer=buffer, index=index)


def _size(v: Any, field: str) -> int:
    from wotbench.base.errors import UserError

    n = units.parse_size(v, field)
    if n < 4096:
        raise UserError(f"expected 'auto' or at least 4KB, got {units.short(v)}", field=field)
    return n


def _cores(v: Any, src: YamlSource, at: KeyPath) -> str | tuple[int, ...]:
    if isinstance(v, list):
        if not v:
            raise src.error("expected a non-empty list of core ids", *at)
        ids = tuple(read.integer(c, src, at + (i,), 0, 4095) for i, c in enumerate(v))
        if len(set(ids)) != len(ids):
            raise src.error("a core is listed twice", *at)
        return tuple(sorted(ids))
    if v not in CORE_ROLES:
        raise src.error(f"expected one of {', '.join(CORE_ROLES)} or a list of core ids, got {units.short(v)}",
                        *at)
    return str(v)


def read_interference(v: Any, src: YamlSource, measure_us: int | None) -> tuple[Interference, ...]:
    """The ``interference`` list; it needs the ``phases`` section (its
    instants are relative to the measurement phase)."""
    if v is None:
        return ()
    if measure_us is None:
        raise src.error("needs a 'phases' section (start and end are instants of its measurement phase)",
                        "interference")
    if not isinstance(v, list):
        raise src.error("expected a list of noisy neighbours, e.g. [{kind: cpu, start: 10s}]", "interference")
    out = tuple(Interference.build(item, src, ("interference", i), measure_us) for i, item in enumerate(v))
    seen: set[str] = set()
    for e in out:
        if e.name in seen:
            raise src.error(f"name {e.name!r} is used twice", "interference", e.index, "name")
        seen.add(e.name)
    return out
