"""`wotbench run` across a real two-node Docker Swarm on one machine (the
Swarm lab: the host is the manager, the worker a container running its own
dockerd, on CPU 0 alone so that it does not share the manager's GE core):
the quickstart spread over both nodes with a CD pair, a collectl monitor
and pinned devices on the worker, every file back on the manager,
teardown on every node after success, SIGINT and a lost node, `wotbench
clean` on every node, and bad node names refused before anything starts.
The lab leaves the host exactly as it found it (its own check)."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pandas as pd
import pytest

from wotbench.base.rundir import RunDir
from wotbench.engine.dockerenv import LABEL_ENGINE, LABEL_OWNER, LABEL_RUN
from wotbench.engine.swarmlab import Lab, SwarmLab

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "experiments" / "quickstart-swarm.yaml"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    import docker as sdk

    from wotbench.engine.swarmlab import NODE_IMAGE

    c = sdk.from_env()
    try:
        c.images.get(NODE_IMAGE)
    except sdk.errors.ImageNotFound:
        pytest.fail(f"image {NODE_IMAGE} missing (make images-swarm)")
    with SwarmLab(workers=1, node_cpus="0", state_dir=tmp_path_factory.mktemp("lab")).up() as lab:
        yield lab


def _engines(lab: Lab) -> dict[str, Any]:
    """Hostname -> client of every node's engine (the manager's included)."""
    c = docker.from_env()
    out = {c.info()["Name"]: c}
    for n in c.nodes.list():
        url = (n.attrs["Spec"].get("Labels") or {}).get(LABEL_ENGINE)
        if url:
            out[n.attrs["Description"]["Hostname"]] = docker.DockerClient(base_url=url)
    assert len(out) == 1 + len(lab.nodes)
    return out


def _left(engines: dict[str, Any], run_id: str | None = None) -> list[str]:
    """Everything of a run (or of any run) still on any node."""
    flt = {"label": f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN}
    out = []
    for host, c in engines.items():
        try:
            out += [f"{host}: container {x.name}" for x in c.containers.list(all=True, filters=flt)]
            out += [f"{host}: volume {x.name}" for x in c.volumes.list(filters=flt)]
            out += [f"{host}: network {x.name}" for x in c.networks.list(filters=flt)]
        except (docker.errors.DockerException, OSError):
            out.append(f"{host}: engine gone")
    return out


def _worker(lab: Lab) -> str:
    return lab.nodes[0].name


#: The quickstart's gateway with short CoAP timers, for the tests that kill
#: a device or a node: a CON request nobody answers gives up after 5.25 s of
#: retransmissions instead of RFC 7252's 62-93 s, which the run would
#: otherwise wait out before it ends (harness/execution/phases/_ge.py drain_us).
QUICK_GIVE_UP = "  type: con\n  timeout: 5s\n  ack_timeout: 500ms\n  max_retransmit: 2\n"
#: The quickstart's device limits, and then 20 % loss on their network.
LOSS = ("    memory: 32m\n", "    memory: 32m\n    impairment: {loss: 20%}\n")


def _quick_give_up(tmp_path: Path, loss: bool = False) -> Path:
    """The swarm quickstart with :data:`QUICK_GIVE_UP` (``loss``: and 20 %
    loss on the devices' network)."""
    text = SPEC.read_text()
    assert text.count("  type: con\n  timeout: 5s\n") == 1
    text = text.replace("  type: con\n  timeout: 5s\n", QUICK_GIVE_UP)
    if loss:
        assert text.count(LOSS[0]) == 1
        text = text.replace(*LOSS)
    spec = tmp_path / "quickstart-swarm.yaml"
    spec.write_text(text)
    return spec


def test_a_node_or_label_the_swarm_lacks_exits_2_and_starts_nothing(lab, spec_file, make_spec, wotbench_cli,
                                                                   tmp_path):
    engines = _engines(lab)
    for extra, field in (("cluster:\n  devices: {nodes: [no-such-host]}\n", "cluster.devices.nodes[0]"),
                         ("cluster:\n  ge: {label: role=nope}\n", "cluster.ge.label")):
        path = spec_file(make_spec(2, extra=extra))
        r = wotbench_cli("run", str(path), "--results", str(tmp_path / "res"), "--no-progress", timeout=120)
        assert r.returncode == 2, r.stderr
        (line,) = r.stderr.splitlines()
        assert line.startswith(f"error: {path}:") and f": {field}: " in line, line
        assert not (tmp_path / "res").exists() and _left(engines) == []


def test_the_quickstart_runs_across_two_nodes_and_everything_comes_back(lab, wotbench_cli, tmp_path):
    engines, worker = _engines(lab), _worker(lab)
    r = wotbench_cli("run", str(SPEC), "--scale", "ci", "--results", str(tmp_path), "--no-progress", timeout=600)
    assert r.returncode == 0, r.stderr
    run = RunDir(Path(r.stdout.strip().splitlines()[-1]))
    assert "starting 11 containers on 2 nodes" in r.stderr and "probing the path" in r.stderr
    assert _left(engines, run.name) == [] and _left(engines) == []
    manifest = json.loads(run.manifest.read_text())
    summary = json.loads(run.summary.read_text())
    observed = json.loads(run.observed.read_text())
    manager = next(h for h in engines if h != worker)
    assert manifest["swarm"] is True and manifest["ge_node"] == manager
    nodes = {n["hostname"]: n for n in manifest["nodes"]}
    assert set(nodes) == {manager, worker} and nodes[worker]["cores"] == [0]
    assert nodes[worker]["engine_version"] and nodes[worker]["kernel"] and nodes[worker]["labels"][LABEL_ENGINE]
    assert abs(nodes[worker]["clock"]["offset_us"]) <= nodes[worker]["clock"]["uncertainty_us"] + 50_000
    assert nodes[worker]["roles"] == ["CD pair", "10 devices"] and nodes[manager]["roles"] == ["GE"]
    # Every file of the worker is on the manager: CD-GE output, monitor, probe, device counters, logs.
    host = run.host(worker)
    cd = pd.read_csv(host.cd_csv)
    assert len(cd) == observed["ges"]["cd-ge-1"]["trace_lines"] > 0 and (cd["status"] == "ok").all()
    assert (cd["intended_us"] < 0).any(), "the calibration requests are on the run's t0"
    mon = pd.read_csv(host.host_monitor)
    assert len(mon) >= 8 and "cpu0_idle" in mon.columns
    probe = pd.read_csv(host.probe_csv)
    assert len(probe) >= 20 and (probe["status"] == "ok").all()
    assert not (run.root / "cd").exists() and run.host(manager).host_monitor.is_file()
    for name, c in observed["containers"].items():
        assert c["node"] in (manager, worker) and run.log(name).is_file(), name
        if c["role"] in ("device", "cd-node"):
            stats = json.loads(run.device_stats(name).read_text())
            assert c["node"] == worker and stats["cpus"] == "0" and stats["served"] > 0, (name, stats)
    ge = json.loads(run.ge_summary(0).read_text())
    assert ge["config"]["cpus"] == "1"            # the manager's GE core, the worker on CPU 0 alone
    # One verdict that covers both hosts, the worker's contention detector its own.
    assert set(summary["hosts"]) == {manager, worker}
    assert summary["hosts"][worker]["cd"]["contention"]["status"] in ("none", "contention", "inconclusive")
    assert summary["hosts"][manager]["cd"] is None
    # The lab's worker shares CPU 0 with the manager's OS, harness and both
    # engines: its CD may honestly see contention there, and only there.
    if summary["verdict"] != "valid":
        assert all(worker in r and r.split()[0] in ("contention", "placement") for r in summary["reasons"]), \
            summary["reasons"]
    r = wotbench_cli("report", str(run.root), timeout=300)
    assert r.returncode == 0, r.stderr
    page = (run.root / "report" / "index.html").read_text()
    assert worker in page and manager in page


def test_sigint_tears_down_every_node(lab, live_run, tmp_path):
    engines = _engines(lab)
    live = live_run(SPEC, tmp_path / "res", "--scale", "ci")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 120)
    time.sleep(1)
    assert len(_left(engines, run_id)) > 10
    live.proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    assert live.finish(timeout=30) == 130
    took = time.monotonic() - t
    assert _left(engines) == [], f"left after SIGINT ({took:.1f} s)"
    assert "interrupted" in (tmp_path / "res" / run_id / "INCOMPLETE").read_text()


