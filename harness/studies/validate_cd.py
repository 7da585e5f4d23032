"""`wotbench validate-cd SPEC`: the contention detector against ground truth.

The spec is an ordinary experiment plus a ``validate_cd:`` section naming
episode classes, each an ``interference:`` list and optionally the
devices' ``mode:`` its trials run in (docs/validate-cd.md)::

    validate_cd:
      trials: 20          # injected trials per class
      quiet: 20           # trials without interference per devices' mode
      classes:
        - {name: cpu2-20s, interference: [{kind: cpu, threads: 2, cores: devices, start: 10s, end: 30s}]}
        - {name: cpu2-20s-sleep, mode: sleep, interference: [...]}

Every trial is one ordinary ``wotbench run`` of the spec, with the class's
interference or (quiet, ``quiet-<mode>``) none, interleaved so that drift
hits both alike. Two truths: the run's ``interference.json`` (the hogs'
observed start and end, on t0) and the devices' own distortion in that
episode (harness/studies/vcd_truth.py: their R - S median and p99 against
the pre-episode and the quiet trials of their mode). The detector
(:func:`wotbench.cd.detect_contention`, the run's validity thresholds) is
applied to each run's stored CD data, so ``--reanalyze DIR...`` recomputes
everything without running anything (several folders: combined into a new
one), from each trial's run folder or, where that is gone, from its
record (harness/studies/vcd_trial.py: ``records/*.npz``, a few KB that
hold what the analysis reads), so that batches outlive their machine.

Results: ``validation.json`` (every trial: run dir, class, mode, injected
interval, status, onset, its distortion, train or held out; per class the
detection (quiet: false-alarm) rates of the run's thresholds, the
agreement with the distortion, the thresholds chosen on the training
trials and their held-out scores (harness/studies/vcd_score.py); the ROC
points), ``validation.md`` and ``roc.png``, written atomically,
``complete: false`` until the end. Trial runs are kept under ``trials/``,
their records under ``records/``.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.cd import ContentionResult
from wotbench.engine import dockerenv
from wotbench.spec import (
    QUIET,
    SEED_MAX,
    SEEDS,
    EpisodeClass,
    Thresholds,
    ValidateSpec,
    is_quiet,
    read_validate,
    trial_specs,
    with_seed,
)
from wotbench.studies import vcd_scan
from wotbench.studies import vcd_score as score
from wotbench.studies import vcd_truth as truth
from wotbench.studies.vcd_report import markdown, roc_png
from wotbench.studies.vcd_score import wilson
from wotbench.studies.vcd_trial import CdData, TrialData, read_record, trial_data, write_record

__all__ = ["EpisodeClass", "ValidateSpec", "Trial", "ClassStats", "read_validate", "schedule", "wilson",
           "class_stats", "roc_points", "run_validation", "reanalyze", "markdown", "roc_png", "QUIET", "ALPHAS",
           "CHANGE_RULE"]

#: The trials' records (vcd_trial) in a results folder.
RECORDS = "records"
SEED_BASE_MAX = 2**31
"""A drawn first seed is below this (a batch's seeds stay far from workload.seed's limit)."""
#: The detector's alpha values of the ROC sweep.
ALPHAS = (1e-8, 1e-6, 1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 0.6, 0.9)
#: What the change test is (wotbench.cd.detect_change), in words.
CHANGE_RULE = ("the CD node's R_d in the measurement against the warm-up (the host already carrying the run's own "
               "load): a one-sided Bernoulli CUSUM on exceedances of the warm-up's q99 at design exceedance "
               "cd_change_exceed, false-alarm probability cd_alpha; part of the run's verdict (an alarm of either "
               "test is contention), scored here alone because the truth's reference is quiet trials of the same "
               "load, not the idle host")
#: How the labels of the two sets are judged (docs/validate-cd.md).
TRAINING_TRUTH = ("a training trial's distortion is judged against the training quiet trials of its mode only, "
                  "a training quiet trial's window from the training injected episodes only, so no held-out "
                  "trial shapes what the selection counts; a held-out trial is judged against every quiet "
                  "trial of its mode (its labels never reach the selection)")


def schedule(classes: Sequence[str], trials: int, quiet: int, quiet_classes: Sequence[str] = (QUIET,)) -> list[str]:
    """Trial order: the classes round-robin, ``quiet`` trials of every quiet
    class spread evenly among them (so drift of the host hits both alike)."""
    keyed = [((i + 0.5) / trials, k, c) for i in range(trials) for k, c in enumerate(classes)]
    keyed += [((j + 0.5) / quiet, k - len(quiet_classes), q) for j in range(quiet)
              for k, q in enumerate(quiet_classes)]
    return [c for *_, c in sorted(keyed)]


# --- one trial ------------------------------------------------------------------------------

def onset_within(detected: bool, onset_us: float | None, start_us: float | None, window_us: float | None) -> bool:
    """An alarm whose onset is within one window of the hogs' observed start."""
    if not detected or onset_us is None or start_us is None or window_us is None:
        return False
    return abs(onset_us - start_us) <= window_us


