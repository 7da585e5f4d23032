"""`wotbench validate-cd`: the spec section, the trial order, the statistics
(Wilson intervals, onset error, ROC from synthetic trial records), the
reanalysis of stored trial runs (synthetic run folders) and bad input."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from wotbench.base import rundir as layout
from wotbench.reporting.bench.synth import SynthSpec, synth_run
from wotbench.spec import UserError, trial_specs, with_seed
from wotbench.studies import validate_cd as vcd
from wotbench.studies import vcd_scan

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
    # One quiet class per devices' mode, each given --quiet trials.
    assert vcd.schedule(["a", "b"], 2, 2, ["quiet-busy", "quiet-sleep"]) == \
        ["quiet-busy", "quiet-sleep", "a", "b"] * 2


def test_the_shipped_spec_has_the_classes_and_scales():
    vs, specs = trial_specs(SPEC, "ci")
    assert [c.name for c in vs.classes] == ["cpu2-20s", "cpu2-20s-sleep", "cpu8-20s-sleep", "membw2-20s-sleep",
                                          "cpu1-20s", "membw1-20s", "cpu2-10s"]
    assert sorted(specs) == sorted([c.name for c in vs.classes] + ["quiet-busy", "quiet-sleep"])
    assert specs["quiet-busy"].spec.interference == ()
    hog = specs["cpu2-20s"].spec.interference[0]
    assert (hog.kind, hog.threads, hog.cores, hog.start_us, hog.end_us) == ("cpu", 2, "devices", 3e6, 23e6)
    assert specs["cpu2-10s"].spec.interference[0].end_us == 13e6
    assert {g.mode for g in specs["quiet-busy"].spec.groups} == {"busy"}
    assert {g.mode for g in specs["cpu2-20s"].spec.groups} == {"busy"}
    # A class's mode: its trials and its mode's quiet trials run every device group in it.
    assert {g.mode for g in specs["cpu2-20s-sleep"].spec.groups} == {"sleep"}
    assert {g.mode for g in specs["quiet-sleep"].spec.groups} == {"sleep"}
    assert specs["cpu2-20s-sleep"].spec.interference == specs["cpu2-20s"].spec.interference
    assert specs["quiet-sleep"].spec.interference == ()
    assert specs["quiet-busy"].spec.cd.rit_us == 100_000
    assert "validate_cd" not in specs["quiet-busy"].doc
    vs, specs = trial_specs(SPEC, "ci", ["cpu2-20s"])
    assert [c.name for c in vs.classes] == ["cpu2-20s"] and sorted(specs) == ["cpu2-20s", "quiet-busy"]
    vs, specs = trial_specs(SPEC, "ci", ["cpu2-20s-sleep"])
    assert sorted(specs) == ["cpu2-20s-sleep", "quiet-sleep"]
    assert vs.seeds == "per-trial"          # the shipped spec: a trace each, so no one trace's stretch is in all


def test_per_trial_seeds_change_the_trace_and_nothing_else(tmp_path):
    _, specs = trial_specs(SPEC, "ci")
    q = specs["quiet-busy"]
    s7 = with_seed(q, 7)
    assert q.spec.workload is not None and s7.spec.workload is not None
    assert s7.spec.workload.seed == 7 and q.spec.workload.seed == 1
    assert replace(s7.spec.workload, seed=1) == q.spec.workload and s7.spec.groups == q.spec.groups
    assert s7.spec.interference == q.spec.interference and s7.spec.cd == q.spec.cd
    # A spec without a workload section gets one holding the seed.
    bare = _with(tmp_path, lambda d: (d.pop("workload"), d["validate_cd"].pop("seeds")))
    vs, specs = trial_specs(bare, "ci")
    assert vs.seeds == "fixed" and "workload" not in specs["quiet-busy"].doc
    w = with_seed(specs["quiet-busy"], 5).spec.workload
    assert w is not None and w.seed == 5


def _with(tmp_path: Path, edit, name: str = "v.yaml") -> Path:
    doc = yaml.safe_load(SPEC.read_text())
    edit(doc)
    p = tmp_path / name
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
    (lambda d: d["validate_cd"]["classes"][1].update(mode="spin"), "validate_cd.classes[1].mode"),
    (lambda d: d["validate_cd"]["classes"][0].update(name="quiet-busy"), "validate_cd.classes[0].name"),
    (lambda d: d["validate_cd"].update(seeds="sometimes"), "validate_cd.seeds"),
    (lambda d: d["validate_cd"].update(seeds=3), "validate_cd.seeds"),
])
def test_bad_section_names_file_line_and_field(tmp_path, edit, field):
    with pytest.raises(UserError) as ei:
        trial_specs(_with(tmp_path, edit), "ci")
    msg = str(ei.value)
    assert msg.startswith(f"{tmp_path / 'v.yaml'}:") and f" {field}: " in msg and "\n" not in msg


def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    from wotbench.commands.main import main

    bad = _with(tmp_path, lambda d: d["validate_cd"].update(classes="cpu"), "bad.yaml")
    fixed = _with(tmp_path, lambda d: d["validate_cd"].pop("seeds"), "fixed.yaml")
    # Each case with what its one line must name: the refusal is the input's,
    # never a later failure (the check tier hides Docker, so a case that got
    # past validation would also end with exit 2, naming the engine).
    for args, names in (([str(bad)], f"{bad}:"), ([str(SPEC), "--classes", "nope"], "--classes: unknown class"),
                        (["--reanalyze", str(tmp_path)], "--reanalyze: no validation.json"),
                        ([], "give the spec"), ([str(SPEC), "--trials", "-3"], "argument --trials"),
                        ([str(fixed), "--seed-base", "3"], "needs validate_cd.seeds: per-trial"),
                        ([str(SPEC), "--seed-base", str(2**63 - 2), "--results", str(tmp_path / "r")],
                         "workload.seed's limit"),
                        ([str(SPEC), "--seed-base", "-1"], "argument --seed-base")):
        rc = main(["validate-cd", *args])                  # in-process: the exit status main returns
        out, err = capsys.readouterr()
        assert rc == 2, (args, err)
        assert out == "" and names in err, (args, err)
        if "--trials" not in args and "-1" not in args:      # argparse's own errors: usage + one line
            assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert not (tmp_path / "r").exists()


def _fake_trial(root: Path, name: str, contention_from_s: float | None, extra: float = 0.3) -> Path:
    """A finished trial run folder (synthetic data, cd.rit 100 ms) with its
    spec.yaml and, with contention, the interference.json the harness writes."""
    run = synth_run(root / name, SynthSpec(devices=2, measure_s=40.0, warmup_s=2.0, calibration_s=10.0,
                                           cd_rit_s=0.1, contention_from_s=contention_from_s,
                                           contention_extra=extra))
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


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One injected and one quiet trial run, made once for the tests that reanalyze them."""
    root = tmp_path_factory.mktemp("runs")
    return {"hog": _fake_trial(root, "hog", 12.0), "q": _fake_trial(root, "q", None)}


