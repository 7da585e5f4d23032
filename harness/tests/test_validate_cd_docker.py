"""`wotbench validate-cd` end to end on Docker: one injected and one quiet
trial at the ci scale. Structure only: one trial on a noisy host is no
statistical claim, so whether the detector caught the hog is not asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from wotbench.base import rundir as layout
from wotbench.studies import validate_cd as vcd
from wotbench.studies import vcd_trial

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.docker
@pytest.mark.slow
def test_validate_cd_one_trial_each(docker_client, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "validate-cd",
                           str(REPO / "experiments" / "validate-cd.yaml"), "--scale", "ci", "--trials", "1",
                           "--quiet", "1", "--classes", "cpu2-20s", "--results", str(tmp_path), "--no-progress"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = Path(proc.stdout.strip().splitlines()[-1])
    doc = json.loads((out / "validation.json").read_text())
    assert doc["complete"] and doc["scale"] == "ci" and sorted(doc["planned"]) == ["cpu2-20s", "quiet-busy"]
    assert (out / "roc.png").read_bytes()[:4] == b"\x89PNG"
    md = (out / "validation.md").read_text()
    assert "| cpu2-20s | 1 |" in md and "| quiet-busy | 1 |" in md
    by = {t["cls"]: t for t in doc["trials"]}
    inj, quiet = by["cpu2-20s"], by["quiet-busy"]
    for t in (inj, quiet):
        assert t["status"] in ("contention", "none", "inconclusive"), t
        assert (out / t["run_dir"] / layout.SUMMARY).is_file()
    # The truth is the hog's observed interval from the run's interference.json.
    hogs = json.loads((out / inj["run_dir"] / layout.INTERFERENCE).read_text())
    assert inj["injected_observed"] and inj["injected_start_us"] == min(h["start_us"] for h in hogs)
    assert inj["injected_end_us"] == max(h["end_us"] for h in hogs)
    assert quiet["injected_start_us"] is None
    # The devices' own distortion: the injected trial against the one quiet trial of its mode.
    assert inj["mode"] == quiet["mode"] == "busy" and inj["distortion"]["quiet_trials"] == 1
    assert not (out / quiet["run_dir"] / layout.INTERFERENCE).exists() or \
        json.loads((out / quiet["run_dir"] / layout.INTERFERENCE).read_text()) == []
    # A trace each (seeds: per-trial): trial i replays the first seed + i - 1, as its run's spec says.
    assert doc["seeds"] == "per-trial" and isinstance(doc["seed_base"], int)
    for t in (inj, quiet):
        assert t["seed"] == doc["seed_base"] + t["index"] - 1
        assert yaml.safe_load((out / t["run_dir"] / layout.SPEC).read_text())["workload"]["seed"] == t["seed"]
    if inj["detected"]:
        assert inj["onset_error_us"] == inj["onset_us"] - inj["injected_start_us"]
    # Each trial's record holds what its run folder gives the analysis.
    for t in (inj, quiet):
        rec, run = vcd_trial.read_record(out / t["record"]), vcd_trial.trial_data(out / t["run_dir"])
        assert rec.cd is not None and run.cd is not None and rec.cd.t_us.size > 0
        assert np.array_equal(rec.cd.rd, run.cd.rd, equal_nan=True) and np.array_equal(rec.rs.rs_us, run.rs.rs_us)
        assert (rec.injected, rec.verdict, rec.mode, rec.seed) == (run.injected, run.verdict, run.mode, run.seed)
    # Reanalysis runs nothing and recomputes the same table.
    before = {(t["index"], t["status"], t["onset_us"]) for t in doc["trials"]}
    vcd.reanalyze(out)
    after = json.loads((out / "validation.json").read_text())
    assert {(t["index"], t["status"], t["onset_us"]) for t in after["trials"]} == before
