"""Repetitions (a spec's ``repetitions: N``): the runs of one test point
grouped, and per metric the median across repetitions, a bootstrap 95 %
confidence interval of that median and the worst repetition; the
consistency check of a set (the spread between repetitions against
``validity.max_repetition_spread``); the table every report format shows
per point. The figures (the repetitions figure, the sweep figures' error
bars) are in :mod:`wotbench.reporting._sweepfigs`.

A run's point is its label (manifest.json or summary.json, e.g.
``devices[0].count=8 rep=2``) without its ``rep=K``; a run without a label
is a point of its own. Only points of two runs or more are repetition sets.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.units import MISSING, fmt_duration_us, fmt_num, fmt_rate
from wotbench.reporting._analyze import Analysis
from wotbench.reporting._load import find_files, read_json
from wotbench.reporting._tables import Table, md_table, text_table
from wotbench.reporting.catalogue import headline
from wotbench.spec import Thresholds

__all__ = ["METRICS", "RESAMPLES", "SEED", "CONFIDENCE", "MetricStats", "Point", "bootstrap_ci", "run_metrics",
           "point_of", "run_label", "group_points", "repetition_fields", "repetition_points", "repetition_table",
           "consistency_line", "repetition_text", "repetition_md", "repetition_html"]

#: Bootstrap resamples of each median, and the seed of their generator (a report is reproducible).
RESAMPLES, SEED, CONFIDENCE = 10_000, 28, 0.95


@dataclass(frozen=True)
class Metric:
    key: str
    name: str
    higher_is_better: bool
    checked: bool
    """Whether its spread is held to ``validity.max_repetition_spread``."""


#: The metrics of a repetition set, in table order.
METRICS = (Metric("throughput", "throughput (ok responses/s)", True, True),
           Metric("response_p50_us", "response time p50", False, True),
           Metric("response_p95_us", "response time p95", False, True),
           Metric("response_p99_us", "response time p99", False, True),
           Metric("send_lag_p99_us", "send lag p99", False, False),
           Metric("error_rate", "error rate", False, False),
           Metric("rd_median", "R_d median (devices)", False, False))

#: The limits of a run analysed before the repetition keys existed.
_DEFAULTS = Thresholds()

_REP = re.compile(r"(?:^|\s)rep=(\d+)(?=\s|$)")


def run_metrics(an: Analysis) -> dict[str, float | None]:
    """One run's metrics of a repetition set: the catalogue's headline
    (:func:`wotbench.reporting.catalogue.headline`, one definition for the
    catalogue, ``compare`` and repetitions) of the run's analysis: response
    time p50/p95/p99 of every GE's answered requests pooled, send lag p99
    of the worst GE, throughput = ok responses per second of the
    measurement phase, error rate = 1 - ok / requests, the devices' median
    R_d."""
    h = headline(an.result)
    return {m.key: h[m.key] for m in METRICS}


def run_label(run: Path) -> str:
    """A run folder's test label (summary.json, else manifest.json); "" without one."""
    files = find_files(run, need_ge=False)
    for path in (files.summary, files.manifest):
        if path is None:
            continue
        try:
            doc = read_json(path)
        except UserError:             # damaged: the run's own report says so
            continue
        if isinstance(doc, dict) and isinstance(doc.get("label"), str) and doc["label"]:
            return str(doc["label"])
    return ""


def point_of(label: str) -> tuple[str, int | None]:
    """A test label (harness/spec/_expand.py, ``devices[0].count=8 rep=2``)
    as (its point, its repetition): ``("devices[0].count=8", 2)``; a test
    without a sweep value is the point ``the test``; a label without
    ``rep=K`` is its own point (repetition None)."""
    m = _REP.search(label)
    if m is None:
        return label, None
    return " ".join(_REP.sub(" ", label).split()) or "the test", int(m.group(1))


