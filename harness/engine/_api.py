"""The container engine as the run phases see it.

A test is a set of containers, each with a role (a device, the CD node, a
workload GE, the CD-GE), a command, resource limits, a cpuset and folders
of the run mounted into it. The engine places and connects them (every GE
reaches every node), says where each node listens, reports their states
and removes everything of the run whatever happens. Phases use only this
interface: one Docker engine (:class:`wotbench.engine.DockerBackend`)
or a Docker Swarm (:class:`wotbench.engine.SwarmBackend`: the nodes'
engines and an overlay network), ``ContainerSpec.node`` naming where a
container goes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import docker.errors
import requests

if TYPE_CHECKING:
    from wotbench.engine._remote import ClockOffset
    from wotbench.engine._timing import PhaseTimes
    from wotbench.host.rt import RtBudget
    from wotbench.spec import Impairment, RunCapture

#: What any engine call raises when the engine behind it stopped answering
#: (dockerd restarted or gone, a swarm node lost): callers retry or give up.
ENGINE_GONE: tuple[type[Exception], ...] = (requests.exceptions.ConnectionError, docker.errors.DockerException)

__all__ = ["ENGINE_GONE", "Backend", "ContainerSpec", "ContainerState", "Mount", "Started", "Removed",
           "NODE_ROLES", "GE_ROLES", "HOG_ROLE", "GATEWAY_ROLE"]

#: Roles of the containers of a run.
NODE_ROLES = ("device", "cd-node")
GE_ROLES = ("ge", "cd-ge")
#: A noisy neighbour (wotbench-hog, in the device image; no network).
HOG_ROLE = "hog"
#: The gateway under test: the user's image between the GEs and the devices.
GATEWAY_ROLE = "gateway"


@dataclass(frozen=True)
class Mount:
    """A folder or file of the run inside a container."""

    source: Path
    target: str
    writable: bool = False


@dataclass(frozen=True)
class ContainerSpec:
    """What to run; the backend decides how (image, hardening, networks)."""

    key: str                        # the run's name for it: dev-<id>, cd-node, ge-<k>, cd-ge
    role: str                       # NODE_ROLES, GE_ROLES, probe (a GE), monitor (collectl) or HOG_ROLE
    argv: tuple[str, ...]
    cpuset: str
    memory_bytes: int
    pids: int
    nano_cpus: int | None = None
    mounts: tuple[Mount, ...] = ()
    device_id: int | None = None
    as_caller: bool = False         # run as the harness's uid (it writes into the run folder)
    node: str | None = None         # engine node to place it on; None: the backend chooses
    entrypoint: tuple[str, ...] | None = None   # another program of its image (None: the image's)
    rt_budget: RtBudget | None = None   # a SCHED_FIFO GE/CD-GE: its RT budget (the harness gives it FIFO)
    image: str | None = None        # an image of the user's (the gateway under test); None: the role's
    env: tuple[tuple[str, str], ...] = ()       # its environment
    tmpfs: tuple[str, ...] = ()     # folders given a tmpfs (writable under the read-only root)
    extra_hosts: tuple[tuple[str, str], ...] = ()   # (name, address) into its hosts file

    @property
    def image_role(self) -> str:
        if self.role in NODE_ROLES or self.role == HOG_ROLE:
            return "device"
        return "nettools" if self.role == "monitor" else "ge"


@dataclass(frozen=True)
class Started:
    """A running container: its engine name and id, and where a node listens."""

    key: str
    role: str
    name: str
    id: str
    address: str | None = None      # CoAP address of a node (None for a GE)
    node: str | None = None         # swarm node it runs on (None: this host)


@dataclass(frozen=True)
class ContainerState:
    status: str | None              # running, exited, removed, ...
    exit_code: int | None
    oom_killed: bool | None
    started_at: str | None = None   # the engine's State.StartedAt (RFC 3339): later than the run started it = restarted
    restarts: int | None = None     # the engine's RestartCount (restarts by a restart policy)
    addresses: tuple[str, ...] | None = None   # its IPv4 addresses on the run's networks (None: unknown)
    finished_at: str | None = None  # the engine's State.FinishedAt (RFC 3339) once it exited

    @classmethod
    def of(cls, info: dict[str, Any]) -> ContainerState:
        """The state of an engine's ``inspect`` of a container."""
        st = info.get("State") or {}
        nets = (info.get("NetworkSettings") or {}).get("Networks") or {}
        return cls(st.get("Status"), st.get("ExitCode"), st.get("OOMKilled"), st.get("StartedAt"),
                   info.get("RestartCount"), tuple(sorted(n["IPAddress"] for n in nets.values()
                                                          if n.get("IPAddress"))),
                   st.get("FinishedAt"))

    @property
    def running(self) -> bool:
        return self.status == "running"