def test_clean_removes_a_dead_runs_leftovers_on_every_node(lab, wotbench_cli):
    engines = _engines(lab)
    node = engines[_worker(lab)]
    labels = {LABEL_RUN: "20260101-000000-dead-abc123", LABEL_OWNER: "no-such-host:1"}
    node.volumes.create("wb-abc123-dev-0-io", labels=labels)
    node.containers.create("wotbench/device:latest", ["--resources", "/io/r.csv"], name="wb-abc123-dev-0",
                           labels=labels)
    assert len(_left(engines)) == 2
    r = wotbench_cli("clean", timeout=120)
    assert r.returncode == 0, r.stderr
    assert "removed 1 container(s)" in r.stdout and _left(engines) == []


def test_impairment_on_another_node_and_a_task_that_fails_there(lab, live_run, tmp_path):
    """20 % loss on the worker's devices (a sidecar per device on that
    node's engine): about a fifth of the CON requests retransmitted. Then a
    device killed there: the run invalid, naming it and its node."""
    engines, worker = _engines(lab), _worker(lab)
    spec = _quick_give_up(tmp_path, loss=True)
    live = live_run(spec, tmp_path / "res", "--scale", "ci")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 120)
    time.sleep(4)
    engines[worker].containers.get(f"wb-{run_id.rsplit('-', 1)[-1]}-dev-3").kill()
    assert live.finish(timeout=300) == 0, "\n".join(live.lines)
    summary = json.loads((tmp_path / "res" / run_id / "summary.json").read_text())
    assert summary["verdict"] == "invalid"
    assert any("dev-3" in r and worker in r and "not running" in r for r in summary["reasons"]), summary["reasons"]
    assert _left(engines) == []
    run = RunDir(tmp_path / "res" / run_id)
    imp = json.loads(run.observed.read_text())["impairment"]
    assert (imp["how"], imp["containers"]) == ("sidecar-iptables", 10)
    ge = pd.read_csv(run.ge_csv(0))
    alive = ge[ge["device_id"] != 3]              # dev-3's requests time out after its kill
    assert 0.10 < (alive["retransmissions"] > 0).mean() < 0.30


def test_a_node_lost_mid_run_makes_the_run_invalid_naming_it(lab, live_run, tmp_path):
    """Last: it kills the worker (the lab's own teardown copes)."""
    engines, worker = _engines(lab), _worker(lab)
    live = live_run(_quick_give_up(tmp_path), tmp_path / "res", "--scale", "ci")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 120)
    time.sleep(4)
    docker.from_env().containers.get(worker).kill()
    assert live.finish(timeout=300) == 0, "\n".join(live.lines)
    summary = json.loads((tmp_path / "res" / run_id / "summary.json").read_text())
    assert summary["verdict"] == "invalid"
    assert any(f"node {worker} lost" in r for r in summary["reasons"]), summary["reasons"]
    manager = {h: c for h, c in engines.items() if h != worker}
    # Nothing of the run on the nodes still up but the overlay network, which
    # the swarm keeps while the lost node's endpoint is on it; the run says so.
    left = _left(manager)
    assert all(": network wb-" in x for x in left) and len(left) <= 1, left
    if left:
        assert any("still in use by lost node" in line and "wotbench clean" in line for line in live.lines)
