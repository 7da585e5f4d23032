"""The nodes a run can use, as the local Docker engine reports them.

Not in a swarm (or no engine answers): one node, this host, its cores those
this process may run on (``os.sched_getaffinity``), as the single-host plan
has always used. On a swarm manager: every node of the swarm, read from the
engine's node list (hostname, labels, role, state, availability, CPUs,
engine version, platform). A swarm worker cannot list the nodes: that is a
:class:`wotbench.UserError` saying so.

Core ids of a swarm node are ``0 .. CPUs-1``: the engine reports a count
(``NanoCPUs``), and a container's cpuset on that node numbers its CPUs the
same way.
"""

from __future__ import annotations

import os
import platform
import socket
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import docker
import docker.errors

from wotbench.base.errors import UserError
from wotbench.engine import dockerenv

#: Where a node's core list came from (recorded with it).
CORES_AFFINITY = "sched_getaffinity"
CORES_ENGINE = "NanoCPUs"


@dataclass(frozen=True)
class NodeInfo:
    """One node as its engine (or, in a swarm, the manager) reports it."""

    id: str
    """Swarm node ID; empty for a host that is not in a swarm."""
    hostname: str
    role: str = "manager"
    """``manager`` or ``worker``; ``manager`` for a lone host."""
    state: str = "ready"
    """Swarm status: ``ready``, ``down``, ``unknown``, ``disconnected``."""
    availability: str = "active"
    """``active``, ``pause`` or ``drain`` (nothing new is scheduled there)."""
    labels: tuple[tuple[str, str], ...] = ()
    """Node labels (``docker node update --label-add``), sorted."""
    cores: tuple[int, ...] = ()
    cores_from: str = CORES_ENGINE
    engine_version: str | None = None
    kernel: str | None = None
    """Known for the local node only (a swarm does not report others')."""
    platform: str | None = None
    """``OS/architecture``, e.g. ``linux/x86_64``."""
    addr: str | None = None
    local: bool = False
    """The node this process runs on."""

    @property
    def usable(self) -> bool:
        """Whether work can be scheduled on it: Ready and active."""
        return self.state == "ready" and self.availability == "active"

    def has_label(self, key: str, value: str | None) -> bool:
        labels = dict(self.labels)
        return key in labels and (value is None or labels[key] == value)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["labels"] = dict(self.labels)
        d["cores"] = list(self.cores)
        return d


@dataclass(frozen=True)
class Inventory:
    """The nodes a plan may use; ``swarm`` False: one node, this host."""

    swarm: bool
    nodes: tuple[NodeInfo, ...]

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("an inventory has at least one node")
        if [n.local for n in self.nodes].count(True) != 1:
            raise ValueError("exactly one node of an inventory is the local one")
        if not self.swarm and len(self.nodes) != 1:
            raise ValueError("outside a swarm the inventory is this host alone")

    @property
    def local(self) -> NodeInfo:
        return next(n for n in self.nodes if n.local)

    def to_dict(self) -> dict[str, Any]:
        return {"swarm": self.swarm, "nodes": [n.to_dict() for n in self.nodes]}


def node_from_attrs(attrs: Mapping[str, Any], *, local_id: str = "",
                    kernel: str | None = None) -> NodeInfo:
    """A swarm node from the engine's node object (``client.nodes.list()``
    attrs); ``kernel`` is recorded for the local node (``local_id``)."""
    desc = attrs.get("Description") or {}
    spec = attrs.get("Spec") or {}
    status = attrs.get("Status") or {}
    plat = desc.get("Platform") or {}
    ncpu = int((desc.get("Resources") or {}).get("NanoCPUs") or 0) // 1_000_000_000
    node_id = str(attrs.get("ID", ""))
    return NodeInfo(
        id=node_id,
        hostname=str(desc.get("Hostname", "")),
        role=str(spec.get("Role", "worker")),
        state=str(status.get("State", "unknown")),
        availability=str(spec.get("Availability", "active")),
        labels=tuple(sorted((str(k), str(v)) for k, v in (spec.get("Labels") or {}).items())),
        cores=tuple(range(ncpu)),
        cores_from=CORES_ENGINE,
        engine_version=(desc.get("Engine") or {}).get("EngineVersion"),
        kernel=kernel if node_id == local_id else None,
        platform="/".join(p for p in (plat.get("OS"), plat.get("Architecture")) if p) or None,
        addr=status.get("Addr"),
        local=node_id == local_id,
    )


def this_host(engine_version: str | None = None) -> NodeInfo:
    """This host alone: the cores this process may run on."""
    return NodeInfo(id="", hostname=socket.gethostname(), cores=tuple(sorted(os.sched_getaffinity(0))),
                    cores_from=CORES_AFFINITY, engine_version=engine_version,
                    kernel=platform.release(), local=True)


def swarm_role(info: Mapping[str, Any]) -> str:
    """``inactive`` (not in a swarm) or ``manager``, from the engine's
    ``info()``; a worker (which cannot list the nodes) or a swarm the
    engine cannot use is a UserError."""
    sw = info.get("Swarm") or {}
    state = sw.get("LocalNodeState") or "inactive"
    if state == "inactive":
        return "inactive"
    if state != "active":
        raise UserError(f"this host's swarm membership is {state!r} "
                        f"({sw.get('Error') or 'see docker info'}); fix or leave the swarm first")
    if not sw.get("ControlAvailable"):
        raise UserError("this host is a swarm worker: only a manager can list the swarm's nodes; "
                        "run wotbench on a manager (docker node ls)")
    return "manager"


def read_inventory(client: docker.DockerClient | None = None) -> Inventory:
    """The local engine's nodes. Without an engine that answers, this host
    alone (as the single-host plan needs no engine)."""
    if client is None:
        try:
            client = dockerenv.client()
        except UserError:
            return Inventory(False, (this_host(),))
    info = client.info()
    if swarm_role(info) == "inactive":
        return Inventory(False, (this_host(client.version().get("Version")),))
    local_id = (info.get("Swarm") or {}).get("NodeID", "")
    try:
        nodes = client.nodes.list()
    except docker.errors.APIError as exc:
        raise UserError(f"the engine refused to list the swarm's nodes: {exc.explanation or exc}") from None
    out = tuple(sorted((node_from_attrs(n.attrs, local_id=local_id, kernel=info.get("KernelVersion"))
                        for n in nodes), key=lambda n: (not n.local, n.hostname, n.id)))
    return Inventory(True, out)
