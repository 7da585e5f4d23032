"""One Docker engine: the run's containers on private internal bridges,
created with the run's label and the hardening every container gets,
created in parallel, then started in parallel, and removed by that label
whatever happens. Every engine call's duration is recorded per phase
(``DockerBackend.times``: where bring-up and teardown time goes)."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict, TypeVar

import docker
import docker.errors
import docker.types
import requests
from docker.models import containers as docker_containers
from docker.models.containers import Container
from docker.models.networks import Network
from tqdm import tqdm

from wotbench.base.errors import UserError
from wotbench.base.formats import DEFAULT_COAP_PORT
from wotbench.base.results import write_atomic
from wotbench.engine import dockerenv, netcapture
from wotbench.engine import netimpair as impair_tools
from wotbench.engine import readiness as probe
from wotbench.engine._api import ContainerSpec, ContainerState, Removed, Started
from wotbench.engine._remote import ClockOffset
from wotbench.engine._timing import PhaseTimes
from wotbench.engine.dockerenv import IMAGES, LABEL_DEVICE, LABEL_OWNER, LABEL_ROLE, LABEL_RUN, NET_CAPACITY
from wotbench.host import hostguard
from wotbench.host import neigh as _neigh

if TYPE_CHECKING:
    from wotbench.spec import Impairment, RunCapture

__all__ = ["DockerBackend", "COAP_PORT"]

COAP_PORT = DEFAULT_COAP_PORT
#: Addresses 2..9 of every network are the GEs' (slot 0 first); nodes start at 10.
_GE_SLOTS = 8
#: GEs (workload, CD, probe) run as this uid when the harness runs as root.
UNPRIVILEGED_UID = 65534
UNPRIVILEGED_ROLES = ("ge", "cd-ge", "probe")
#: The gateway under test's address on every network: host 1020 of its /22,
#: past every node's (``addresses``) and below the broadcast address.
_GATEWAY_HOST = 1020
#: A tmpfs of the gateway (its /tmp under the read-only root).
TMPFS_OPTIONS = "rw,nosuid,nodev,size=64m,mode=1777"
#: Subnets a run tries past ones another tool took between listing and creating.
SUBNET_RETRIES = 8
T = TypeVar("T")
U = TypeVar("U")


class CreateOptions(TypedDict, total=False):
    """What only some containers of a run are created with."""

    nano_cpus: int
    user: str
    entrypoint: list[str]
    init: bool
    cpu_rt_runtime: int
    cpu_rt_period: int
    environment: dict[str, str]
    tmpfs: dict[str, str]
    extra_hosts: dict[str, str]


class CreateArgs(dockerenv.Hardening, CreateOptions, total=False):
    """What every container of a run is created with (:meth:`DockerBackend.create_args`)."""

    image: Required[str]
    command: Required[list[str] | None]
    name: Required[str]
    detach: Required[bool]
    cpuset_cpus: Required[str]
    labels: Required[dict[str, str]]


class Endpoint(TypedDict, total=False):
    """A container's network: none, or one network at a fixed address."""

    network_mode: str
    network: str
    networking_config: dict[str, docker.types.EndpointConfig]