def repetition_fields(an: Analysis) -> dict[str, Any]:
    """What a sweep row carries for the repetitions: the run's point (its
    label without ``rep=K``, else the run's folder), its repetition, its
    metrics and the thresholds of the consistency check."""
    point, rep = point_of(run_label(an.path))
    th = an.result.get("thresholds") or {}
    return {"point": point or an.path.name, "rep": rep,
            "rep_metrics": run_metrics(an),
            "rep_spread_max": float(th.get("max_repetition_spread", _DEFAULTS.max_repetition_spread)),
            "rep_spread_invalid": bool(th.get("repetition_spread_invalid", _DEFAULTS.repetition_spread_invalid))}


def bootstrap_ci(values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE, resamples: int = RESAMPLES,
                 seed: int = SEED) -> tuple[float, float]:
    """The percentile bootstrap interval of the median of ``values``:
    ``resamples`` resamples with replacement drawn at once (one seeded
    generator), the median of each, their (1 - confidence)/2 and
    (1 + confidence)/2 quantiles."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values")
    idx = np.random.default_rng(seed).integers(0, x.size, size=(resamples, x.size))
    med = np.median(x[idx], axis=1)
    lo, hi = np.quantile(med, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


@dataclass(frozen=True)
class MetricStats:
    metric: Metric
    n: int
    """Repetitions with a value."""
    median: float | None
    ci: tuple[float, float] | None
    worst: float | None
    worst_rep: str
    spread: float | None
    """(max - min) / |median|; None with fewer than two values or a zero median."""


@dataclass(frozen=True)
class Point:
    label: str
    runs: tuple[str, ...]
    reps: tuple[str, ...]
    valid_runs: int
    stats: tuple[MetricStats, ...]
    spread_max: float
    spread_invalid: bool

    @property
    def beyond(self) -> list[MetricStats]:
        """The checked metrics whose spread is beyond the limit."""
        return [s for s in self.stats if s.metric.checked and s.spread is not None and s.spread > self.spread_max]

    @property
    def status(self) -> str:
        """``consistent``, ``warning`` (spread beyond the limit) or ``invalid``
        (the same, with ``validity.repetition_spread_invalid``)."""
        return "consistent" if not self.beyond else "invalid" if self.spread_invalid else "warning"


def _stats(metric: Metric, rows: Sequence[dict[str, Any]], reps: Sequence[str]) -> MetricStats:
    got = [(r["rep_metrics"][metric.key], k) for r, k in zip(rows, reps, strict=True)
           if r["rep_metrics"].get(metric.key) is not None]
    if not got:
        return MetricStats(metric, 0, None, None, None, MISSING, None)
    x = np.array([v for v, _ in got], dtype=float)
    med = float(np.median(x))
    w = int(np.argmin(x) if metric.higher_is_better else np.argmax(x))
    spread = float((x.max() - x.min()) / abs(med)) if x.size > 1 and med != 0 else None
    return MetricStats(metric, x.size, med, bootstrap_ci(x) if x.size > 1 else None, float(x[w]), got[w][1], spread)


def group_points(rows: Sequence[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The sweep rows grouped by their test point (``point``, from
    repetition_fields), as (point, rows) in the order of each point's first
    run; a row without a point is a point of its own, named by its run."""
    groups: dict[tuple[str, Any], tuple[str, list[dict[str, Any]]]] = {}
    for i, r in enumerate(rows):
        key = ("point", r["point"]) if "point" in r else ("run", i)
        groups.setdefault(key, (str(r["point"] if "point" in r else r["run"]), []))[1].append(r)
    return list(groups.values())


def repetition_points(rows: Sequence[dict[str, Any]]) -> list[Point]:
    """The repetition sets among the sweep rows (points of two runs or
    more), in the order of their first run."""
    out = []
    for label, rs in group_points(rows):
        if len(rs) < 2 or "point" not in rs[0]:
            continue
        reps = tuple(f"rep={r['rep']}" if r["rep"] is not None else r["run"] for r in rs)
        out.append(Point(label, tuple(r["run"] for r in rs), reps, sum(r["verdict"] == "valid" for r in rs),
                         tuple(_stats(m, rs, reps) for m in METRICS), rs[0]["rep_spread_max"],
                         rs[0]["rep_spread_invalid"]))
    return out


