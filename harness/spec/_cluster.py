"""The ``cluster:`` section (docs/spec.md): which Docker Swarm nodes run
the gateway emulators and which run the devices, and how the devices are
spread over them. Only the shape is checked here; whether the swarm has
those nodes is the planner's question (:mod:`wotbench.execution.placement`), asked of the
node inventory the engine reports (:mod:`wotbench.engine.inventory`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource

SPREADS = ("even", "fill")
#: Devices per device core of a node that ``spread: fill`` fills it with
#: (the paper's sleep-mode study runs 100 devices on 5 cores).
DEFAULT_PER_CORE = 20
#: Docker's node labels: a key of letters, digits and ``._-`` (``role``,
#: ``org.wotbench.role``), optionally ``=value``.
_LABEL_RE = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)(?:=(.*))?")


@dataclass(frozen=True)
class NodeSelector:
    """Nodes by hostname (or node ID), or every node carrying a label."""

    hostnames: tuple[str, ...] = ()
    label: tuple[str, str | None] | None = None
    """``(key, value)``; value None: any node that has the key."""

    def __post_init__(self) -> None:
        if bool(self.hostnames) == (self.label is not None):
            raise ValueError("a node selector names hostnames or a label, exactly one of them")

    @property
    def label_text(self) -> str:
        """The label as written: ``role=ge`` or ``role``."""
        if self.label is None:
            return ""
        key, value = self.label
        return key if value is None else f"{key}={value}"

    def to_dict(self) -> dict[str, Any]:
        return {"hostnames": list(self.hostnames), "label": self.label_text or None}

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath, names_key: str) -> NodeSelector:
        """``{names_key: ...}`` or ``{label: key=value}``; ``names_key`` is
        ``node`` (one hostname) or ``nodes`` (a list of them)."""
        m = read.mapping(v, src, at, {names_key, "label"})
        if len(m) != 1:
            raise src.error(f"give either {names_key!r} or 'label'", *at)
        if "label" in m:
            return cls(label=_label(m["label"], src, at + ("label",)))
        if names_key == "node":
            return cls(hostnames=(_hostname(m["node"], src, at + ("node",)),))
        names = m["nodes"]
        if not isinstance(names, list) or not names:
            raise src.error("expected a non-empty list of hostnames", *at, "nodes")
        hosts = tuple(_hostname(h, src, at + ("nodes", i)) for i, h in enumerate(names))
        for i, h in enumerate(hosts):
            if h in hosts[:i]:
                raise src.error(f"node {units.short(h)} listed twice", *at, "nodes", i)
        return cls(hostnames=hosts)


@dataclass(frozen=True)
class Cluster:
    """Where the parts of a run go on a swarm. A spec without the section
    runs on one host when that host is not in a swarm."""

    ge: NodeSelector | None = None
    """The node of the gateway emulators (one node; None: the manager
    wotbench runs on)."""
    devices: NodeSelector | None = None
    """The device nodes (None: every other Ready node; in a one-node swarm, that node)."""
    spread: str = "even"
    """``even``: each device node gets the same number of devices (within
    one), every group split over them; ``fill``: fill the nodes in order,
    ``per_core`` devices per device core each."""
    per_core: int = DEFAULT_PER_CORE

    def __post_init__(self) -> None:
        if self.spread not in SPREADS:
            raise ValueError(f"spread must be one of {SPREADS}, got {self.spread!r}")
        if self.ge is not None and len(self.ge.hostnames) > 1:
            raise ValueError("the gateway emulators run on one node")

    def to_dict(self) -> dict[str, Any]:
        return {"ge": self.ge.to_dict() if self.ge else None,
                "devices": self.devices.to_dict() if self.devices else None,
                "spread": self.spread, "per_core": self.per_core}

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> Cluster:
        """The section at ``at``; empty (``cluster:``) means every default."""
        m = read.mapping(v, src, at, {"ge", "devices", "spread", "per_core"})
        spread = read.choice(m.get("spread", "even"), src, at + ("spread",), SPREADS)
        if "per_core" in m and spread != "fill":
            raise src.error("only with spread: fill", *at, "per_core")
        return cls(
            ge=NodeSelector.build(m["ge"], src, at + ("ge",), "node") if "ge" in m else None,
            devices=(NodeSelector.build(m["devices"], src, at + ("devices",), "nodes")
                     if "devices" in m else None),
            spread=spread,
            per_core=read.integer(m.get("per_core", DEFAULT_PER_CORE), src, at + ("per_core",), 1, 10_000),
        )


def _hostname(v: Any, src: YamlSource, at: KeyPath) -> str:
    if not isinstance(v, str) or not v.strip() or v != v.strip():
        raise src.error(f"expected a node's hostname (or node ID), got {units.short(v)}", *at)
    return v


def _label(v: Any, src: YamlSource, at: KeyPath) -> tuple[str, str | None]:
    m = _LABEL_RE.fullmatch(v) if isinstance(v, str) else None
    if m is None:
        raise src.error(f"expected a node label as key=value or key (role=ge), got {units.short(v)}", *at)
    return m.group(1), m.group(2)
