"""`wotbench run` end to end on real Docker: complete results, Ctrl-C,
a device dying mid-run, bad specs, and `wotbench clean`."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wotbench.engine.dockerenv import IMAGES, LABEL_RUN

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.docker


def _gone(run_objects, run_id: str, within_s: float) -> float:
    """Seconds until no container or network of the run is left."""
    t = time.monotonic()
    while True:
        cts, nets = run_objects(run_id)
        if not cts and not nets:
            return time.monotonic() - t
        if time.monotonic() - t > within_s:
            raise AssertionError(f"left behind: {[c.name for c in cts]} {[n.name for n in nets]}")
        time.sleep(0.2)


def _into_measurement(live, results: Path, after_s: float) -> tuple[str, float]:
    """Waits until the live run is ``after_s`` past its t0: (run id, t0 in epoch us)."""
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 90)
    t0 = json.loads((results / run_id / "phases.json").read_text())["t0_epoch_us"]
    while time.time() * 1e6 < t0 + after_s * 1e6:
        time.sleep(0.1)
    return run_id, t0


def _every_request_accounted_for(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every request of the trace is accounted for, in order, with a status: (trace, GE output)."""
    trace = pd.read_csv(run_dir / "workload" / "trace.csv", skipinitialspace=True)
    out = pd.read_csv(run_dir / "ge" / "ge-0.csv")
    assert len(trace) > 5000                       # 10 devices x 10/s x 60 s
    assert len(out) == len(trace)
    assert (out["device_id"].to_numpy() == trace["device_id"].to_numpy()).all()
    assert (out["intended_us"].to_numpy() == trace["send_ts_us"].to_numpy()).all()
    assert set(out["status"]) <= {"ok", "timeout", "error"}
    assert (out["status"] == "ok").mean() > 0.98
    ok = out[out["status"] == "ok"]
    assert (ok["response_us"] >= ok["service_us"]).all()   # R >= S by construction
    return trace, out


