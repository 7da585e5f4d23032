"""Where the parts of a test run: one host (a :class:`~wotbench.execution.placement.Plan`)
or the nodes of a swarm (a :class:`~wotbench.execution.placement.ClusterPlan`), seen by
the phases the same way, as a list of host parts: each host's plan, its
devices, its GEs and whether it runs a CD pair."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wotbench.engine import Started
from wotbench.execution.placement import ClusterPlan, Plan

if TYPE_CHECKING:
    from wotbench.spec import DeviceGroup

__all__ = ["HostPart", "Layout", "Node", "layout_of"]


@dataclass(frozen=True)
class Node:
    """A CoAP server of the test: a device, or the CD node (no group)."""

    started: Started
    device_id: int | None
    group: DeviceGroup | None




@dataclass(frozen=True)
class HostPart:
    """One host's part of a test."""

    node: str | None                   # swarm hostname; None: the one host of a single-host run
    index: int
    plan: Plan
    device_ids: tuple[int, ...]        # in plan.device_cpusets' order
    ge_instances: int

    @property
    def cd(self) -> bool:
        return self.plan.cd_node_cpuset is not None

    def key(self, role: str) -> str:
        """The run key of this host's CD node or CD-GE: ``cd-node`` on one
        host, ``cd-node-<i>`` on a swarm."""
        return role if self.node is None else f"{role}-{self.index}"


@dataclass(frozen=True)
class Layout:
    parts: tuple[HostPart, ...]
    cluster: ClusterPlan | None        # None: one host
    reserve: tuple[int, ...]           # placement.reserve: the harness's cores on this host

    @property
    def swarm(self) -> bool:
        return self.cluster is not None

    @property
    def ge_part(self) -> HostPart:
        return next(p for p in self.parts if p.ge_instances) if any(p.ge_instances for p in self.parts) \
            else self.parts[0]

    @property
    def cores_shared(self) -> bool:
        return any(p.plan.cores_shared for p in self.parts)

    @property
    def notes(self) -> list[str]:
        return [(f"{p.node}: " if p.node else "") + n for p in self.parts for n in p.plan.notes]

    def render(self, group_of: Sequence[int] = (), group_names: Sequence[str] = ()) -> str:
        if self.cluster is None:
            return self.parts[0].plan.render()
        return self.cluster.render(group_of, group_names)

    def to_dict(self) -> dict[str, Any]:
        return self.parts[0].plan.to_dict() if self.cluster is None else self.cluster.to_dict()


def layout_of(found: Plan | ClusterPlan, devices: int, ge_instances: int,
              reserve: Sequence[int]) -> Layout:
    if isinstance(found, Plan):
        return Layout((HostPart(None, 0, found, tuple(range(devices)), ge_instances),), None, tuple(reserve))
    parts = tuple(HostPart(n.hostname, i, n.plan, n.device_ids, n.ge_instances)
                  for i, n in enumerate(found.nodes))
    return Layout(parts, found, tuple(reserve))
