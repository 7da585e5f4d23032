"""The checks of the harness's records: what the harness observed
(observed.json), the GEs' counters (late sends, send errors) and the
devices' (5.03 overload), each deciding the verdict in reporting alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wotbench.reporting import analyze_run, summarize_run
from wotbench.reporting._checks import CHECKS

#: A spec of one device; a test adds its ``validity`` line.
SPEC = "name: spec\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\nphases: {measure: 60s}\n"


def check(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["check"] == name)


def edit_json(path: Path, **changes) -> dict[str, Any]:
    doc = {**json.loads(path.read_text()), **changes}
    path.write_text(json.dumps(doc))
    return doc


def test_a_clean_run_passes_the_record_checks_and_the_harness_goes_first(make_run):
    r = analyze_run(make_run())
    assert CHECKS[0][0] == "harness"
    for name in ("harness", "ge_counters", "overload"):
        assert check(r, name)["ok"], check(r, name)
    assert r["harness"]["recorded"] and r["device_counters"]["files"] == 4
    assert r["thresholds"]["late_send_us"] == 1000 and r["thresholds"]["allow_overload"] is False


def test_ge_files_alone_fail_the_checks_whose_records_are_missing(make_run):
    """Missing records are missing evidence: each check that needs one fails
    naming it (issue 23), never passes by default."""
    r = analyze_run(make_run(records=False))
    h = check(r, "harness")
    assert not h["ok"] and "no observed.json" in h["reason"]
    assert r["verdict"] == "invalid"
    assert r["ges"][0]["counters"] is None
    assert not check(r, "ge_counters")["ok"] and "send errors are unknown" in check(r, "ge_counters")["reason"]
    assert not check(r, "output")["ok"] and "no trace for GE 0" in check(r, "output")["reason"]


@pytest.mark.parametrize("edit, words", [
    (lambda o: o["containers"]["wb-synth-dev-2"].update(status="exited", exit_code=137, oom_killed=True),
     ["device dev-2 (container wb-synth-dev-2) was not running", "exit code 137, OOM-killed"]),
    (lambda o: o["ges"]["ge-0"].update(exit_code=2), ["ge-0 exited with 2"]),
    (lambda o: o["ges"]["ge-0"].update(exit_code=None, killed=True), ["ge-0 was killed: it did not finish in time"]),
    (lambda o: o["ges"]["ge-0"].update(rows=o["ges"]["ge-0"]["rows"] - 5), ["output rows for"]),
    (lambda o: o["start"].update(late_us=250_000), ["not all up at their start instant (250 ms late"]),
    (lambda o: o["containers"]["wb-synth-dev-1"].update(address="172.30.0.11", addresses=[]),
     ["device dev-1 (container wb-synth-dev-1) was cut off the network during the test: its address "
      "172.30.0.11 was no longer attached at the end (it had no network left)"]),
])
def test_every_harness_observation_can_make_the_run_invalid(make_run, edit, words):
    run = make_run()
    observed = json.loads((run / "observed.json").read_text())
    edit(observed)
    (run / "observed.json").write_text(json.dumps(observed))
    r = analyze_run(run)
    assert r["verdict"] == "invalid"
    assert r["reasons"][0].startswith("harness: ")
    for w in words:
        assert w in r["reasons"][0], r["reasons"][0]


def test_overload_in_the_measurement_phase_is_invalid_unless_allowed(make_run):
    run = make_run(overload_rate=0.002, error_rate=0.0)
    r = analyze_run(run)
    o = check(r, "overload")
    n = sum(g["overloaded"] for g in r["ges"])
    assert n > 0 and not o["ok"]
    assert f"{n} requests answered 5.03" in o["reason"] and "GE output" in o["reason"]
    # The devices' whole-run totals are shown beside it, and cover more than the measurement phase.
    assert r["device_counters"]["totals"]["overflow"] >= n
    assert f"--stats, whole run: {r['device_counters']['totals']['overflow']} 5.03" in o["reason"]
    (run / "spec.yaml").write_text(SPEC + "validity: {allow_overload: true}\n")
    r = analyze_run(run)
    assert check(r, "overload")["ok"] and "accepted: allow_overload" in check(r, "overload")["reason"]


def test_overload_outside_the_measurement_phase_is_a_warning(make_run):
    run = make_run()
    stats = run / "devices" / "wb-synth-dev-1" / "stats.json"
    edit_json(stats, overflow=7)
    r = analyze_run(run)
    assert check(r, "overload")["ok"]
    assert any("7 requests 5.03 over the whole run (--stats), 0 of them in the measurement phase" in w
               for w in r["warnings"]), r["warnings"]
    stats.unlink()
    r = analyze_run(run)
    assert r["device_counters"]["missing"] == ["wb-synth-dev-1"]
    assert any("wrote no --stats counters" in w for w in r["warnings"])


def test_send_errors_and_late_sends_fail_the_ge_counters(make_run):
    r = analyze_run(make_run("errs", send_errors=3))
    g = check(r, "ge_counters")
    assert not g["ok"] and "GE 0: 3 send errors (max 0)" in g["reason"]
    run = make_run("late", devices=1, rit_us=300.0, ge_floor_us=450.0, measure_s=10.0, warmup_s=0.5,
                   cooldown_s=0.5)
    (run / "spec.yaml").write_text(SPEC + "validity: {min_measure: 5s}\n")
    g = check(analyze_run(run), "ge_counters")
    assert not g["ok"] and "later than 1ms (max 1.0%)" in g["reason"]
    (run / "spec.yaml").write_text(SPEC + "validity: {min_measure: 5s, max_late_sends: 100%}\n")
    assert check(analyze_run(run), "ge_counters")["ok"]


def test_malformed_datagrams_are_a_warning(make_run):
    run = make_run()
    edit_json(run / "ge" / "ge-0.summary.json", garbage={"truncated": 2, "unparseable": 1, "total": 5})
    r = analyze_run(run)
    assert any("GE 0 received 3 malformed datagrams" in w for w in r["warnings"])


def test_sends_without_a_kernel_stamp_are_a_warning(make_run):
    run = make_run()
    assert not any("send itself" in w for w in analyze_run(run)["warnings"])
    edit_json(run / "ge" / "ge-0.summary.json", tx_stamps_kernel=90, tx_stamps_fallback=10)
    r = analyze_run(run)
    assert any(w.startswith("GE 0: 10 of 100 sends carry the GE's own stamp") for w in r["warnings"]), r["warnings"]
    edit_json(run / "ge" / "ge-0.summary.json", tx_stamps_fallback=0)
    assert not any("send itself" in w for w in analyze_run(run)["warnings"])


def test_data_that_cannot_be_analysed_get_a_verdict_from_the_records(make_run):
    run = make_run()
    (run / "ge" / "ge-0.csv").write_text("not,a,ge,file\n1,2,3,4\n")
    r = summarize_run(run)
    assert r["verdict"] == "invalid"
    assert [c["check"] for c in r["checks"]] == ["harness", "analysis"]
    assert r["reasons"][-1].startswith("analysis: the run's data could not be analysed: ")
    assert "ge-0.csv:1: missing columns" in r["reasons"][-1]
    json.dumps(r, allow_nan=False)
    # The records still count: a dead device is the first reason.
    edit_json(run / "observed.json", start={"late_us": 5000})
    assert summarize_run(run)["reasons"][0].startswith("harness: the GE containers were not all up")
    assert summarize_run(make_run("fine")) == analyze_run(make_run("fine"))


def test_a_node_started_after_the_ges_were_up_counts_as_restarted():
    from wotbench.reporting._records import _restarted

    up = 1_795_560_000_000_000                       # GEs up at this epoch (us)
    nodes: dict[str, dict[str, Any]] = {
        "wb-x-dev-0": {"key": "dev-0", "role": "device", "started_at": "2026-11-24T21:00:00.000000001Z"},
        "wb-x-dev-1": {"key": "dev-1", "role": "device",
                       "started_at": pd.Timestamp(up * 1000 + 2_500_000_000, tz="UTC").isoformat()},
        "wb-x-dev-2": {"key": "dev-2", "role": "device", "started_at": "0001-01-01T00:00:00Z"},
        "wb-x-dev-3": {"key": "dev-3", "role": "device", "restarts": 1},
    }
    got = _restarted(nodes, up)
    assert [c["key"] for c in got] == ["dev-1", "dev-3"]
    assert [c["key"] for c in _restarted(nodes, None)] == ["dev-3"]      # no start record: only the count


def test_a_node_still_on_its_network_is_not_cut_off():
    from wotbench.reporting._records import _cut_off

    nodes: dict[str, dict[str, Any]] = {
        "a": {"key": "dev-0", "role": "device", "status": "running", "address": "10.0.0.2", "addresses": ["10.0.0.2"]},
        "b": {"key": "dev-1", "role": "device", "status": "running", "address": "10.0.0.3"},       # not recorded
        "c": {"key": "dev-2", "role": "device", "status": "exited", "address": "10.0.0.4", "addresses": []},
        "d": {"key": "dev-3", "role": "device", "status": "running", "address": "10.0.0.5",
              "addresses": ["10.9.0.5"]},
    }
    assert [(c["key"], c["addresses"]) for c in _cut_off(nodes)] == [("dev-3", ["10.9.0.5"])]