@dataclass(frozen=True)
class Alarm:
    """One test's answer on a trial: its status and, with an alarm, when and
    in which window; and how fast it could see contention at all."""
    status: str
    onset_us: float | None
    window_us: float | None
    delay_us: float | None = None
    """The design's expected detection delay (CUSUM ``min_episode_us``: h /
    KL(p1 || p0) samples in time; inf without power; None: not known)."""

    @classmethod
    def of(cls, r: ContentionResult) -> Alarm:
        return cls(r.status, r.onset_us, r.window_us, None if r.cusum is None else r.cusum.min_episode_us)

    @property
    def detected(self) -> bool:
        return self.status == "contention"

    @property
    def powered(self) -> bool | None:
        """The design sees an episode within one window of its start (None: not known)."""
        if self.delay_us is None or self.window_us is None:
            return None
        return self.delay_us <= self.window_us


@dataclass(frozen=True)
class Trial:
    index: int
    cls: str
    run_dir: str
    status: str                     # the detector's, or failed (the run did not finish)
    reason: str
    verdict: str | None             # the run's (summary.json)
    injected_start_us: float | None
    injected_end_us: float | None
    injected_observed: bool         # the hogs' observed interval (interference.json), not the plan
    onset_us: float | None
    window_us: float | None
    mode: str = ""                  # the devices' mode (spec.yaml)
    record: str | None = None       # the trial's record (vcd_trial), relative to the results folder
    seed: int | None = None         # the trace's workload.seed (None: not kept, as in older records)
    change: Alarm | None = None
    """The change test alone (None: no CD data)."""

    @property
    def detected(self) -> bool:
        return self.status == "contention"

    @property
    def onset_error_us(self) -> float | None:
        """Detector onset minus the injected episode's observed start."""
        if self.onset_us is None or self.injected_start_us is None:
            return None
        return self.onset_us - self.injected_start_us

    @property
    def onset_ok(self) -> bool:
        return onset_within(self.detected, self.onset_us, self.injected_start_us, self.window_us)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "detected": self.detected, "onset_error_us": self.onset_error_us,
                "onset_within_window": self.onset_ok}


def evaluate(index: int, cls: str, run_dir: Path, data: TrialData, base: Path, record: Path | None = None) -> Trial:
    """One finished trial: the detector on its CD data, the truth from its
    injected interval; its run dir and record are written relative to ``base``."""
    where = os.path.relpath(run_dir, base)
    rec = None if record is None else os.path.relpath(record, base)
    start, end, observed = data.injected if not is_quiet(cls) else (None, None, False)
    if data.cd is None:
        return Trial(index, cls, where, "unknown", "no CD data", data.verdict, start, end, observed,
                     None, None, data.mode, rec, data.seed)
    tests = data.cd.tests()
    r, c = tests.verdict, tests.change
    return Trial(index, cls, where, r.status, r.reason, data.verdict, start, end, observed,
                 r.onset_us, r.window_us, data.mode, rec, data.seed, Alarm.of(c))


# --- statistics of the detector's own runs (pure) -----------------------------------------------

@dataclass(frozen=True)
class ClassStats:
    cls: str
    n: int                          # analysed trials (failed runs left out)
    failed: int
    alarms: int                     # status contention: detections (quiet: false alarms)
    rate: float | None
    rate_ci: tuple[float, float]
    onset_ok: int
    onset_ok_rate: float | None
    onset_ok_ci: tuple[float, float]
    onset_error_median_s: float | None
    onset_error_max_abs_s: float | None
    inconclusive: int
    unknown: int
    truth_observed: int             # injected trials timed by the hogs' observed start/end


