"""Repetitions (issue 28, item 1): the runs of one test point grouped by
their label without ``rep=K``; per metric the median, the bootstrap 95 %
CI of the median and the worst repetition, checked against a hand
computation; the spread check as a warning and, with
``validity.repetition_spread_invalid``, as invalid; the error bars of the
figure; every table row as wide as its header."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from wotbench import UserError
from wotbench.base import rundir as layout
from wotbench.reporting import _plots, _sweepfigs
from wotbench.reporting import _repetitions as reps
from wotbench.reporting._analyze import QGRID, Analysis, analyze
from wotbench.reporting._render import sweep_html, sweep_markdown, write_reports
from wotbench.reporting._tables import check_table, sweep_row
from wotbench.reporting.bench.synth import synth_run
from wotbench.reporting.tests.conftest import BASE
from wotbench.spec import Thresholds, loads

POINT = "devices[0].count=4"


def _labelled(run: Path, label: str) -> Path:
    """The run's manifest.json with the test label a real run writes (harness/spec/_expand.py)."""
    m = json.loads((run / layout.MANIFEST).read_text())
    (run / layout.MANIFEST).write_text(json.dumps({**m, "label": label}))
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three repetitions of one point (same spec, seeds 1..3), and a set of
    two whose second has a slower service (the spread check)."""
    root = tmp_path_factory.mktemp("reps")
    same = [_labelled(synth_run(root / f"rep{k}", replace(BASE, seed=k)), f"{POINT} rep={k}") for k in (1, 2, 3)]
    apart = [_labelled(synth_run(root / "apart1", replace(BASE, seed=4)), "devices[0].count=5 rep=1"),
             _labelled(synth_run(root / "apart2", replace(BASE, seed=5, service_us=9000.0)),
                       "devices[0].count=5 rep=2")]
    ans = [analyze(d) for d in same + apart]
    return {"root": root, "same": same, "apart": apart, "ans": ans}


def _row(an: Analysis) -> dict[str, Any]:
    return {**sweep_row(an), **reps.repetition_fields(an)}      # as write_reports builds it


def test_point_of_reads_the_labels_the_spec_expands_to() -> None:
    tests = loads("name: x\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\nphases: {measure: 10s}\n"
                  "repetitions: 3\nsweep: {key: 'devices[0].count', values: [4, 8]}\n", "exp.yaml")
    got = [reps.point_of(t.label) for t in tests]
    assert got == [(f"devices[0].count={n}", k) for n in (4, 8) for k in (1, 2, 3)]
    assert reps.point_of("rep=2") == ("the test", 2)
    assert reps.point_of("devices[0].count=4") == ("devices[0].count=4", None)
    assert reps.point_of("x=prep=1") == ("x=prep=1", None)


def _exact_quantile(x: np.ndarray, q: float) -> float:
    """The q-quantile of the exact bootstrap distribution of the median of
    an odd number n of distinct values, by hand: the resampled median is at
    most the j-th smallest value iff at least (n + 1) / 2 of the n draws are
    among the j smallest, a binomial count with p = j / n."""
    n, s = x.size, np.sort(x)
    for j in range(1, n + 1):
        p = j / n
        cdf = sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range((n + 1) // 2, n + 1))
        if cdf >= q:
            return float(s[j - 1])
    raise AssertionError("unreachable")


def test_bootstrap_ci_against_the_exact_bootstrap_distribution() -> None:
    x = np.array([13.0, 11.0, 17.0, 10.0, 15.0, 12.0, 20.0])
    # n = 7: P(median <= x(1)) = 0.010, P(<= x(2)) = 0.114, so the 2.5 % point is x(2); the 97.5 % point x(6).
    assert (_exact_quantile(x, 0.025), _exact_quantile(x, 0.975)) == (11.0, 17.0)
    assert reps.bootstrap_ci(x) == (11.0, 17.0)
    # n = 3: the median of a resample is the smallest value with probability 7/27: the interval is the range.
    assert reps.bootstrap_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)
    assert reps.bootstrap_ci(x) == reps.bootstrap_ci(x)        # seeded


def test_median_ci_and_worst_of_three_repetitions(runs: dict[str, Any]) -> None:
    rows = [_row(a) for a in runs["ans"]]
    points = reps.repetition_points(rows)
    assert [(p.label, p.reps) for p in points] == [(POINT, ("rep=1", "rep=2", "rep=3")),
                                                  ("devices[0].count=5", ("rep=1", "rep=2"))]
    p = points[0]
    by = {s.metric.key: s for s in p.stats}
    # By hand from each repetition's analysis: ok responses that arrived in the measurement phase per
    # second (the congestion section's, counted from the GE CSV), the GE's p99.
    thr, p99 = [], []
    for a in runs["ans"][:3]:
        r = a.result
        m = r["phases"]["measure"]
        ge = pd.read_csv(layout.RunDir(a.path).ge_csv(0))
        thr.append(((ge.status == "ok") & (ge.recv_us >= m[0]) & (ge.recv_us < m[1])).sum() / ((m[1] - m[0]) / 1e6))
        p99.append(r["ges"][0]["response_us"]["p99"])
    assert len(set(thr)) == 3 and len(set(p99)) == 3            # the seeds differ
    assert by["throughput"].median == pytest.approx(sorted(thr)[1])
    assert by["throughput"].ci == pytest.approx((min(thr), max(thr)))
    assert by["throughput"].worst == pytest.approx(min(thr))
    assert by["throughput"].worst_rep == f"rep={thr.index(min(thr)) + 1}"
    assert by["response_p99_us"].median == pytest.approx(sorted(p99)[1])
    assert by["response_p99_us"].ci == pytest.approx((min(p99), max(p99)))
    assert by["response_p99_us"].worst_rep == f"rep={p99.index(max(p99)) + 1}"
    assert by["response_p99_us"].spread == pytest.approx((max(p99) - min(p99)) / sorted(p99)[1])
    rd = [float(np.median([d["rd_ratio"] for d in a.result["devices"]])) for a in runs["ans"][:3]]
    assert by["rd_median"].median == pytest.approx(sorted(rd)[1])
    # The spread check by hand: (max - min) / median of throughput and response time p50, p95, p99.
    p50 = [a.result["ges"][0]["response_us"]["p50"] for a in runs["ans"][:3]]
    p95 = [float(np.interp(0.95, QGRID, a.ges[0].response_q)) for a in runs["ans"][:3]]
    assert by["response_p95_us"].median == pytest.approx(sorted(p95)[1])
    spreads = [(max(v) - min(v)) / sorted(v)[1] for v in (thr, p50, p95, p99)]
    assert [s.spread for s in p.stats if s.metric.checked] == pytest.approx(spreads)
    assert p.status == ("warning" if max(spreads) > 0.20 else "consistent") and p.valid_runs == 3


def test_spread_beyond_the_limit_warns_by_default(runs: dict[str, Any]) -> None:
    p = reps.repetition_points([_row(a) for a in runs["ans"]])[1]
    assert p.spread_max == 0.20 and not p.spread_invalid          # the defaults
    names = {s.metric.key for s in p.beyond}
    assert {"response_p50_us", "response_p99_us"} <= names
    assert p.status == "warning"
    line = reps.consistency_line(p)
    assert "WARNING" in line and "response time p50" in line and "INVALID" not in line
    assert "no (warning)" in [row[-1] for row in reps.repetition_table(p)[1]]


def test_spread_invalid_mode_reaches_the_set_through_the_thresholds(runs: dict[str, Any]) -> None:
    th = Thresholds(max_repetition_spread=0.3, repetition_spread_invalid=True)
    rows = [_row(analyze(d, th)) for d in runs["apart"]]
    assert (rows[0]["rep_spread_max"], rows[0]["rep_spread_invalid"]) == (0.3, True)
    p = reps.repetition_points(rows)[0]
    assert p.status == "invalid" and "INVALID" in reps.consistency_line(p)
    assert "NO" in [row[-1] for row in reps.repetition_table(p)[1]]
    loose = [_row(analyze(d, Thresholds(max_repetition_spread=1.0, repetition_spread_invalid=True)))
             for d in runs["apart"]]
    p = reps.repetition_points(loose)[0]
    assert p.status == "consistent" and reps.consistency_line(p).endswith(": consistent.")


def test_spec_keys() -> None:
    base = "name: x\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\nphases: {measure: 10s}\n"
    th = loads(base + "validity: {max_repetition_spread: 5%, repetition_spread_invalid: true}\n",
               "exp.yaml")[0].spec.validity
    assert th.max_repetition_spread == pytest.approx(0.05) and th.repetition_spread_invalid is True
    with pytest.raises(UserError) as e:
        loads(base + "validity: {max_repetition_spread: 150%}\n", "exp.yaml")
    assert e.value.field == "validity.max_repetition_spread"


def test_tables_rows_match_their_headers_and_every_format_shows_them(runs: dict[str, Any]) -> None:
    rows = [_row(a) for a in runs["ans"]]
    points = reps.repetition_points(rows)
    for p in points:
        head, body = check_table(reps.repetition_table(p))
        assert len(body) == len(reps.METRICS) and all(len(r) == len(head) for r in body)
        assert not any("nan" in c for r in body for c in r)
    text = "\n".join(reps.repetition_text(points))
    assert f"== repetitions: {POINT}: 3 repetitions" in text and "95 % CI" in text
    md = sweep_markdown(rows, [], layout.FIGURES)
    assert "## Repetitions" in md and f"### {POINT}" in md
    page = sweep_html(rows, [])
    assert '<h2 id="repetitions">Repetitions</h2>' in page and page.count("95 % CI (bootstrap)") == 2
    assert reps.repetition_points(rows[:1]) == [] and reps.repetition_text([]) == []


def test_figure_has_the_intervals_as_error_bars(runs: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[Figure] = []

    def png(fig: Figure) -> bytes:
        fig.draw_without_rendering()
        drawn.append(fig)
        return b"png"

    monkeypatch.setattr(_plots, "_png", png)
    points = reps.repetition_points([_row(a) for a in runs["ans"]])
    with matplotlib.rc_context({"figure.max_open_warning": 0}):
        entries = _sweepfigs.repetition_figures(points)
    try:
        assert [e[0] for e in entries] == ["sweep-repetitions"] and entries[0][1].endswith(".")
        ax = drawn[0].axes[0]                      # throughput
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 1
        segs = bars[0].lines[2][0].get_segments()
        for i, p in enumerate(points):
            s = next(s for s in p.stats if s.metric.key == "throughput")
            assert s.ci is not None
            assert segs[i][:, 0].tolist() == [i, i]
            assert sorted(segs[i][:, 1].tolist()) == pytest.approx(list(s.ci))
    finally:
        for f in drawn:
            plt.close(f)
    assert _sweepfigs.repetition_figures([]) == []


@pytest.mark.slow          # three runs' own reports and figures: about 5 s
def test_write_reports_gives_the_sweep_its_repetitions(runs: dict[str, Any]) -> None:
    out = runs["root"] / "sweep"
    said: list[str] = []
    write_reports(runs["same"], out, echo=said.append)
    text = "\n".join(said)
    assert f"== repetitions: {POINT}: 3 repetitions (3 valid)" in text
    assert (out / layout.FIGURES / "sweep-repetitions.png").is_file()
    md = (out / layout.REPORT_MD).read_text()
    assert "## Repetitions" in md and "median across its 3 repetitions" in md     # the sweep figures' error bars
