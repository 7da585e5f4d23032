"""`wotbench validate-cd SPEC`: the contention detector against ground truth.

The spec is an ordinary experiment plus a ``validate_cd:`` section naming
episode classes, each an ``interference:`` list (docs/validate-cd.md)::

    validate_cd:
      trials: 20          # injected trials per class
      quiet: 20           # trials without interference
      classes:
        - {name: cpu2-20s, interference: [{kind: cpu, threads: 2, cores: devices, start: 10s, end: 30s}]}

Every trial is one ordinary ``wotbench run`` of the spec, with the class's
interference or (quiet) none, interleaved so that drift hits both alike.
The truth is the run's ``interference.json`` (the hogs' observed start and
end, on t0). The detector (:func:`wotbench.cd.detect_contention`, the
run's validity thresholds) is applied to each run's stored CD data, so
``--reanalyze DIR`` recomputes everything without running anything.

Results: ``validation.json`` (every trial: run dir, class, injected
interval, status, onset, detected; per class detection rate, onset within
one window and false-alarm rate with Wilson 95 % intervals; the ROC points),
``validation.md`` and ``roc.png`` (detection vs false-alarm rate as the
detector's alpha is swept), written atomically, ``complete: false`` until
the end. Trial runs are kept under ``trials/``.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.engine import dockerenv
from wotbench.spec import QUIET, EpisodeClass, Thresholds, ValidateSpec, load_saved, read_validate, trial_specs

if TYPE_CHECKING:
    from wotbench.reporting import Phases

__all__ = ["EpisodeClass", "ValidateSpec", "Trial", "ClassStats", "read_validate", "schedule", "wilson",
           "class_stats", "roc_points", "run_validation", "reanalyze", "markdown", "QUIET", "ALPHAS"]

#: The detector's alpha values of the ROC sweep.
ALPHAS = (1e-8, 1e-6, 1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 0.6, 0.9)




def schedule(classes: Sequence[str], trials: int, quiet: int) -> list[str]:
    """Trial order: the classes round-robin, the quiet trials spread evenly
    among them (so drift of the host hits both alike)."""
    keyed = [((i + 0.5) / trials, k, c) for i in range(trials) for k, c in enumerate(classes)]
    keyed += [((j + 0.5) / quiet, -1, QUIET) for j in range(quiet)]
    return [c for *_, c in sorted(keyed)]


# --- one trial ------------------------------------------------------------------------------

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
        e = self.onset_error_us
        return self.detected and e is not None and self.window_us is not None and abs(e) <= self.window_us

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "detected": self.detected, "onset_error_us": self.onset_error_us,
                "onset_within_window": self.onset_ok}


def injected_interval(run_dir: Path) -> tuple[float | None, float | None, bool]:
    """[first hog start, last hog end] on t0 from interference.json: observed
    where every hog reported, else planned (and ``False``)."""
    from wotbench.reporting import read_interference

    eps = read_interference(run_dir)
    if not eps:
        return None, None, False
    observed = all(e.get("start_us") is not None and e.get("end_us") is not None for e in eps)
    ks = ("start_us", "end_us") if observed else ("planned_start_us", "planned_end_us")
    return float(min(e[ks[0]] for e in eps)), float(max(e[ks[1]] for e in eps)), observed


@dataclass(frozen=True)
class CdData:
    """A run's CD series and what the detector needs besides."""

    t_us: np.ndarray
    rd: np.ndarray
    phases: Phases
    th: Thresholds
    service_us: float | None = None
    """S the CD node echoed (median): its baseline is checked against it."""

    def detect(self, alpha: float | None = None) -> Any:
        """The run's contention test, as its report made it (or at ``alpha``)."""
        from wotbench.reporting import cd_detect

        return cd_detect(self.t_us, self.rd, self.phases, self.th, alpha, self.service_us)


def cd_data(run_dir: Path) -> CdData | None:
    """The stored CD series of a finished run (None without CD data)."""
    from wotbench.reporting import cd_series, load_run

    cd_csv = run_dir / layout.CD / layout.CD_OUTPUT
    if not cd_csv.is_file():
        return None
    t, _, rd = cd_series(cd_csv)
    th = load_saved(run_dir / layout.SPEC).validity
    svc = t.service[np.isfinite(t.service)]
    return CdData(t.intended, rd, load_run(run_dir).phases, th, float(np.median(svc)) if svc.size else None)