def _fmt(metric: Metric, v: float | None) -> str:
    if v is None:
        return MISSING
    if metric.key == "throughput":
        return fmt_rate(v)
    if metric.key.endswith("_us"):
        return fmt_duration_us(v)
    if metric.key == "error_rate":
        return f"{v:.2%}"
    return f"{v:.4f}"


def _pct(v: float) -> str:
    return f"{fmt_num(v * 100)} %"


def repetition_table(p: Point) -> Table:
    """One row per metric: median, 95 % CI of the median (bootstrap), the
    worst repetition (its value and which), the spread and whether it is
    within the limit (checked metrics only)."""
    head = ["metric", "repetitions", "median", "95 % CI (bootstrap)", "worst", "worst run", "spread",
            "within limit"]
    rows = []
    for s in p.stats:
        m = s.metric
        ci = MISSING if s.ci is None else f"{_fmt(m, s.ci[0])} .. {_fmt(m, s.ci[1])}"
        ok = ("" if not m.checked or s.spread is None else "yes" if s.spread <= p.spread_max
              else "NO" if p.spread_invalid else "no (warning)")
        rows.append([m.name, str(s.n), _fmt(m, s.median), ci, _fmt(m, s.worst), s.worst_rep,
                     MISSING if s.spread is None else _pct(s.spread), ok])
    return head, rows


def consistency_line(p: Point) -> str:
    """The set's consistency verdict in one sentence."""
    head = (f"{p.label}: {len(p.runs)} repetitions ({p.valid_runs} valid); spread limit "
            f"{_pct(p.spread_max)} (validity.max_repetition_spread)")
    if not p.beyond:
        return f"{head}: consistent."
    what = ", ".join(f"{s.metric.name} {_pct(s.spread or 0.0)}" for s in p.beyond)
    if p.spread_invalid:
        return f"{head}: INVALID, the repetitions disagree beyond the limit: {what}."
    return f"{head}: WARNING, the repetitions disagree beyond the limit: {what}."


_NOTE = (f"Median across repetitions; CI: percentile bootstrap of the median ({RESAMPLES:,} resamples, seed {SEED}); "
         "worst: the lowest throughput, else the highest value; spread: (max - min) / median, held to the limit "
         "for throughput and response time. Response time pools every GE's requests; send lag is the worst GE's.")


def repetition_text(points: Sequence[Point]) -> list[str]:
    """The terminal's Repetitions section (none without a repetition set)."""
    out: list[str] = []
    for p in points:
        out += [f"== repetitions: {consistency_line(p)}", text_table(repetition_table(p))]
    return out + ([_NOTE] if points else [])


def repetition_md(points: Sequence[Point]) -> list[str]:
    """The Markdown Repetitions section."""
    if not points:
        return []
    out = ["## Repetitions", ""]
    for p in points:
        out += [f"### {p.label}", "", consistency_line(p), "", md_table(repetition_table(p)), ""]
    return out + [_NOTE, ""]


def repetition_html(points: Sequence[Point], html_table: Callable[[Table], str],
                    escape: Callable[[str], str]) -> list[str]:
    """The HTML Repetitions section."""
    if not points:
        return []
    out = ['<h2 id="repetitions">Repetitions</h2>']
    for p in points:
        cls = "" if p.status == "consistent" else ' class="fail"' if p.status == "invalid" else ' class="warn"'
        out += [f"<h3>{escape(p.label)}</h3>", f"<p{cls}>{escape(consistency_line(p))}</p>",
                html_table(repetition_table(p))]
    return out + [f'<p class="meta">{escape(_NOTE)}</p>']
