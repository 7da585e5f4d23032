"""The containers and networks of one run: created with the run's label,
started in parallel, and removed by that label whatever happens."""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.types
from tqdm import tqdm

from wotbench import _dockerenv as dockerenv
from wotbench._dockerenv import (IMAGES, LABEL_DEVICE, LABEL_OWNER, LABEL_ROLE, LABEL_RUN,
                                        NET_CAPACITY)
from wotbench._results import write_atomic
from wotbench.spec import DeviceGroup

COAP_PORT = 5683
DEVICE_RESOURCES = "/resources.csv"


@dataclass(frozen=True)
class Node:
    """A CoAP server container: a device or the CD node."""

    key: str                   # trace placeholder host: dev-<id> or cd-node
    device_id: int | None
    group: str
    name: str                  # container name
    network: str
    address: str
    cpuset: str
    resources: Path


@dataclass
class Testbed:
    __test__ = False           # not a pytest test class despite the name
    client: docker.DockerClient
    run_id: str
    short: str = ""
    networks: list[Any] = field(default_factory=list)
    subnets: list[ipaddress.IPv4Network] = field(default_factory=list)
    containers: dict[str, Any] = field(default_factory=dict)     # name -> Container
    on_started: Callable[[Any, str, str], None] | None = None    # (container, name, role)
    slowest_start_s: float = 0.0        # longest create+start of one container so far
    owner: str = field(default_factory=dockerenv.owner_label)

    def __post_init__(self) -> None:
        self.short = self.run_id.rsplit("-", 1)[-1]

    def labels(self, role: str, **extra: str) -> dict[str, str]:
        return {LABEL_RUN: self.run_id, LABEL_ROLE: role, LABEL_OWNER: self.owner, **extra}

    # --- networks --------------------------------------------------------

    def create_networks(self, nodes: int) -> None:
        """One internal bridge per NET_CAPACITY containers (a Linux bridge
        takes at most 1023 ports), on subnets free on this host."""
        count = max(1, -(-nodes // (NET_CAPACITY - 8)))
        self.subnets = dockerenv.free_subnets(dockerenv.used_subnets(self.client), count)
        for i, sub in enumerate(self.subnets):
            hosts = sub.hosts()
            gateway = str(next(hosts))
            ipam = docker.types.IPAMConfig(pool_configs=[
                docker.types.IPAMPool(subnet=str(sub), gateway=gateway)])
            self.networks.append(self.client.networks.create(
                f"wb-{self.short}-net{i}", driver="bridge", internal=True, ipam=ipam,
                labels=self.labels("network"), check_duplicate=True))

    def addresses(self, count: int) -> list[tuple[str, str]]:
        """(network name, address) for ``count`` containers, filling networks
        in order; the first 8 addresses of each are left for the GEs."""
        out: list[tuple[str, str]] = []
        for net, sub in zip(self.networks, self.subnets):
            base = int(sub.network_address)
            for k in range(10, 10 + NET_CAPACITY - 8):
                if len(out) == count:
                    return out
                out.append((net.name, str(ipaddress.IPv4Address(base + k))))
        if len(out) < count:
            raise RuntimeError(f"networks hold {len(out)} containers, {count} needed")
        return out

    def ge_address(self, net_index: int, slot: int) -> str:
        return str(self.subnets[net_index].network_address + 2 + slot)

    # --- containers ------------------------------------------------------

    def _endpoint(self, network: str, address: str) -> dict[str, Any]:
        return {"network": network, "networking_config": {
            network: self.client.api.create_endpoint_config(ipv4_address=address)}}

    def start_node(self, node: Node, group: DeviceGroup | None, role: str) -> Any:
        mode = group.mode if group else "sleep"
        threads = group.threads if group else 1
        cmd = ["--listen", f"0.0.0.0:{COAP_PORT}", "--resources", DEVICE_RESOURCES,
               "--mode", mode, "--threads", str(threads)]
        if group and group.queue:
            cmd += ["--queue", str(group.queue)]
        mem = group.memory_bytes if group else 32 << 20
        kwargs = dockerenv.hardening(memory_bytes=mem, pids=threads + 16)
        if group and group.nano_cpus:
            kwargs["nano_cpus"] = group.nano_cpus
        extra = {LABEL_DEVICE: str(node.device_id)} if node.device_id is not None else {}
        t = time.monotonic()
        ct = self.client.containers.create(
            IMAGES["device"], cmd, name=node.name, detach=True, cpuset_cpus=node.cpuset,
            labels=self.labels(role, **extra),
            volumes={str(node.resources.resolve()): {"bind": DEVICE_RESOURCES, "mode": "ro"}},
            **self._endpoint(node.network, node.address), **kwargs)
        ct.start()
        self.slowest_start_s = max(self.slowest_start_s, time.monotonic() - t)
        self.containers[node.name] = ct
        if self.on_started:
            self.on_started(ct, node.name, role)
        return ct

    def start_nodes(self, jobs: Sequence[tuple[Node, DeviceGroup | None, str]],
                    progress: bool) -> None:
        """Starts the containers in parallel with a progress bar. On any
        error or interrupt, waits for the calls in flight (so teardown sees
        every container they made) and re-raises."""
        pool = ThreadPoolExecutor(dockerenv.WORKERS, thread_name_prefix="start")
        futures: list[Future[Any]] = []
        try:
            futures = [pool.submit(self.start_node, *job) for job in jobs]
            with tqdm(total=len(jobs), desc="starting devices", unit="ct",
                      disable=not progress, leave=False) as bar:
                for fut in as_completed(futures):
                    fut.result()
                    bar.update()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def start_ge(self, name: str, role: str, cmd: list[str], cpus: str, mounts: dict[str, dict[str, str]],
                 networks: Sequence[tuple[str, str]]) -> Any:
        """A gateway emulator on its cpuset, with its trace read-only and its
        output directory writable (it runs as the harness's own uid)."""
        kwargs = dockerenv.hardening(memory_bytes=4 << 30, pids=16)
        first_net, first_ip = networks[0]
        ct = self.client.containers.create(
            IMAGES["ge"], cmd, name=name, detach=True, cpuset_cpus=cpus,
            user=f"{os.getuid()}:{os.getgid()}", labels=self.labels(role), volumes=mounts,
            **self._endpoint(first_net, first_ip), **kwargs)
        for net_name, ip in networks[1:]:
            self.client.networks.get(net_name).connect(ct, ipv4_address=ip)
        self.containers[name] = ct
        ct.start()
        if self.on_started:
            self.on_started(ct, name, role)
        return ct

    def teardown(self) -> tuple[int, int, list[str]]:
        return dockerenv.remove_labelled(self.client, self.run_id)

    def stop_all(self, timeout_s: int = 2) -> None:
        """SIGTERM every container so that the devices print their counts."""
        def stop(ct: Any) -> None:
            try:
                ct.stop(timeout=timeout_s)
            except docker.errors.APIError:
                pass
        with ThreadPoolExecutor(dockerenv.WORKERS) as pool:
            list(pool.map(stop, list(self.containers.values())))

    def save_logs(self, logdir: Path) -> None:
        logdir.mkdir(parents=True, exist_ok=True)

        def save(item: tuple[str, Any]) -> None:
            name, ct = item
            try:
                data = ct.logs(stdout=True, stderr=True, timestamps=True)
            except docker.errors.APIError as exc:
                data = f"(logs unavailable: {exc})\n".encode()
            write_atomic(logdir / f"{name}.log", data)
        with ThreadPoolExecutor(dockerenv.WORKERS) as pool:
            list(pool.map(save, list(self.containers.items())))

    def states(self) -> dict[str, dict[str, Any]]:
        """State of every container of this run now: status, exit code, OOM kill."""
        def inspect(name: str) -> tuple[str, dict[str, Any]]:
            try:
                st = self.client.api.inspect_container(name).get("State", {})
            except docker.errors.NotFound:
                return name, {"status": "removed", "exit_code": None, "oom_killed": None}
            return name, {"status": st.get("Status"), "exit_code": st.get("ExitCode"),
                          "oom_killed": st.get("OOMKilled")}
        with ThreadPoolExecutor(dockerenv.WORKERS) as pool:
            return dict(pool.map(inspect, list(self.containers)))
