"""The report's figures as a reader sees them (issue 27): every axes with
data has a title, no legend covers data (each sits outside every axes of
its figure), every figure comes with a title and a caption, the CD
figure's threshold is the tau the check used, the CPU figure says that the
GE's busy-polling core at 100 % is expected, and the timeline draws whole
seconds of the workload only.

The figures are drawn once per module (``_png`` captured, so no PNG is
encoded), on the synthetic single-host, swarm and sweep runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from wotbench.reporting import _plots, _sweepfigs
from wotbench.reporting._analyze import analyze
from wotbench.reporting._tables import sweep_row
from wotbench.reporting.bench.synth import SwarmSynth, synth_run, synth_swarm_run
from wotbench.reporting.tests.conftest import BASE

GE_CORE = 1


def _ge_cores(run: Path, swarm: bool) -> Path:
    """Name cpu1 as the GE's core in the manifest's placement (the harness writes ``ge_cores``)."""
    path = run / "manifest.json"
    m = json.loads(path.read_text())
    plans = [n["plan"] for n in m["placement"]["nodes"] if n["hostname"] == m["ge_node"]] if swarm \
        else [m["placement"]]
    for p in plans:
        p["ge_cores"] = [GE_CORE]
    path.write_text(json.dumps(m))
    return run


class Drawn:
    """The figures a call drew, by the PNG stand-in each returned."""

    def __init__(self) -> None:
        self.figs: dict[bytes, Figure] = {}

    def png(self, fig: Figure) -> bytes:
        key = f"fig{len(self.figs)}".encode()
        fig.draw_without_rendering()      # the layout: legends and axes get their extents
        self.figs[key] = fig
        return key


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("figs")
    single = analyze(_ge_cores(synth_run(root / "single", BASE), swarm=False))
    swarm = analyze(_ge_cores(synth_swarm_run(root / "swarm", BASE, SwarmSynth()), swarm=True))
    row = sweep_row(single)
    more = {**row, "devices": 8, "throughput_per_device": row["throughput_per_device"] * 1.1,
            "contention": "contention", "rd_cd": (row["rd_cd"] or 0.0) + 0.5}
    d = Drawn()
    with pytest.MonkeyPatch.context() as mp, matplotlib.rc_context({"figure.max_open_warning": 0}):
        mp.setattr(_plots, "_png", d.png)
        out = {"single": _plots.run_figures(single), "swarm": _plots.host_figures(swarm),
               "sweep": _sweepfigs.sweep_figures([row, more])}
    yield {"entries": out, "figs": d.figs, "an": {"single": single, "swarm": swarm}}
    for fig in d.figs.values():
        plt.close(fig)


def _all(drawn: dict[str, Any]) -> Iterator[tuple[str, str, Figure]]:
    for kind, entries in drawn["entries"].items():
        for stem, _, png, _ in entries:
            yield kind, stem, drawn["figs"][png]


def _fig(drawn: dict[str, Any], kind: str, stem: str) -> Figure:
    return next(f for k, s, f in _all(drawn) if (k, s) == (kind, stem))


def test_every_entry_has_a_title_and_a_caption(drawn: dict[str, Any]) -> None:
    stems = {k: [e[0] for e in v] for k, v in drawn["entries"].items()}
    assert {"timeline", "cd-rd", "cpu", "devices", "send-lag", "response", "rit-cdf-ge0"} <= set(stems["single"])
    assert {"cd-rd-node-a", "cd-rd-node-b", "cpu-node-a", "cpu-node-b"} <= set(stems["swarm"])
    assert len(stems["sweep"]) == 4
    for entries in drawn["entries"].values():
        for entry in entries:
            assert len(entry) == 4, entry[0]
            stem, caption, png, title = entry
            assert isinstance(png, bytes) and title.strip() and caption.endswith("."), stem
            assert len(caption.split(".")) > 2 or "should" in caption or "means" in caption, stem


def _twin_of_titled(ax: Any, fig: Figure) -> bool:
    """A twin axes (the same box as a titled axes) needs no title of its own."""
    return any(o is not ax and o.get_title() and np.allclose(o.get_position().bounds, ax.get_position().bounds)
               for o in fig.axes)


def test_every_axes_with_data_has_a_title(drawn: dict[str, Any]) -> None:
    for kind, stem, fig in _all(drawn):
        for ax in fig.axes:
            if ax.has_data() and not _twin_of_titled(ax, fig):
                assert ax.get_title().strip(), (kind, stem)


def test_no_legend_covers_an_axes(drawn: dict[str, Any]) -> None:
    n = 0
    for kind, stem, fig in _all(drawn):
        legends = [*fig.legends, *(leg for ax in fig.axes if (leg := ax.get_legend()) is not None)]
        for leg in legends:
            box = leg.get_window_extent()           # after the layout drawn in Drawn.png
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent()), (kind, stem, [t.get_text() for t in leg.texts])
            n += 1
    assert n >= 14


def test_the_cd_threshold_is_the_checks_tau(drawn: dict[str, Any]) -> None:
    for kind, stem in (("single", "cd-rd"), ("swarm", "cd-rd-node-b")):
        an = drawn["an"][kind]
        cd = an.result["cd"] if kind == "single" else an.result["hosts"]["node-b"]["cd"]
        tau = cd["contention"]["cusum"]["tau"]
        ax = _fig(drawn, kind, stem).axes[0]
        flat = {round(float(np.asarray(ln.get_ydata(), float)[0]), 9): str(ln.get_label()) for ln in ax.get_lines()
                if len(set(np.asarray(ln.get_ydata(), float))) == 1
                and np.asarray(ln.get_xdata(), float).tolist() == [0, 1]}
        assert flat[round(tau, 9)] == f"alarm threshold tau {tau:.3f} (used by the check)"
        assert not any("min effect" in lbl for lbl in flat.values())


def test_the_cd_threshold_falls_back_and_says_so() -> None:
    c = {"cusum": None, "baseline": {"median": 0.08}, "min_effect": 0.1}
    level, label = _plots.cd_threshold(c) or (None, "")
    assert level == pytest.approx(0.18) and "baseline + min effect" in label and "no alarm threshold" in label


def test_the_ge_core_is_labelled_busy_by_design(drawn: dict[str, Any]) -> None:
    for kind, stem in (("single", "cpu"), ("swarm", "cpu-node-a")):
        labels = _fig(drawn, kind, stem).axes[0].get_legend_handles_labels()[1]
        assert f"cpu{GE_CORE} (GE core: busy-polls, 100 % is expected)" in labels, (kind, labels)
        assert "cpu0" in labels
    labels = _fig(drawn, "swarm", "cpu-node-b").axes[0].get_legend_handles_labels()[1]
    assert not any("GE core" in lbl for lbl in labels)        # the GE runs on node-a only
    caption = next(c for s, c, _, _ in drawn["entries"]["single"] if s == "cpu")
    assert "100 %" in caption and "by design" in caption


def test_the_timeline_draws_whole_seconds_of_the_workload(drawn: dict[str, Any]) -> None:
    an = drawn["an"]["single"]
    ph = an.result["phases"]
    lo, hi = ph["warmup"][0] / 1e6, ph["cooldown"][1] / 1e6
    ax = _fig(drawn, "single", "timeline").axes[0]
    step = next(ln for ln in ax.get_lines() if str(ln.get_label()).endswith("responses/s"))
    x = np.asarray(step.get_xdata(), float)
    per_second = an.ges[0].per_second
    assert x.min() >= np.ceil(lo) and x.max() + 1 <= np.floor(hi)
    assert len(x) == len(_plots.whole_seconds(per_second, ph)) > 30
    assert (np.asarray(step.get_ydata(), float) > 0).all()
    caption = next(c for s, c, _, _ in drawn["entries"]["single"] if s == "timeline")
    assert "partial" in caption and "calibration seconds have no workload requests" in caption


def test_whole_seconds_drops_partial_edges() -> None:
    ps = pd.DataFrame({"t_s": np.arange(-3, 8), "ok": 1})
    phases = {"warmup": [-0.5e6, 1e6], "measure": [1e6, 6e6], "cooldown": [6e6, 7.4e6]}
    assert _plots.whole_seconds(ps, phases)["t_s"].tolist() == [0, 1, 2, 3, 4, 5, 6]


def test_the_soak_rates_leave_out_partial_windows(drawn: dict[str, Any]) -> None:
    ph = drawn["an"]["single"].result["phases"]
    lo, hi = ph["warmup"][0] / 1e6, ph["cooldown"][1] / 1e6
    rate = _fig(drawn, "single", "soak").axes[0].get_lines()[0]
    x, y = np.asarray(rate.get_xdata(), float), np.asarray(rate.get_ydata(), float)
    half = (x[1] - x[0]) / 2
    whole = (x - half >= lo - 1e-6) & (x + half <= hi + 1e-6)
    assert np.isfinite(y[whole]).all() and not np.isfinite(y[~whole]).any() and (~whole).any()
