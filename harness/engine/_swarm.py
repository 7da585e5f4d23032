"""A Docker Swarm: the run's containers on the engines of several nodes,
joined by one attachable overlay network the manager creates.

The swarm gives the node inventory, the node labels and the overlay across
hosts. The containers themselves are created on each node's own engine (its
URL is the node label ``org.wotbench.engine``, docs/multi-host.md), not as
swarm services: a service cannot have a cpuset, nor files put into it
before it starts. So every container keeps the hardening and the cpuset it
has on one host; on another node its files travel through a volume
(:mod:`wotbench.engine._remote`). The harness cannot reach overlay
addresses, so readiness is probed from a GE container
(:attr:`SwarmBackend.probes_from_host` is False).
"""

from __future__ import annotations

import contextlib
import ipaddress
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker
import docker.errors
import docker.types
import requests
from docker.models.containers import Container

from wotbench.base.errors import UserError
from wotbench.engine import dockerenv
from wotbench.engine import netimpair as impair_tools
from wotbench.engine._api import ContainerSpec, ContainerState, Mount, Removed, Started
from wotbench.engine._docker import DockerBackend, Endpoint
from wotbench.engine._remote import IO, REMOTE_UID, ClockOffset, clock_offset, pack, relative, unpack
from wotbench.engine.dockerenv import IMAGES, LABEL_ENGINE

if TYPE_CHECKING:
    from wotbench.engine.inventory import Inventory
    from wotbench.spec import Impairment

__all__ = ["SwarmBackend", "OVERLAY_STATIC"]

#: Addresses of an overlay given to nodes (from .10 on); the last /24 of
#: its /22 is left to the engine (GEs, the nodes' load-balancer endpoints).
OVERLAY_STATIC = 758
#: The gateway under test's address on each overlay: below the nodes' .10.
_OVERLAY_GATEWAY_HOST = 5
_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException, OSError)