def class_stats(trials: Sequence[Trial], cls: str) -> ClassStats:
    mine = [t for t in trials if t.cls == cls]
    done = [t for t in mine if t.status != "failed"]
    n, k = len(done), sum(t.detected for t in done)
    ok = sum(t.onset_ok for t in done)
    errs = np.array([e for t in done if t.detected and (e := t.onset_error_us) is not None], dtype=float)
    return ClassStats(
        cls, n, len(mine) - n, k, k / n if n else None, wilson(k, n), ok, ok / n if n else None, wilson(ok, n),
        float(np.median(errs)) / 1e6 if errs.size else None,
        float(np.abs(errs).max()) / 1e6 if errs.size else None,
        sum(t.status == "inconclusive" for t in done), sum(t.status == "unknown" for t in done),
        sum(t.injected_observed for t in done))


def roc_points(statuses: Mapping[float, Sequence[tuple[str, bool]]]) -> list[dict[str, Any]]:
    """Per alpha, from (class, detected) of every trial: the false-alarm rate
    of the quiet trials (every mode's) and the detection rate of every other class."""
    out = []
    for alpha in sorted(statuses):
        rows = statuses[alpha]
        by: dict[str, list[bool]] = {}
        for cls, det in rows:
            by.setdefault(cls, []).append(det)
        q = [d for c in [c for c in by if is_quiet(c)] for d in by.pop(c)]
        out.append({"alpha": alpha, "fa_rate": float(np.mean(q)) if q else None, "quiet": len(q),
                    "detection": {c: float(np.mean(v)) for c, v in sorted(by.items())}})
    return out


# --- against the truth ---------------------------------------------------------------------------

def distortions(trials: Sequence[Trial], data: Mapping[int, TrialData]) -> dict[int, truth.Distortion]:
    """Every analysed trial's distortion (vcd_truth), by index."""
    done = [t for t in trials if t.index in data]
    episodes = {t.index: (t.injected_start_us - data[t.index].measure[0], t.injected_end_us - data[t.index].measure[0])
                for t in done if t.injected_start_us is not None and t.injected_end_us is not None}
    return truth.distortions({t.index: data[t.index].rs for t in done}, {t.index: t.mode for t in done},
                             {t.index: is_quiet(t.cls) for t in done}, episodes,
                             {t.index: data[t.index].measure[1] - data[t.index].measure[0] for t in done})


#: A detector as the scoring sees it: a trial and its CD data -> its answer.
Test = Callable[[Trial, CdData], Alarm]


def run_verdict(t: Trial, cd: CdData) -> Alarm:
    """The run's verdict at its own thresholds, as the trial holds it."""
    return Alarm(t.status, t.onset_us, t.window_us)


def run_change(t: Trial, cd: CdData) -> Alarm:
    """The change test alone at the run's own thresholds, as the trial holds it."""
    return Alarm("unknown", None, None) if t.change is None else t.change


def verdict_at(alpha: float | None, min_effect: float | None) -> Test:
    """The run's verdict at another cd_alpha and cd_min_effect."""
    def test(t: Trial, cd: CdData) -> Alarm:
        return Alarm.of(cd.detect(alpha, min_effect, False))
    return test


def change_at(alpha: float | None, exceed: float | None) -> Test:
    """The change test alone at another cd_alpha and design exceedance."""
    def test(t: Trial, cd: CdData) -> Alarm:
        return Alarm.of(cd.change(alpha, exceed, False))
    return test


def outcomes(trials: Sequence[Trial], data: Mapping[int, TrialData], dist: Mapping[int, truth.Distortion],
             test: Test = run_verdict) -> list[score.Outcome]:
    """Every trial with CD data as ``test`` judges it, against its distortion."""
    out = []
    for t in trials:
        d = data.get(t.index)
        if d is None or d.cd is None:
            continue
        a = test(t, d.cd)
        dd = dist.get(t.index)
        out.append(score.Outcome(t.index, t.cls, t.mode, is_quiet(t.cls), None if dd is None else dd.distorted,
                                 a.detected, onset_within(a.detected, a.onset_us, t.injected_start_us, a.window_us),
                                 None if dd is None else dd.distorted_p99, a.powered))
    return out


def scan_outcomes(trials: Sequence[Trial], data: Mapping[int, TrialData], dist: Mapping[int, truth.Distortion],
                  scans: Mapping[int, vcd_scan.Scan]) -> list[score.Outcome]:
    """Every analysed trial as the devices' own change test (vcd_scan) judges
    it: a change is an alarm, its segment's start the onset (the CD's window,
    else 5 s, as the tolerance)."""
    out = []
    for t in trials:
        s, d = scans.get(t.index), data.get(t.index)
        if s is None or d is None:
            continue
        onset = None if s.start_us is None else s.start_us + d.measure[0]
        dd = dist.get(t.index)
        out.append(score.Outcome(t.index, t.cls, t.mode, is_quiet(t.cls), None if dd is None else dd.distorted,
                                 s.changed, onset_within(s.changed, onset, t.injected_start_us, t.window_us or 5e6),
                                 None if dd is None else dd.distorted_p99))
    return out


