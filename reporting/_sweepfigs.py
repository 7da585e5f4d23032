"""The sweep report's figures (``wotbench report`` of several runs), as
``FigureEntry`` tuples: device and CD-node response time against the
per-device throughput, R_d and host CPU against the number of devices (the
paper's Figs. 7, 8, 9 and 5b), and the repetitions figure.

A sweep with repetitions (``repetitions: N``) has several runs per test
point (the runs of one label without ``rep=K``: _repetitions.group_points).
Each point is drawn once, at the median across its runs, with the
bootstrap 95 % confidence interval of that median
(_repetitions.bootstrap_ci) as error bars, vertical and, on a throughput
axis (measured too), horizontal. A point of a single run has no bars; each
caption says what the bars are and how many runs a point has.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes

from wotbench.reporting import _plots as plots
from wotbench.reporting._plots import FigureEntry
from wotbench.reporting._repetitions import CONFIDENCE, RESAMPLES, Point, bootstrap_ci, group_points

__all__ = ["Agg", "SweepPoint", "sweep_points", "bars_caption", "sweep_figures", "repetition_figures"]


@dataclass(frozen=True)
class Agg:
    """One quantity of a test point across its runs."""

    median: float | None
    """The median of the runs' values; None when no run has one."""
    ci: tuple[float, float] | None = None
    """The bootstrap 95 % CI of the median; None with fewer than two values."""


#: The sweep rows' quantities a figure draws (_tables.sweep_row).
_FIELDS = ("throughput_per_device", "response_mean_us", "cd_response_mean_us", "rd_devices", "rd_cd",
           "rd_cd_baseline", "cpu_util")


def _agg(rows: Sequence[dict[str, Any]], key: str) -> Agg:
    x = [float(r[key]) for r in rows if r.get(key) is not None and np.isfinite(r[key])]
    if not x:
        return Agg(None)
    return Agg(float(np.median(x)), bootstrap_ci(x) if len(x) > 1 else None)


@dataclass(frozen=True)
class SweepPoint:
    label: str
    devices: int
    runs: int
    contention: int
    """Runs in which the CD module detected contention."""
    values: dict[str, Agg]


def sweep_points(rows: Sequence[dict[str, Any]]) -> list[SweepPoint]:
    """The sweep rows as test points (a run without repetitions is a point
    of its own), each quantity's median and interval across its runs."""
    return [SweepPoint(label, int(rs[0]["devices"]), len(rs), sum(r["contention"] == "contention" for r in rs),
                       {k: _agg(rs, k) for k in _FIELDS}) for label, rs in group_points(rows)]


def bars_caption(points: Sequence[SweepPoint]) -> str:
    """What the error bars are, and how many runs a point has."""
    many = sorted({p.runs for p in points if p.runs > 1})
    if not many:
        return "One run per test point: no error bars."
    n = str(many[0]) if len(many) == 1 else f"{many[0]}-{many[-1]}"
    text = (f"Each test point is the median across its {n} repetitions; the error bars are the bootstrap "
            f"{CONFIDENCE * 100:g} % confidence interval of that median ({RESAMPLES:,} resamples).")
    return text + (" Points of a single run have no bars." if any(p.runs == 1 for p in points) else "")


def _err(aggs: Sequence[Agg], scale: float) -> list[list[float]]:
    """Error bar lengths below and above each median (0 without an interval)."""
    lo = [max(0.0, a.median - a.ci[0]) * scale if a.ci and a.median is not None else 0.0 for a in aggs]
    hi = [max(0.0, a.ci[1] - a.median) * scale if a.ci and a.median is not None else 0.0 for a in aggs]
    return [lo, hi]


