"""`wotbench validate-cd`: the spec section, the trial order, the statistics
(Wilson intervals, onset error, ROC from synthetic trial records), the
reanalysis of stored trial runs (synthetic run folders) and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from wotbench.base import rundir as layout
from wotbench.reporting.bench.synth import SynthSpec, synth_run
from wotbench.spec import UserError, trial_specs
from wotbench.studies import validate_cd as vcd

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "experiments" / "validate-cd.yaml"


def trial(i: int, cls: str, status: str, onset_s: float | None = None, start_s: float | None = None,
          window_s: float = 5.0) -> vcd.Trial:
    return vcd.Trial(i, cls, f"trials/r{i}", status, "", "valid", None if start_s is None else start_s * 1e6,
                     None if start_s is None else (start_s + 20) * 1e6, start_s is not None,
                     None if onset_s is None else onset_s * 1e6, window_s * 1e6)


def test_wilson_interval_known_values():
    lo, hi = vcd.wilson(20, 20)
    assert lo == pytest.approx(0.8389, abs=1e-4) and hi == 1.0
    lo, hi = vcd.wilson(1, 20)
    assert lo == pytest.approx(0.0089, abs=1e-4) and hi == pytest.approx(0.2361, abs=1e-4)
    assert vcd.wilson(0, 0) == (0.0, 1.0)


def test_onset_error_and_within_one_window():
    t = trial(1, "cpu", "contention", onset_s=13.0, start_s=12.0)
    assert t.onset_error_us == pytest.approx(1e6) and t.onset_ok
    late = trial(2, "cpu", "contention", onset_s=18.5, start_s=12.0)
    assert late.onset_error_us == pytest.approx(6.5e6) and not late.onset_ok
    missed = trial(3, "cpu", "none", start_s=12.0)
    assert missed.onset_error_us is None and not missed.onset_ok and not missed.detected


def test_class_stats_counts_detections_onsets_false_alarms_and_leaves_failed_runs_out():
    trials = [trial(1, "cpu", "contention", 12.5, 12.0), trial(2, "cpu", "contention", 30.0, 12.0),
              trial(3, "cpu", "inconclusive", None, 12.0), trial(4, "cpu", "failed"),
              trial(5, vcd.QUIET, "none"), trial(6, vcd.QUIET, "contention", 20.0)]
    s = vcd.class_stats(trials, "cpu")
    assert (s.n, s.failed, s.alarms, s.onset_ok, s.inconclusive) == (3, 1, 2, 1, 1)
    assert s.rate == pytest.approx(2 / 3) and s.rate_ci == vcd.wilson(2, 3)
    assert s.onset_error_median_s == pytest.approx(9.25) and s.onset_error_max_abs_s == pytest.approx(18.0)
    q = vcd.class_stats(trials, vcd.QUIET)
    assert (q.n, q.alarms, q.rate) == (2, 1, 0.5)


def test_roc_points_from_synthetic_trial_records():
    sweep = {0.01: [("cpu", True), ("cpu", False), (vcd.QUIET, False), (vcd.QUIET, False)],
             0.5: [("cpu", True), ("cpu", True), (vcd.QUIET, True), (vcd.QUIET, False)]}
    pts = vcd.roc_points(sweep)
    assert [p["alpha"] for p in pts] == [0.01, 0.5]
    assert pts[0]["fa_rate"] == 0.0 and pts[0]["detection"] == {"cpu": 0.5}
    assert pts[1]["fa_rate"] == 0.5 and pts[1]["detection"] == {"cpu": 1.0}
    assert vcd.roc_png(pts)[:4] == b"\x89PNG"


def test_schedule_interleaves_quiet_trials():
    order = vcd.schedule(["a", "b"], 3, 3)
    assert sorted(order) == sorted(["a", "b"] * 3 + [vcd.QUIET] * 3)
    assert order == [vcd.QUIET, "a", "b"] * 3
    assert vcd.schedule(["a", "b"], 4, 2) == ["a", "b", vcd.QUIET, "a", "b", "a", "b", vcd.QUIET, "a", "b"]
    assert vcd.schedule(["a"], 0, 2) == [vcd.QUIET, vcd.QUIET]


def test_the_shipped_spec_has_the_classes_and_scales():
    vs, specs = trial_specs(SPEC, "ci")
    assert [c.name for c in vs.classes] == ["cpu2-20s", "cpu1-20s", "membw1-20s", "cpu2-10s"]
    assert specs[vcd.QUIET].spec.interference == ()
    hog = specs["cpu2-20s"].spec.interference[0]
    assert (hog.kind, hog.threads, hog.cores, hog.start_us, hog.end_us) == ("cpu", 2, "devices", 3e6, 23e6)
    assert specs["cpu2-10s"].spec.interference[0].end_us == 13e6
    assert {g.mode for g in specs[vcd.QUIET].spec.groups} == {"busy"}
    assert specs[vcd.QUIET].spec.cd.rit_us == 100_000
    assert "validate_cd" not in specs[vcd.QUIET].doc
    vs, specs = trial_specs(SPEC, "ci", ["cpu2-20s"])
    assert [c.name for c in vs.classes] == ["cpu2-20s"]


def _with(tmp_path: Path, edit) -> Path:
    doc = yaml.safe_load(SPEC.read_text())
    edit(doc)
    p = tmp_path / "v.yaml"
    p.write_text(yaml.safe_dump(doc, sort_keys=False))
    return p


@pytest.mark.parametrize("edit, field", [
    (lambda d: d.pop("validate_cd"), "validate_cd"),
    (lambda d: d["validate_cd"].update(classes=[]), "validate_cd.classes"),
    (lambda d: d["validate_cd"].update(trials=-1), "validate_cd.trials"),
    (lambda d: d["validate_cd"]["classes"][1].update(name="quiet"), "validate_cd.classes[1].name"),
    (lambda d: d["validate_cd"]["classes"][0].update(interference=[{"kind": "gpu"}]),
     "interference[0].kind"),
    (lambda d: d["validate_cd"]["classes"][0].update(bogus=1), "validate_cd.classes[0].bogus"),
])
def test_bad_section_names_file_line_and_field(tmp_path, edit, field):
    with pytest.raises(UserError) as ei:
        trial_specs(_with(tmp_path, edit), "ci")
    msg = str(ei.value)
    assert msg.startswith(f"{tmp_path / 'v.yaml'}:") and f" {field}: " in msg and "\n" not in msg


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    from wotbench.commands.main import main

    bad = _with(tmp_path, lambda d: d["validate_cd"].update(classes="cpu"))
    for args in ([str(bad)], [str(SPEC), "--classes", "nope"], ["--reanalyze", str(tmp_path)], [],
                 [str(SPEC), "--trials", "-3"]):
        rc = main(["validate-cd", *args])                  # in-process: the exit status main returns
        out, err = capsys.readouterr()
        assert rc == 2, (args, err)
        assert out == "" and len(err.strip().splitlines()) >= 1
        if "--trials" not in args:
            assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err


def _fake_trial(root: Path, name: str, contention_from_s: float | None) -> Path:
    """A finished trial run folder (synthetic data, cd.rit 100 ms) with its
    spec.yaml and, with contention, the interference.json the harness writes."""
    run = synth_run(root / name, SynthSpec(devices=2, measure_s=40.0, warmup_s=2.0, calibration_s=10.0,
                                           cd_rit_s=0.1, contention_from_s=contention_from_s))
    shutil.copy(SPEC, run / layout.SPEC)
    doc = yaml.safe_load((run / layout.SPEC).read_text())
    doc.pop("validate_cd")
    doc.pop("scales")
    (run / layout.SPEC).write_text(yaml.safe_dump(doc))
    (run / layout.SUMMARY).write_text(json.dumps({"verdict": "valid"}))
    if contention_from_s is not None:
        start = contention_from_s * 1e6
        (run / layout.INTERFERENCE).write_text(json.dumps([
            {"name": "hog", "kind": "cpu", "threads": 2, "cores": [0], "node": None,
             "planned_start_us": start - 3e5, "planned_end_us": start + 20e6,
             "start_us": start, "end_us": start + 20e6}]))
    return run


def test_reanalyze_recomputes_from_stored_runs(tmp_path):
    out = tmp_path / "v"
    runs = [("cpu2-20s", _fake_trial(out / "trials", "a", 12.0)), (vcd.QUIET, _fake_trial(out / "trials", "b", None))]
    doc = {"spec": "x.yaml", "scale": "ci", "started_epoch_s": 0.0, "planned": ["cpu2-20s", vcd.QUIET],
           "trials": [{"index": i, "cls": c, "run_dir": str(r.relative_to(out)), "status": "?"}
                      for i, (c, r) in enumerate(runs, 1)]}
    (out / "validation.json").write_text(json.dumps(doc))
    vcd.reanalyze(out)
    v = json.loads((out / "validation.json").read_text())
    assert v["complete"] and (out / "roc.png").read_bytes()[:4] == b"\x89PNG"
    inj, quiet = v["trials"]
    assert inj["injected_start_us"] == 12e6 and inj["injected_observed"] and inj["status"] == "contention"
    assert inj["onset_within_window"] and quiet["status"] == "none" and quiet["injected_start_us"] is None
    assert {c["cls"] for c in v["classes"]} == {"cpu2-20s", vcd.QUIET}
    assert [p["alpha"] for p in v["roc"]] == list(vcd.ALPHAS)
    md = (out / "validation.md").read_text()
    assert "| cpu2-20s | 1 | 100 % |" in md and "| quiet | 1 | 0 % |" in md