def quiet_checks(trials: Sequence[Trial], data: Mapping[int, TrialData], scans: Mapping[int, vcd_scan.Scan],
                 test: Test) -> list[score.QuietCheck]:
    """Every quiet trial with CD data and a devices' scan as ``test`` judges
    it, beside whether its devices' own data changed (vcd_scan), and when."""
    out = []
    for t in trials:
        d, s = data.get(t.index), scans.get(t.index)
        if not is_quiet(t.cls) or d is None or d.cd is None or s is None:
            continue
        a = test(t, d.cd)
        start = None if s.start_us is None else s.start_us + d.measure[0]
        out.append(score.QuietCheck(t.cls, t.mode, a.detected, s.changed,
                                    onset_within(a.detected, a.onset_us, start, a.window_us)))
    return out


def held_out(trials: Sequence[Trial], data: Mapping[int, TrialData], dist: Mapping[int, truth.Distortion],
             change: bool = False) -> dict[str, Any]:
    """The thresholds chosen on the training trials and the held-out scores:
    of the run's verdict ((cd_min_effect, cd_alpha)), or with ``change`` of
    the change test alone ((cd_change_exceed, cd_alpha))."""
    sets = score.split([(t.index, t.cls) for t in trials if t.index in data and data[t.index].cd is not None])
    train = {i for i, s in sets.items() if s == "train"}
    training = [t for t in trials if t.index in train]
    held = [t for t in trials if t.index in sets and t.index not in train]
    # The labels the selection counts come from the training trials alone:
    # their quiet references and the quiet trials' window (TRAINING_TRUTH).
    train_dist = distortions(training, data)
    at = change_at if change else verdict_at
    settings = score.CHANGE_EXCEEDS if change else score.MIN_EFFECTS
    grid = {(v, a): outcomes(training, data, train_dist, at(a, v)) for v in settings for a in score.GRID_ALPHAS}
    best, rows = score.select(grid, train, "cd_change_exceed" if change else "cd_min_effect")
    test = outcomes(held, data, dist, at(best.alpha, best.setting))
    own = outcomes(held, data, dist, run_change if change else run_verdict)
    return {"split_rule": score.SPLIT_RULE, "selection_rule": score.selection_rule(best.name),
            "truth_rule": TRAINING_TRUTH, "train": sorted(train), "test": sorted(set(sets) - train),
            "chosen": asdict(best), "grid": [asdict(c) for c in rows],
            "heldout": [a.to_dict() for a in score.agreements(test)],
            "heldout_run_thresholds": [a.to_dict() for a in score.agreements(own)]}


# --- the command ----------------------------------------------------------------------------

def _write(out: Path, meta: Mapping[str, Any], trials: Sequence[Trial], data: Mapping[int, TrialData],
           scans: Mapping[int, vcd_scan.Scan], complete: bool, roc: bool) -> dict[str, Any]:
    """validation.json/md (and roc.png) of the trials so far; ``scans``: each
    analysed trial's :func:`vcd_scan.scan`, made once per trial by the caller."""
    names = list(dict.fromkeys(t.cls for t in trials))
    names = [c for c in names if not is_quiet(c)] + sorted(c for c in names if is_quiet(c))
    cds = {i: d.cd for i, d in data.items() if d.cd is not None}
    th = next((d.th for d in cds.values()), Thresholds())
    dist = distortions(trials, data)
    sets = score.split([(t.index, t.cls) for t in trials if t.index in data and data[t.index].cd is not None])
    rows = [{**t.to_dict(), "set": sets.get(t.index),
             "distortion": None if t.index not in dist else dist[t.index].to_dict(),
             "device_scan": None if t.index not in scans else scans[t.index].to_dict()} for t in trials]
    doc: dict[str, Any] = {
        "format": 2, **meta, "complete": complete, "alpha": th.cd_alpha, "min_effect": th.cd_min_effect,
        "targets": {"detect_min": score.DETECT_MIN, "fa_max": score.FA_MAX,
                    "distorted_ratio": truth.DISTORTED, "n_needed": score.n_needed()},
        "classes": [asdict(class_stats(trials, c)) for c in names],
        "agreement": [a.to_dict() for a in score.agreements(outcomes(trials, data, dist))],
        "change": {"rule": CHANGE_RULE, "exceed": th.cd_change_exceed, "agreement": [
            a.to_dict() for a in score.agreements(outcomes(trials, data, dist, run_change))],
            "quiet_devices": score.quiet_by_devices(quiet_checks(trials, data, scans, run_change)),
            "selection": None},
        "quiet_devices": score.quiet_by_devices(quiet_checks(trials, data, scans, run_verdict)),
        "device_scan": {"rule": vcd_scan.RULE, "agreement": [
            a.to_dict() for a in score.agreements(scan_outcomes(trials, data, dist, scans))]},
        "trials": rows, "selection": None, "roc": None}
    if roc:
        if cds:
            doc["selection"] = held_out(trials, data, dist)
            doc["change"]["selection"] = held_out(trials, data, dist, change=True)
        sweep = {a: [(t.cls, d.detect(a, describe=False).detected)
                     for t in trials if (d := cds.get(t.index)) is not None]
                 for a in ALPHAS}
        doc["roc"] = roc_points(sweep)
        res.write_atomic(out / "roc.png", roc_png(doc["roc"]))
    res.write_json(out / "validation.json", doc)
    res.write_atomic(out / "validation.md", markdown(doc))
    return doc