def _line(ax: Axes, points: Sequence[SweepPoint], x: Callable[[SweepPoint], Agg], y: str, fmt: str,
          yscale: float = 1.0, bars: bool = True, **kw: Any) -> None:
    """The points' medians as one line, ordered on x, with the error bars
    of those with an interval."""
    have = sorted([(xm, xa, ym * yscale, ya) for p in points
                   if (xm := (xa := x(p)).median) is not None and (ym := (ya := p.values[y]).median) is not None],
                  key=lambda h: h[0])
    if not have:
        return
    (line,) = ax.plot([h[0] for h in have], [h[2] for h in have], fmt, ms=5, **kw)
    barred = [h for h in have if h[3].ci is not None] if bars else []
    if barred:
        xa_ = [h[1] for h in barred]
        ax.errorbar([h[0] for h in barred], [h[2] for h in barred], yerr=_err([h[3] for h in barred], yscale),
                    xerr=_err(xa_, 1.0) if any(a.ci for a in xa_) else None, fmt="none",
                    ecolor=line.get_color(), elinewidth=1, capsize=3)


def _throughput(p: SweepPoint) -> Agg:
    return p.values["throughput_per_device"]


def _devices(p: SweepPoint) -> Agg:
    return Agg(float(p.devices))


def _by_devices(points: Sequence[SweepPoint]) -> dict[int, list[SweepPoint]]:
    groups: dict[int, list[SweepPoint]] = {}
    for p in points:
        groups.setdefault(p.devices, []).append(p)
    return dict(sorted(groups.items()))


def _per_devices(ax: Axes, points: Sequence[SweepPoint], y: str) -> None:
    for n, ps in _by_devices(points).items():
        _line(ax, ps, _throughput, y, "o-", 1e-3, label=f"{n} device{'s' if n != 1 else ''}")


