"""Missing evidence is not evidence that all was well (issue 23): a valid
run, copied and damaged (rows cut, a record deleted, a field of the wrong
type, JSON nested 200,000 deep, a disturbed CD baseline), is INVALID with a
reason naming what is missing, and `wotbench report` still reports it
(exit 0) rather than a traceback. Counts are held against the trace, the GE
summary and observed.json, never against what survived. Synthetic runs,
no Docker."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir
from wotbench.reporting import analyze_run, summarize_run
from wotbench.reporting._load import MAX_JSON_DEPTH, read_json
from wotbench.reporting.bench.synth import SwarmSynth

REPO = Path(__file__).resolve().parents[2]


def check(r: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in r["checks"] if c["check"] == name)


def failed(r: dict[str, Any], name: str) -> str:
    """The reason of a check that must have failed, the run invalid."""
    c = check(r, name)
    assert r["verdict"] == "invalid" and not c["ok"], (name, c, r["reasons"])
    reason = c["reason"]
    assert isinstance(reason, str), c
    return reason


def _rewrite_rows(csv: Path, keep: Callable[[list[str]], list[str]]) -> int:
    lines = csv.read_text().splitlines(keepends=True)
    body = keep(lines[1:])
    csv.write_text(lines[0] + "".join(body))
    for cache in csv.parent.glob("*.parquet"):
        cache.unlink()
    return len(lines) - 1


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


@pytest.fixture
def run(make_run: Callable[..., Path]) -> Path:
    return make_run()


# --- the output against the trace, the GE summary and observed.json ----------------------

@pytest.mark.parametrize("how", ["cut", "every-second-row"])
def test_an_output_that_lost_rows_is_invalid_and_its_target_comes_from_the_trace(run, how):
    clean = analyze_run(run)
    assert clean["verdict"] == "valid", clean["reasons"]
    csv = RunDir(run).ge_csv(0)
    cut = (lambda rows: rows[:int(len(rows) * 250 / 347)]) if how == "cut" else (lambda rows: rows[::2])
    n = _rewrite_rows(csv, cut)
    r = analyze_run(run)
    kept = r["ges"][0]["evidence"]["rows"]
    assert kept < n
    reason = failed(r, "output")
    assert (f"ge/ge-0.csv holds {kept} rows, but workload/trace.csv has {n} lines, ge/ge-0.summary.json "
            f"counted {n} requests, observed.json recorded {n} rows: the output is incomplete or altered") in reason
    # The target is the trace's, as before the damage; the surviving rows set only the achieved rate.
    assert r["ges"][0]["target_rate"] == pytest.approx(clean["ges"][0]["target_rate"])
    assert r["ges"][0]["evidence"]["trace_in_measure"] == clean["ges"][0]["evidence"]["trace_in_measure"]
    assert "vs target" in failed(r, "rate")


def test_a_ge_output_observed_json_recorded_but_missing_is_named(make_run):
    run = make_run(devices=6, ges=2)
    RunDir(run).ge_csv(1).unlink()
    reason = failed(analyze_run(run), "output")
    assert "ge/ge-1.csv is missing (observed.json recorded" in reason


def test_a_cd_output_observed_json_recorded_but_missing_fails_even_when_cd_is_not_required(run):
    _edit_json(RunDir(run).observed, lambda o: o["ges"].update({"cd-ge": {"exit_code": 0, "rows": 77}}))
    RunDir(run).cd_csv.unlink()
    (run / "spec.yaml").write_text("name: x\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\n"
                                   "phases: {measure: 40s}\nvalidity: {require_cd: false}\n")
    r = analyze_run(run)
    assert "cd/cd-ge.csv is missing (observed.json recorded 77 rows of cd-ge)" in failed(r, "output")
    assert check(r, "contention")["ok"]
    assert "not required: validity.require_cd is false" in check(r, "contention")["reason"]


# --- each record deleted --------------------------------------------------------------------

@pytest.mark.parametrize("gone, name, words", [
    ("manifest.json", "placement", "placement unknown: no manifest.json"),
    ("observed.json", "harness", "no observed.json: what the harness saw"),
    ("observed.json", "output", "no observed.json to hold the output rows against"),
    ("devices", "overload", "4 device(s) ran to the end but wrote no --stats counters"),
    ("ge/ge-0.summary.json", "ge_counters", "GE 0: no summary (ge/ge-0.summary.json): its send errors are unknown"),
    ("ge/ge-0.summary.json", "output", "no summary of GE 0 (ge/ge-0.summary.json)"),
    ("workload/trace.csv", "output", "no trace for GE 0"),
    ("workload/trace.csv", "rate", "vs target unknown (no trace"),
    ("phases.json", "measurement", "no phases.json: the measurement phase is unknown"),
    ("cd/cd-ge.csv", "contention", "no CD data (cd/cd-ge.csv): contention was not tested"),
    ("monitor/host.csv", "monitor", "no monitor data (monitor/host.csv)"),
])
def test_each_record_deleted_fails_the_check_that_needs_it(run, gone, name, words):
    path = run / gone
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert words in failed(analyze_run(run), name)


def test_devices_and_observed_both_deleted_still_fail_on_the_stats(run):
    shutil.rmtree(run / "devices")
    (run / "observed.json").unlink()
    assert "4 devices answered in the GE output but only 0 device --stats files" in failed(analyze_run(run),
                                                                                          "overload")


# --- wrong types: INVALID naming the file and the field, never an AttributeError ------------------

@pytest.mark.parametrize("file, edit, name, words", [
    ("observed.json", lambda o: o.update(containers=list(o["containers"])), "harness",
     "observed.json: containers: expected an object or null, got a list"),
    ("observed.json", lambda o: o["ges"].update({"ge-0": "done"}), "harness",
     "observed.json: ges.ge-0: expected an object, got a string"),
    ("observed.json", lambda o: o["containers"]["wb-synth-dev-1"].update(restarts="2"), "harness",
     "containers.wb-synth-dev-1.restarts: expected an integer or null, got a string"),
    ("observed.json", lambda o: o.update(start=[]), "harness", "start: expected an object or null, got a list"),
    ("ge/ge-0.summary.json", lambda o: o.update(garbage=[1]), "ge_counters",
     "ge-0.summary.json: garbage: expected an object or null, got a list"),
    ("ge/ge-0.summary.json", lambda o: o.update(requests="many"), "output",
     "ge-0.summary.json: requests: expected an integer, got a string"),
    ("ge/ge-0.summary.json", lambda o: o.pop("requests"), "output", "ge-0.summary.json: requests: missing"),
    ("manifest.json", lambda o: o.update(placement=["degraded"]), "placement",
     "manifest.json: placement: expected an object or null, got a list"),
    ("manifest.json", lambda o: o["placement"].update(notes=5), "placement",
     "placement.notes: expected a list or null, got an integer"),
])
def test_wrong_types_are_invalid_naming_the_file_and_field(run, file, edit, name, words):
    _edit_json(run / file, edit)
    assert words in failed(analyze_run(run), name)


def test_a_damaged_device_stats_file_is_named(run):
    stats = RunDir(run).device_stats("wb-synth-dev-2")
    _edit_json(stats, lambda o: o.update(overflow="none"))
    assert "damaged device --stats" in failed(analyze_run(run), "overload")
    assert "overflow: expected an integer" in check(analyze_run(run), "overload")["reason"]


def test_the_report_of_a_damaged_record_exits_0_with_the_reason(run):
    """The one end-to-end test of `wotbench report` as a command (a fresh
    interpreter, its exit status and stderr); other tests call it in-process."""
    _edit_json(RunDir(run).observed, lambda o: o.update(containers=[]))
    r = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "report", str(run)], cwd=REPO,
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "INVALID" in r.stdout and "observed.json is damaged" in r.stdout


# --- bounded JSON: depth, size, not a regular file ---------------------------------------------

def test_json_nested_200000_deep_is_one_line_fast(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    t = time.monotonic()
    with pytest.raises(UserError, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
        read_json(deep)
    shallow_but_over = tmp_path / "65.json"
    shallow_but_over.write_text("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1))
    with pytest.raises(UserError, match="nested deeper"):
        read_json(shallow_but_over)
    assert time.monotonic() - t < 2


def test_json_that_is_a_fifo_or_too_big_is_refused_without_reading_it(tmp_path, monkeypatch):
    fifo = tmp_path / "observed.json"
    os.mkfifo(fifo)
    t = time.monotonic()
    with pytest.raises(UserError, match="not a regular file"):
        read_json(fifo)
    assert time.monotonic() - t < 1
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"x": "y" * 2000}))
    monkeypatch.setattr("wotbench.reporting._bounded.MAX_JSON_BYTES", 1000)
    with pytest.raises(UserError, match="larger than"):
        read_json(big)


def test_a_huge_integer_is_one_line(tmp_path):
    p = tmp_path / "n.json"
    p.write_text('{"requests": ' + "9" * 5000 + "}")
    with pytest.raises(UserError, match="invalid JSON"):
        read_json(p)


def test_observed_json_nested_deep_makes_the_run_invalid(run):
    RunDir(run).observed.write_text('{"containers": ' + "[" * 200_000 + "]" * 200_000 + "}")
    assert "observed.json: nested deeper than 64 levels" in failed(analyze_run(run), "harness")


def test_summary_json_nested_deep_is_a_note_and_the_report_stands(run, capsys, recwarn):
    from wotbench.commands.main import main

    RunDir(run).summary.write_text("[" * 200_000 + "]" * 200_000)
    rc = main(["report", str(run)])
    out, err = capsys.readouterr()
    assert rc == 0 and err == "", err
    hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
    assert [str(w.message) for w in recwarn if not issubclass(w.category, hidden)] == []   # stderr, in a process
    assert "summary.json cannot be read" in out and "nested deeper than 64 levels" in out
    assert "VALID" in out


# --- a disturbed CD baseline: the CD cannot judge ---------------------------------------------

def _freeze_cd(csv: Path, frm_us: float, to_us: float) -> None:
    """The CD node frozen over [frm, to): every request sent meanwhile is answered at ``to``."""
    c = pd.read_csv(csv, dtype={"code": str})
    hit = (c["sent_us"] >= frm_us) & (c["sent_us"] < to_us)
    c.loc[hit, "recv_us"] = to_us + (c.loc[hit, "recv_us"] - c.loc[hit, "sent_us"])
    c.loc[hit, "response_us"] = c.loc[hit, "recv_us"] - c.loc[hit, "sent_us"]
    c.loc[hit, "latency_intended_us"] = c.loc[hit, "recv_us"] - c.loc[hit, "intended_us"]
    c.to_csv(csv, index=False)
    for cache in csv.parent.glob("*.parquet"):
        cache.unlink()


def test_a_cd_node_frozen_through_the_calibration_leaves_the_cd_unable_to_judge(make_run):
    run = make_run(cd_rit_s=0.1)
    assert analyze_run(run)["cd"]["contention"]["status"] == "none"
    _freeze_cd(RunDir(run).cd_csv, -12e6, -6e6)         # 6 s of the 15 s calibration
    r = analyze_run(run)
    c = r["cd"]["contention"]
    assert c["status"] == "disturbed" and c["cusum"] is None
    reason = failed(r, "contention")
    assert reason.startswith("contention cannot be judged: the CD baseline is disturbed: calibration R_d median ")
    assert "q95 R - S" in reason and "beyond what the CD node's S 5 ms predicts" in reason
    # Nothing excuses it: not require_cd: false, and never a degraded placement.
    (run / "spec.yaml").write_text("name: x\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\n"
                                   "phases: {measure: 40s}\nvalidity: {require_cd: false}\n")
    assert "CD baseline is disturbed" in failed(analyze_run(run), "contention")


def test_unanswered_calibration_requests_disturb_the_baseline(make_run):
    run = make_run(cd_rit_s=0.1)
    csv = RunDir(run).cd_csv
    c = pd.read_csv(csv, dtype={"code": str})
    lost = (c["intended_us"] >= -10e6) & (c["intended_us"] < -8e6)
    for col in ("recv_us", "response_us", "latency_intended_us", "service_us", "code"):
        c[col] = c[col].where(~lost)
    c.loc[lost, "status"] = "timeout"
    c.to_csv(csv, index=False)
    for cache in csv.parent.glob("*.parquet"):
        cache.unlink()
    reason = failed(analyze_run(run), "contention")
    assert "20 of 150 calibration requests (13%) got no answer (at most 5%)" in reason


def test_a_quiet_baseline_is_not_disturbed_within_its_bounds(make_run):
    """A baseline a few ms above S on a small S passes (the 5 ms floor), as
    the quickstart's (q95 R - S 0.5 ms) does."""
    r = analyze_run(make_run(cd_rit_s=0.1, service_us=500.0, network_us=2000.0))
    assert r["cd"]["contention"]["status"] == "none", r["cd"]["contention"]["reason"]


