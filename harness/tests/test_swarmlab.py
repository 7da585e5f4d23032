"""The Swarm lab (wotbench.engine.swarmlab): a one-node swarm (the host alone) and
a real two-node swarm whose worker is a container running its own dockerd,
each with an attachable overlay network and CoAP traffic across it from a
GE container; the host exactly as found after down(), also when up() fails
or is interrupted midway, and through the command line."""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from wotbench.engine import swarmlab
from wotbench.engine.dockerenv import IMAGES
from wotbench.engine.swarmlab import LABEL_LAB, HostState, Lab, SwarmLab, SwarmLabError

pytestmark = pytest.mark.docker

SERVICE_US = 1000
REQUESTS = 100
GAP_US = 10_000
RESOURCES = f"path,service_us\n/r,{SERVICE_US}\n"
Docker = Callable[..., subprocess.CompletedProcess[str]]


def _snapshot(c: Any) -> tuple[set[str], set[str], str]:
    """The test's own record of the host: container ids, network ids, swarm state."""
    return ({ct.id for ct in c.containers.list(all=True, ignore_removed=True)},
            {n.id for n in c.networks.list()}, c.info()["Swarm"]["LocalNodeState"])


@dataclass
class Found:
    """The host as a test found it, and the folder of the lab's state file."""

    c: Any
    state: Path
    before: tuple[set[str], set[str], str]

    def check(self) -> None:
        """0 lab containers and networks, 0 services, the host as found."""
        assert self.c.containers.list(all=True, filters={"label": LABEL_LAB}, ignore_removed=True) == []
        assert self.c.networks.list(filters={"label": LABEL_LAB}) == []
        assert _snapshot(self.c) == self.before and self.before[2] == "inactive"
        with pytest.raises(docker.errors.APIError, match="not a swarm manager"):
            self.c.services.list()                     # 0 services: there is no swarm at all
        assert not list(self.state.glob("*.json")), "the lab's state file outlived down()"


@pytest.fixture
def host(swarm_lab_host: Any, tmp_path: Path) -> Found:
    return Found(swarm_lab_host, tmp_path / "state", _snapshot(swarm_lab_host))


def _start_device(docker: Docker, lab: Lab, net: str, resources: str, name: str) -> str:
    """A device on ``net`` through one engine (the host's or a node's);
    returns its overlay address once it has bound its socket."""
    docker("run", "-d", "--name", name, "--label", lab.label, "--network", net,
           "-v", f"{resources}:/r.csv:ro", IMAGES["device"], "--resources", "/r.csv", "--threads", "2")
    deadline = time.monotonic() + 30
    while "resources on" not in (logs := docker("logs", name)).stderr + logs.stdout:
        assert time.monotonic() < deadline, f"device {name} did not bind: {logs.stderr}"
        time.sleep(0.2)
    fmt = f'{{{{(index .NetworkSettings.Networks "{net}").IPAddress}}}}'
    return docker("inspect", "-f", fmt, name).stdout.strip()


