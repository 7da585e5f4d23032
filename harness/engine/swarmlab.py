"""A real Docker Swarm on one machine: the host is the manager, each worker
a container running its own dockerd (image ``wotbench/swarm-node``, ``make
images-swarm``). Test and lab infrastructure for multi-host runs:

    with SwarmLab(workers=1).up() as lab:       # or: lab = SwarmLab(1).up(); ...; lab.down()
        net = lab.overlay()                     # an attachable overlay network
        lab.nodes[0].docker("run", "-d", "--network", net, "wotbench/device", ...)

``up()`` records the host (swarm state, containers, networks), refuses a host
already in a swarm, and on any failure or Ctrl-C removes what it made before
re-raising. ``down()`` removes all the lab made and checks that the host is
exactly as recorded. A state file lets ``wotbench swarm-lab down``
end a lab that ``up`` started in another process.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from ipaddress import IPv4Network
from pathlib import Path
from typing import IO, TypedDict, Unpack

import docker.errors
from docker import DockerClient
from docker.models.containers import Container
from docker.models.networks import Network

from wotbench.base.errors import UserError
from wotbench.engine import dockerenv
from wotbench.engine.dockerenv import IMAGE_TAG, IMAGES, LABEL_ENGINE, LABEL_ROLE

__all__ = ["LABEL_LAB", "TEST_SESSION_LABEL", "TEST_SESSION_ENV", "GWBRIDGE_MADE_LABEL", "NODE_IMAGE", "HostState",
           "Lab", "Node", "SwarmLab", "SwarmLabError", "STATE_DIR", "labels_of_test_session", "gwbridge_label",
           "made_gwbridge", "DEFAULT_IMAGES"]

LABEL_LAB = "org.wotbench.swarmlab"
#: A swarm made under a test session carries that session's pid (from the
#: environment variable TEST_SESSION_ENV), so that one a killed session left
#: behind can be told from any other (wotbench.tests.leftovers).
TEST_SESSION_LABEL = "org.wotbench.test-session"
TEST_SESSION_ENV = "WOTBENCH_TEST_SESSION"
#: On a swarm the project made (a Swarm lab, a test's one-node swarm): "1"
#: when no docker_gwbridge was there before, so the one its leaving leaves
#: behind is ours to remove where no record of the host says so (a lab
#: taken down without its state file, wotbench.tests.leftovers); one that
#: was there before is never removed.
GWBRIDGE_MADE_LABEL = "org.wotbench.gwbridge-made"
NODE_IMAGE = f"wotbench/swarm-node:{IMAGE_TAG}"
SWARM_PORT = 2377
DEFAULT_IMAGES = (IMAGES["device"], IMAGES["ge"], IMAGES["nettools"])
#: Inside a node container: the folder of its engine's second socket.
ENGINE_DIR = "/wotbench-engine"
STATE_DIR = Path(os.environ.get("WOTBENCH_SWARMLAB_DIR", "/var/tmp/wotbench-swarmlab"))
#: The measured recipe for a dockerd in a container where --privileged is refused.
NODE_FLAGS = ("--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
              "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
              "--security-opt", "systempaths=unconfined", "--cgroupns", "private",
              "--tmpfs", "/run:rw,exec", "--tmpfs", "/var/lib/docker:rw,exec")
_SDK_ERRORS = (docker.errors.DockerException, OSError)


class SwarmLabError(UserError):
    """The lab could not be made or removed; says which step and why."""


def _run(argv: Sequence[str], what: str, timeout_s: float, *, stdin: IO[bytes] | None = None,
         input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Runs a command to completion within ``timeout_s``; a failure is a
    SwarmLabError naming ``what`` with the end of its stderr."""
    try:
        r = subprocess.run(list(argv), stdin=stdin, input=input, capture_output=True, text=True,
                           errors="replace", timeout=timeout_s)
    except FileNotFoundError:
        raise SwarmLabError(f"{what}: {argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise SwarmLabError(f"{what}: no result within {timeout_s:.0f} s") from None
    if check and r.returncode != 0:
        raise SwarmLabError(f"{what} failed (exit {r.returncode}): {r.stderr.strip()[-600:]}")
    return r


def _join_argv(token: str, manager: str) -> list[str]:
    """The node engine's join command (tests replace it to make a join fail)."""
    return ["swarm", "join", "--token", token, f"{manager}:{SWARM_PORT}"]


def _until(deadline_s: float, what: str, done: Callable[[], bool], detail: Callable[[], str]) -> None:
    """Polls ``done`` every 0.5 s; a SwarmLabError with ``detail`` after the deadline."""
    end = time.monotonic() + deadline_s
    while not done():
        if time.monotonic() > end:
            raise SwarmLabError(f"{what}: not within {deadline_s:.0f} s ({detail()})")
        time.sleep(0.5)


@dataclass
class HostState:
    """What the lab must leave as it found: the engine's swarm state and its
    containers and networks (id -> name)."""

    swarm: str
    containers: dict[str, str]
    networks: dict[str, str]

    @classmethod
    def read(cls, c: DockerClient) -> HostState:
        try:
            swarm = c.info()["Swarm"]["LocalNodeState"]
            cts = {dockerenv.engine_id(ct): dockerenv.engine_name(ct)
                   for ct in c.containers.list(all=True, ignore_removed=True)}
            nets = {dockerenv.engine_id(n): dockerenv.engine_name(n) for n in c.networks.list()}
        except _SDK_ERRORS as exc:
            raise SwarmLabError(f"reading the host's Docker state: {exc}") from None
        return cls(swarm, cts, nets)

    def differences(self, now: HostState) -> list[str]:
        out = [f"swarm {now.swarm} (was {self.swarm})"] if now.swarm != self.swarm else []
        for kind, was, got in (("container", self.containers, now.containers),
                               ("network", self.networks, now.networks)):
            if extra := sorted(got[k] for k in got.keys() - was.keys()):
                out.append(f"{kind}s left behind: {', '.join(extra)}")
            if gone := sorted(was[k] for k in was.keys() - got.keys()):
                out.append(f"{kind}s gone: {', '.join(gone)}")
        return out

    def expect(self, now: HostState) -> None:
        if diff := self.differences(now):
            raise SwarmLabError("the host is not as the lab found it: " + "; ".join(diff))


class ExecOptions(TypedDict, total=False):
    """How :meth:`Node.exec` runs a command (its keyword arguments)."""

    what: str | None
    timeout_s: float
    input: str
    check: bool


@dataclass
class Node:
    """A worker: a container whose hostname (and swarm node name) is ``name``
    and whose address on the lab's bridge is ``address``."""

    name: str
    address: str

    def exec(self, *argv: str, what: str | None = None, timeout_s: float = 120,
             input: str = "", check: bool = True) -> subprocess.CompletedProcess[str]:
        """Runs a command inside the node container (stdin from ``input``)."""
        return _run(["docker", "exec", "-i", self.name, *argv], what or f"{self.name}: {' '.join(argv)}",
                    timeout_s, input=input, check=check)

    def docker(self, *args: str, **kw: Unpack[ExecOptions]) -> subprocess.CompletedProcess[str]:
        """A docker command against the node's own engine."""
        return self.exec("docker", *args, **kw)

    def write_file(self, path: str, text: str) -> None:
        """Writes a text file in the node's filesystem (mode 0644), e.g. to
        bind-mount it into a container on the node's engine."""
        self.exec("sh", "-c", 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod 644 "$1"', "sh", path,
                  what=f"{self.name}: write {path}", input=text)


@dataclass
class Lab:
    """A running lab. ``manager`` (the host's advertise address) is the gateway of
    ``network``, the nodes' bridge (not docker0's: harness/README.md, Swarm lab).
    ``reserved``: subnets of the lab's engines the host's network list lacks."""

    id: str
    manager: str
    network: str
    nodes: list[Node]
    before: HostState | None
    reserved: list[str]
    swarm_init: bool = False
    timeout_s: float = 60.0
    state_dir: Path = field(default=STATE_DIR, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{LABEL_LAB}={self.id}"

    def engine_dir(self, node: Node) -> Path:
        """The host folder holding ``node``'s engine socket."""
        return self.state_dir / self.id / node.name

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def docker(self, *args: str, timeout_s: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        """A docker command against the host's engine (the manager)."""
        return _run(["docker", *args], f"docker {' '.join(args[:3])}", timeout_s, check=check)

    def overlay(self, name: str | None = None) -> str:
        """Creates an attachable overlay network labelled with the lab, on a
        /22 nothing of the host or the lab uses; returns its name."""
        used = dockerenv.used_subnets(dockerenv.client()) + [IPv4Network(s) for s in self.reserved]
        name = name or f"wb-lab-{self.id}-ov{secrets.token_hex(2)}"
        self.docker("network", "create", "--driver", "overlay", "--attachable", "--subnet",
                    str(dockerenv.free_subnets(used, 1)[0]), "--label", self.label, name)
        return name

    def node_status(self) -> dict[str, str]:
        """Swarm node hostname -> "ready"/"down"/..., as the manager sees it."""
        try:
            return {n.attrs["Description"]["Hostname"]: n.attrs["Status"]["State"]
                    for n in dockerenv.client().nodes.list()}
        except _SDK_ERRORS as exc:
            raise SwarmLabError(f"listing the swarm's nodes: {exc}") from None

    def save(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            tmp = self.state_dir / f".{self.id}.json.tmp"
            tmp.write_text(json.dumps({k: v for k, v in asdict(self).items() if k != "state_dir"}))
            tmp.replace(self.state_dir / f"{self.id}.json")
        except OSError as exc:
            raise SwarmLabError(f"writing the lab's state file in {self.state_dir}: {exc}") from None

    @classmethod
    def load(cls, lab_id: str, state_dir: Path = STATE_DIR) -> Lab:
        """The lab ``up`` recorded; without a state file only its label (no ``before``)."""
        try:
            data = json.loads((state_dir / f"{lab_id}.json").read_text())
        except FileNotFoundError:
            return cls(lab_id, "", "", [], None, [], state_dir=state_dir)
        except (OSError, ValueError) as exc:
            raise SwarmLabError(f"reading the state of lab {lab_id}: {exc}") from None
        before = HostState(**data.pop("before")) if data.get("before") else None
        return cls(**{**data, "nodes": [Node(**n) for n in data["nodes"]]}, before=before, state_dir=state_dir)

    def down(self) -> None:
        """Removes all the lab made, checks the host is as found; every step runs."""
        c = dockerenv.client()
        errors: list[str] = []

        def step(what: str, fn: Callable[[], object]) -> object:
            try:
                return fn()
            except (SwarmLabError, *_SDK_ERRORS) as exc:
                errors.append(f"{what}: {exc}")
                return False

        ours = step("reading the swarm", lambda: self._swarm_is_ours(c)) is True
        gwbridge_made = ours and step("reading the swarm's labels", lambda: _swarm_made_gwbridge(c)) is True
        if ours:
            step("removing services", lambda: self._remove_services(c))
        step("removing containers", lambda: self._remove_containers(c))
        if ours:
            step("removing the nodes from the swarm", lambda: [n.remove(force=True) for n in c.nodes.list()
                 if n.attrs["Description"]["Hostname"].startswith(f"wb-lab-{self.id}-node")])
            step("removing overlay networks", lambda: self._remove_networks(c, "swarm", ours, gwbridge_made))
            step("leaving the swarm", lambda: c.swarm.leave(force=True))
        step("removing networks", lambda: self._remove_networks(c, "local", ours, gwbridge_made))
        if (before := self.before) is not None:
            step("checking the host", lambda: before.expect(HostState.read(c)))
        if errors:
            raise SwarmLabError(f"swarm lab {self.id}: " + "; ".join(errors))
        shutil.rmtree(self.state_dir / self.id, ignore_errors=True)
        (self.state_dir / f"{self.id}.json").unlink(missing_ok=True)

    def _swarm_is_ours(self, c: DockerClient) -> bool:
        """The swarm is this lab's (its label), or this lab's init half made it."""
        if c.info()["Swarm"]["LocalNodeState"] == "inactive":
            return False
        try:
            c.swarm.reload()
            return (c.swarm.attrs["Spec"].get("Labels") or {}).get(LABEL_LAB) == self.id
        except docker.errors.APIError:
            return self.swarm_init and (self.before is None or self.before.swarm == "inactive")

    def _remove_services(self, c: DockerClient) -> None:
        """Every service of the lab's swarm; waits for their containers here."""
        for svc in c.services.list():
            svc.remove()  # type: ignore[no-untyped-call]  # unannotated in types-docker
        known = self.before.containers if self.before else {}

        def tasks() -> list[str]:
            return [dockerenv.engine_name(ct) for ct in c.containers.list(all=True, ignore_removed=True, filters={
                "label": "com.docker.swarm.service.id"}) if ct.id not in known]

        _until(self.timeout_s, "service containers to go", lambda: not tasks(), lambda: ", ".join(tasks()))

    def _remove_containers(self, c: DockerClient) -> None:
        """A node removes its containers (releasing their overlay attachments)
        and leaves (if it joined), then every container of the lab goes."""
        cts = c.containers.list(all=True, filters={"label": self.label}, ignore_removed=True)
        leave = "docker ps -aq | xargs -r docker rm -f; docker swarm leave --force"

        def rm(ct: Container) -> None:
            if ct.labels.get(LABEL_ROLE) == "swarm-node" and ct.status == "running":
                Node(dockerenv.engine_name(ct), "").exec("sh", "-c", leave, timeout_s=60, check=False)
            try:
                ct.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass

        with ThreadPoolExecutor(dockerenv.WORKERS) as pool:
            list(pool.map(rm, cts))

    def _remove_networks(self, c: DockerClient, scope: str, left: bool, gwbridge_made: bool) -> None:
        """The lab's networks of one scope; after the swarm is gone also the
        docker_gwbridge and ingress it leaves behind, unless found before: by
        the recorded host state, else (no state file) for docker_gwbridge by
        the swarm's GWBRIDGE_MADE_LABEL (``gwbridge_made``)."""
        nets = [n for n in c.networks.list(filters={"label": self.label}) if n.attrs.get("Scope") == scope]
        if scope == "local" and c.info()["Swarm"]["LocalNodeState"] == "inactive":
            nets += [n for n in c.networks.list(names=["docker_gwbridge", "ingress"])
                     if n.name in ("docker_gwbridge", "ingress")
                     and (n.id not in self.before.networks if self.before
                          else left and (n.name == "ingress" or gwbridge_made))]

        def removed(net: Network) -> bool:        # False while the engine still holds endpoints
            try:
                net.remove()
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError:
                return False
            return True

        for net in nets:
            _until(self.timeout_s, f"removing network {net.name}", partial(removed, net), lambda: "in use")


def gwbridge_label(c: DockerClient, before: HostState | None = None) -> dict[str, str]:
    """The label a swarm about to be made carries when no docker_gwbridge
    is on the host before it (by ``before``, else as the host is now)."""
    names = before.networks.values() if before is not None else [n.name for n in c.networks.list()]
    return {} if "docker_gwbridge" in names else {GWBRIDGE_MADE_LABEL: "1"}


def made_gwbridge(labels: Mapping[str, str]) -> bool:
    """A swarm's ``labels`` say the docker_gwbridge it leaves is ours."""
    return labels.get(GWBRIDGE_MADE_LABEL) == "1"


def _swarm_made_gwbridge(c: DockerClient) -> bool:
    """:func:`made_gwbridge` of the engine's swarm (unreadable: no, so the one there is kept)."""
    try:
        c.swarm.reload()
    except docker.errors.APIError:
        return False
    return made_gwbridge(c.swarm.attrs["Spec"].get("Labels") or {})


def labels_of_test_session() -> dict[str, str]:
    """The swarm label of the test session this runs under, if any."""
    session = os.environ.get(TEST_SESSION_ENV)
    return {TEST_SESSION_LABEL: session} if session else {}


@dataclass
class SwarmLab:
    """How to make a lab: ``workers`` node containers (0: a one-node swarm,
    the host alone), the ``images`` loaded into each, the bound on each wait."""

    workers: int = 1
    images: tuple[str, ...] = DEFAULT_IMAGES
    node_cpus: str | None = None
    """A cpuset for every node container (``0``): a node then reports those
    CPUs alone, as cores ``0 .. n-1``, so give the lowest ones."""
    lab_id: str = field(default_factory=lambda: secrets.token_hex(3))
    timeout_s: float = 60.0
    state_dir: Path = STATE_DIR

    def up(self) -> Lab:
        """Records the host, then makes the lab; on any failure (or Ctrl-C)
        removes what it made and re-raises."""
        c = dockerenv.client()
        for image in ((NODE_IMAGE, *self.images) if self.workers else ()):
            try:
                c.images.get(image)
            except docker.errors.ImageNotFound:
                raise SwarmLabError(f"image {image} is missing (run: make images-swarm)") from None
        before = HostState.read(c)
        if before.swarm != "inactive":
            raise SwarmLabError(f"this host is already in a swarm (state: {before.swarm}); the lab "
                                "makes its own and never takes one over: `docker swarm leave` first")
        subnets = dockerenv.free_subnets(dockerenv.used_subnets(c), 3)
        lab = Lab(self.lab_id, str(subnets[0].network_address + 1), f"wb-lab-{self.lab_id}", [], before,
                  [str(s) for s in subnets[1:]], timeout_s=self.timeout_s, state_dir=self.state_dir)
        lab.save()
        try:
            self._make(c, lab, subnets)
        except BaseException as exc:
            try:
                lab.down()
            except (SwarmLabError, *_SDK_ERRORS) as err:
                exc.add_note(f"and the teardown after it failed: {err}")
            raise
        lab.save()
        return lab

    def _make(self, c: DockerClient, lab: Lab, subnets: list[IPv4Network]) -> None:
        bridge, swarm_pool, node_pool = subnets
        lab.docker("network", "create", "--driver", "bridge", "--subnet", str(bridge),
                   "--gateway", lab.manager, "--label", lab.label, lab.network)
        lab.nodes = [Node(f"wb-lab-{lab.id}-node{i + 1}", str(bridge.network_address + 2 + i))
                     for i in range(self.workers)]
        with ThreadPoolExecutor(max(1, self.workers)) as pool:
            list(pool.map(lambda n: self._start_node(lab, n, node_pool), lab.nodes))
        lab.swarm_init = True
        lab.save()
        try:
            c.swarm.init(advertise_addr=lab.manager, listen_addr=f"{lab.manager}:{SWARM_PORT}",
                         default_addr_pool=[str(swarm_pool)], subnet_size=24,
                         labels={LABEL_LAB: lab.id, **labels_of_test_session(), **gwbridge_label(c, lab.before)})
            c.swarm.reload()
            token = c.swarm.attrs["JoinTokens"]["Worker"]
        except _SDK_ERRORS as exc:
            raise SwarmLabError(f"docker swarm init --advertise-addr {lab.manager}: {exc}") from None
        for node in lab.nodes:
            node.docker(*_join_argv(token, lab.manager), what=f"{node.name} joins the swarm",
                        timeout_s=self.timeout_s)
        want = {node.name for node in lab.nodes}
        _until(self.timeout_s, "every node Ready",
               lambda: want <= {h for h, s in lab.node_status().items() if s == "ready"},
               lambda: str(lab.node_status()))
        for node in lab.nodes:           # how the harness reaches each node's engine
            lab.docker("node", "update", "--label-add",
                       f"{LABEL_ENGINE}=unix://{lab.engine_dir(node)}/docker.sock", node.name)
        if lab.nodes and self.images:
            self._load_images(lab)

    def _start_node(self, lab: Lab, node: Node, pool: IPv4Network) -> None:
        """A node container (its engine's networks on ``pool``; its engine's
        socket also in a host folder, for the harness); waits until that
        engine answers."""
        sock_dir = lab.engine_dir(node)
        sock_dir.mkdir(parents=True, exist_ok=True)
        _run(["docker", "run", "-d", "--name", node.name, "--hostname", node.name, "--label", lab.label,
              "--label", f"{LABEL_ROLE}=swarm-node", *NODE_FLAGS, "--network", lab.network, "--ip",
              node.address, "-v", f"{sock_dir}:{ENGINE_DIR}",
              *(["--cpuset-cpus", self.node_cpus] if self.node_cpus else []), NODE_IMAGE,
              "--default-address-pool", f"base={pool},size=24",
              "-H", "unix:///var/run/docker.sock", "-H", f"unix://{ENGINE_DIR}/docker.sock"],
             f"starting node {node.name}", self.timeout_s)

        def logs() -> str:
            r = _run(["docker", "logs", "--tail", "5", node.name], "node logs", 20, check=False)
            return (r.stdout + r.stderr).strip()[-800:]

        def engine_up() -> bool:
            if node.docker("version", "-f", "{{.Server.Version}}", timeout_s=20, check=False).returncode == 0:
                return True
            if _run(["docker", "inspect", "-f", "{{.State.Running}}", node.name], "node state",
                    20).stdout.strip() != "true":
                raise SwarmLabError(f"node {node.name} exited: {logs()}")
            return False

        _until(self.timeout_s, f"the engine of {node.name}", engine_up, logs)

    def _load_images(self, lab: Lab) -> None:
        """``docker save`` once, ``docker load`` into every node (no registry)."""
        with tempfile.TemporaryDirectory(prefix="wotbench-swarmlab-") as tmp:
            archive = Path(tmp) / "images.tar"
            _run(["docker", "save", "-o", str(archive), *self.images], "docker save", 300)

            def load(node: Node) -> None:
                with archive.open("rb") as f:
                    _run(["docker", "exec", "-i", node.name, "docker", "load", "-q"],
                         f"loading images into {node.name}", 300, stdin=f)

            with ThreadPoolExecutor(len(lab.nodes)) as pool:
                list(pool.map(load, lab.nodes))