class DockerBackend:
    """The containers and networks of one run on the local Docker engine."""

    #: The harness reaches the nodes' addresses (the readiness probe runs here).
    probes_from_host = True

    def __init__(self, client: docker.DockerClient, run_id: str, *, workers: int | None = None) -> None:
        """``workers``: parallel engine calls (default ``WORKERS``)."""
        self.client, self.run_id = client, run_id
        self.short = run_id.rsplit("-", 1)[-1]
        self.owner = dockerenv.owner_label()
        self.networks: list[Network] = []
        self.subnets: list[ipaddress.IPv4Network] = []
        self.containers: dict[str, Container] = {}    # name -> Container
        self.attached: dict[str, list[str]] = {}      # name -> the run networks it has an endpoint on
        self.slowest_start_s = 0.0
        self._ge_slots = 0
        self._helpers: list[subprocess.Popen[bytes]] = []   # Pumba
        self._pool = workers or dockerenv.WORKERS           # parallel engine calls
        self.times = PhaseTimes()                           # where start-up and teardown time goes
        self.lost: dict[str, str] = {}                      # nodes lost mid-run: none on one host
        self.clocks: dict[str, ClockOffset] = {}            # node -> clock offset: none on one host
        self.host_changes: dict[str, Any] = {}              # the ARP table's thresholds, if raised

    def name_of(self, key: str) -> str:
        return f"wb-{self.short}-{key}"

    def labels(self, role: str, **extra: str) -> dict[str, str]:
        return {LABEL_RUN: self.run_id, LABEL_ROLE: role, LABEL_OWNER: self.owner, **extra}

    def version(self) -> Mapping[str, Any]:
        return self.client.version()

    # --- before anything starts ----------------------------------------------

    def check_images(self, roles: Iterable[str]) -> dict[str, str]:
        return dockerenv.check_images(self.client, roles)

    def image_labels(self, image_id: str) -> dict[str, str]:
        return dict(self.client.images.get(image_id).labels)

    def check_impairment(self, imps: Sequence[tuple[str, Impairment]]) -> bool:
        netem = False
        if any(imp.needs_netem for _, imp in imps):
            netem = impair_tools.netem_available(self.client, self.run_id)
        impair_tools.check_supported(imps, netem, impair_tools.pumba_on_path())
        return netem

    # --- networks --------------------------------------------------------------

    def create_networks(self, nodes: int) -> int:
        """One internal bridge per NET_CAPACITY containers (a Linux bridge
        takes at most 1023 ports), on subnets free on this host; first the
        host's ARP table made large enough for them (host/neigh.py)."""
        change = _neigh.ensure(nodes + _GE_SLOTS)
        if change is not None:
            self.host_changes["neigh"] = change.as_dict()
        count = max(1, -(-nodes // (NET_CAPACITY - _GE_SLOTS)))
        with dockerenv.subnet_lock():          # concurrent runs on this host take turns
            taken: list[ipaddress.IPv4Network] = []
            while len(self.networks) < count:
                sub = dockerenv.free_subnets(dockerenv.used_subnets(self.client) + taken, 1)[0]
                ipam = docker.types.IPAMConfig(pool_configs=[
                    docker.types.IPAMPool(subnet=str(sub), gateway=str(next(sub.hosts())))])
                try:
                    net = self.client.networks.create(
                        f"wb-{self.short}-net{len(self.networks)}", driver="bridge", internal=True, ipam=ipam,
                        labels=self.labels("network"), check_duplicate=True)
                except docker.errors.APIError as err:
                    # Another tool took it between the listing and the create: the next one.
                    if not dockerenv.is_pool_overlap(err) or len(taken) >= SUBNET_RETRIES:
                        raise
                    taken.append(sub)
                    continue
                self.networks.append(net)
                self.subnets.append(sub)
                self._guard(net)
        return len(self.networks)

    def _guard(self, net: Network) -> None:
        """The host guard on a new run bridge (host/hostguard.py): its containers
        cannot open anything to the host itself; recorded in host_changes."""
        g = self.host_changes.setdefault("host_guard", {"bridges": [], "tools": []})
        why = hostguard.available()
        if why is not None:
            g["not_applied"] = why
            return
        options = net.attrs.get("Options") or {}
        bridge = options.get("com.docker.network.bridge.name") or f"br-{dockerenv.engine_id(net)[:12]}"
        g["tools"] = hostguard.guard(bridge, self.run_id)
        g["bridges"].append(bridge)

    def addresses(self, count: int) -> list[tuple[str, str]]:
        """(network name, address) for ``count`` nodes, filling networks in
        order; the first addresses of each are left for the GEs."""
        out: list[tuple[str, str]] = []
        for net, sub in zip(self.networks, self.subnets, strict=True):
            base = int(sub.network_address)
            for k in range(2 + _GE_SLOTS, 2 + NET_CAPACITY):
                if len(out) == count:
                    return out
                out.append((dockerenv.engine_name(net), str(ipaddress.IPv4Address(base + k))))
        if len(out) < count:
            raise RuntimeError(f"networks hold {len(out)} containers, {count} needed")
        return out

    def ge_address(self, net_index: int, slot: int) -> str:
        return str(self.subnets[net_index].network_address + 2 + slot)

    # --- containers ------------------------------------------------------------

    def _endpoint(self, network: str | None, address: str | None) -> Endpoint:
        if network is None:
            return {"network_mode": "none"}
        return {"network": network, "networking_config": {
            network: self.client.api.create_endpoint_config(ipv4_address=address)}}

    def create_args(self, spec: ContainerSpec, user: str) -> CreateArgs:
        """What every container of the run is created with, on any engine:
        its image, command, cpuset, labels, limits and hardening; ``user``
        for one that runs as the caller (``as_caller``)."""
        opts: CreateOptions = {}
        if spec.nano_cpus:
            opts["nano_cpus"] = spec.nano_cpus
        if spec.as_caller:
            opts["user"] = user
        if spec.entrypoint:
            opts["entrypoint"] = list(spec.entrypoint)
        if spec.role == "monitor":      # collectl as PID 1 exits at once; an init forwards SIGTERM
            opts["init"] = True
        if spec.rt_budget is not None:  # SCHED_FIFO GE/CD-GE: its RT budget (FIFO given by the harness)
            opts["cpu_rt_runtime"] = spec.rt_budget.runtime_us
            opts["cpu_rt_period"] = spec.rt_budget.period_us
        if spec.env:
            opts["environment"] = dict(spec.env)
        if spec.tmpfs:
            opts["tmpfs"] = dict.fromkeys(spec.tmpfs, TMPFS_OPTIONS)
        if spec.extra_hosts:
            opts["extra_hosts"] = dict(spec.extra_hosts)
        extra = {LABEL_DEVICE: str(spec.device_id)} if spec.device_id is not None else {}
        # No command: the image's own (a gateway under test without `command`).
        command = list(spec.argv) if spec.argv or spec.image is None else None
        return {"image": spec.image or IMAGES[spec.image_role], "command": command, "name": self.name_of(spec.key),
                "detach": True, "cpuset_cpus": spec.cpuset, "labels": self.labels(spec.role, **extra),
                **dockerenv.hardening(memory_bytes=spec.memory_bytes, pids=spec.pids), **opts}

    @staticmethod
    def _user_for(spec: ContainerSpec) -> str:
        """The user of a container that runs as the caller: a GE not as root
        (it writes its results through the folders it owns, chowned here),
        also under SCHED_FIFO: the harness gives it the policy from the
        host (``wotbench.host.rt.give_fifo``), so the container needs no
        CAP_SYS_NICE (Docker 20.10 grants capabilities only to uid 0). The
        monitor runs as the harness's user."""
        if os.getuid() == 0 and spec.role in UNPRIVILEGED_ROLES:
            for m in spec.mounts:
                if m.writable:
                    os.chown(m.source, UNPRIVILEGED_UID, UNPRIVILEGED_UID)
            return f"{UNPRIVILEGED_UID}:{UNPRIVILEGED_UID}"
        return f"{os.getuid()}:{os.getgid()}"

    def _create(self, spec: ContainerSpec, network: str | None, address: str | None) -> tuple[Container, float]:
        """One API call: the engine's create, without docker-py's inspect of
        the new container (the handle needs only its id and name). Returns
        the handle and when the call began."""
        mounts = {str(m.source.resolve()): {"bind": m.target, "mode": "rw" if m.writable else "ro"}
                  for m in spec.mounts}
        name = self.name_of(spec.key)
        kwargs = {**self.create_args(spec, self._user_for(spec)), "volumes": mounts,
                  **self._endpoint(network, address), "version": self.client.api.api_version}
        t = time.monotonic()
        # docker-py's own translation of run arguments to create arguments (private: not in types-docker)
        create = docker_containers._create_container_args(kwargs)  # type: ignore[attr-defined]
        made = self.client.api.create_container(**create)
        ct = self.client.containers.prepare_model({"Id": made["Id"], "Name": "/" + name})
        self.containers[name] = ct
        self.attached[name] = [network] if network is not None else []
        return ct, t

    def _create_node(self, spec: ContainerSpec, network: str, address: str) -> tuple[Container, float]:
        ct, t = self._create(spec, network, address)
        took = time.monotonic() - t
        self.times.call("create", took)
        return ct, took

    def _start_created(self, spec: ContainerSpec, made: tuple[Container, float],
                       address: str) -> tuple[Started, float]:
        ct, create_s = made
        t = time.monotonic()
        ct.start()
        now = time.monotonic()
        self.times.call("start", now - t)
        started = Started(spec.key, spec.role, dockerenv.engine_name(ct), dockerenv.engine_id(ct), address, spec.node)
        return started, create_s + now - t

    def _parallel(self, phase: str, what: str, jobs: Sequence[Callable[[], T]], progress: bool) -> list[T]:
        """Runs ``jobs`` on the pool with a progress bar, timing the phase's
        wall; on any error or interrupt waits for the jobs in flight (so
        teardown sees every container they made) and re-raises."""
        pool = ThreadPoolExecutor(self._pool, thread_name_prefix=phase)
        futures: list[Future[T]] = []
        try:
            with self.times.wall(phase), tqdm(total=len(jobs), desc=what, unit="ct", disable=not progress,
                                              leave=False) as bar:
                futures = [pool.submit(job) for job in jobs]
                for fut in as_completed(futures):
                    fut.result()
                    bar.update()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return [f.result() for f in futures]

    def start_nodes(self, specs: Sequence[ContainerSpec], progress: bool) -> list[Started]:
        """Creates every node in parallel, then starts them in parallel
        (staged: harness/README.md measured it against create+start per
        job), with progress bars. On any error or interrupt, waits for the
        calls in flight and re-raises."""
        where = self.addresses(len(specs))
        made = self._parallel("create", "creating devices", [
            partial(self._create_node, s, *w) for s, w in zip(specs, where, strict=True)], progress)
        done = self._parallel("start", "starting devices", [
            partial(self._start_created, s, m, w[1]) for s, m, w in zip(specs, made, where, strict=True)], progress)
        self.slowest_start_s = max([self.slowest_start_s, *(took for _, took in done)])
        return [st for st, _ in done]

    def wait_ready(self, nodes: Sequence[Started], timeout_s: float) -> list[str]:
        """Probes every node until it answered CoAP (phase ``ready``: its wall)."""
        targets = {(n.address, COAP_PORT): n.key for n in nodes if n.address}
        with self.times.wall("ready"):
            answered = probe.wait_ready(targets, timeout_s=timeout_s)
        return sorted(key for tg, key in targets.items() if tg not in answered)

    def start_ge(self, spec: ContainerSpec) -> Started:
        """A gateway emulator on its cpuset, on every network of the run."""
        slot = self._ge_slots
        self._ge_slots += 1
        if slot >= _GE_SLOTS:
            raise RuntimeError(f"at most {_GE_SLOTS} GEs per run")
        ct, _ = self._create(spec, dockerenv.engine_name(self.networks[0]), self.ge_address(0, slot))
        name = dockerenv.engine_name(ct)
        for i, net in enumerate(self.networks[1:], 1):
            net.connect(ct, ipv4_address=self.ge_address(i, slot))
            self.attached[name].append(dockerenv.engine_name(net))
        ct.start()
        return Started(spec.key, spec.role, name, dockerenv.engine_id(ct))

    def check_image(self, ref: str, node: str | None = None) -> str:
        try:
            return dockerenv.engine_id(self.client.images.get(ref))
        except docker.errors.ImageNotFound:
            raise UserError(f"image {ref} is missing on this host (docker images; a shipped gateway's "
                            "image is built by docker/build-images.sh)", field="gateway_under_test.image") from None

    def start_gateway(self, spec: ContainerSpec) -> Started:
        """The gateway under test on its cpuset, on every network of the
        run at host _GATEWAY_HOST of each."""
        addresses = [str(sub.network_address + _GATEWAY_HOST) for sub in self.subnets]
        ct, _ = self._create(spec, dockerenv.engine_name(self.networks[0]), addresses[0])
        name = dockerenv.engine_name(ct)
        for net, address in zip(self.networks[1:], addresses[1:], strict=True):
            net.connect(ct, ipv4_address=address)
            self.attached[name].append(dockerenv.engine_name(net))
        ct.start()
        return Started(spec.key, spec.role, name, dockerenv.engine_id(ct), addresses[0], spec.node)

    def start_offline(self, spec: ContainerSpec) -> Started:
        """A container with no network: a monitor (it reads the host's
        /proc), a hog."""
        ct, _ = self._create(spec, None, None)
        ct.start()
        return Started(spec.key, spec.role, dockerenv.engine_name(ct), dockerenv.engine_id(ct), None, spec.node)

    def pid_of(self, started: Started) -> int | None:
        ct = self.containers[started.name]
        ct.reload()
        return int(ct.attrs["State"].get("Pid") or 0) or None

    def wait(self, started: Started, timeout_s: float) -> int | None:
        ct = self.containers[started.name]
        try:
            return int(ct.wait(timeout=timeout_s)["StatusCode"])
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            ct.kill()
            return None

    # --- capture ---------------------------------------------------------------

    def start_capture(self, key: str, target: Started, folder: Path, capture: RunCapture, cpuset: str) -> Started:
        """tcpdump in ``target``'s network namespace writing ``folder``
        (engine.netcapture), listening when this returns."""
        netcapture.prepare_folder(folder)
        name = self.name_of(key)
        args = netcapture.capture_args(self.labels(netcapture.CAPTURE_ROLE), target.id, folder, cpuset)
        t = time.monotonic()
        ct = netcapture.start(self.client, name, netcapture.tcpdump_argv(capture, target.key + ".pcap"), args)
        self.times.call("start", time.monotonic() - t)
        self.containers[name] = ct
        self.attached[name] = []
        netcapture.wait_listening(ct)
        return Started(key, netcapture.CAPTURE_ROLE, name, dockerenv.engine_id(ct), None, target.node)

    def stop_capture(self, started: Started) -> dict[str, Any]:
        """SIGINT to a capture, its exit and tcpdump's counts (engine.netcapture.stop)."""
        return netcapture.stop(self.containers[started.name])

    # --- impairment ------------------------------------------------------------

    def impair(self, targets: Sequence[tuple[Started, Impairment]], netem: bool, duration_s: int,
               log: Path) -> dict[str, Any]:
        """Pumba for the whole test when it is on PATH (loss, delay; a rate
        is tbf, which Pumba lacks: a sidecar gives it), else one sidecar per
        container in its network namespace (the rules stay after it exits)."""
        if impair_tools.pumba_on_path():
            by_imp: dict[Impairment, list[str]] = {}
            for st, imp in targets:
                by_imp.setdefault(imp, []).append(st.name)
            with open(log, "wb") as logf:             # the children keep their own fd
                applied = impair_tools.apply_pumba([(names, imp) for imp, names in by_imp.items()],
                                                   duration_s, netem, logf)
            self._helpers += applied.processes
            rated = [(st.id, replace(imp, loss=0.0, delay_us=0, jitter_us=0)) for st, imp in targets if imp.rate_bps]
            if rated:
                tbf = impair_tools.apply_sidecars(self.client, self.run_id, rated, netem, impair_tools.local_cores())
                applied = impair_tools.Applied(f"pumba+{tbf.how}", applied.containers, applied.processes)
        else:
            applied = impair_tools.apply_sidecars(self.client, self.run_id,
                                                  [(st.id, imp) for st, imp in targets], netem,
                                                  impair_tools.local_cores())
        return {"how": applied.how, "containers": applied.containers}

    # --- the end ---------------------------------------------------------------

    def _each(self, fn: Callable[[U], T], items: Iterable[U]) -> list[T]:
        with ThreadPoolExecutor(self._pool) as pool:
            return list(pool.map(fn, list(items)))

    def states(self) -> dict[str, ContainerState]:
        def inspect(name: str) -> tuple[str, ContainerState]:
            try:
                info = self.client.api.inspect_container(name)
            except docker.errors.NotFound:
                return name, ContainerState("removed", None, None)
            return name, ContainerState.of(info)
        return dict(self._each(inspect, self.containers))

    def stop_all(self, timeout_s: int = 2) -> None:
        """SIGTERM to every container (then SIGKILL after ``timeout_s``),
        in parallel, after disconnecting them from the run networks one at
        a time: hundreds of exits releasing their endpoints at once left
        Docker 20.10 with a stale endpoint (``dockerenv.detach``)."""
        def stop(ct: Container) -> None:
            with contextlib.suppress(docker.errors.APIError):
                self.times.timed("stop", partial(ct.stop, timeout=timeout_s))
        with self.times.wall("stop"):
            attached = [(dockerenv.engine_id(ct), self.attached.get(name, ())) for name, ct in self.containers.items()]
            dockerenv.detach(self.client, attached, self.times.call)
            self._each(stop, self.containers.values())

    def save_logs(self, path_of: Callable[[str], Path]) -> None:
        def save(item: tuple[str, Container]) -> None:
            name, ct = item
            try:
                data = ct.logs(stdout=True, stderr=True, timestamps=True)
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                data = f"(logs unavailable: {exc})\n".encode()     # e.g. its node's engine is gone
            write_atomic(path_of(name), data)
        self._each(save, self.containers.items())

    def remote(self, node: str | None) -> bool:
        """Whether ``node`` is another host than this one: never here."""
        return False

    def fetch(self, names: Iterable[str] | None = None) -> list[str]:
        """Outputs are bind mounts here: nothing to bring back."""
        return []

    def node_states(self) -> dict[str, str]:
        """One host: no swarm node to lose."""
        return {}

    def teardown(self, progress: bool = False) -> Removed:
        for p in self._helpers:
            if p.poll() is None:
                p.terminate()
                with contextlib.suppress(Exception):
                    p.wait(timeout=5)
        with self.times.wall("teardown"):
            n_ct, n_net, stuck = dockerenv.remove_labelled(self.client, self.run_id, workers=self._pool,
                                                           progress=progress, on_call=self.times.call)
        return Removed(n_ct, n_net, tuple(stuck))
