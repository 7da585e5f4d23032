"""The Docker engine as the harness uses it: one client, the run labels,
the image names, the hardening every container gets, and label-based
teardown (the only way the harness ever removes anything)."""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, TypedDict

import docker
import docker.errors
import docker.models.containers
import docker.types
from docker.models.networks import Network
from docker.models.resource import Model
from tqdm import tqdm

from wotbench.base.errors import UserError
from wotbench.host import hostguard

#: A connection to one Docker engine, as the layers above the engine name it
#: (they do not import docker themselves).
Client = docker.DockerClient
#: One container of an engine (docker-py's model), named here for the same reason.
Container = docker.models.containers.Container

LABEL_RUN = "org.wotbench.run"
LABEL_ROLE = "org.wotbench.role"
LABEL_DEVICE = "org.wotbench.device"
#: Swarm node label: the URL of that node's Docker engine as the manager
#: reaches it (``ssh://user@host``, ``tcp://host:2376`` with TLS, or a
#: ``unix://`` socket); docs/multi-host.md.
LABEL_ENGINE = "org.wotbench.engine"
#: Host and pid of the harness that owns a run, so that `wotbench clean`
#: leaves the runs of live harnesses alone.
LABEL_OWNER = "org.wotbench.owner"


def owner_label() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str | None) -> bool:
    """Whether the harness that labelled a run still runs on this host."""
    host, _, pid = (owner or "").rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"wotbench" in cmdline or b"pytest" in cmdline

IMAGE_TAG = os.environ.get("WOTBENCH_IMAGE_TAG", "latest")
IMAGES = {
    "device": f"wotbench/device:{IMAGE_TAG}",
    "ge": f"wotbench/ge:{IMAGE_TAG}",
    "nettools": f"wotbench/nettools:{IMAGE_TAG}",
}
#: The image of a gateway shipped with wotbench (``wotbench/gw-<name>``, docker/build-images.sh).
GATEWAY_IMAGE = "wotbench/gw-{name}:" + IMAGE_TAG


def gateway_image(image: str, shipped: str | None) -> str:
    """The image reference of a gateway under test: a shipped gateway's by
    its name, else the user's reference as written."""
    return GATEWAY_IMAGE.format(name=shipped) if shipped is not None else image


#: Parallel Docker API calls when creating, starting, stopping or removing many
#: containers: on 2 cores 8 starts as fast as 4 and removes ~20 % faster; 2 is
#: slower (`python -m wotbench.studies.harness_bench --compare 60 --workers 4 2 8`, harness/README.md).
WORKERS = 8

# Docker's default bridge pools and anything a user may have configured are
# avoided by inspecting them; these are only the candidates.
_CANDIDATE_POOLS = ("10.210.0.0/15", "172.30.0.0/15", "10.50.0.0/16", "192.168.200.0/21")
#: Containers per bridge network; a Linux bridge takes at most 1023 ports.
NET_CAPACITY = 1000
_PREFIX = 22                       # 1022 addresses per network


def client(workers: int = WORKERS) -> docker.DockerClient:
    """A client for the local engine, its connection pool sized for
    ``workers`` parallel calls; a clear error when none answers."""
    try:
        c = docker.from_env(max_pool_size=workers * 2, timeout=120)
        c.ping()
    except docker.errors.DockerException as exc:
        raise UserError(f"the Docker engine does not answer ({exc}); start it with "
                        "`make setup` or `dockerd &`") from None
    return c


def engine_client(url: str, node: str) -> docker.DockerClient:
    """A client for another node's engine at ``url`` (its LABEL_ENGINE);
    a clear error naming the node when it does not answer."""
    try:
        c = docker.DockerClient(base_url=url, use_ssh_client=url.startswith("ssh://"),
                                max_pool_size=WORKERS * 2, timeout=120)
        c.ping()
    except docker.errors.DockerException as exc:
        raise UserError(f"the engine of node {node} does not answer at {url} ({exc}); "
                        f"check its {LABEL_ENGINE} label (docs/multi-host.md)") from None
    return c


