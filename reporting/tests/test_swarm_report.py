"""A run across a swarm (docs/run-layout.md, "Runs across a swarm"): a
contention verdict per host that names the host that failed, a lost node
or an unanswered probe makes the run invalid, the cross-host latency per
host, the per-host monitor and placement; single-host runs as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import wotbench
from wotbench.base.rundir import RunDir
from wotbench.commands.main import main
from wotbench.reporting import Thresholds, analyze_run, summarize_run
from wotbench.reporting._tables import hosts_table
from wotbench.reporting.bench.synth import SwarmSynth


def check(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["check"] == name)


def edit_observed(run: Path, edit) -> None:
    path = RunDir(run).observed
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def test_quiet_swarm_run_is_valid_with_one_section_per_host(make_swarm):
    r = analyze_run(make_swarm())
    assert r["verdict"] == "valid", r["reasons"]
    json.dumps(r, allow_nan=False)
    assert r["swarm"] is True and set(r["hosts"]) == {"node-a", "node-b"}
    for h, s in r["hosts"].items():
        assert s["device_host"] and s["cd"]["contention"]["status"] == "none", h
        assert s["monitor"]["covers_measure"] and s["cross_host"]["probe"]["ok"] == 50
    assert r["hosts"]["node-a"]["ge_node"] and r["hosts"]["node-a"]["clock"]["offset_us"] == 0
    assert r["hosts"]["node-b"]["clock"] == {"offset_us": -350.0, "uncertainty_us": 80.0,
                                             "how": "engine SystemTime at the midpoint of the call"}
    assert r["hosts"]["node-b"]["device_ids"] == [1, 3] and r["hosts"]["node-b"]["roles"] == ["CD pair", "2 devices"]
    assert {d["device_id"]: d["host"] for d in r["devices"]} == {0: "node-a", 1: "node-b", 2: "node-a", 3: "node-b"}
    c = check(r, "contention")["reason"]
    assert "host node-a: no contention" in c and "host node-b (clock offset to the GE node -350 us ± 80 us)" in c
    assert "probe answered on every device host (node-a 50/50, node-b 50/50)" in check(r, "harness")["reason"]


@pytest.mark.parametrize("bad, good", [("node-b", "node-a"), ("node-a", "node-b")])
def test_contention_on_one_host_fails_the_run_naming_that_host_only(make_swarm, bad, good):
    r = analyze_run(make_swarm(sw=SwarmSynth(contention_host=bad), contention_from_s=22.0))
    assert r["verdict"] == "invalid"
    assert r["hosts"][bad]["cd"]["contention"]["status"] == "contention"
    assert r["hosts"][good]["cd"]["contention"]["status"] == "none"
    assert r["hosts"][bad]["cd"]["contention"]["onset_us"] == 22e6
    reason = next(x for x in r["reasons"] if x.startswith("contention"))
    assert reason.startswith(f"contention on host {bad}")
    assert good not in reason
    # A remote host's CD windows are its clock's, placed on t0: the reason says by which estimate.
    assert ("clock offset to the GE node -350 us ± 80 us" in reason) == (bad != "node-a")
    assert r["cd"]["host"] == bad            # the run-level CD section is the host that decides
    assert [x for x in r["reasons"] if not x.startswith("contention")] == []


def test_a_lost_node_makes_the_run_invalid_naming_it(make_swarm):
    r = analyze_run(make_swarm(sw=SwarmSynth(lost_node="node-b")))
    assert r["verdict"] == "invalid"
    assert r["reasons"][0].startswith("harness: node node-b lost mid-run: node down at t=20s: its engine "
                                      "stopped answering"), r["reasons"][0]
    assert "node-a lost" not in r["reasons"][0]
    assert r["hosts"]["node-b"]["node"] == {"state": "down", "lost": True,
                                            "reason": "node down at t=20s: its engine stopped answering"}


def test_the_records_alone_name_a_lost_node(make_swarm):
    """Data that cannot be analysed: the verdict of observed.json still names the node."""
    run = make_swarm(sw=SwarmSynth(lost_node="node-b"))
    (run / "ge" / "ge-0.csv").write_text("not,a,ge,file\n1,2,3,4\n")
    r = summarize_run(run)
    assert [c["check"] for c in r["checks"]] == ["harness", "analysis"]
    assert r["swarm"] is True and "node node-b lost mid-run" in r["reasons"][0]


def test_a_probe_without_answers_fails_naming_the_host(make_swarm):
    r = analyze_run(make_swarm(sw=SwarmSynth(failed_probe="node-b")))
    assert r["verdict"] == "invalid"
    assert r["reasons"] == ["harness: the probe of host node-b from the GE node got no answers "
                            "(50 requests, exit code 0)"]
    assert r["hosts"]["node-b"]["cross_host"]["extra_us"] is None


def test_a_device_host_without_a_probe_or_cd_data_is_named(make_swarm):
    run = make_swarm()
    shutil.rmtree(RunDir(run).host("node-b").root)            # the manifest still lists the node
    edit_observed(run, lambda o: o["probe"].pop("node-b"))
    r = analyze_run(run)
    assert "harness: no probe of host node-b (nodes/node-b/probe.csv)" in r["reasons"]
    assert ("contention: no CD data on host node-b (nodes/node-b/cd/cd-ge.csv): contention was not tested"
            in r["reasons"])
    assert "monitor: no monitor data on host node-b (nodes/node-b/monitor/host.csv)" in r["reasons"]
    relaxed = analyze_run(run, Thresholds(require_cd=False, require_monitor=False))
    # require_cd: false opts out of needing CD data, not of the CD output observed.json recorded.
    assert relaxed["reasons"] == ["harness: no probe of host node-b (nodes/node-b/probe.csv)",
                                  ("output: nodes/node-b/cd/cd-ge.csv is missing (observed.json recorded 58 rows "
                                   "of cd-ge-1)")]


def test_monitor_is_checked_per_host(make_swarm):
    run = make_swarm(sw=SwarmSynth(no_monitor="node-b"))
    r = analyze_run(run)
    assert r["reasons"] == ["monitor: no monitor data on host node-b (nodes/node-b/monitor/host.csv): "
                            "collectl is not installed there"]
    assert r["hosts"]["node-a"]["monitor"]["present"] and not r["hosts"]["node-b"]["monitor"]["present"]
    assert r["monitor"]["host"] == "node-a"
    # One bool (the harness's own host's, node-a here) says nothing about node-b.
    edit_observed(run, lambda o: o.update(collectl=False))
    assert analyze_run(run)["reasons"] == ["monitor: no monitor data on host node-b (nodes/node-b/monitor/host.csv)"]


def test_cross_host_latency_per_host_against_the_same_host_path(make_swarm):
    r = analyze_run(make_swarm(sw=SwarmSynth(cross_host_us=200.0)))
    b, a = r["hosts"]["node-b"]["cross_host"], r["hosts"]["node-a"]["cross_host"]
    assert b["service_from"] == "echoed" and b["service_us"] == 5000
    assert b["probe"]["r_minus_s_us"]["n"] == 50 and b["same_host_r_minus_s_us"]["n"] == 15
    # network 150 us + ~15 us of jitter on either path; the cross-host path adds 200 us.
    assert b["same_host_r_minus_s_us"]["p50"] == pytest.approx(165, abs=15)
    assert b["extra_us"] == pytest.approx(200, abs=15) and not b["same_path"]
    assert a["extra_us"] == pytest.approx(0, abs=15) and a["same_path"]
    assert b["probe"]["r_minus_s_us"]["p99"] >= b["probe"]["r_minus_s_us"]["p50"]


def test_a_path_faster_than_none_reads_as_noise(make_swarm):
    """The probe's median a little below the same host's (a path cannot be
    faster than no path): the extra latency is within its error of zero and
    the Hosts table says so, with the numbers."""
    r = analyze_run(make_swarm(sw=SwarmSynth(cross_host_us=-3.0)))
    b = r["hosts"]["node-b"]["cross_host"]
    assert b["extra_us"] < 0 and abs(b["extra_us"]) <= b["extra_err_us"]
    row = next(row for row in hosts_table(r)[1] if row[0] == "node-b")   # type: ignore[index]
    assert row[8].startswith("≈ 0 (-") and " µs ± " in row[8], row


def test_the_spec_gives_s_and_both_paths_use_the_same_one(make_swarm):
    run = make_swarm()
    (run / "spec.yaml").write_text("name: swarm\ndevices: [{count: 4, rit: exp:20ms, service: exp:5ms}]\n"
                                   "cd: {service: 4900us}\nphases: {measure: 40s}\n")
    b = analyze_run(run)["hosts"]["node-b"]["cross_host"]
    assert b["service_from"] == "spec" and b["service_us"] == 4900
    assert b["same_host_r_minus_s_us"]["p50"] == pytest.approx(265, abs=15)   # R - 4.9 ms
    assert b["extra_us"] == pytest.approx(200, abs=15)                       # S cancels out


def test_a_ge_node_without_devices_has_no_cd_pair_or_probe(make_swarm):
    sw = SwarmSynth(device_hosts=("node-b", "node-c"), ge_node="node-a")
    r = analyze_run(make_swarm(sw=sw, devices=6))
    assert r["verdict"] == "valid", r["reasons"]
    ge = r["hosts"]["node-a"]
    assert not ge["device_host"] and ge["cd"] is None and ge["cross_host"] is None and ge["monitor"]["present"]
    assert "node-a" not in check(r, "contention")["reason"]
    assert "(node-b 50/50, node-c 50/50)" in check(r, "harness")["reason"]
    assert not r["hosts"]["node-b"]["cross_host"]["same_path"]


def test_a_degraded_host_is_accepted_only_when_its_own_cd_rules_contention_out(make_swarm):
    quiet = analyze_run(make_swarm("quiet", degraded=True))
    p = check(quiet, "placement")
    assert p["ok"] and "placement of host node-b degraded" in p["reason"] and "accepted" in p["reason"]
    assert quiet["placement"]["degraded"] and quiet["placement"]["notes"][0].startswith("node-a: ")
    bad = analyze_run(make_swarm("bad", SwarmSynth(contention_host="node-b"), degraded=True,
                                 contention_from_s=22.0))
    p = check(bad, "placement")
    assert not p["ok"] and "node-b" in p["reason"] and "node-a" not in p["reason"]


def test_single_host_runs_have_no_hosts(make_run):
    r = analyze_run(make_run())
    assert r["swarm"] is False and r["hosts"] == {}
    assert "host" not in r["cd"] and "host" not in r["monitor"] and "host" not in r["devices"][0]
    assert check(r, "harness")["reason"].endswith("up before their start instant")
    assert wotbench.load_run(make_run("again")).hosts == {}


def test_load_run_gives_each_hosts_frames(make_swarm):
    run = wotbench.load_run(make_swarm())
    assert run.cd is None and run.monitor is None
    assert set(run.hosts) == {"node-a", "node-b"}
    b = run.hosts["node-b"]
    assert b.cd is not None and b.probe is not None and b.monitor is not None
    assert (b.cd["intended_us"] < 0).any() and len(b.probe) == 50 and "cpu0_idle" in b.monitor.columns


def test_reports_show_the_per_host_table(make_swarm, capsys):
    run = make_swarm(sw=SwarmSynth(contention_host="node-b"), contention_from_s=22.0)
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert "Hosts (a run across a swarm)" in out and "host node-b (clock offset" in out
    md = (run / "report" / "summary.md").read_text()
    assert "## Hosts" in md and "### host node-b (clock offset to the GE node -350 us ± 80 us)" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| node-b"))
    assert "CONTENTION" in row and "-350 us ± 80 us" in row and "+2" in row   # extra ~ +200 us
    page = (run / "report" / "index.html").read_text()
    assert '<h2 id="hosts">Hosts</h2>' in page and '<td class="fail">CONTENTION</td>' in page
    names = {p.stem for p in (run / "report" / "figures").glob("*.png")}
    assert {"cd-rd-node-a", "cd-rd-node-b", "cpu-node-a", "cpu-node-b", "devices", "timeline"} <= names
    assert not {"cd-rd", "cpu"} & names


def test_single_host_reports_have_no_hosts_table(make_run, capsys):
    run = make_run()
    assert main(["report", str(run)]) == 0
    assert "Hosts" not in capsys.readouterr().out
    assert "## Hosts" not in (run / "report" / "summary.md").read_text()
