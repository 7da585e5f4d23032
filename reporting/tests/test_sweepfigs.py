"""The sweep figures' error bars (issue 28, item 1): with repetitions each
test point is drawn at the median across its runs with the bootstrap 95 %
CI of that median as error bars (vertical, and horizontal on the measured
throughput axis), read back from the matplotlib artists; a point of one
run has none; a sweep without repetitions has no bars at all; each caption
says which and how many repetitions.

The rows are one synthetic run's sweep row with its numbers set per
repetition; for three distinct values the bootstrap interval of the median
is their range (a resample's median is the smallest value with probability
7/27 > 2.5 %; test_repetitions checks bootstrap_ci itself)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from wotbench.reporting import _plots, _sweepfigs
from wotbench.reporting._analyze import analyze
from wotbench.reporting._repetitions import repetition_fields
from wotbench.reporting._tables import sweep_row
from wotbench.reporting.bench.synth import synth_run
from wotbench.reporting.tests.conftest import BASE

#: Per point: devices and, per repetition, (throughput/device, mean response us, R_d devices, R_d CD, CPU %).
POINTS: dict[str, tuple[int, list[tuple[float, float, float, float, float]]]] = {
    "devices[0].count=4": (4, [(49.0, 5200.0, 0.04, 0.010, 20.0), (51.0, 5600.0, 0.06, 0.030, 22.0),
                               (50.0, 5000.0, 0.05, 0.020, 21.0)]),
    "devices[0].count=8": (8, [(47.0, 6100.0, 0.22, 0.050, 40.0), (45.0, 7300.0, 0.30, 0.070, 44.0),
                               (46.0, 6600.0, 0.25, 0.060, 42.0)]),
    "devices[0].count=12": (12, [(44.0, 8000.0, 0.40, 0.090, 60.0)]),       # one run: no bars
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    an = analyze(synth_run(tmp_path_factory.mktemp("sweepfigs") / "run", BASE))
    return {**sweep_row(an), **repetition_fields(an)}


def _rows(base: dict[str, Any], reps: bool = True) -> list[dict[str, Any]]:
    out = []
    for point, (devices, runs) in POINTS.items():
        for k, (thr, resp, rd, rd_cd, cpu) in enumerate(runs, 1):
            label = point if reps else f"{point} #{k}"      # without repetitions: each run its own point
            out.append({**base, "run": f"{label} rep={k}", "point": label, "rep": k, "devices": devices,
                        "throughput_per_device": thr, "response_mean_us": resp, "cd_response_mean_us": resp / 5,
                        "rd_devices": rd, "rd_cd": rd_cd, "cpu_util": cpu})
    return out


def _draw(rows: list[dict[str, Any]]) -> tuple[dict[str, tuple[str, Figure]], list[Figure]]:
    figs: list[Figure] = []

    def png(fig: Figure) -> bytes:
        figs.append(fig)
        return f"fig{len(figs) - 1}".encode()

    with pytest.MonkeyPatch.context() as mp, matplotlib.rc_context({"figure.max_open_warning": 0}):
        mp.setattr(_plots, "_png", png)
        entries = _sweepfigs.sweep_figures(rows)
    return {stem: (caption, figs[int(key[3:])]) for stem, caption, key, _ in entries}, figs


@pytest.fixture(scope="module")
def drawn(base: dict[str, Any]) -> Iterator[dict[str, Any]]:
    with_reps, f1 = _draw(_rows(base))
    without, f2 = _draw(_rows(base, reps=False))
    yield {"reps": with_reps, "single": without}
    for f in f1 + f2:
        plt.close(f)


def _bars(ax: Axes) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every error bar segment of the axes: (vertical ones, horizontal ones)."""
    segs = [s for c in ax.containers if isinstance(c, ErrorbarContainer) for lc in c.lines[2]
            for s in lc.get_segments()]
    return [s for s in segs if s[0, 0] == s[1, 0]], [s for s in segs if s[0, 1] == s[1, 1] and s[0, 0] != s[1, 0]]


def _at(segs: list[np.ndarray], x: float) -> list[list[float]]:
    return [sorted(s[:, 1].tolist()) for s in segs if s[0, 0] == pytest.approx(x)]


def test_points_are_medians_with_the_bootstrap_interval(base: dict[str, Any]) -> None:
    pts = {p.label: p for p in _sweepfigs.sweep_points(_rows(base))}
    assert list(pts) == list(POINTS)
    for label, (_, runs) in POINTS.items():
        p = pts[label]
        assert p.runs == len(runs)
        resp = [r[1] for r in runs]
        agg = p.values["response_mean_us"]
        assert agg.median == pytest.approx(float(np.median(resp)))
        assert agg.ci == (pytest.approx((min(resp), max(resp))) if len(runs) > 1 else None)


def test_response_figure_has_the_intervals_as_error_bars(drawn: dict[str, Any]) -> None:
    caption, fig = drawn["reps"]["sweep-response"]
    vertical, horizontal = _bars(fig.axes[0])
    assert len(vertical) == len(horizontal) == 2                  # the two points of three runs, none for one run
    for label in ("devices[0].count=4", "devices[0].count=8"):
        runs = POINTS[label][1]
        thr, resp = [r[0] for r in runs], [r[1] / 1e3 for r in runs]
        assert _at(vertical, float(np.median(thr))) == [pytest.approx([min(resp), max(resp)])]
        y = float(np.median(resp))
        assert [sorted(s[:, 0].tolist()) for s in horizontal if s[0, 1] == pytest.approx(y)] == [
            pytest.approx([min(thr), max(thr)])]
    assert not _at(vertical, POINTS["devices[0].count=12"][1][0][0])
    assert "median across its 3 repetitions" in caption and "bootstrap 95 % confidence interval" in caption
    assert "10,000 resamples" in caption and "Points of a single run have no bars." in caption


def test_cd_rd_and_cpu_figures_have_bars_too(drawn: dict[str, Any]) -> None:
    for stem, col in (("sweep-cd", None), ("sweep-rd", 2), ("sweep-rd", 3), ("sweep-cpu", 4)):
        caption, fig = drawn["reps"][stem]
        vertical, _ = _bars(fig.axes[0])
        assert "median across its 3 repetitions" in caption, stem
        for label in ("devices[0].count=4", "devices[0].count=8"):
            devices, runs = POINTS[label]
            if col is None:
                x, y = float(np.median([r[0] for r in runs])), [r[1] / 5e3 for r in runs]
            else:
                x, y = float(devices), [r[col] for r in runs]
            assert pytest.approx([min(y), max(y)]) in _at(vertical, x), (stem, label)
    _, fig = drawn["reps"]["sweep-rd"]
    assert not _at(_bars(fig.axes[0])[0], 12.0)


def test_without_repetitions_no_bars_and_the_caption_says_so(drawn: dict[str, Any]) -> None:
    assert set(drawn["single"]) == {"sweep-response", "sweep-cd", "sweep-rd", "sweep-cpu"}
    for stem, (caption, fig) in drawn["single"].items():
        assert not [c for ax in fig.axes for c in ax.containers if isinstance(c, ErrorbarContainer)], stem
        assert caption.endswith("One run per test point: no error bars."), stem
        assert fig.axes[0].has_data(), stem