def _fig_response(points: Sequence[SweepPoint], bars: str) -> FigureEntry:
    fig, ax = plots._fig()
    _per_devices(ax, points, "response_mean_us")
    ax.set_xlabel("per-device throughput (responses/s)")
    ax.set_ylabel("mean response time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("Devices: response time vs per-device throughput")
    plots._legend_outside(ax, title="configuration")
    return ("sweep-response", "Mean device response time against per-device throughput, one line per number of "
            f"devices (paper Fig. 7): lines that part at high load point to contention. {bars}", plots._png(fig),
            "Devices: response time vs throughput")


def _fig_cd(points: Sequence[SweepPoint], rows: Sequence[dict[str, Any]], bars: str) -> FigureEntry:
    fig, ax = plots._fig()
    _per_devices(ax, points, "cd_response_mean_us")
    svc = [r["cd_service_us"] for r in rows if r["cd_service_us"] is not None]
    if svc:
        ax.axhline(np.median(svc) / 1e3, color="0.4", ls=":", label="CD service time S")
    ax.set_xlabel("per-device throughput (responses/s)")
    ax.set_ylabel("CD node mean response time (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title("CD node: response time vs per-device throughput")
    plots._legend_outside(ax, title="configuration")
    return ("sweep-cd", "The CD node's mean response time in the same runs (paper Fig. 8). It should stay near S "
            f"(dotted) at every load; a rise with the devices' load means they share its CPU. {bars}",
            plots._png(fig), "CD node: response time vs throughput")


def _fig_rd(points: Sequence[SweepPoint], bars: str) -> FigureEntry:
    fig, ax = plots._fig()
    _line(ax, points, _devices, "rd_devices", "o-", color=plots._C_EXP, label="devices (R_d of mean response)")
    _line(ax, points, _devices, "rd_cd", "s-", color=plots._C_CD, label="CD node (mean R_d)")
    _line(ax, points, _devices, "rd_cd_baseline", ":", bars=False, color=plots._C_CD,
          label="CD node calibration baseline")
    bad = [(p.devices, rd) for p in points if p.contention and (rd := p.values["rd_cd"].median) is not None]
    if bad:
        ax.scatter([b[0] for b in bad], [b[1] for b in bad], s=160, facecolors="none",
                   edgecolors=plots._C_BAD, lw=2, label="contention detected", zorder=5)
    ax.set_xlabel("number of devices")
    ax.set_ylabel("R_d = (R - S) / S")
    ax.set_title("Normalized response-time deviation vs number of devices")
    plots._legend_outside(ax)
    return ("sweep-rd", "R_d of the devices and of the CD node against the number of devices (paper Fig. 9); "
            "circled: points where the CD module detected contention (in at least one of their runs). The CD "
            "node's line should stay on its baseline (dotted, the median baseline); where it leaves it, the "
            f"devices' numbers are the host's limit, not theirs. {bars}", plots._png(fig),
            "R_d vs number of devices")


def _fig_cpu(points: Sequence[SweepPoint], bars: str) -> FigureEntry:
    fig, ax = plots._fig()
    _line(ax, points, _devices, "cpu_util", "o-")
    ax.set_ylim(0, 105)
    ax.set_xlabel("number of devices")
    ax.set_ylabel("mean CPU utilisation, all CPUs (%)")
    ax.set_title("Host CPU utilisation vs number of devices")
    return ("sweep-cpu", "Mean host CPU utilisation during the measurement phase (paper Fig. 5b). Near 100 % the "
            f"host, not the devices, sets the limit. {bars}", plots._png(fig), "Host CPU vs number of devices")


def sweep_figures(rows: Sequence[dict[str, Any]]) -> list[FigureEntry]:
    """The sweep's figures from one row per run (_tables.sweep_row, with
    _repetitions.repetition_fields' ``point``: a row without one is a point
    of its own), in reading order."""
    points = sweep_points(rows)
    bars = bars_caption(points)
    out = [_fig_response(points, bars), _fig_cd(points, rows, bars), _fig_rd(points, bars)]
    if any(p.values["cpu_util"].median is not None for p in points):
        out.append(_fig_cpu(points, bars))
    return out


# --- the repetitions figure ---------------------------------------------------------

_PANELS = (("throughput", "ok responses/s", 1.0), ("response_p99_us", "response time p99 (ms)", 1e-3),
           ("rd_median", "R_d median (devices)", 1.0))


def _panel(ax: Any, points: Sequence[Point], key: str, ylabel: str, scale: float) -> None:
    x, y, lo, hi, worst = [], [], [], [], []
    for i, p in enumerate(points):
        s = next(s for s in p.stats if s.metric.key == key)
        if s.median is None:
            continue
        ci = s.ci or (s.median, s.median)
        x.append(i)
        y.append(s.median * scale)
        lo.append(max(0.0, s.median - ci[0]) * scale)
        hi.append(max(0.0, ci[1] - s.median) * scale)
        worst.append((s.median if s.worst is None else s.worst) * scale)  # a worst of 0 is drawn at 0
    ax.errorbar(x, y, yerr=[lo, hi], fmt="o", capsize=4, label="median, 95 % CI")
    ax.plot(x, worst, "x", color="#d62728", label="worst repetition")
    ax.set_xticks(range(len(points)), [p.label for p in points], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)


def repetition_figures(points: Sequence[Point]) -> list[FigureEntry]:
    """One figure of the repetition sets: per point the median of
    throughput, p99 response time and R_d with its bootstrap 95 % CI as
    error bars and the worst repetition marked; none without a set."""
    if not points:
        return []
    fig, axes = plt.subplots(1, len(_PANELS), figsize=(11, 4.2), dpi=110, layout="constrained")
    for ax, (key, ylabel, scale) in zip(axes, _PANELS, strict=True):
        _panel(ax, points, key, ylabel, scale)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=7)     # outside the data
    fig.suptitle("Repetitions: median and 95 % CI per test point")
    return [("sweep-repetitions", "The median across the repetitions of each test point with its bootstrap 95 % "
             "confidence interval (error bars) and the worst repetition (x). Intervals that do not overlap "
             "mean the points differ beyond the repetitions' noise.", plots._png(fig), "Repetitions per test point")]