class Hardening(TypedDict):
    """The engine's create arguments of :func:`hardening`."""

    cap_drop: list[str]
    security_opt: list[str]
    read_only: bool
    mem_limit: int
    memswap_limit: int
    pids_limit: int
    log_config: docker.types.LogConfig


def hardening(*, memory_bytes: int, pids: int) -> Hardening:
    """Unprivileged containers: no capabilities, no privilege gain, a
    read-only root filesystem, memory and process limits."""
    return {
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "mem_limit": memory_bytes,
        "memswap_limit": memory_bytes,
        "pids_limit": pids,
        "log_config": docker.types.LogConfig(type="json-file", config={"max-size": "1m"}),
    }


def engine_id(obj: Model) -> str:
    """The id of an engine object. docker-py builds its models from the
    engine's answer, which always has one (its stubs allow None)."""
    if obj.id is None:
        raise RuntimeError(f"the engine described a {type(obj).__name__} without an id")
    return obj.id


def engine_name(obj: Container | Network) -> str:
    """The name of a container or network (see :func:`engine_id`)."""
    if obj.name is None:
        raise RuntimeError(f"the engine described a {type(obj).__name__} without a name")
    return obj.name


def check_images(c: docker.DockerClient, roles: Iterable[str]) -> dict[str, str]:
    """Image id of every role needed; a missing image is a user error."""
    ids = {}
    for role in roles:
        try:
            ids[role] = engine_id(c.images.get(IMAGES[role]))
        except docker.errors.ImageNotFound:
            raise UserError(f"image {IMAGES[role]} is missing (run: make images)") from None
    return ids


def engine_subnets(c: docker.DockerClient) -> list[ipaddress.IPv4Network]:
    """The IPv4 subnets of an engine's networks (another node's too)."""
    nets: list[ipaddress.IPv4Network] = []
    for n in c.networks.list():
        for cfg in (n.attrs.get("IPAM") or {}).get("Config") or []:
            try:
                net = ipaddress.ip_network(cfg.get("Subnet", ""), strict=False)
            except ValueError:
                continue
            if isinstance(net, ipaddress.IPv4Network):
                nets.append(net)
    return nets


def used_subnets(c: docker.DockerClient) -> list[ipaddress.IPv4Network]:
    """Subnets already taken: Docker networks, host routes and addresses."""
    nets = engine_subnets(c)
    out = subprocess.run(["ip", "-4", "-o", "route", "show", "table", "all"],
                         capture_output=True, text=True, check=False).stdout
    out += subprocess.run(["ip", "-4", "-o", "addr", "show"],
                          capture_output=True, text=True, check=False).stdout
    for word in out.split():
        if "/" in word or word[:1].isdigit():
            try:
                found = ipaddress.ip_network(word, strict=False)
            except ValueError:
                continue
            if isinstance(found, ipaddress.IPv4Network) and found.prefixlen > 0:
                nets.append(found)
    return nets


def free_subnets(used: list[ipaddress.IPv4Network], count: int) -> list[ipaddress.IPv4Network]:
    """``count`` /22 subnets overlapping nothing in ``used``."""
    found: list[ipaddress.IPv4Network] = []
    for pool in _CANDIDATE_POOLS:
        for cand in ipaddress.IPv4Network(pool).subnets(new_prefix=_PREFIX):
            if any(cand.overlaps(u) for u in used + found):
                continue
            found.append(cand)
            if len(found) == count:
                return found
    raise UserError(f"no free private /{_PREFIX} subnet for {count} network(s)")


#: Held while a run picks its subnets and creates its networks, so that
#: runs started at the same moment on this host do not pick the same one.
SUBNET_LOCK = Path(tempfile.gettempdir()) / "wotbench-subnets.lock"