def test_reanalyze_recomputes_from_stored_runs(tmp_path, stored):
    out = tmp_path / "v"
    (out / "trials").mkdir(parents=True)
    for name, run in (("a", stored["hog"]), ("b", stored["q"])):
        shutil.copytree(run, out / "trials" / name)
    runs = [("cpu2-20s", out / "trials" / "a"), (vcd.QUIET, out / "trials" / "b")]
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
    # Against the truth: the injected trial's devices' R - S rose past twice the quiet trial's.
    assert inj["mode"] == "busy" and inj["distortion"]["distorted"] is True and inj["set"] == "train"
    assert inj["distortion"]["vs_quiet"]["p99_ratio"] >= 2 and inj["distortion"]["quiet_trials"] == 1
    assert quiet["distortion"]["quiet_trials"] == 0 and quiet["distortion"]["distorted"] is None
    hog = next(a for a in v["agreement"] if a["cls"] == "cpu2-20s")
    assert hog["distorted"] == 1 and hog["onset_ok_distorted"]["k"] == 1
    assert v["selection"]["train"] == [1, 2] and v["selection"]["test"] == []
    assert "## Thresholds chosen on the training trials" in md
    # The reference: the devices' own change test sees the injected episode, not the quiet trial.
    assert v["device_scan"]["rule"] == vcd_scan.RULE and "## What the devices' own requests show" in md
    assert inj["device_scan"]["changed"] is True and quiet["device_scan"]["changed"] is False, (inj, quiet)
    assert 12e6 <= inj["device_scan"]["start_us"] + 2e6 <= 12e6 + 5e6     # the measurement starts at 2 s
    own = {a["cls"]: a for a in v["device_scan"]["agreement"]}
    assert own["cpu2-20s"]["onset_ok_distorted"]["k"] == 1 and own[vcd.QUIET]["false_alarms"]["k"] == 0
    # The change test alone: at cd.rit 100 ms a 2 s warm-up's 20 samples cannot bound p0, so it never alarms
    # (and so the run's verdict above is the paper's test's).
    ch = {a["cls"]: a for a in v["change"]["agreement"]}
    assert v["change"]["rule"] == vcd.CHANGE_RULE and v["change"]["exceed"] == 0.03
    assert ch["cpu2-20s"]["detected_distorted"]["k"] == 0 and ch[vcd.QUIET]["false_alarms"]["k"] == 0
    assert v["change"]["selection"]["chosen"]["name"] == "cd_change_exceed"
    assert "## The change test alone" in md and "| cd_change_exceed | cd_alpha |" in md