@dataclass(frozen=True)
class Removed:
    containers: int
    networks: int
    stuck: tuple[str, ...]          # networks the engine refused to remove


class Backend(Protocol):
    """One run's containers and networks on a container engine."""

    run_id: str
    #: Longest create + start of one container so far (the GEs' start lead allows for it).
    slowest_start_s: float
    #: Whether the harness reaches the nodes' addresses (else readiness is probed from a GE).
    probes_from_host: bool
    #: Nodes lost during the run (hostname -> why); always empty on one host.
    lost: dict[str, str]
    #: Each node's clock against this host's (wotbench.engine.ClockOffset); empty on one host.
    clocks: dict[str, ClockOffset]
    #: Per phase (create, start, ready, remove, ...): each engine call's seconds and the wall time.
    times: PhaseTimes
    #: Host settings the run changed (what -> before/after), for the manifest; empty if none.
    host_changes: dict[str, Any]

    def name_of(self, key: str) -> str:
        """The engine's container name for a run key (known before it starts)."""

    def version(self) -> Mapping[str, Any]:
        """Engine version facts for the manifest (``Version``, ``ApiVersion``)."""

    def check_images(self, roles: Iterable[str]) -> dict[str, str]:
        """Image id per role; a missing image is a UserError."""

    def image_labels(self, image_id: str) -> dict[str, str]:
        """The labels of an image this host's engine holds (by id: one that
        check_images returned); a swarm's nodes hold the same image."""

    def check_impairment(self, imps: Sequence[tuple[str, Impairment]]) -> bool:
        """Raises UserError (field = the spec key) for an impairment the engine
        cannot apply; returns whether netem is available."""

    def create_networks(self, nodes: int) -> int:
        """Networks for ``nodes`` nodes plus the GEs; returns how many."""

    def pid_of(self, started: Started) -> int | None:
        """The host pid of a running container's process (its network
        namespace is /proc/<pid>/ns/net); None if not on this host."""

    def start_nodes(self, specs: Sequence[ContainerSpec], progress: bool) -> list[Started]:
        """Starts the nodes in parallel, in ``specs`` order; waits for the calls
        in flight before re-raising an error (so teardown sees them all)."""

    def wait_ready(self, nodes: Sequence[Started], timeout_s: float) -> list[str]:
        """Waits until every node answers CoAP; returns the keys that never did."""

    def impair(self, targets: Sequence[tuple[Started, Impairment]], netem: bool, duration_s: int,
               log: Path) -> dict[str, Any]:
        """Applies each node's impairment for at least ``duration_s``; returns
        what was applied (``how``, ``containers``)."""

    def start_ge(self, spec: ContainerSpec) -> Started:
        """Starts a gateway emulator that reaches every node."""

    def start_offline(self, spec: ContainerSpec) -> Started:
        """Starts a container with no network: a resource monitor (collectl), a hog."""

    def check_image(self, ref: str, node: str | None = None) -> str:
        """The id of the image ``ref`` (the gateway under test's) on ``node``
        (None: this host); a missing image is a UserError."""

    def start_gateway(self, spec: ContainerSpec) -> Started:
        """Starts the gateway under test on every network of the run, at an
        address of its own (``Started.address``)."""

    def start_capture(self, key: str, target: Started, folder: Path, capture: RunCapture, cpuset: str) -> Started:
        """Starts tcpdump in ``target``'s network namespace writing into
        ``folder`` on ``cpuset``; returns once it listens (docs/capture.md)."""

    def stop_capture(self, started: Started) -> dict[str, Any]:
        """Stops a capture so that its last file is whole; returns its exit
        and tcpdump's counts (``packets_captured``, ``packets_dropped_by_kernel``)."""

    def wait(self, started: Started, timeout_s: float) -> int | None:
        """Exit code of a container, or None when it had to be killed after ``timeout_s``."""

    def states(self) -> dict[str, ContainerState]:
        """State of every container of the run now, by container name."""

    def stop_all(self) -> None:
        """SIGTERM every container (devices write their counters), then stop."""

    def save_logs(self, path_of: Callable[[str], Path]) -> None:
        """Writes each container's log to ``path_of(container name)``."""

    def remote(self, node: str | None) -> bool:
        """Whether a container on ``node`` runs on another host than the harness."""

    def fetch(self, names: Iterable[str] | None = None) -> list[str]:
        """Brings containers' writable mounts back into the run folder (where
        they are not bind mounts); returns what could not be fetched."""

    def node_states(self) -> dict[str, str]:
        """Each node's state now (swarm), recording nodes lost in ``lost``."""

    def teardown(self, progress: bool = False) -> Removed:
        """Removes everything of the run (idempotent; helper processes too),
        with a progress bar when ``progress``."""