def _ge(lab: Lab, net: str, work: Path, address: str, requests: int,
        *flags: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """The GE on the manager, on ``net``, sending ``requests`` GETs 10 ms
    apart to the device; returns its summary and per-request rows."""
    work.mkdir(exist_ok=True)
    (work / "trace.csv").write_text("device_id,send_ts_us,method,uri\n" + "".join(
        f"0,{i * GAP_US},GET,coap://dev-0/r\n" for i in range(requests)))
    (work / "hosts.csv").write_text(f"host,address\ndev-0,{address}\n")
    r = lab.docker("run", "--rm", "--label", lab.label, "--network", net, "-v", f"{work}:/w",
                   IMAGES["ge"], "--trace", "/w/trace.csv", "--hosts", "/w/hosts.csv", "--out", "/w/out.csv",
                   "--summary", "/w/summary.json", *flags, timeout_s=120)
    assert r.returncode == 0, r.stderr
    with (work / "out.csv").open() as f:
        return json.loads((work / "summary.json").read_text()), list(csv.DictReader(f))


def _reach_and_measure(lab: Lab, net: str, work: Path, address: str, where: str) -> None:
    """One request until answered (the overlay path works), then the
    100-request workload: every reply back, R >= S; prints R - S."""
    summary, _ = _ge(lab, net, work / "reach", address, 1, "--ack-timeout-ms", "200", "--max-retransmit", "6")
    assert summary["ok"] == 1, summary
    summary, rows = _ge(lab, net, work / "load", address, REQUESTS)
    assert (summary["requests"], summary["ok"], len(rows)) == (REQUESTS, REQUESTS, REQUESTS), summary
    assert all(row["status"] == "ok" and int(row["service_us"]) == SERVICE_US for row in rows)
    r_minus_s = [int(row["response_us"]) - int(row["service_us"]) for row in rows]
    assert min(r_minus_s) >= 0
    q = statistics.quantiles(r_minus_s, n=20)
    print(f"\nR - S {where}: median {statistics.median(r_minus_s)} us, mean {statistics.mean(r_minus_s):.0f} us, "
          f"p95 {q[18]:.0f} us, max {max(r_minus_s)} us (S = {SERVICE_US} us, {REQUESTS} requests, "
          f"{summary['retransmissions']} retransmissions)")


def _timed_up(spec: SwarmLab) -> Lab:
    t = time.monotonic()
    lab = spec.up()
    print(f"\nswarm lab up ({spec.workers} worker(s)): {time.monotonic() - t:.1f} s")
    return lab


def _timed_down(lab: Lab) -> None:
    t = time.monotonic()
    lab.down()
    print(f"swarm lab down ({len(lab.nodes)} worker(s)): {time.monotonic() - t:.1f} s")


def test_host_state_names_every_difference() -> None:
    was = HostState("inactive", {"a": "dev", "b": "ge"}, {"n1": "bridge"})
    now = HostState("active", {"a": "dev", "c": "node"}, {"n1": "bridge", "n2": "docker_gwbridge"})
    assert was.differences(was) == []
    assert was.differences(now) == ["swarm active (was inactive)", "containers left behind: node",
                                    "containers gone: ge", "networks left behind: docker_gwbridge"]


def test_one_node_swarm_overlay_service_and_down(host: Found, tmp_path: Path) -> None:
    lab = _timed_up(SwarmLab(workers=0, state_dir=host.state))
    try:
        assert lab.nodes == [] and list(lab.node_status().values()) == ["ready"]
        with pytest.raises(SwarmLabError, match="already in a swarm"):   # never takes a swarm over
            SwarmLab(workers=0, state_dir=host.state).up()
        net = lab.overlay()
        res = tmp_path / "r.csv"
        res.write_text(RESOURCES)
        res.chmod(0o644)
        address = _start_device(lab.docker, lab, net, str(res), f"wb-lab-{lab.id}-dev")
        _reach_and_measure(lab, net, tmp_path, address, "same host, overlay")
        svc = f"wb-lab-{lab.id}-svc"        # a service too (no registry: the local image), for down() to remove
        lab.docker("service", "create", "--detach", "--name", svc, "--network", net,
                   "--mount", f"type=bind,src={res},dst=/r.csv,readonly", IMAGES["device"], "--resources", "/r.csv")
        deadline = time.monotonic() + 30
        while not (current := lab.docker("service", "ps", svc, "--format", "{{.CurrentState}}").stdout).startswith(
                "Running"):
            assert time.monotonic() < deadline, current
            time.sleep(0.5)
        assert len(host.c.services.list()) == 1
    finally:
        _timed_down(lab)
    host.check()


@pytest.mark.parametrize("gwbridge_first", [False, True], ids=["no-gwbridge-before", "a-gwbridge-before"])
def test_a_lab_taken_down_without_its_state_file_keeps_a_gwbridge_found_before(host: Found, tmp_path: Path,
                                                                               gwbridge_first: bool) -> None:
    """Without its state file a lab has no record of the host (what
    wotbench.tests.leftovers meets for a dead test session's lab): its down()
    then removes the docker_gwbridge the swarm leaves only when the swarm's
    label says none was there before; one there before (made here, as a user
    customising it would) stays until this test removes it."""
    from wotbench.tests.leftovers import remove_gwbridge

    had = not swarmlab.gwbridge_label(host.c)
    made = None
    if gwbridge_first and not had:
        made = host.c.networks.create("docker_gwbridge", driver="bridge", labels={"org.wotbench.test-role": "before"},
                                      options={"com.docker.network.bridge.name": "docker_gwbridge",
                                               "com.docker.network.bridge.enable_icc": "false",
                                               "com.docker.network.bridge.enable_ip_masquerade": "true"})
    try:
        lab = SwarmLab(workers=0, state_dir=host.state).up()
        try:
            host.c.swarm.reload()
            labels = host.c.swarm.attrs["Spec"].get("Labels") or {}
            assert swarmlab.made_gwbridge(labels) == (not had and made is None), labels
        finally:
            Lab.load(lab.id, state_dir=tmp_path / "no-state").down()
            (host.state / f"{lab.id}.json").unlink()     # up()'s state file: down() ran without it
        names = {n.name for n in host.c.networks.list()}
        assert ("docker_gwbridge" in names) == (had or made is not None), names
    finally:
        if made is not None:
            remove_gwbridge(host.c, made.id)         # the one this test made, and no other
    host.check()


def test_two_node_swarm_device_on_the_node_ge_on_the_manager(host: Found, tmp_path: Path) -> None:
    t = time.monotonic()
    with SwarmLab(workers=1, state_dir=host.state).up() as lab:      # a Lab is a context manager
        print(f"\nswarm lab up (1 worker): {time.monotonic() - t:.1f} s")
        node = lab.nodes[0]
        ls = lab.docker("node", "ls", "--format", "{{.Hostname}} {{.Status}}").stdout.split("\n")
        assert sorted(line.split()[1] for line in ls if line) == ["Ready", "Ready"], ls
        assert f"{node.name} Ready" in ls
        loaded = node.docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        assert {IMAGES["device"], IMAGES["ge"]} <= set(loaded)
        net = lab.overlay()
        node.write_file("/srv/wotbench/r.csv", RESOURCES)
        address = _start_device(node.docker, lab, net, "/srv/wotbench/r.csv", "dev-on-node")
        assert not host.c.containers.list(filters={"name": "dev-on-node"})     # it runs on the node only
        _reach_and_measure(lab, net, tmp_path, address, "across nodes, overlay")
        t = time.monotonic()
    print(f"swarm lab down (1 worker): {time.monotonic() - t:.1f} s")
    host.check()


def _wrong_token(mp: pytest.MonkeyPatch) -> tuple[type[BaseException], str | None]:
    """A node that cannot join: its join command gets a token with a wrong secret."""
    join = swarmlab._join_argv

    def wrong(token: str, manager: str) -> list[str]:
        head, _, secret = token.rpartition("-")
        return join(f"{head}-{'0' * len(secret)}", manager)

    mp.setattr(swarmlab, "_join_argv", wrong)
    return SwarmLabError, "joins the swarm"


def _ctrl_c_while_loading(mp: pytest.MonkeyPatch) -> tuple[type[BaseException], str | None]:
    """Ctrl-C once the node has joined, while the images would be loaded."""
    def interrupted(self: SwarmLab, lab: Lab) -> None:
        assert [lab.node_status()[n.name] for n in lab.nodes] == ["ready"]
        raise KeyboardInterrupt

    mp.setattr(SwarmLab, "_load_images", interrupted)
    return KeyboardInterrupt, None


@pytest.mark.parametrize("inject", [_wrong_token, _ctrl_c_while_loading],
                         ids=["node-cannot-join", "ctrl-c-while-loading-images"])
def test_a_failure_midway_through_up_leaves_the_host_as_found(host: Found, monkeypatch: pytest.MonkeyPatch,
                                                               inject: Callable[..., Any]) -> None:
    raised, match = inject(monkeypatch)
    t = time.monotonic()
    with pytest.raises(raised, match=match) as ei:
        SwarmLab(workers=1, state_dir=host.state).up()
    print(f"\nfailed up + cleanup: {time.monotonic() - t:.1f} s: {ei.type.__name__} {ei.value}")
    host.check()


def test_command_line_up_down(host: Found) -> None:
    env = {**os.environ, "WOTBENCH_SWARMLAB_DIR": str(host.state)}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "wotbench.commands.main", "swarm-lab", *args], env=env,
                              capture_output=True, text=True, timeout=300)

    up = cli("up", "--workers", "0")
    try:
        assert up.returncode == 0, up.stderr
        lab_id = up.stdout.split()[2]
        assert [p.stem for p in host.state.glob("*.json")] == [lab_id]
        again = cli("up", "--workers", "0")
        assert again.returncode == 2 and again.stderr.startswith("error: ") and "already in a swarm" in again.stderr
    finally:
        down = cli("down")
    assert down.returncode == 0 and "as it was" in down.stdout, down.stderr
    host.check()
    none = cli("down")
    assert none.returncode == 2 and "0 labs" in none.stderr