def _batches(tmp_path: Path, runs: Path, quiet: tuple[str, str]) -> tuple[Path, Path]:
    """Two validate-cd folders a and b of one hog trial and one quiet trial
    each (the quiet trials' run folders named by ``quiet``), for --reanalyze."""
    folders = tmp_path / "a", tmp_path / "b"
    for folder, q in zip(folders, quiet, strict=True):
        folder.mkdir()
        rel = os.path.relpath(runs, folder)
        (folder / "validation.json").write_text(json.dumps({
            "spec": "x.yaml", "scale": "ci", "started_epoch_s": 1.0, "planned": ["cpu2-20s", "quiet-busy"],
            "trials": [{"index": 1, "cls": "cpu2-20s", "run_dir": f"{rel}/hog", "status": "?"},
                       {"index": 2, "cls": "quiet-busy", "run_dir": f"{rel}/{q}", "status": "?"}]}))
    return folders


def test_reanalyze_combines_folders_into_a_new_one_and_splits_per_class(tmp_path, capsys, stored):
    from wotbench.commands.main import main

    a, b = _batches(tmp_path, stored["hog"].parent, ("q", "q"))
    runs = stored
    assert main(["validate-cd", "--reanalyze", str(a), str(b), "--results", str(tmp_path / "c")]) == 0
    out = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert out.parent == tmp_path / "c" and runs["hog"].is_dir()
    v = json.loads((out / "validation.json").read_text())
    assert v["complete"] and v["combined_from"] == ["../../a", "../../b"]
    assert [(t["index"], t["cls"], t["set"]) for t in v["trials"]] == [
        (1, "cpu2-20s", "train"), (2, "quiet-busy", "train"), (3, "cpu2-20s", "test"), (4, "quiet-busy", "test")]
    assert (out / v["trials"][2]["run_dir"]).resolve() == runs["hog"].resolve()
    sel = v["selection"]
    assert sel["train"] == [1, 2] and sel["test"] == [3, 4]
    held = {r["cls"]: r for r in sel["heldout"]}
    assert held["cpu2-20s"]["n"] == 1 and held["quiet-busy"]["false_alarms"]["n"] == 1
    # Different scales are refused in one line.
    doc = json.loads((b / "validation.json").read_text())
    (b / "validation.json").write_text(json.dumps({**doc, "scale": "small"}))
    assert main(["validate-cd", "--reanalyze", str(a), str(b), "--results", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "different scales" in err and len(err.strip().splitlines()) == 1


def test_the_selection_counts_labels_judged_on_training_trials_only(tmp_path, capsys, stored):
    """A held-out 'quiet' trial whose devices were loaded must not change
    what the selection counts: the training hog trial is judged against the
    training quiet trial alone (with every quiet trial pooled, the loaded one
    would lift the reference and the hog trial would no longer count as distorted)."""
    from wotbench.commands.main import main

    heavy = _fake_trial(stored["hog"].parent, "heavy", 0.0, extra=20.0)   # a loaded "quiet" trial
    (heavy / layout.INTERFERENCE).unlink()
    a, b = _batches(tmp_path, stored["hog"].parent, ("q", heavy.name))
    assert main(["validate-cd", "--reanalyze", str(a), str(b), "--results", str(tmp_path / "c")]) == 0
    out = Path(capsys.readouterr().out.strip().splitlines()[-1])
    v = json.loads((out / "validation.json").read_text())
    sel = v["selection"]
    assert sel["train"] == [1, 2] and sel["test"] == [3, 4] and "training quiet trials" in sel["truth_rule"]
    assert sel["chosen"]["hit"] == {"k": 1, "n": 1, "rate": 1.0, "ci": sel["chosen"]["hit"]["ci"]}
    # The whole-set truth of the same trial pools the loaded held-out quiet trial: not distorted.
    whole = v["trials"][0]["distortion"]
    assert whole["quiet_trials"] == 2 and whole["distorted"] is False, whole
    assert "Truth: a training trial's distortion" in (out / "validation.md").read_text()