@contextlib.contextmanager
def subnet_lock(path: Path = SUBNET_LOCK) -> Iterator[None]:
    """A host-wide lock (flock) around choosing and creating networks; none
    when the lock file cannot be opened (the caller retries on overlap)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)             # releases the lock


def is_pool_overlap(err: Exception) -> bool:
    """The engine refused a subnet another network took meanwhile."""
    return isinstance(err, docker.errors.APIError) and "overlaps" in str(err.explanation or err)


def _labels(obj: dict[str, Any] | Model) -> dict[str, str]:
    """Labels of a listed container (a sparse listing: no inspect), volume or network."""
    attrs = obj if isinstance(obj, dict) else obj.attrs
    labels: dict[str, str] = attrs.get("Labels") or attrs.get("Config", {}).get("Labels") or {}
    return labels


def _run_owners(c: docker.DockerClient) -> dict[str, str]:
    """Run id -> owner label (host:pid of its harness) of every labelled
    container and network on the engine."""
    runs: dict[str, str] = {}
    for obj in [*c.api.containers(all=True, filters={"label": LABEL_RUN}),
                *c.networks.list(filters={"label": LABEL_RUN})]:
        labels = _labels(obj)
        runs.setdefault(labels.get(LABEL_RUN, ""), labels.get(LABEL_OWNER, ""))
    return runs


def live_runs(c: docker.DockerClient) -> set[str]:
    """Run ids whose owning harness is still running on this host."""
    return {run for run, owner in _run_owners(c).items() if owner_alive(owner)}


def busy_ge_cores(c: docker.DockerClient) -> dict[int, str]:
    """Cores pinned by the GEs (workload and CD) and gateways under test of
    running containers of any run on this engine: core -> run id."""
    out: dict[int, str] = {}
    for role in ("ge", "cd-ge", "gateway"):
        for ct in c.api.containers(filters={"label": [LABEL_RUN, f"{LABEL_ROLE}={role}"], "status": "running"}):
            try:
                cpus = c.api.inspect_container(ct["Id"])["HostConfig"].get("CpusetCpus") or ""
            except docker.errors.NotFound:
                continue
            for part in cpus.split(","):
                if part:
                    a, _, b = part.partition("-")
                    for core in range(int(a), int(b or a) + 1):
                        out.setdefault(core, _labels(ct).get(LABEL_RUN, "?"))
    return out


def dead_local_runs(c: docker.DockerClient) -> set[str]:
    """Run ids labelled by a harness of this host that is no longer running
    (killed, crashed): their leftovers are nobody's. Runs of other hosts'
    harnesses are never among them."""
    here = socket.gethostname()
    return {run for run, owner in _run_owners(c).items()
            if run and owner.rpartition(":")[0] == here and not owner_alive(owner)}


def clean_dead_runs(c: docker.DockerClient) -> tuple[list[str], int, int, list[str]]:
    """Removes the leftovers of :func:`dead_local_runs`: (runs, containers,
    networks removed, networks the engine would not remove)."""
    dead = sorted(dead_local_runs(c))
    n_ct = n_net = 0
    stuck: list[str] = []
    for run in dead:
        a, b, s = remove_labelled(c, run, network_attempts=2)     # a stale endpoint stays stale
        n_ct, n_net, stuck = n_ct + a, n_net + b, stuck + s
    return dead, n_ct, n_net, stuck


def endpoints(ct: dict[str, Any]) -> list[str]:
    """Ids of the networks a listed container (``c.api.containers``) has an
    endpoint on (none for ``network_mode`` none, host or container:)."""
    nets = (ct.get("NetworkSettings") or {}).get("Networks") or {}
    return [n.get("NetworkID") or name for name, n in nets.items() if name not in ("none", "host")]


def detach(c: docker.DockerClient, members: Iterable[tuple[str, Iterable[str]]],
           on_call: Callable[[str, float], None] | None = None) -> int:
    """Disconnects every container of ``members`` (id, network ids) from
    its networks, one call at a time, before they are stopped or removed:
    the engine then deletes each endpoint in its own call, never several
    of one network at once. Docker 20.10 loses the release of endpoints
    deleted together (when many containers of a bridge exit at once,
    killed by a forced removal or stopped, or are disconnected in
    parallel): the network then keeps a stale endpoint that only a dockerd
    restart frees (moby#42119; the issue-23 reproduction: 600 containers
    on one bridge removed 8 at a time kept one in 2 of 2 tries, stopped 8
    at a time 1 of 1, disconnected 8 at a time 1 of 3, disconnected one
    at a time 0 of N). A container already gone or not connected is no
    error. Returns the endpoints deleted."""
    done = 0
    for cid, nets in members:
        for net in nets:
            t = time.monotonic()
            try:
                c.api.disconnect_container_from_network(cid, net, force=True)
                done += 1
            except docker.errors.APIError:
                pass
            finally:
                if on_call is not None:
                    on_call("disconnect", time.monotonic() - t)
    return done


def _remove_containers(c: docker.DockerClient, cts: list[dict[str, Any]], workers: int, progress: bool,
                       on_call: Callable[[str, float], None] | None) -> int:
    """Force-removes (kills if running) the listed containers in parallel,
    after disconnecting them from their networks one at a time
    (:func:`detach`), with a progress bar; ``on_call("remove", seconds)``
    after each removal."""
    detach(c, [(ct["Id"], endpoints(ct)) for ct in cts], on_call)

    def rm(ct: dict[str, Any]) -> int:
        t = time.monotonic()
        try:
            c.api.remove_container(ct["Id"], force=True, v=True)
        except docker.errors.NotFound:
            return 0
        except docker.errors.APIError as exc:
            if exc.status_code == 409:         # removal already in progress
                return 0
            raise
        finally:
            if on_call is not None:
                on_call("remove", time.monotonic() - t)
        return 1

    removed = 0
    with ThreadPoolExecutor(workers, thread_name_prefix="remove") as pool, \
            tqdm(total=len(cts), desc="removing containers", unit="ct", disable=not progress, leave=False) as bar:
        for fut in as_completed([pool.submit(rm, ct) for ct in cts]):
            removed += fut.result()
            bar.update()
    return removed


def remove_labelled(c: docker.DockerClient, run_id: str | None = None,
                    keep: set[str] | frozenset[str] = frozenset(),
                    swarm_networks: bool = True, *, workers: int = WORKERS, progress: bool = False,
                    on_call: Callable[[str, float], None] | None = None,
                    network_attempts: int = 40, local: bool = True) -> tuple[int, int, list[str]]:
    """Removes every container, volume, then network carrying the run label
    (of one run, or of any run but those in ``keep`` when ``run_id`` is
    None), and, with ``local`` (this host's engine), the host guard's
    rules of those runs (host/hostguard.py). Returns the counts removed and the
    names of networks the engine refused to remove. ``swarm_networks``
    False: a swarm worker's engine, which sees the manager's overlay
    networks but cannot remove them.
    Containers go ``workers`` at a time (a progress bar with ``progress``);
    ``on_call(phase, seconds)`` hears each removal call (``remove``,
    ``network-remove``)."""
    flt = {"label": f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN}

    def kept(obj: dict[str, Any] | Model) -> bool:
        return _labels(obj).get(LABEL_RUN) in keep

    cts = [ct for ct in c.api.containers(all=True, filters=flt) if not kept(ct)]
    n_ct = _remove_containers(c, cts, workers, progress, on_call)
    for vol in [v for v in c.volumes.list(filters=flt) if not kept(v)]:
        try:
            vol.remove(force=True)
        except docker.errors.NotFound:
            pass
    n_net, stuck = 0, []
    nets = c.networks.list(filters=flt if swarm_networks else {**flt, "scope": "local"})
    for net in [n for n in nets if not kept(n)]:
        t = time.monotonic()
        # The engine releases the endpoints of just-removed containers a
        # moment after the removal returns; a network whose endpoint it
        # never releases (moby#42119) is reported, not fatal.
        for attempt in range(network_attempts):
            try:
                net.remove()
                n_net += 1
                break
            except docker.errors.NotFound:
                break
            except docker.errors.APIError as exc:
                # 403: endpoints not yet released; 400 "in use by task": an
                # overlay still attached on a swarm node (one that was lost
                # keeps it until it is back or removed from the swarm).
                if exc.status_code not in (400, 403):
                    raise
                if attempt == network_attempts - 1:
                    stuck.append(engine_name(net))
                    break
                time.sleep(0.25)
        if on_call is not None:
            on_call("network-remove", time.monotonic() - t)
    if local:
        hostguard.drop(run_id, keep)
    return n_ct, n_net, stuck
