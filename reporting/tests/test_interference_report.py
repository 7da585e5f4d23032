"""Reporting of injected interference on a synthetic run: the intervals in
summary.json, a shaded span (with its legend entry) on every timeline
figure, and the Interference table in the three reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from matplotlib.patches import Polygon, Rectangle

from wotbench.base import rundir as layout
from wotbench.commands.main import main
from wotbench.reporting import _plots
from wotbench.reporting._analyze import analyze
from wotbench.reporting.bench.synth import SynthSpec, synth_run

ENTRIES = [
    {"name": "hog", "kind": "cpu", "threads": 2, "cores": "1", "node": None, "container": "wb-x-hog-hog",
     "buffer": None, "planned_start_us": 12_000_000, "planned_end_us": 30_000_000,
     "start_us": 12_000_050, "end_us": 30_000_400, "exit_code": 0, "reason": None, "interrupted": False,
     "loops": 123456789},
    {"name": "mem", "kind": "membw", "threads": 1, "cores": "1", "node": None, "container": "wb-x-hog-mem",
     "buffer": 1 << 26, "planned_start_us": 20_000_000, "planned_end_us": 25_000_000,
     "start_us": None, "end_us": None, "exit_code": 137, "reason": "the hog reported nothing"},
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    run = synth_run(tmp_path / "run", SynthSpec(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0,
                                                cooldown_s=1.0, calibration_s=15.0))
    (run / layout.INTERFERENCE).write_text(json.dumps(ENTRIES))
    return run


def _spans(ax: Any) -> list[tuple[float, float]]:
    """x extents of the axvspan patches (Rectangle or Polygon by matplotlib version)."""
    out = []
    for p in ax.patches:
        if isinstance(p, Polygon):
            xs = [float(x) for x in p.get_xy()[:, 0]]
        elif isinstance(p, Rectangle):
            xs = [p.get_x(), p.get_x() + p.get_width()]
        else:
            continue
        out.append((round(float(min(xs)), 3), round(float(max(xs)), 3)))
    return out


def test_summary_lists_intervals(run_dir: Path) -> None:
    an = analyze(run_dir)
    got = json.loads(json.dumps(an.result))["interference"]
    assert [e["name"] for e in got] == ["hog", "mem"]
    assert got[0]["start_us"] == 12_000_050 and got[1]["start_us"] is None
    assert got[1]["planned_end_us"] == 25_000_000 and got[1]["reason"]


def test_no_file_no_section(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = synth_run(tmp_path / "quiet", SynthSpec(devices=2, measure_s=20.0))
    an = analyze(run)
    assert an.result["interference"] is None
    figs: list[Any] = []

    def keep(fig: Any) -> bytes:
        figs.append(fig)
        return b""

    monkeypatch.setattr(_plots, "_png", keep)
    _plots.fig_timeline(an)
    assert not any("interference" in lbl for lbl in figs[0].axes[0].get_legend_handles_labels()[1])


def test_every_timeline_figure_is_marked(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    an = analyze(run_dir)
    figs: dict[str, Any] = {}
    monkeypatch.setattr(_plots, "_png", lambda fig: figs.setdefault(fig.axes[0].get_title(), fig) and b"png")
    for draw in (_plots.fig_timeline, _plots.fig_cd, _plots.fig_cpu):
        before = len(figs)
        assert draw(an) is not None
        assert len(figs) == before + 1, draw.__name__
    for title, fig in figs.items():
        ax = fig.axes[0]
        spans = _spans(ax)
        assert (12.0, 30.0) in spans, (title, spans)      # observed: 12.00005 .. 30.0004
        assert (20.0, 25.0) in spans, (title, spans)      # planned: the hog did not report
        labels = ax.get_legend_handles_labels()[1]
        assert "interference hog: 2 cpu thread(s) on cpuset 1" in labels, (title, labels)
        assert any(lbl.startswith("interference mem: 1 membw") and "planned" in lbl for lbl in labels)


def test_reports_have_the_table(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["report", str(run_dir)])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "Interference (injected; seconds since t0)" in out and "12.000 - 30.000" in out
    md = (run_dir / layout.REPORT / layout.REPORT_MD).read_text()
    assert "## Interference" in md and "| hog " in md and "the hog reported nothing" in md
    page = (run_dir / layout.REPORT / layout.REPORT_HTML).read_text()
    assert "<h2>Interference</h2>" in page
