"""`wotbench compare A B` of two sweeps or repetition sets. A side is a
folder of run folders (the ``--results`` folder of a sweep or of a
repetition set); its runs are grouped into test points by their label
without ``rep=K`` (_repetitions.point_of; a run without a label is the
point "the test"), and the points of A and B are matched by that label.

Each matched point is compared metric by metric (the two-run compare's
metrics, thresholds and verdicts), by one rule (docs/compare.md, "Two
sweeps or repetition sets"):

- **per repetition** when the point's n runs in A and m in B are enough
  for a Mann-Whitney interval at the asked confidence (``mw_rank(n, m,
  alpha) >= 1``: at least 4 and 4 at 95 %): each run's value of the metric
  is one observation, B's against A's by the Hodges-Lehmann shift with its
  Mann-Whitney interval, so the run-to-run noise is in the interval;
- **pooled** with fewer: each side's runs of the point as one sample (their
  requests together, each run sampled to at most cap / runs values),
  compared exactly as two runs are. Those intervals leave the run-to-run
  noise out, so with several runs on a side a change counts only when the
  runs also separate: every run's value in B beyond every run's value in A,
  in the direction of the change (else "no significant change", with a
  note). One run a side is the two-run compare itself.

Every run of a matched point, A's and B's, must have run the same workload
(workload_hash): checked for every point before any run is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir
from wotbench.reporting._compare import (
    IMPROVED,
    METRICS,
    NO_CHANGE,
    REGRESSED,
    Metric,
    Row,
    RunSample,
    Threshold,
    compare,
    missing_row,
    sample_run,
    verdict_row,
    workload_hash,
)
from wotbench.reporting._comparestats import hl_shift, mw_rank, order_quantile
from wotbench.reporting._repetitions import point_of, run_label

__all__ = ["THE_TEST", "PER_REPETITION", "POOLED", "Side", "Match", "PointResult", "is_run", "runs_in", "side",
           "match", "check_workloads", "run_values", "pool", "compare_point"]

#: The point of a run without a label (a spec without sweep or repetitions).
THE_TEST = "the test"
PER_REPETITION, POOLED = "per repetition", "pooled"


@dataclass(frozen=True)
class Side:
    """A or B: its folder and its runs by test point (in the order of each point's first run)."""

    path: Path
    points: dict[str, list[Path]]

    @property
    def runs(self) -> int:
        return sum(len(r) for r in self.points.values())


@dataclass(frozen=True)
class Match:
    pairs: list[tuple[str, list[Path], list[Path]]]
    """(point, A's runs, B's runs), in A's order."""
    only_a: list[str]
    only_b: list[str]


def is_run(path: Path) -> bool:
    """A run folder: it has a run's records, workload/, ge/ or a GE output."""
    run = RunDir(path)
    return (any(p.exists() for p in (run.manifest, run.summary, run.incomplete, run.workload, run.ge_dir))
            or any(path.glob(layout.GE_OUTPUT_GLOB)))


def runs_in(path: Path) -> list[Path] | None:
    """The run folders in ``path`` (its subfolders that are runs, by name);
    None when ``path`` is a run itself or holds no run."""
    if is_run(path):
        return None
    try:
        subs = sorted(p for p in path.iterdir() if p.is_dir() and is_run(p))
    except OSError as err:
        raise UserError(f"cannot list: {err.strerror or err}", path) from None
    return subs or None


def side(path: Path, runs: Sequence[Path]) -> Side:
    points: dict[str, list[Path]] = {}
    for r in runs:
        points.setdefault(point_of(run_label(r))[0] or THE_TEST, []).append(r)
    return Side(path, points)


def _names(points: Sequence[str], most: int = 4) -> str:
    shown = ", ".join(repr(p) for p in points[:most])
    return shown + (f" and {len(points) - most} more" if len(points) > most else "")


def match(a: Side, b: Side) -> Match:
    """The points of A that B has too; none: a UserError naming both sides' points."""
    pairs = [(p, ra, b.points[p]) for p, ra in a.points.items() if p in b.points]
    if not pairs:
        raise UserError(f"no test point of A is in B: A has {_names(list(a.points))}, B has {_names(list(b.points))} "
                        "(points are matched by their label without rep=K)", b.path, field="points")
    return Match(pairs, [p for p in a.points if p not in b.points], [p for p in b.points if p not in a.points])


def check_workloads(pairs: Sequence[tuple[str, list[Path], list[Path]]], allow: bool) -> list[str]:
    """Every run of a matched point (A's and B's) ran the workload of A's
    first run of it; otherwise a UserError naming the point and the run,
    or with ``allow`` a warning line per such point."""
    hashes: dict[Path, str | None] = {}

    def h(p: Path) -> str | None:
        if p not in hashes:
            hashes[p] = workload_hash(p)
        return hashes[p]

    warn = []
    for label, ra, rb in pairs:
        ref = h(ra[0])
        bad = next((r for r in [*ra, *rb] if ref is None or h(r) != ref), None)
        if bad is None:
            continue
        if allow:
            warn.append(f"warning: test point {label}: its runs ran different workloads (or some have no "
                        "workload/ files): the differences there are not only the system's")
        elif ref is None or h(bad) is None:
            raise UserError(f"test point {label!r}: no workload/ files: cannot tell whether A's and B's runs ran the "
                            "same workload (--allow-different-workloads compares them anyway)",
                            bad, field="workload")
        else:
            raise UserError(f"test point {label!r}: ran another workload than {ra[0].name} of A (sha256 "
                            f"{(h(bad) or '')[:12]} vs {ref[:12]}): refusing to compare (--allow-different-workloads "
                            "compares them with a warning)", bad, field="workload")
    return warn


def run_values(s: RunSample) -> dict[str, float | None]:
    """One run's value of each metric (the two-run compare's A and B
    columns): mean answered per second, the median response time, its
    p50/p95/p99, the send lag p99, the error rate, the median R_d."""
    resp, lag = np.sort(s.response), np.sort(s.lag)
    return {"throughput": float(s.ok_per_s.mean()), "response": float(np.median(resp)) if resp.size else None,
            "p50": order_quantile(resp, 0.50) if resp.size else None,
            "p95": order_quantile(resp, 0.95) if resp.size else None,
            "p99": order_quantile(resp, 0.99) if resp.size else None,
            "send_lag_p99": order_quantile(lag, 0.99) if lag.size else None,
            "errors": 1 - s.ok / s.requests if s.requests else None,
            "rd": float(np.median(s.rd)) if s.rd.size else None}


def pool(samples: Sequence[RunSample]) -> RunSample:
    """Several runs as one sample: counts summed, values concatenated; the
    verdict of the first run that is not valid, else valid."""
    if len(samples) == 1:
        return samples[0]
    bad = next((s for s in samples if s.verdict != "valid"), None)

    def cat(arrays: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(arrays)

    return RunSample(path=samples[0].path, run_id=", ".join(s.run_id for s in samples),
                     verdict=bad.verdict if bad else "valid", reasons=bad.reasons if bad else (),
                     measure_s=sum(s.measure_s for s in samples), requests=sum(s.requests for s in samples),
                     ok=sum(s.ok for s in samples), ok_per_s=cat([s.ok_per_s for s in samples]),
                     response=cat([s.response for s in samples]),
                     response_rows=sum(s.response_rows for s in samples), lag=cat([s.lag for s in samples]),
                     lag_rows=sum(s.lag_rows for s in samples), rd=cat([s.rd for s in samples]))


@dataclass(frozen=True)
class RunInfo:
    side: str
    run_id: str
    verdict: str | None
    reasons: tuple[str, ...]
    sampled: bool


@dataclass(frozen=True)
class PointResult:
    label: str
    n_a: int
    n_b: int
    mode: str
    """PER_REPETITION or POOLED."""
    rows: list[Row]
    runs: list[RunInfo]

    @property
    def regressed(self) -> list[str]:
        return [r.metric.key for r in self.rows if r.verdict == REGRESSED]


def _rep_row(m: Metric, va: list[float], vb: list[float], th: Threshold, alpha: float) -> Row:
    if mw_rank(len(va), len(vb), alpha) < 1:
        return missing_row(m, f"{len(va)} vs {len(vb)} runs with a value: too few for a {(1 - alpha) * 100:g} % "
                              "interval")
    est = hl_shift(np.asarray(va), np.asarray(vb), alpha)
    return verdict_row(m, float(np.median(va)), float(np.median(vb)), est, th,
                       f"Hodges-Lehmann over {len(va)} vs {len(vb)} runs, Mann-Whitney p={est.p_value:.2g}")


def _info(name: str, s: RunSample) -> RunInfo:
    return RunInfo(name, s.run_id, s.verdict, s.reasons, s.sampled)


def compare_point(label: str, ra: Sequence[Path], rb: Sequence[Path], th: dict[str, Threshold], alpha: float,
                  seed: int, cap: int) -> PointResult:
    """One matched point compared by the module's rule."""
    n, m = len(ra), len(rb)
    infos: list[RunInfo] = []
    if mw_rank(n, m, alpha) >= 1:
        vals: dict[str, list[dict[str, float | None]]] = {"A": [], "B": []}
        for name, paths in (("A", ra), ("B", rb)):
            for p in paths:                 # one run's sample at a time: only its values are kept
                s = sample_run(p, cap, seed)
                infos.append(_info(name, s))
                vals[name].append(run_values(s))
        rows = [_rep_row(mt, [v for d in vals["A"] if (v := d[mt.key]) is not None],
                         [v for d in vals["B"] if (v := d[mt.key]) is not None], th[mt.key], alpha) for mt in METRICS]
        return PointResult(label, n, m, PER_REPETITION, rows, infos)
    sides, values = [], []
    for name, paths in (("A", ra), ("B", rb)):
        got = [sample_run(p, max(1, cap // len(paths)), seed) for p in paths]
        infos += [_info(name, s) for s in got]
        values.append([run_values(s) for s in got])
        sides.append(pool(got))
    rows = compare(sides[0], sides[1], th, alpha, seed)
    if n > 1 or m > 1:
        rows = [_apart(r, [v for d in values[0] if (v := d[r.metric.key]) is not None],
                       [v for d in values[1] if (v := d[r.metric.key]) is not None], n, m) for r in rows]
    return PointResult(label, n, m, POOLED, rows, infos)


def _apart(r: Row, va: list[float], vb: list[float], n: int, m: int) -> Row:
    """A pooled row: its change stands only when the runs separate (every
    value of B's runs beyond every value of A's, in its direction)."""
    r = replace(r, method=f"pooled {n} vs {m} runs; {r.method}") if r.method else r
    if r.verdict not in (IMPROVED, REGRESSED) or r.est is None:
        return r
    up = r.est.diff > 0
    if va and vb and (min(vb) > max(va) if up else max(vb) < min(va)):
        return r
    return replace(r, verdict=NO_CHANGE, note="significant pooled, but the runs overlap (not every run of B is "
                                              "beyond every run of A)")

