"""On a real one-node swarm: the inventory read from the engine and
`wotbench plan` with a ``cluster`` section. The test inits the swarm and
leaves it, and leaves the host's networks exactly as it found them
(``swarm leave --force`` keeps a docker_gwbridge network: it is removed)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from wotbench.engine.inventory import read_inventory
from wotbench.engine.swarmlab import gwbridge_label, labels_of_test_session
from wotbench.tests.leftovers import remove_gwbridge

pytestmark = pytest.mark.docker

GWBRIDGE = "docker_gwbridge"
LABEL = "org.wotbench.test-role"


#: The shipped aiocoap forward proxy on core 1 of the GE node (docs/spec.md).
GATEWAY = """\
gateway_under_test: {image: aiocoap, north: coap-scheme, cores: 1, memory: 256m, pids: 64, ready: coap,
                     ready_timeout: 30s}
placement: {affinity: true, reserve: [0]}
"""


def _docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=120).stdout


def _networks() -> list[str]:
    return sorted(_docker("network", "ls", "--no-trunc", "--format",
                          "{{.ID}} {{.Name}} {{.Driver}} {{.Scope}}").splitlines())


def _docker0_address() -> str:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True,
                         check=True).stdout.split()
    return out[out.index("inet") + 1].split("/")[0]


@pytest.fixture
def one_node_swarm(docker_client: Any) -> Iterator[str]:
    """A one-node swarm on this host (its node ID); fails when the host is
    in a swarm already (this test must not leave someone else's)."""
    state = docker_client.info()["Swarm"]["LocalNodeState"]
    if state != "inactive":
        pytest.fail(f"this host is in a swarm already (LocalNodeState {state!r}): the test inits and "
                    "leaves its own one-node swarm; run it on a host that is not in one")
    before = _networks()
    had_gwbridge = any(f" {GWBRIDGE} " in n for n in before)
    docker_client.swarm.init(advertise_addr=_docker0_address(),
                             labels={**labels_of_test_session(), **gwbridge_label(docker_client)})
    try:
        yield docker_client.info()["Swarm"]["NodeID"]
    finally:
        _docker("swarm", "leave", "--force")
        if not had_gwbridge:
            remove_gwbridge(docker_client)
    assert docker_client.info()["Swarm"]["LocalNodeState"] == "inactive"
    assert _networks() == before


def test_inventory_and_plan_on_a_one_node_swarm(one_node_swarm, docker_client, spec_file, make_spec,
                                                wotbench_cli):
    _docker("node", "update", "--label-add", f"{LABEL}=devices", one_node_swarm)
    inv = read_inventory(docker_client)
    assert inv.swarm and len(inv.nodes) == 1
    me = inv.local
    version = docker_client.version()
    assert (me.id, me.role, me.state, me.availability) == (one_node_swarm, "manager", "ready", "active")
    assert me.hostname == docker_client.info()["Name"] and me.has_label(LABEL, "devices")
    assert me.cores == tuple(range(docker_client.info()["NCPU"])) and me.engine_version == version["Version"]
    assert me.kernel == version["KernelVersion"] and (me.platform or "").startswith("linux/")

    good = spec_file(make_spec(4, extra=f"cluster:\n  ge: {{node: {me.hostname}}}\n"
                                        f"  devices: {{label: {LABEL}=devices}}\n"), "good.yaml")
    r = wotbench_cli("plan", str(good), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("GEs: 1 (auto: ")     # gateway.instances: auto says why first
    lines = r.stdout.splitlines()[1:]
    assert lines[0].startswith(f"node {me.hostname} (manager, {len(me.cores)} cores (as the engine reports), "
                               f"engine {me.engine_version}): GE, CD pair, 4 devices")
    assert lines[1] == "  device ids: s 0-3" and lines[2].startswith("  cores offered: ")
    assert "why:" in lines
    assert f"  GE node {me.hostname}: cluster.ge.node" in lines
    assert any(f"the nodes with the label {LABEL}=devices (cluster.devices.label)" in x for x in lines)
    assert "  spread even: 4 devices over 1 node(s), every group split evenly: " \
           f"{me.hostname} 4" in lines

    default = spec_file(make_spec(4, extra="cluster: {}\n"), "default.yaml")   # the swarm's defaults
    r = wotbench_cli("plan", str(default), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith(f"node {me.hostname} (manager,") and "one-node swarm" in r.stdout
    alone = spec_file(make_spec(4), "alone.yaml")      # no section on a manager: the swarm's defaults
    r = wotbench_cli("plan", str(alone), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout == wotbench_cli("plan", str(default), timeout=120).stdout

    bad = spec_file(make_spec(4, extra=f"cluster:\n  devices: {{label: {LABEL}=nope}}\n"), "bad.yaml")
    r = wotbench_cli("plan", str(bad), timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    (line,) = r.stderr.splitlines()
    want = (f"error: {bad}:{bad.read_text().splitlines().index(f'  devices: {{label: {LABEL}=nope}}') + 1}: "
            f"cluster.devices.label: no node of the swarm has the label {LABEL}=nope")
    assert line.startswith(want), line


def test_run_on_a_one_node_swarm_puts_everything_on_it(one_node_swarm, docker_client, spec_file, make_spec,
                                                       wotbench_cli, tmp_path, run_objects):
    """A manager alone: the swarm's defaults put the GE, the CD pair and the
    devices on it, on an overlay network; the per-host files under nodes/.
    With a gateway under test (issue 25): it runs on the GE node on a core
    of its own, its readiness is checked from the GE node through it (the
    harness cannot reach the overlay), and every request goes through it
    to the device it names."""
    path = spec_file(make_spec(4, extra="cluster: {}\n" + GATEWAY))
    r = wotbench_cli("run", str(path), "--results", str(tmp_path), "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr
    run = Path(r.stdout.strip().splitlines()[-1])
    me = docker_client.info()["Name"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["swarm"] is True and [n["hostname"] for n in manifest["nodes"]] == [me]
    assert manifest["nodes"][0]["roles"] == ["GE", "gateway under test", "CD pair", "4 devices"]
    assert manifest["gateway"]["cpuset"] == "1" and manifest["gateway"]["ready_seconds"] is not None
    assert (run / "nodes" / me / "cd" / "cd-ge.csv").is_file() and (run / "nodes" / me / "probe.csv").is_file()
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary["hosts"]) == [me] and summary["hosts"][me]["cd"]["contention"]["status"]
    sec = summary["gateway"]
    assert sec is not None and sec["requests"] == summary["measure_counts"]["requests"] > 0, sec
    assert sec["routing"]["devices"] == 4 and sec["routing"]["served"] == sec["routing"]["sent"] > 0, sec["routing"]
    assert sec["routing"]["served_more"] == 0, sec["routing"]
    assert run_objects(None) == ([], [])


@pytest.mark.parametrize("gwbridge_first", [False, True], ids=["no-gwbridge-before", "a-gwbridge-before"])
def test_a_swarm_left_by_a_dead_test_session_is_taken_down_and_no_other(docker_client, gwbridge_first):
    """wotbench.tests.leftovers (make test, before the Docker tests): a swarm
    whose test-session label names a live process (this one), a process of
    another boot or pid namespace, or nothing it can read, stays; once it
    names a process of this boot and namespace that is gone, the swarm is
    left and the host's networks are as they were: the docker_gwbridge it
    leaves is removed only when none was there before the swarm (with
    ``gwbridge_first`` one is: made here, as a user customising it would,
    it stays until this test removes it)."""
    from wotbench.engine.swarmlab import TEST_SESSION_LABEL
    from wotbench.tests.leftovers import session_identity, take_down_dead_sessions_swarm
    state = docker_client.info()["Swarm"]["LocalNodeState"]
    if state != "inactive":
        pytest.fail(f"this host is in a swarm already (LocalNodeState {state!r})")
    before = _networks()
    had_gwbridge = any(f" {GWBRIDGE} " in n for n in before)
    gone = subprocess.Popen(["true"])
    gone.wait()
    me = session_identity()
    boot, pidns, _, _ = me.rsplit("/", 3)
    dead = f"{boot}/{pidns}/{gone.pid}/1"
    made = None
    if gwbridge_first and not had_gwbridge:     # this test's own: removed by it at the end
        made = docker_client.networks.create(GWBRIDGE, driver="bridge", labels={LABEL: "gwbridge-before"}, options={
            "com.docker.network.bridge.name": GWBRIDGE, "com.docker.network.bridge.enable_icc": "false",
            "com.docker.network.bridge.enable_ip_masquerade": "true"})
    swarm_made = gwbridge_label(docker_client)
    assert bool(swarm_made) == (not had_gwbridge and made is None)
    before_swarm = _networks()
    try:
        swarm_id = docker_client.swarm.init(advertise_addr=_docker0_address(),
                                            labels={TEST_SESSION_LABEL: me, **swarm_made})
        try:                    # from here the swarm is this test's: only it is left in `finally`
            for alive_or_foreign in (me, f"another-boot/{pidns}/{gone.pid}/1", f"{boot}/pid:[1]/{gone.pid}/1",
                                     "garbage"):
                docker_client.swarm.update(labels={TEST_SESSION_LABEL: alive_or_foreign, **swarm_made})
                assert take_down_dead_sessions_swarm(docker_client) is None, alive_or_foreign
                assert docker_client.info()["Swarm"]["LocalNodeState"] == "active"
            docker_client.swarm.update(labels={TEST_SESSION_LABEL: dead, **swarm_made})
            assert (take_down_dead_sessions_swarm(docker_client)
                    == f"left the one-node swarm of test session {dead} (gone)")
            assert docker_client.info()["Swarm"]["LocalNodeState"] == "inactive"
            assert _networks() == before_swarm      # a docker_gwbridge there before the swarm is still there
        finally:
            if docker_client.info()["Swarm"]["NodeID"] == swarm_id:     # still this test's swarm, no other
                _docker("swarm", "leave", "--force")
                if swarm_made:
                    remove_gwbridge(docker_client)
    finally:
        if made is not None:
            remove_gwbridge(docker_client, made.id)     # the one this test made, and no other
    assert _networks() == before