def _records_complete(run_dir: Path, run_id: str, requests: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """summary.json, manifest.json, phases.json, the CD-GE's output, the
    monitor's and the logs of a complete run: (summary, manifest)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["format"] == 1 and summary["complete"] is True and summary["run_id"] == run_id
    assert summary["counts"]["ge-0"]["rows"] == summary["counts"]["ge-0"]["trace_lines"] == requests
    assert summary["verdict"] in ("valid", "invalid") and isinstance(summary["reasons"], list)
    assert summary["containers"]["nodes_not_running_at_end"] == []
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for key in ("wotbench_version", "git_commit", "images", "libcoap", "docker", "kernel",
                "cpu_model", "cpu_count", "placement", "workload_sha256", "cores_shared"):
        assert key in manifest, key
    assert manifest["workload_sha256"]["trace.csv"] and manifest["complete"] is True
    assert set(manifest["images"]) == {"device", "ge"}
    phases = json.loads((run_dir / "phases.json").read_text())
    assert phases["measure"] == [1_000_000, 59_000_000] and phases["calibration"] == [-2_000_000, 0]
    cd = pd.read_csv(run_dir / "cd" / "cd-ge.csv")
    assert cd["intended_us"].min() == -2_000_000 and cd["intended_us"].max() > 55_000_000
    mon = pd.read_csv(run_dir / "monitor" / "containers.csv")
    assert set(mon["role"]) >= {"device", "cd-node"} and mon["container"].nunique() >= 11
    host = pd.read_csv(run_dir / "monitor" / "host.csv")
    assert len(host) >= 55 and {"cpu0_user", "cpu1_idle", "mem_used_kb"} <= set(host.columns)
    logs = {p.name for p in (run_dir / "logs").iterdir()}
    assert len(logs) == 13                          # 10 devices, CD node, GE, CD-GE
    assert "served=" in (run_dir / "logs" / f"wb-{run_id[-6:]}-dev-0.log").read_text()
    return summary, manifest


@pytest.mark.slow
def test_end_to_end_ten_devices_sixty_seconds(docker_client, spec_file, make_spec, tmp_path,
                                              wotbench_cli, run_objects, one_headline):
    spec = spec_file(make_spec(count=10, measure="58s", name="e2e"))
    r = wotbench_cli("run", str(spec), "--results", str(tmp_path / "res"), "--no-progress", timeout=400)
    assert r.returncode == 0, r.stderr
    run_dir = Path(r.stdout.strip().splitlines()[-1])
    run_id = run_dir.name
    assert re.fullmatch(r"\d{8}-\d{6}-e2e-[0-9a-f]{6}", run_id)
    assert not (run_dir / "INCOMPLETE").exists()
    for rel in ("spec.yaml", "manifest.json", "phases.json", "observed.json", "summary.json",
                "workload/trace.csv", "workload/expected.json", "workload/cd/trace.csv", "ge/ge-0.csv",
                "ge/ge-0.summary.json", "ge/devices-0.csv", "cd/cd-ge.csv", "cd/cd-ge.summary.json",
                "monitor/host.csv", "monitor/containers.csv"):
        assert (run_dir / rel).is_file(), rel

    trace, out = _every_request_accounted_for(run_dir)
    summary, manifest = _records_complete(run_dir, run_id, len(trace))

    # What the harness saw is recorded, and judged by reporting alone.
    observed = json.loads((run_dir / "observed.json").read_text())
    assert observed["format"] == 1 and observed["collectl"] is True and observed["start"]["late_us"] == 0
    assert observed["ges"]["ge-0"]["exit_code"] == 0 and observed["ges"]["cd-ge"]["exit_code"] == 0
    assert observed["ges"]["ge-0"]["rows"] == observed["ges"]["ge-0"]["trace_lines"] == len(trace)
    nodes = {n: c for n, c in observed["containers"].items() if c["role"] in ("device", "cd-node")}
    assert len(nodes) == 11 and all(c["status"] == "running" for c in nodes.values())
    # Every device and the CD node wrote its --stats counters into its own folder.
    for name in nodes:
        stats = json.loads((run_dir / "devices" / name / "stats.json").read_text())
        assert stats["format"] == 1 and stats["served"] > 0
    served = sum(json.loads((run_dir / "devices" / n / "stats.json").read_text())["served"]
                 for n, c in nodes.items() if c["role"] == "device")
    assert served >= (out["status"] == "ok").sum()
    assert manifest["placement"]["cd_ge_spin_us"] == 2000
    ge_summary = json.loads((run_dir / "ge" / "ge-0.summary.json").read_text())
    cd_summary = json.loads((run_dir / "cd" / "cd-ge.summary.json").read_text())
    assert ge_summary["config"]["late_us"] == cd_summary["config"]["late_us"] == 1000
    assert cd_summary["config"]["spin_us"] == 2000 and ge_summary["config"]["spin_us"] == -1
    checks = {c["check"]: c for c in summary["checks"]}
    assert {"harness", "ge_counters", "overload"} <= set(checks)
    assert checks["harness"]["ok"] and checks["overload"]["ok"], checks
    assert summary["device_counters"]["devices"] == summary["device_counters"]["files"] == 10
    assert one_headline(run_dir) == (summary["verdict"].upper(), (summary["reasons"] or [None])[0])
    _gone(run_objects, run_id, 1)


def test_sigint_mid_run_tears_down_and_marks_incomplete(live_run, docker_client, spec_file, make_spec,
                                                        tmp_path, run_objects):
    live = live_run(spec_file(make_spec(count=4, measure="60s", name="sigint")), tmp_path / "res")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 90)
    time.sleep(2)
    assert run_objects(run_id)[0], "the run's containers should be up"
    live.proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    rc = live.finish(timeout=15)
    assert rc == 130
    _gone(run_objects, run_id, max(0.5, 15 - (time.monotonic() - t)))
    run_dir = tmp_path / "res" / run_id
    assert "interrupted" in (run_dir / "INCOMPLETE").read_text()
    assert not (run_dir / "summary.json").exists()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["complete"] is False and "interrupted" in manifest["incomplete_reason"]


def test_sigterm_also_tears_down(live_run, docker_client, spec_file, make_spec, tmp_path, run_objects):
    live = live_run(spec_file(make_spec(count=2, measure="60s", name="sigterm")), tmp_path / "res")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"all \d+ ready", 90)
    live.proc.send_signal(signal.SIGTERM)
    assert live.finish(timeout=15) != 0
    _gone(run_objects, run_id, 5)
    assert (tmp_path / "res" / run_id / "INCOMPLETE").exists()


def test_sigkilled_harness_leaves_nothing_running(live_run, docker_client, spec_file, make_spec, tmp_path,
                                                 run_objects):
    """SIGKILL of the harness in the measurement phase (issue W2 5/5): before,
    the GE went on writing into the dead run's folder and the devices ran
    until `wotbench clean`. Its reaper removes them within seconds and marks
    the run incomplete."""
    live = live_run(spec_file(make_spec(count=3, measure="60s", name="sigkill")), tmp_path / "res")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 90)
    time.sleep(2)
    assert run_objects(run_id)[0], "the run's containers should be up"
    live.proc.kill()
    live.proc.wait(timeout=10)
    _gone(run_objects, run_id, 30)
    incomplete = (tmp_path / "res" / run_id / "INCOMPLETE").read_text()
    assert "died during the run" in incomplete and "reaper" in incomplete


def test_killed_device_makes_the_run_invalid(live_run, docker_client, spec_file, make_spec, tmp_path,
                                             run_objects, one_headline):
    live = live_run(spec_file(make_spec(count=3, measure="12s", name="kill", rit="exp:50ms")),
                   tmp_path / "res")
    run_id, t0 = _into_measurement(live, tmp_path / "res", 4)
    docker_client.containers.get(f"wb-{run_id[-6:]}-dev-1").kill()
    killed_at_us = time.time() * 1e6 - t0
    assert live.finish(timeout=120) == 0, "\n".join(live.lines)
    run_dir = tmp_path / "res" / run_id
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is True and summary["verdict"] == "invalid"
    assert any("dev-1" in r and "not running" in r for r in summary["reasons"]), summary["reasons"]
    # Recorded by the harness, decided by reporting: the first reason, in all four outputs.
    observed = json.loads((run_dir / "observed.json").read_text())
    dead = f"wb-{run_id[-6:]}-dev-1"
    assert observed["containers"][dead]["status"] == "exited"
    assert summary["reasons"][0].startswith("harness: device dev-1 (container " + dead)
    assert one_headline(run_dir) == ("INVALID", summary["reasons"][0])
    assert summary["device_counters"]["missing"] == [dead]          # killed: no --stats counters
    out = pd.read_csv(run_dir / "ge" / "ge-0.csv")
    assert len(out) == summary["counts"]["ge-0"]["trace_lines"]
    after = out[(out["device_id"] == 1) & (out["intended_us"] > killed_at_us + 500_000)]
    assert len(after) > 20 and (after["status"] == "timeout").all()
    others = out[(out["device_id"] != 1)]
    assert (others["status"] == "ok").mean() > 0.99
    _gone(run_objects, run_id, 1)


def test_restarted_device_makes_the_run_invalid_naming_it(live_run, docker_client, spec_file, make_spec,
                                                         tmp_path, run_objects):
    """`docker restart` of a device mid-measurement (issue W2 5/5): it answers
    again within a second or two, but its state and counters began anew, so
    the run is invalid and the harness check names it (before: VALID)."""
    live = live_run(spec_file(make_spec(count=3, measure="10s", name="restart", rit="exp:50ms")),
                   tmp_path / "res")
    run_id, _ = _into_measurement(live, tmp_path / "res", 3)
    name = f"wb-{run_id[-6:]}-dev-2"
    docker_client.containers.get(name).restart(timeout=1)
    assert live.finish(timeout=120) == 0, "\n".join(live.lines)
    run_dir = tmp_path / "res" / run_id
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["verdict"] == "invalid"
    assert summary["reasons"][0].startswith(f"harness: device dev-2 (container {name}) was restarted during the test")
    observed = json.loads((run_dir / "observed.json").read_text())["containers"]
    assert observed[name]["status"] == "running" and observed[name]["started_at"]
    if os.getuid() == 0:        # the GEs ran unprivileged (issue W2 5/5): their outputs are uid 65534's
        outputs = (("ge", "ge-0.csv"), ("cd", "cd-ge.summary.json"))
        assert {(run_dir / d / f).stat().st_uid for d, f in outputs} == {65534}
    assert all("restarted" not in r or "dev-2" in r for r in summary["reasons"])
    _gone(run_objects, run_id, 1)


def test_device_cut_off_the_network_is_named(live_run, docker_client, spec_file, make_spec, tmp_path,
                                              run_objects, one_headline):
    """`docker network disconnect` of a device mid-measurement (issue W2 5/5:
    the run was invalid only as "13% timeouts"): the harness check names
    the device and its lost address, and the errors check names the device
    whose requests timed out."""
    live = live_run(spec_file(make_spec(count=3, measure="10s", name="cutoff", rit="exp:50ms")),
                   tmp_path / "res")
    run_id, _ = _into_measurement(live, tmp_path / "res", 3)
    ct = docker_client.containers.get(f"wb-{run_id[-6:]}-dev-1")
    (net, info), = ct.attrs["NetworkSettings"]["Networks"].items()
    docker_client.networks.get(net).disconnect(ct)
    assert live.finish(timeout=120) == 0, "\n".join(live.lines)
    run_dir = tmp_path / "res" / run_id
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["verdict"] == "invalid"
    assert summary["reasons"][0] == (
        f"harness: device dev-1 (container {ct.name}) was cut off the network during the test: its address "
        f"{info['IPAddress']} was no longer attached at the end (it had no network left)")
    assert one_headline(run_dir) == ("INVALID", summary["reasons"][0])
    errors = next(r for r in summary["reasons"] if r.startswith("errors: "))
    assert "failed requests by device: device 1 " in errors, errors
    _gone(run_objects, run_id, 1)


def test_bad_spec_exits_2_with_one_line_and_creates_nothing(docker_client, spec_file, make_spec,
                                                            tmp_path, wotbench_cli):
    before = {c.id for c in docker_client.containers.list(all=True, filters={"label": LABEL_RUN})}
    spec = spec_file(make_spec().replace("mode: sleep", "mode: dozing"))
    r = wotbench_cli("run", str(spec), "--results", str(tmp_path / "res"))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:")
    assert "devices[0].mode" in lines[0]
    assert not (tmp_path / "res").exists()
    after = {c.id for c in docker_client.containers.list(all=True, filters={"label": LABEL_RUN})}
    assert after == before


def test_clean_removes_only_labelled_leftovers(docker_client, wotbench_cli):
    run_id = f"crashed-{os.getpid()}"
    labels = {LABEL_RUN: run_id}
    net = docker_client.networks.create(f"wb-clean-{os.getpid()}", internal=True, labels=labels)
    kept = docker_client.containers.run(IMAGES["nettools"], ["sleep", "60"], detach=True,
                                        network_mode="none", labels={"test": "unlabelled"})
    try:
        docker_client.containers.run(IMAGES["nettools"], ["sleep", "60"], detach=True,
                                     network=net.name, labels=labels)
        r = wotbench_cli("clean", "--run", run_id)
        assert r.returncode == 0, r.stderr
        assert "removed 1 container(s) and 1 network(s)" in r.stdout
        assert not docker_client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={run_id}"})
        assert not docker_client.networks.list(filters={"label": f"{LABEL_RUN}={run_id}"})
        kept.reload()
        assert kept.status == "running"
    finally:
        kept.remove(force=True)


def test_delay_without_netem_is_refused_before_anything_starts(docker_client, spec_file, make_spec,
                                                               tmp_path, wotbench_cli):
    from wotbench.engine import netimpair as impair

    if impair.netem_available(docker_client, "test"):
        pytest.skip("this kernel has netem: delay is supported here")
    spec = spec_file(make_spec(group_extra="impairment: {loss: 1%, delay: 10ms}\n"))
    r = wotbench_cli("run", str(spec), "--results", str(tmp_path / "res"))
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:10: devices[0].impairment: ")
    assert "netem" in lines[0]
    assert not (tmp_path / "res").exists()
    assert not docker_client.containers.list(all=True, filters={"label": LABEL_RUN + "=preflight"})


def test_congestion_control_under_loss_is_a_result_not_a_failure(docker_client, spec_file, make_spec, tmp_path,
                                                                  wotbench_cli, run_objects):
    """gateway.congestion and gateway.nstart reach the workload GE (not the
    CD-GE), its RTO log lands in the run folder and feeds the report's
    congestion part, and 20 % loss makes retransmissions and waits for
    NSTART, which the verdict counts as results, not testbed failures."""
    text = make_spec(count=3, measure="8s", name="cc", group_extra="impairment: {loss: 20%}\n")
    text = text.replace("max_retransmit: 2}", "max_retransmit: 2, congestion: cocoa, nstart: 1}")
    assert "congestion: cocoa" in text
    r = wotbench_cli("run", str(spec_file(text)), "--results", str(tmp_path / "res"), "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr
    run_dir = Path(r.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["congestion"] == {"strategy": "cocoa", "nstart": 1, "probing_rate_bytes_per_s": None,
                                      "ack_random_factor": 1.5, "applies_to": "workload GEs (not the CD-GE)",
                                      "rto_out": ["ge/rto-0.csv"]}
    ge = json.loads((run_dir / "ge" / "ge-0.summary.json").read_text())
    cd = json.loads((run_dir / "cd" / "cd-ge.summary.json").read_text())
    assert (ge["congestion"]["strategy"], ge["congestion"]["nstart"]) == ("cocoa", 1)
    assert (cd["congestion"]["strategy"], cd["congestion"]["nstart"]) == ("rfc7252", None)
    assert ge["retransmissions"] > 0
    rto = pd.read_csv(run_dir / "ge" / "rto-0.csv")
    assert len(rto) > 0 and {"send", "sample"} <= set(rto["event"])
    assert (rto.loc[rto["event"] == "send", "tx"] > 0).any()          # retransmissions logged too
    summary = json.loads((run_dir / "summary.json").read_text())
    c = summary["congestion"]
    assert c["strategy"] == "cocoa" and c["nstart"] == 1 and c["complete"], c.get("problems")
    assert c["retransmissions"] > 0 and c["transmissions_per_request"] > 1 and c["rto"]["peers"] == 3
    checks = {x["check"]: x for x in summary["checks"]}
    for name in ("errors", "rate", "rit_integrity", "send_lag", "ge_counters", "harness", "output"):
        assert checks[name]["ok"], (name, checks[name]["reason"], summary["reasons"])
    rep = wotbench_cli("report", str(run_dir), timeout=120)
    assert rep.returncode == 0, rep.stderr
    assert "Congestion control" in rep.stdout and "Strategy cocoa, NSTART 1" in rep.stdout
    assert (run_dir / "report" / "figures" / "rto.png").is_file()
    _gone(run_objects, run_dir.name, 1)


def test_devices_spread_over_several_networks(docker_client, spec_file, make_spec, tmp_path,
                                              monkeypatch, run_objects):
    """Past a bridge's port limit the run uses several networks; the GE is on all of them."""
    from wotbench import spec
    from wotbench.engine import _docker
    from wotbench.execution import runner

    monkeypatch.setattr(_docker, "NET_CAPACITY", 11)          # 3 nodes per network
    runs = spec.load(spec_file(make_spec(count=5, measure="3s", name="nets")))
    [run_dir] = runner.run_spec(runs, runner.RunOptions(results_root=tmp_path, progress=False))
    hosts = pd.read_csv(run_dir / "ge" / "hosts.csv")
    subnets = {a.rsplit(".", 1)[0] for a in hosts["address"]}
    assert len(hosts) == 6 and len(subnets) == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    c = summary["counts"]["ge-0"]
    assert c["rows"] == c["trace_lines"] and c.get("ok", 0) == c["rows"]
    assert summary["counts"]["cd-ge"].get("ok", 0) == summary["counts"]["cd-ge"]["rows"] > 0
    _gone(run_objects, run_dir.name, 1)


def test_clean_leaves_runs_of_live_harnesses_alone(docker_client):
    import socket

    from wotbench.engine import dockerenv

    host = socket.gethostname()
    live, dead = f"owned-{os.getpid()}", f"orphan-{os.getpid()}"
    try:
        for run_id, owner in ((live, f"{host}:{os.getpid()}"), (dead, f"{host}:4194999")):
            docker_client.containers.create(IMAGES["nettools"], ["true"], labels={
                LABEL_RUN: run_id, dockerenv.LABEL_OWNER: owner})
        runs = dockerenv.live_runs(docker_client)
        assert live in runs and dead not in runs
        assert dockerenv.remove_labelled(docker_client, dead, keep=runs)[0] == 1
        assert dockerenv.remove_labelled(docker_client, live, keep=runs)[0] == 0   # kept
    finally:
        dockerenv.remove_labelled(docker_client, live)
        dockerenv.remove_labelled(docker_client, dead)


def test_owner_label_parsing():
    import socket

    from wotbench.engine.dockerenv import owner_alive

    assert owner_alive(f"{socket.gethostname()}:{os.getpid()}")
    assert not owner_alive(f"{socket.gethostname()}:4194999")
    assert not owner_alive(f"elsewhere:{os.getpid()}") and not owner_alive(None)


def test_killed_ge_run_is_reported_invalid_with_its_partial_output(live_run, docker_client, spec_file, make_spec,
                                                                   tmp_path, run_objects, one_headline):
    """A GE killed mid-measurement (issue W2 5/5: `report` exited 2 with "no
    GE output" and ge-0.csv.tmp.<pid> stayed behind): the run is invalid
    naming it, its output so far is kept as ge-0.csv.partial with its rows
    counted, and `wotbench report` renders the invalid run (exit 0)."""
    live = live_run(spec_file(make_spec(count=2, measure="12s", name="killge", rit="exp:20ms")),
                   tmp_path / "res")
    run_id, _ = _into_measurement(live, tmp_path / "res", 4)
    docker_client.containers.get(f"wb-{run_id[-6:]}-ge-0").kill()
    assert live.finish(timeout=120) == 0, "\n".join(live.lines)
    run_dir = tmp_path / "res" / run_id
    assert not list((run_dir / "ge").glob("*.tmp.*"))
    partial = run_dir / "ge" / "ge-0.csv.partial"
    rows = len(pd.read_csv(partial))
    assert rows > 0
    observed = json.loads((run_dir / "observed.json").read_text())
    # Its per-exchange RTO log (--rto-out) is kept as partial too, with its rows counted.
    assert observed["partial"]["ge-0.csv.partial"] == rows and set(observed["partial"]) == {"ge-0.csv.partial",
                                                                                           "rto-0.csv.partial"}
    assert observed["partial"]["rto-0.csv.partial"] == len(pd.read_csv(run_dir / "ge" / "rto-0.csv.partial"))
    verdict, first = one_headline(run_dir)
    assert verdict == "INVALID" and first is not None and "ge-0" in first
    summary = json.loads((run_dir / "summary.json").read_text())
    assert any(f"ge-0.csv.partial: the output written before it was killed ({rows} rows" in r
               for r in summary["reasons"]), summary["reasons"]
    _gone(run_objects, run_id, 1)