class SwarmBackend(DockerBackend):
    """The containers and networks of one run on the nodes of a swarm."""

    probes_from_host = False

    def __init__(self, client: docker.DockerClient, run_id: str, inventory: Inventory) -> None:
        super().__init__(client, run_id)
        self.inventory = inventory
        self.local = inventory.local.hostname
        self.engines: dict[str, docker.DockerClient] = {self.local: client}
        self.node_of: dict[str, str] = {}              # container name -> hostname
        self.outputs: dict[str, tuple[Mount, ...]] = {}  # remote container -> its writable mounts
        self.lost: dict[str, str] = {}                 # hostname -> why
        self.host_changes: dict[str, Any] = {}         # none: the nodes' kernels are not this host's to set

    # --- nodes ------------------------------------------------------------------

    def connect(self, hostnames: Iterable[str]) -> None:
        """A client for every node's engine (LABEL_ENGINE), and its clock; a
        node without the label or whose engine does not answer is a UserError."""
        by_name = {n.hostname: n for n in self.inventory.nodes}
        for host in hostnames:
            if host in self.engines and host != self.local:
                continue
            if host != self.local:
                url = dict(by_name[host].labels).get(LABEL_ENGINE)
                if not url:
                    raise UserError(f"node {host} has no {LABEL_ENGINE} label: the manager cannot reach "
                                    f"its engine (docker node update --label-add {LABEL_ENGINE}=ssh://... "
                                    f"{host}; docs/multi-host.md)", field="cluster")
                self.engines[host] = dockerenv.engine_client(url, host)
            self.clocks[host] = (clock_offset(self.engines[host]) if host != self.local
                                 else ClockOffset(0.0, 0.0, "this host"))

    def client_of(self, node: str | None) -> docker.DockerClient:
        return self.engines[node or self.local]

    def remote(self, node: str | None) -> bool:
        return (node or self.local) != self.local

    def check_images(self, roles: Iterable[str]) -> dict[str, str]:
        """Image ids on the manager; every other node must hold the same."""
        roles = list(roles)
        ids = dockerenv.check_images(self.client, roles)
        for host, c in self.engines.items():
            if host == self.local:
                continue
            for role in roles:
                try:
                    got: str | None = dockerenv.engine_id(c.images.get(IMAGES[role]))
                except docker.errors.ImageNotFound:
                    got = None
                if got != ids[role]:
                    raise UserError(f"node {host} {'lacks' if got is None else 'has another'} image "
                                    f"{IMAGES[role]}: load it there (docker save {IMAGES[role]} | "
                                    f"ssh {host} docker load; docs/multi-host.md)")
        return ids

    def check_image(self, ref: str, node: str | None = None) -> str:
        """The gateway under test's image, on the node it runs on."""
        try:
            return dockerenv.engine_id(self.client_of(node).images.get(ref))
        except docker.errors.ImageNotFound:
            raise UserError(f"image {ref} is missing on node {node or self.local} (a shipped gateway's image is "
                            "built by docker/build-images.sh; load it there: docs/multi-host.md)",
                            field="gateway_under_test.image") from None

    # --- networks ---------------------------------------------------------------

    def _used_subnets(self) -> list[ipaddress.IPv4Network]:
        """This host's taken subnets and every other node engine's networks."""
        return dockerenv.used_subnets(self.client) + [
            net for host, c in self.engines.items() if host != self.local for net in dockerenv.engine_subnets(c)]

    def create_networks(self, nodes: int) -> int:
        """Attachable, internal overlay networks: the nodes' addresses are
        fixed (the GEs' hosts file), the last /24 of each is the engine's."""
        count = max(1, -(-nodes // OVERLAY_STATIC))
        self.subnets = dockerenv.free_subnets(self._used_subnets(), count)
        for i, sub in enumerate(self.subnets):
            dynamic = list(sub.subnets(new_prefix=24))[-1]
            ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(
                subnet=str(sub), gateway=str(next(sub.hosts())), iprange=str(dynamic))])
            self.networks.append(self.client.networks.create(
                f"wb-{self.short}-ov{i}", driver="overlay", attachable=True, internal=True, ipam=ipam,
                labels=self.labels("network"), check_duplicate=True))
        return len(self.networks)

    def addresses(self, count: int) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for net, sub in zip(self.networks, self.subnets, strict=True):
            base = int(sub.network_address)
            out += [(dockerenv.engine_name(net), str(ipaddress.IPv4Address(base + k)))
                    for k in range(10, 10 + min(OVERLAY_STATIC, count - len(out)))]
        if len(out) < count:
            raise RuntimeError(f"networks hold {len(out)} containers, {count} needed")
        return out

    # --- containers -------------------------------------------------------------

    def _create(self, spec: ContainerSpec, network: str | None, address: str | None) -> tuple[Container, float]:
        node = spec.node or self.local
        if not self.remote(node):
            ct, t = super()._create(spec, network, address)
            self.node_of[dockerenv.engine_name(ct)] = node
            return ct, t
        c = self.engines[node]
        name = self.name_of(spec.key)
        t = time.monotonic()
        vol = c.volumes.create(f"{name}-io", labels=self.labels("volume"))
        endpoint: Endpoint = ({"network_mode": "none"} if network is None else {
            "network": network, "networking_config": {network: c.api.create_endpoint_config(ipv4_address=address)}})
        ct = c.containers.create(**self.create_args(spec, f"{REMOTE_UID}:{REMOTE_UID}"),
                                 volumes={vol.name: {"bind": IO, "mode": "rw"}}, **endpoint)
        self.containers[name] = ct
        self.node_of[name] = node
        for m in spec.mounts:
            relative(m.target)                       # every target below IO, or a clear error
        if not ct.put_archive(IO, pack(spec.mounts)):
            raise RuntimeError(f"node {node}: the engine refused the files of {name}")
        self.outputs[name] = tuple(m for m in spec.mounts if m.writable)
        return ct, t

    def start_nodes(self, specs: Sequence[ContainerSpec], progress: bool) -> list[Started]:
        """Every node's engine gets its own share of parallel calls."""
        self._pool = dockerenv.WORKERS * max(1, len({s.node or self.local for s in specs}))
        return super().start_nodes(specs, progress)

    def start_offline(self, spec: ContainerSpec) -> Started:
        st = super().start_offline(spec)
        return Started(st.key, st.role, st.name, st.id, None, spec.node or self.local)

    def start_ge(self, spec: ContainerSpec) -> Started:
        """A GE on its node, on every overlay (an address the engine picks)."""
        ct, _ = self._create(spec, dockerenv.engine_name(self.networks[0]), None)
        for net in self.networks[1:]:
            self.client_of(spec.node).networks.get(dockerenv.engine_name(net)).connect(ct)
        ct.start()
        return Started(spec.key, spec.role, dockerenv.engine_name(ct), dockerenv.engine_id(ct), None,
                       spec.node or self.local)

    def start_gateway(self, spec: ContainerSpec) -> Started:
        """The gateway under test on its node (the GE node), on every
        overlay at host _OVERLAY_GATEWAY_HOST of each: a fixed address the
        GEs are given before they start."""
        addresses = [str(sub.network_address + _OVERLAY_GATEWAY_HOST) for sub in self.subnets]
        ct, _ = self._create(spec, dockerenv.engine_name(self.networks[0]), addresses[0])
        for net, address in zip(self.networks[1:], addresses[1:], strict=True):
            self.client_of(spec.node).networks.get(dockerenv.engine_name(net)).connect(ct, ipv4_address=address)
        ct.start()
        return Started(spec.key, spec.role, dockerenv.engine_name(ct), dockerenv.engine_id(ct), addresses[0],
                       spec.node or self.local)

    def wait(self, started: Started, timeout_s: float) -> int | None:
        try:
            return super().wait(started, timeout_s)
        except _ERRORS as exc:                       # its node's engine is gone
            self.lose(self.node_of.get(started.name, "?"), f"waiting for {started.key}: {exc}")
            return None

    def lose(self, node: str, why: str) -> None:
        self.lost.setdefault(node, why)

    # --- impairment -------------------------------------------------------------

    def impair(self, targets: Sequence[tuple[Started, Impairment]], netem: bool, duration_s: int,
               log: Path) -> dict[str, Any]:
        """One sidecar per device in its network namespace, on its node."""
        by_node: dict[str, list[tuple[str, Impairment]]] = {}
        for st, imp in targets:
            by_node.setdefault(self.node_of[st.name], []).append((st.id, imp))
        how = None
        for node, items in by_node.items():
            how = impair_tools.apply_sidecars(self.engines[node], self.run_id, items, netem).how
        return {"how": how, "containers": len(targets)}

    # --- the end ----------------------------------------------------------------

    def node_states(self) -> dict[str, str]:
        """Each node's swarm state as the manager sees it now, ``lost`` for a
        node whose engine stopped answering during the run."""
        try:
            seen = {n.attrs["Description"]["Hostname"]: n.attrs["Status"]["State"]
                    for n in self.client.nodes.list()}
        except _ERRORS:
            seen = {}
        out = {}
        for host, c in self.engines.items():
            state = seen.get(host, "unknown")
            if host not in self.lost:
                try:
                    c.ping()
                except _ERRORS as exc:
                    self.lose(host, f"its engine stopped answering ({type(exc).__name__})")
            if host not in self.lost and state != "ready":
                self.lose(host, f"the swarm reports it {state}")
            out[host] = state
        return out

    def states(self) -> dict[str, ContainerState]:
        def inspect(name: str) -> tuple[str, ContainerState]:
            node = self.node_of.get(name, self.local)
            if node in self.lost:
                return name, ContainerState("lost", None, None)
            try:
                info = self.engines[node].api.inspect_container(name)
            except docker.errors.NotFound:
                return name, ContainerState("removed", None, None)
            except _ERRORS as exc:
                self.lose(node, f"inspecting {name}: {type(exc).__name__}")
                return name, ContainerState("lost", None, None)
            state = ContainerState.of(info)
            # Another host's StartedAt is on its own clock: restarts are judged by its RestartCount.
            return name, replace(state, started_at=None) if self.remote(node) else state
        return dict(self._each(inspect, self.containers))

    def _live(self) -> dict[str, Container]:
        return {n: ct for n, ct in self.containers.items() if self.node_of.get(n) not in self.lost}

    def stop_all(self, timeout_s: int = 2) -> None:
        def stop(ct: Container) -> None:
            with contextlib.suppress(*_ERRORS):
                ct.stop(timeout=timeout_s)
        self._each(stop, self._live().values())

    def fetch(self, names: Iterable[str] | None = None) -> list[str]:
        """Brings the writable folders of remote containers (all, or
        ``names``) back into the run folder; returns what could not be."""
        failed: list[str] = []
        for name in (list(names) if names is not None else list(self.outputs)):
            for m in self.outputs.get(name, ()):
                try:
                    chunks, _ = self.containers[name].get_archive(m.target)
                    unpack(chunks, m.source)
                except (*_ERRORS, ValueError) as exc:
                    failed.append(f"{name}:{m.target} ({type(exc).__name__})")
        return failed

    def teardown(self, progress: bool = False) -> Removed:
        """Every node's containers and volumes of the run (in parallel), then
        the overlay networks on the manager; an unreachable node is reported."""
        def clean(item: tuple[str, docker.DockerClient]) -> tuple[int, int, list[str]]:
            host, c = item
            if host == self.local:
                return 0, 0, []
            try:
                return dockerenv.remove_labelled(c, self.run_id, swarm_networks=False, local=False)
            except _ERRORS as exc:
                return 0, 0, [f"node {host}: {type(exc).__name__}"]
        with ThreadPoolExecutor(max(1, len(self.engines))) as pool:
            remote = list(pool.map(clean, self.engines.items()))
        local = super().teardown(progress)
        self._until_gone()
        return Removed(local.containers + sum(r[0] for r in remote), local.networks + sum(r[1] for r in remote),
                       tuple(local.stuck) + tuple(s for r in remote for s in r[2]))

    def _until_gone(self, timeout_s: float = 10.0) -> None:
        """The engines drop a removed overlay from their lists a moment
        after the call returns (a worker once its agent hears of it): wait
        until none shows it (teardown means gone)."""
        flt = {"label": f"{dockerenv.LABEL_RUN}={self.run_id}"}
        end = time.monotonic() + timeout_s
        for host, c in self.engines.items():
            if host in self.lost:
                continue
            with contextlib.suppress(*_ERRORS):
                while c.networks.list(filters=flt) and time.monotonic() < end:
                    time.sleep(0.2)