def evaluate(index: int, cls: str, run_dir: Path, data: CdData | None, base: Path) -> Trial:
    """One finished trial: the detector on its CD data, the truth from
    interference.json; its run dir is written relative to ``base``."""
    where = os.path.relpath(run_dir, base)
    start, end, observed = injected_interval(run_dir) if cls != QUIET else (None, None, False)
    summary = run_dir / layout.SUMMARY
    verdict = json.loads(summary.read_text()).get("verdict") if summary.is_file() else None
    if data is None:
        return Trial(index, cls, where, "unknown", "no CD data", verdict, start, end, observed,
                     None, None)
    r = data.detect()
    return Trial(index, cls, where, r.status, r.reason, verdict, start, end, observed,
                 r.onset_us, r.window_us)


# --- statistics (pure) ------------------------------------------------------------------------

def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n; (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


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
    of the quiet trials and the detection rate of every other class."""
    out = []
    for alpha in sorted(statuses):
        rows = statuses[alpha]
        by: dict[str, list[bool]] = {}
        for cls, det in rows:
            by.setdefault(cls, []).append(det)
        q = by.pop(QUIET, [])
        out.append({"alpha": alpha, "fa_rate": float(np.mean(q)) if q else None, "quiet": len(q),
                    "detection": {c: float(np.mean(v)) for c, v in sorted(by.items())}})
    return out


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _ci(ci: Sequence[float]) -> str:
    return f"{100 * ci[0]:.0f}-{100 * ci[1]:.0f} %"


def markdown(doc: Mapping[str, Any]) -> str:
    """validation.md: the table of validation.json."""
    lines = [f"# Contention detector validation: {doc['spec']} (scale {doc['scale']})", "",
             f"{'complete' if doc['complete'] else 'INCOMPLETE'}; {len(doc['trials'])} trials; detector "
             f"alpha {doc['alpha']:g}; onset within one window: |detector onset - observed hog start| <= "
             "the window; 95 % Wilson intervals.", "",
             "| class | N | detection | 95 % CI | onset within 1 window | 95 % CI | onset error median / max |"
             " inconclusive | failed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in doc["classes"]:
        if s["cls"] == QUIET:
            continue
        med, mx = s["onset_error_median_s"], s["onset_error_max_abs_s"]
        err = "-" if med is None else f"{med:+.1f} s / {mx:.1f} s"
        lines.append(f"| {s['cls']} | {s['n']} | {_pct(s['rate'])} | {_ci(s['rate_ci'])} | "
                     f"{_pct(s['onset_ok_rate'])} | {_ci(s['onset_ok_ci'])} | {err} | {s['inconclusive']} | "
                     f"{s['failed']} |")
    for s in doc["classes"]:
        if s["cls"] == QUIET:
            lines += ["", "| quiet | N | false alarms | 95 % CI | inconclusive | failed |", "|---|---|---|---|---|---|",
                      f"| quiet | {s['n']} | {_pct(s['rate'])} | {_ci(s['rate_ci'])} | {s['inconclusive']} | "
                      f"{s['failed']} |"]
    lines += ["", "| # | class | status | onset (s) | injected (s) | verdict | run |", "|---|---|---|---|---|---|---|"]
    for t in doc["trials"]:
        inj = ("-" if t["injected_start_us"] is None else
               f"{t['injected_start_us'] / 1e6:.1f}-{t['injected_end_us'] / 1e6:.1f}"
               + ("" if t["injected_observed"] else " (planned)"))
        on = "-" if t["onset_us"] is None else f"{t['onset_us'] / 1e6:.1f}"
        lines.append(f"| {t['index']} | {t['cls']} | {t['status']} | {on} | {inj} | {t['verdict']} | "
                     f"{Path(t['run_dir']).name} |")
    return "\n".join(lines) + "\n"


def roc_png(points: Sequence[Mapping[str, Any]]) -> bytes:
    import matplotlib  # on use: `wotbench --help` loads this module

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 5.0), constrained_layout=True)
    classes = sorted({c for p in points for c in p["detection"]})
    for c in classes:
        xs = [p["fa_rate"] if p["fa_rate"] is not None else np.nan for p in points]
        ys = [p["detection"].get(c, np.nan) for p in points]
        ax.plot(xs, ys, "o-", label=c, alpha=0.8)
        for p, x, y in zip(points, xs, ys, strict=True):
            if c == classes[0]:
                ax.annotate(f"{p['alpha']:g}", (x, y), textcoords="offset points", xytext=(4, -10), fontsize=6)
    ax.plot([0, 1], [0, 1], ":", color="0.6", lw=1)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("false-alarm rate (quiet trials)")
    ax.set_ylabel("detection rate (trials with interference)")
    ax.set_title("contention detector: detection vs false alarms as alpha is swept")
    ax.legend(fontsize=7, loc="lower right")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()


# --- the command ----------------------------------------------------------------------------

def _write(out: Path, meta: Mapping[str, Any], trials: Sequence[Trial], data: Mapping[int, CdData | None],
           complete: bool, roc: bool) -> dict[str, Any]:
    names = list(dict.fromkeys(t.cls for t in trials))
    names = [c for c in names if c != QUIET] + ([QUIET] if QUIET in names else [])
    alpha = next((d.th.cd_alpha for d in data.values() if d is not None), Thresholds().cd_alpha)
    doc: dict[str, Any] = {"format": 1, **meta, "complete": complete, "alpha": alpha,
                           "classes": [asdict(class_stats(trials, c)) for c in names],
                           "trials": [t.to_dict() for t in trials], "roc": None}
    if roc:
        sweep = {a: [(t.cls, d.detect(a).detected) for t in trials if (d := data.get(t.index)) is not None]
                 for a in ALPHAS}
        doc["roc"] = roc_points(sweep)
        res.write_atomic(out / "roc.png", roc_png(doc["roc"]))
    res.write_json(out / "validation.json", doc)
    res.write_atomic(out / "validation.md", markdown(doc))
    return doc


def run_validation(spec: str | os.PathLike[str], results: Path, scale: str | None, trials: int | None,
                   quiet: int | None, only: Sequence[str] | None, progress: bool = False,
                   log: Any = sys.stderr) -> Path:
    """Runs the trials of a validate-cd spec; returns its results folder."""
    from wotbench.execution.runner import RunFailed, RunOptions, preflight, run_spec  # on use: the runner

    vs, specs = trial_specs(spec, scale, only)
    n_tr = vs.trials if trials is None else trials
    n_q = vs.quiet if quiet is None else quiet
    order = schedule([c.name for c in vs.classes], n_tr, n_q)
    if not order:
        raise UserError("nothing to run: --trials and --quiet are both 0", file=os.fspath(spec),
                        field="--trials")
    res.check_results_root(results)      # a bad --results is refused before anything starts
    client = dockerenv.client()
    for c in set(order):
        preflight(specs[c].spec, client)
    out = results / res.new_run_id(f"validate-cd-{specs[QUIET].spec.name}")
    (out / "trials").mkdir(parents=True)
    opts = RunOptions(results_root=out / "trials", progress=progress, log=log)
    meta = {"spec": os.fspath(spec), "scale": specs[QUIET].scale, "started_epoch_s": time.time(),
            "planned": order}
    done: list[Trial] = []
    data: dict[int, CdData | None] = {}
    for i, cls in enumerate(order, 1):
        print(f"validate-cd: trial {i}/{len(order)}: {cls}", file=log, flush=True)
        try:
            run_dir = run_spec([specs[cls]], opts)[0]
        except RunFailed as exc:
            if isinstance(exc.cause, UserError):
                raise exc.cause from None
            done.append(Trial(i, cls, os.path.relpath(exc.run_dir, out), "failed", str(exc), None, None, None, False,
                              None, None))
        else:
            data[i] = cd_data(run_dir)
            done.append(evaluate(i, cls, run_dir, data[i], out))
        t = done[-1]
        err = "" if t.onset_error_us is None else f", onset error {t.onset_error_us / 1e6:+.1f} s"
        print(f"validate-cd: trial {i}: {cls} -> {t.status}{err}", file=log, flush=True)
        _write(out, meta, done, data, complete=False, roc=False)
    _write(out, meta, done, data, complete=True, roc=True)
    return out


def reanalyze(folder: Path) -> Path:
    """Recomputes validation.json/md and roc.png of ``folder`` from its trial
    runs with the current detector, running nothing."""
    p = folder / "validation.json"
    if not p.is_file():
        raise UserError(f"no validation.json in {folder} (not a validate-cd results folder)",
                        file=os.fspath(folder), field="--reanalyze")
    try:
        old = json.loads(p.read_text())
        rows = [(int(t["index"]), str(t["cls"]), folder / t["run_dir"], str(t["status"])) for t in old["trials"]]
        meta = {k: old[k] for k in ("spec", "scale", "started_epoch_s", "planned")}
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"unreadable validation.json ({type(exc).__name__}: {exc})", file=os.fspath(p)) from None
    trials, data = [], {}
    for i, cls, run_dir, status in rows:
        if status == "failed" or not (run_dir / layout.SUMMARY).is_file():
            trials.append(Trial(i, cls, os.path.relpath(run_dir, folder), "failed", "the run did not finish",
                                None, None, None, False, None, None))
            continue
        data[i] = cd_data(run_dir)
        trials.append(evaluate(i, cls, run_dir, data[i], folder))
    _write(folder, {**meta, "reanalyzed_epoch_s": time.time()}, trials, data,
           complete=len(trials) == len(meta["planned"]), roc=bool(trials))
    return folder