def run_validation(spec: str | os.PathLike[str], results: Path, scale: str | None, trials: int | None,
                   quiet: int | None, only: Sequence[str] | None, progress: bool = False,
                   log: Any = sys.stderr, seed_base: int | None = None) -> Path:
    """Runs the trials of a validate-cd spec; returns its results folder.
    With ``validate_cd.seeds: per-trial`` trial i replays the trace of seed
    ``seed_base + i - 1`` (``seed_base`` None: drawn at random, kept in
    validation.json), so that no one trace's slow stretch is in every trial."""
    from wotbench.execution.runner import RunFailed, RunOptions, preflight, run_spec  # on use: the runner

    vs, specs = trial_specs(spec, scale, only)
    if seed_base is not None and vs.seeds == SEEDS[0]:
        raise UserError("--seed-base needs validate_cd.seeds: per-trial in the spec", file=os.fspath(spec),
                        field="--seed-base")
    if vs.seeds != SEEDS[0] and seed_base is None:
        seed_base = secrets.randbelow(SEED_BASE_MAX)
    n_tr = vs.trials if trials is None else trials
    n_q = vs.quiet if quiet is None else quiet
    order = schedule([c.name for c in vs.classes], n_tr, n_q, [c for c in specs if is_quiet(c)])
    if not order:
        raise UserError("nothing to run: --trials and --quiet are both 0", file=os.fspath(spec),
                        field="--trials")
    if seed_base is not None and seed_base + len(order) - 1 > SEED_MAX:
        raise UserError(f"--seed-base {seed_base} + {len(order)} trials passes workload.seed's limit {SEED_MAX}",
                        field="--seed-base")
    res.check_results_root(results)      # a bad --results is refused before anything starts
    client = dockerenv.client()
    for c in set(order):
        preflight(specs[c].spec, client)
    first = next(iter(specs.values()))
    out = results / res.new_run_id(f"validate-cd-{first.spec.name}")
    (out / "trials").mkdir(parents=True)
    opts = RunOptions(results_root=out / "trials", progress=progress, log=log)
    meta = {"spec": os.fspath(spec), "scale": first.scale, "started_epoch_s": time.time(), "planned": order,
            "seeds": vs.seeds, "seed_base": seed_base}
    done: list[Trial] = []
    data: dict[int, TrialData] = {}
    scans: dict[int, vcd_scan.Scan] = {}
    for i, cls in enumerate(order, 1):
        print(f"validate-cd: trial {i}/{len(order)}: {cls}", file=log, flush=True)
        try:
            run_dir = run_spec([specs[cls] if seed_base is None else with_seed(specs[cls], seed_base + i - 1)],
                               opts)[0]
        except RunFailed as exc:
            if isinstance(exc.cause, UserError):
                raise exc.cause from None
            done.append(Trial(i, cls, os.path.relpath(exc.run_dir, out), "failed", str(exc), None, None, None, False,
                              None, None))
        else:
            data[i] = trial_data(run_dir)
            scans[i] = vcd_scan.scan(data[i].rs)
            done.append(evaluate(i, cls, run_dir, data[i], out, _record(out, i, cls, run_dir, data[i])))
        t = done[-1]
        err = "" if t.onset_error_us is None else f", onset error {t.onset_error_us / 1e6:+.1f} s"
        print(f"validate-cd: trial {i}: {cls} -> {t.status}{err}", file=log, flush=True)
        _write(out, meta, done, data, scans, complete=False, roc=False)
    _write(out, meta, done, data, scans, complete=True, roc=True)
    return out