def test_a_disturbed_baseline_on_one_host_of_a_swarm_is_named(make_swarm):
    run = make_swarm(sw=SwarmSynth(), cd_rit_s=0.1)
    _freeze_cd(RunDir(run).host("node-b").cd_csv, -12e6, -6e6)
    r = analyze_run(run)
    assert r["hosts"]["node-b"]["cd"]["contention"]["status"] == "disturbed"
    assert r["hosts"]["node-a"]["cd"]["contention"]["status"] == "none"
    reason = failed(r, "contention")
    assert "host node-b" in reason and "CD baseline is disturbed" in reason and "node-a" not in reason
    assert r["cd"]["host"] == "node-b"


def test_phases_json_far_beyond_the_outputs_is_refused_in_bounded_memory(run):
    """A measurement window of 11 days over a 43-s run: before, the per-ms
    bins of the window took 5 GB; now the window is checked against the GE
    outputs' intended sends first and the run is INVALID naming phases.json."""
    _edit_json(RunDir(run).phases, lambda p: p.update(measure=[1e12, 2e12]))
    with pytest.raises(UserError, match="phases.json: measure: .* reaches far beyond the GE outputs' intended sends"):
        analyze_run(run)
    r = summarize_run(run)
    assert r["verdict"] == "invalid" and "reaches far beyond" in failed(r, "analysis")
