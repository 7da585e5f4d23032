"""One owner of the verdict: the harness writes summary.json from the
records of the run folder with reporting's checks, and `wotbench report`
shows the same verdict and first reason in the terminal, summary.md and
index.html. Synthetic run folders, no Docker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wotbench.base.rundir import RunDir
from wotbench.execution.phases import write_summary
from wotbench.reporting.bench.synth import SynthSpec, synth_run

BASE = dict(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0, cooldown_s=1.0, calibration_s=15.0)
FACTS = {"run_id": "20260101-000000-synth-abcdef", "label": "", "scale": "full", "cores_shared": False,
         "notes": []}


def _run(tmp_path: Path, name: str, **kw) -> Path:
    return synth_run(tmp_path / name, SynthSpec(**{**BASE, **kw}))


def _observe(run: Path, edit) -> None:
    path = RunDir(run).observed
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def test_a_valid_run_says_valid_everywhere(tmp_path, one_headline):
    run = _run(tmp_path, "valid")
    summary = write_summary(RunDir(run), FACTS)
    assert summary["verdict"] == "valid" and summary["reasons"] == []
    assert json.loads(RunDir(run).summary.read_text()) == summary
    assert one_headline(run) == ("VALID", None)


def test_a_device_that_died_is_the_first_reason_everywhere(tmp_path, one_headline):
    """What the harness observed (a device container exited mid-run) decides
    the verdict through reporting's harness check, in all four outputs."""
    run = _run(tmp_path, "died")

    def died(doc: dict[str, Any]) -> None:
        doc["containers"]["wb-synth-dev-1"].update(status="exited", exit_code=137, oom_killed=False)

    _observe(run, died)
    summary = write_summary(RunDir(run), FACTS)
    assert summary["verdict"] == "invalid"
    assert summary["reasons"][0] == ("harness: device dev-1 (container wb-synth-dev-1) was not running at the "
                                     "end of the test (status exited, exit code 137)")
    assert summary["containers"]["nodes_not_running_at_end"] == ["wb-synth-dev-1"]
    assert summary["counts"]["ge-0"]["rows"] == summary["counts"]["ge-0"]["trace_lines"]
    assert one_headline(run) == ("INVALID", summary["reasons"][0])


@pytest.mark.parametrize("kw, first", [
    ({"overload_rate": 0.002}, "overload: "),
    ({"send_errors": 1}, "ge_counters: GE 0: 1 send errors"),
])
def test_device_and_ge_counters_decide_the_same_way_everywhere(tmp_path, one_headline, kw, first):
    run = _run(tmp_path, "counters", **kw)
    summary = write_summary(RunDir(run), FACTS)
    assert summary["verdict"] == "invalid" and summary["reasons"][0].startswith(first), summary["reasons"]
    assert one_headline(run) == ("INVALID", summary["reasons"][0])