def _record(out: Path, index: int, cls: str, run_dir: Path, data: TrialData) -> Path:
    """Writes a trial's record under ``out/records/`` and reads it back (a
    record the reader would refuse is found while the run folder is still
    there); returns its path."""
    path = out / RECORDS / f"{index:04d}-{run_dir.name}.npz"
    path.parent.mkdir(exist_ok=True)
    write_record(path, data, {"cls": cls, "run_id": run_dir.name})
    read_record(path)
    return path


def _stored(folder: Path) -> tuple[dict[str, Any], list[tuple[str, Path, str, Path | None]]]:
    """A results folder's validation.json: its meta and (class, run dir,
    status, record or None) per trial."""
    p = folder / "validation.json"
    if not p.is_file():
        raise UserError(f"no validation.json in {folder} (not a validate-cd results folder)",
                        file=os.fspath(folder), field="--reanalyze")
    try:
        old = json.loads(p.read_text())
        rows = [(str(t["cls"]), folder / t["run_dir"], str(t["status"]),
                 None if t.get("record") is None else folder / str(t["record"]))
                for t in sorted(old["trials"], key=lambda t: int(t["index"]))]
        meta = {k: old[k] for k in ("spec", "scale", "started_epoch_s", "planned", "combined_from", "seeds",
                                    "seed_base") if k in old}
        meta["planned"] = list(meta["planned"])
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"unreadable validation.json ({type(exc).__name__}: {exc})", file=os.fspath(p)) from None
    return meta, rows


def reanalyze(folders: Path | Sequence[Path], results: Path | None = None) -> Path:
    """Recomputes validation.json/md and roc.png from stored trial runs with
    the current detector, running nothing: of one folder in place, or of
    several combined (trials numbered in the folders' order) into a new
    folder under ``results``, which refers to their trial runs."""
    folders = [folders] if isinstance(folders, Path) else list(folders)
    stored = [_stored(f) for f in folders]
    if len(folders) == 1:
        out, meta = folders[0], dict(stored[0][0])
    else:
        scales = {m["scale"] for m, _ in stored}
        if len(scales) > 1:
            raise UserError(f"the folders ran at different scales ({', '.join(sorted(map(str, scales)))}); "
                            "combine folders of one scale", field="--reanalyze")
        if results is None:
            raise UserError("combining folders needs --results", field="--results")
        res.check_results_root(results)
        out = results / res.new_run_id("validate-cd-combined")
        out.mkdir(parents=True)
        meta = {**stored[0][0], "started_epoch_s": min(m["started_epoch_s"] for m, _ in stored),
                "planned": [c for m, _ in stored for c in m["planned"]],
                "combined_from": [os.path.relpath(f, out) for f in folders]}
        meta.pop("seed_base", None)         # each batch's own; the trials keep their seeds
        meta["seeds"] = "+".join(sorted({str(m.get("seeds", SEEDS[0])) for m, _ in stored}))
    trials, data = [], {}
    for i, (cls, run_dir, status, record) in enumerate((r for _, rows in stored for r in rows), 1):
        if status != "failed" and (run_dir / layout.SUMMARY).is_file():
            try:
                data[i] = trial_data(run_dir)
            except UserError:
                if record is None:          # a damaged run folder and no record: refused as before
                    raise
                data[i] = read_record(record)
            if record is None:
                record = _record(out, i, cls, run_dir, data[i])
        elif status != "failed" and record is not None:
            data[i] = read_record(record)
        else:
            why = "the run did not finish" if status == "failed" else "neither its run folder nor a record is there"
            trials.append(Trial(i, cls, os.path.relpath(run_dir, out), "failed", why,
                                None, None, None, False, None, None))
            continue
        trials.append(evaluate(i, cls, run_dir, data[i], out, record))
    _write(out, {**meta, "reanalyzed_epoch_s": time.time()}, trials, data,
           {i: vcd_scan.scan(d.rs) for i, d in data.items()}, complete=len(trials) == len(meta["planned"]),
           roc=bool(trials))
    return out
