"""A run's figures, matching the paper's where there is one, as PNG bytes
(the sweep's, the paper's Figs. 5b, 7, 8, 9, are in _sweepfigs). Every
axis says what and in which unit, every axes has a title, every legend
sits outside the data (``_legend_outside``), and every figure comes with a
caption that says what to look for; distributions are drawn from
precomputed quantile grids, so a 10-million-request run draws as fast as
a small one.

``run_figures`` and ``host_figures`` return ``FigureEntry`` tuples: (file
stem, caption, PNG, title), in reading order; the sweep's figures are in
:mod:`wotbench.reporting._sweepfigs`, drawn with this module's helpers.
"""

from __future__ import annotations

import io
import re
from collections.abc import Collection, Sequence
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.units import fmt_duration_us
from wotbench.reporting._analyze import QGRID, Analysis
from wotbench.reporting._congestion import read_rto, rto_bins
from wotbench.reporting._host import CdPlot
from wotbench.reporting._hostchecks import clock_note
from wotbench.reporting._injected import mark_interference
from wotbench.reporting._timeline import MEM_SERIES, run_timeline

__all__ = ["FigureEntry", "run_figures", "host_figures", "mark_interference"]

#: One figure of a report: (file stem, caption: what it shows and what to look for, PNG, title).
FigureEntry = tuple[str, str, bytes, str]

_PHASE_COLORS = {"calibration": "#d9e8f5", "warmup": "#f2f2f2", "measure": "#ffffff", "cooldown": "#f2f2f2"}
_C_EXP, _C_SUB, _C_CD, _C_BAD = "#1f77b4", "#d62728", "#2ca02c", "#d62728"


def _legend_outside(ax: Axes, *twins: Axes, below: bool = False, **kw: Any) -> None:
    """One legend for ``ax`` (and the twin axes drawn over it), outside the
    data: right of the axes, or below the whole figure (``below``: a twin's
    axis labels take the right side). Each label once; none: no legend."""
    seen: dict[str, Any] = {}
    for a in (ax, *twins):
        for h, lbl in zip(*a.get_legend_handles_labels(), strict=True):
            seen.setdefault(lbl, h)
    if not seen:
        return
    kw.setdefault("fontsize", 7)
    if below:
        ax.figure.legend(list(seen.values()), list(seen.keys()), loc="outside lower center",
                         ncol=min(3, len(seen)), **kw)
    else:
        ax.legend(list(seen.values()), list(seen.keys()), loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, **kw)


def _fig(w: float = 7.5, h: float = 4.2) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=(w, h), dpi=110, layout="constrained")
    ax.grid(True, alpha=0.3)
    return fig, ax


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def _shade_phases(ax: Axes, phases: dict[str, Any], label: bool = True) -> None:
    for name in ("calibration", "warmup", "cooldown"):
        w = phases.get(name)
        if w:
            ax.axvspan(w[0] / 1e6, w[1] / 1e6, color=_PHASE_COLORS[name], zorder=0,
                       label=f"{name} phase" if label else None)
    m = phases["measure"]
    ax.axvline(m[0] / 1e6, color="0.5", lw=0.8, ls=":")
    ax.axvline(m[1] / 1e6, color="0.5", lw=0.8, ls=":")


def fig_rit_cdf(an: Analysis, k: int) -> bytes | None:
    """Paper Fig. 6: CDF of expected vs submitted RIT, zoom on the lowest decile."""
    g = an.ges[k]
    if not _has([g.rit_expected_q, g.rit_submitted_q]):
        return None
    fig, (ax, zoom) = plt.subplots(1, 2, figsize=(9, 4.2), dpi=110, layout="constrained",
                                   gridspec_kw={"width_ratios": [1.6, 1]})
    for a in (ax, zoom):
        a.grid(True, alpha=0.3)
        a.plot(g.rit_expected_q, QGRID, color=_C_EXP, lw=2, label="expected (trace)")
        a.plot(g.rit_submitted_q, QGRID, color=_C_SUB, lw=1.5, ls="--", label="submitted (GE)")
    pos = g.rit_expected_q[np.isfinite(g.rit_expected_q) & (g.rit_expected_q > 0)]
    if pos.size:
        ax.set_xscale("log")
    ax.set_xlabel("request inter-arrival time (us, log scale)")
    ax.set_ylabel("cumulative fraction of requests")
    ax.set_title(f"GE {g.ge}: RIT, expected vs submitted")
    _legend_outside(ax, below=True, fontsize=8)
    lo = QGRID <= 0.1
    low = np.concatenate([g.rit_expected_q[lo], g.rit_submitted_q[lo]])
    xmax = float(np.max(low[np.isfinite(low)])) if np.isfinite(low).any() else 0.0
    if xmax > 0:
        zoom.set_xlim(0, xmax * 1.05)
    zoom.set_ylim(0, 0.1)
    zoom.set_xlabel("request inter-arrival time (us)")
    zoom.set_ylabel("cumulative fraction")
    zoom.set_title("zoom: lowest decile")
    return _png(fig)


def _ccdf(ax: Axes, q: np.ndarray, **kw: Any) -> None:
    y = 1.0 - QGRID
    keep = np.isfinite(q) & (y > 0)
    ax.plot(np.maximum(q[keep], 0.1), y[keep], **kw)


def _has(qs: list[np.ndarray]) -> bool:
    return any(np.isfinite(q).any() for q in qs)


def fig_send_lag(an: Analysis) -> bytes | None:
    if not _has([g.send_lag_q for g in an.ges]):
        return None
    fig, ax = _fig()
    for g in an.ges:
        _ccdf(ax, g.send_lag_q, lw=1.8, label=f"GE {g.ge}")
    th = an.result["thresholds"]["send_lag_p99_max_us"]
    ax.axvline(th, color=_C_BAD, ls=":", lw=1, label=f"p99 limit {fmt_duration_us(th)}")
    ax.axhline(0.01, color="0.5", ls=":", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("send lag: actual minus intended send time (us, log scale)")
    ax.set_ylabel("fraction of requests later than x")
    ax.set_title("Send lag (measurement phase)")
    _legend_outside(ax)
    return _png(fig)


def fig_observe_cdf(an: Analysis) -> bytes | None:
    """Observe: CDF of the notifications' latency and age (measurement phase)."""
    o = an.observe
    if o is None or not (np.isfinite(o.latency).any() or np.isfinite(o.age).any()):
        return None
    fig, ax = _fig()
    for v, label, ls in ((o.latency, "latency: device send to GE receipt", "-"),
                         (o.age, "age: event to GE receipt", "--")):
        v = v[np.isfinite(v)]
        if v.size:
            step = max(1, v.size // 4000)      # at most ~4000 points drawn
            ax.plot(np.maximum(v[::step], 0.1) / 1000, np.arange(1, v.size + 1)[::step] / v.size, ls=ls, lw=1.6,
                    label=label)
    ax.set_xscale("log")
    ax.set_xlabel("time (ms, log scale)")
    ax.set_ylabel("fraction of notifications")
    ax.set_title("Observe notifications (measurement phase)")
    _legend_outside(ax)
    return _png(fig)


def fig_response_dist(an: Analysis) -> bytes | None:
    if not _has([g.response_q for g in an.ges]):
        return None
    fig, ax = _fig()
    for g in an.ges:
        _ccdf(ax, g.response_q, lw=1.8, label=f"GE {g.ge}: response time (measured from send)")
        _ccdf(ax, g.latency_intended_q, lw=1.2, ls="--",
              label=f"GE {g.ge}: latency from intended send (CO-corrected)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time (us, log scale)")
    ax.set_ylabel("fraction of responses slower than x")
    ax.set_title("Response-time distribution (measurement phase)")
    _legend_outside(ax, below=True)
    return _png(fig)


def _workload_span_s(phases: dict[str, Any]) -> tuple[float, float]:
    """The workload's span (warm-up start .. cool-down end, s since t0)."""
    spans = [phases[k] for k in ("warmup", "measure", "cooldown") if phases.get(k)]
    return min(w[0] for w in spans) / 1e6, max(w[1] for w in spans) / 1e6


def whole_seconds(ps: pd.DataFrame, phases: dict[str, Any]) -> pd.DataFrame:
    """The per-second rows of the seconds the workload fills whole: none of
    the calibration seconds (no workload requests) and not the first or last
    second when the workload starts or ends inside it."""
    lo, hi = _workload_span_s(phases)
    t = ps["t_s"].astype(float)
    whole: pd.DataFrame = ps[(t >= np.ceil(lo - 1e-6)) & (t + 1 <= np.floor(hi + 1e-6))]
    return whole


def fig_timeline(an: Analysis) -> bytes | None:
    if all(g.per_second.empty for g in an.ges):
        return None
    fig, ax = _fig(8.5, 4.8)
    ax2 = ax.twinx()
    phases = an.result["phases"]
    for g in an.ges:
        ps = whole_seconds(g.per_second, phases)
        ax.step(ps["t_s"], ps["ok"], where="post", lw=1.2, label=f"GE {g.ge}: responses/s")
        ax2.plot(ps["t_s"] + 0.5, ps["response_mean_us"] / 1e3, ".", ms=3, color=_C_SUB,
                 label=f"GE {g.ge}: mean response time")
    _shade_phases(ax, phases)
    mark_interference(ax, an.result.get("interference"))
    ax.set_xlabel("time since t0 (s); whole seconds of the workload only")
    ax.set_ylabel("throughput (responses/s)")
    ax2.set_ylabel("mean response time (ms)", color=_C_SUB)
    ax.set_title("Throughput and response time over the run")
    _legend_outside(ax, ax2, below=True, fontsize=8)
    ax.set_ylim(bottom=0)
    return _png(fig)


def fig_cd(an: Analysis) -> bytes | None:
    """CD node R_d over time, windowed median, baseline and contention onset."""
    if an.cd is None or an.result["cd"] is None:
        return None
    return _fig_cd(an.cd, an.result["cd"], an.result["phases"], "CD node", an.result.get("interference"))


def _fig_cd(cd: CdPlot, sec: dict[str, Any], phases: dict[str, Any], who: str,
            intervals: Sequence[dict[str, Any]] | None = None) -> bytes:
    c = sec["contention"]
    fig, ax = _fig(8.5, 4.4)
    _shade_phases(ax, phases)
    mark_interference(ax, intervals)
    ax.plot(cd.t_us / 1e6, cd.rd, ".", ms=3, color="0.45", label="R_d per CD request")
    base = c["baseline"]["median"]
    if base is not None:
        ref = "warm-up" if c.get("reference") == "warm-up" else "calibration"
        ax.axhline(base, color=_C_EXP, lw=1.2, label=f"{ref} baseline (median {base:.3f})")
    tau = cd_threshold(c)
    if tau is not None:
        ax.axhline(tau[0], color=_C_BAD, lw=1.0, ls="--", label=tau[1])
    last = float(np.nanmax(cd.t_us)) / 1e6 if cd.t_us.size else 0.0
    for i, w in enumerate(c["windows"]):
        ax.hlines(w["median_rd"], w["start_us"] / 1e6, min(w["end_us"] / 1e6, last), lw=2.5,
                  color=_C_BAD if w["flagged"] else _C_CD,
                  label=("window median (flagged)" if w["flagged"] else "window median") if i < 2 else "_nolegend_")
    if c["onset_us"] is not None:
        ax.axvline(c["onset_us"] / 1e6, color=_C_BAD, lw=1.5, label=f"contention onset {c['onset_us'] / 1e6:.0f} s")
    finite = cd.rd[np.isfinite(cd.rd)]
    if finite.size:
        lo, hi = np.percentile(finite, [0.5, 99.5])
        hi = max(hi, tau[0]) if tau is not None else hi      # the threshold stays in view
        pad = 0.1 * (hi - lo + 1e-3)
        ax.set_ylim(min(lo, base if base is not None else lo) - pad, hi + pad)
    ax.set_xlabel("time since t0 (s)")
    ax.set_ylabel("R_d = (R - S) / S")
    title = {"contention": "contention detected", "none": "no contention", "inconclusive": "inconclusive",
             "unknown": "not tested"}.get(c["status"], c["status"])
    if c["status"] == "contention" and c["onset_us"] is not None:
        title += f" from t = {c['onset_us'] / 1e6:.0f} s"
    elif c["p_value"] is not None:
        title += f" (whole-phase p = {c['p_value']:.2g})"
    ax.set_title(f"{who} R_d: {title}")
    _legend_outside(ax)
    return _png(fig)


def cd_threshold(c: dict[str, Any]) -> tuple[float, str] | None:
    """The R_d level the contention check alarms above, and its label: the
    CUSUM's tau (``contention.cusum.tau``), the one number the check used;
    without a CUSUM design, the baseline median + min effect, saying so."""
    tau = (c.get("cusum") or {}).get("tau")
    if isinstance(tau, (int, float)):
        return float(tau), f"alarm threshold tau {tau:.3f} (used by the check)"
    base = c["baseline"]["median"]
    if base is None:
        return None
    return (base + c["min_effect"],
            f"baseline + min effect {c['min_effect']:g} (no alarm threshold: the check had no CUSUM design)")


def fig_cpu(an: Analysis) -> bytes | None:
    """Paper Fig. 5b's data over time: CPU utilisation per CPU (and per container role)."""
    if an.host_cpu is None:
        return None
    return _fig_cpu(an.host_cpu, an.result["phases"], an.container_cpu, "Host CPU utilisation",
                    an.result.get("interference"), ge_cores(an.result.get("placement")))


def ge_cores(placement: dict[str, Any] | None) -> set[int]:
    """The cores a placement gave the GEs (which busy-poll them), from the
    result's ``placement`` brief (empty when it does not say)."""
    cores = (placement or {}).get("ge_cores") if isinstance(placement, dict) else None
    return {int(c) for c in cores or () if isinstance(c, int)}


def _cpu_label(col: str, ge: Collection[int]) -> str:
    n = col[3:]
    return f"{col} (GE core: busy-polls, 100 % is expected)" if n.isdigit() and int(n) in ge else col


def _fig_cpu(h: pd.DataFrame, phases: dict[str, Any], containers: pd.DataFrame | None, title: str,
             intervals: Sequence[dict[str, Any]] | None = None, ge: Collection[int] = ()) -> bytes:
    fig, ax = _fig(8.5, 4.2)
    _shade_phases(ax, phases)
    mark_interference(ax, intervals)
    for c in h.columns:
        if c.startswith("cpu"):
            ax.plot(h["t_s"], h[c], lw=1, label=_cpu_label(c, ge), ls="--" if _cpu_label(c, ge) != c else "-")
    ax.plot(h["t_s"], h["all"], lw=2.2, color="k", label="all CPUs")
    if containers is not None:
        for role, d in containers.groupby("role"):
            ax.plot(d["t_s"], d["cpu_pct"] / max(1, sum(1 for c in h.columns if c.startswith("cpu"))),
                    lw=1, ls="--", label=f"containers: {role} (share of all CPUs)")
    ax.set_ylim(0, 105)
    ax.set_xlabel("time since t0 (s)")
    ax.set_ylabel("CPU utilisation (%)")
    ax.set_title(title)
    _legend_outside(ax)
    return _png(fig)


def fig_devices(an: Analysis) -> bytes | None:
    """Per-device response time vs per-device throughput (one run's view of Fig. 7) and R_d."""
    devs = [d for d in an.result["devices"] if d["response_mean_us"] is not None]
    if not devs:
        return None
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=110, layout="constrained")
    for a in (ax, ax2):
        a.grid(True, alpha=0.3)
    x = np.array([d["throughput"] for d in devs])
    ax.scatter(x, [d["response_mean_us"] / 1e3 for d in devs], s=14, label="mean")
    ax.scatter(x, [d["response_p95_us"] / 1e3 for d in devs], s=10, marker="^", alpha=0.6, label="p95")
    ax.set_xlabel("per-device throughput (responses/s)")
    ax.set_ylabel("response time (ms)")
    ax.set_title("Devices: response time vs throughput")
    _legend_outside(ax)
    rd = np.array([d["rd_ratio"] if d["rd_ratio"] is not None else np.nan for d in devs])
    ids = [d["device_id"] for d in devs]
    order = np.argsort(ids)
    ax2.bar(np.arange(len(devs)), rd[order], color=_C_EXP, label="device R_d")
    cd = an.result["cd"]
    if cd is not None and cd["contention"]["measure"]["median"] is not None:
        ax2.axhline(cd["contention"]["measure"]["median"], color=_C_CD, lw=1.5,
                    label="CD node R_d (median" + (f", host {cd['host']})" if cd.get("host") else ")"))
    ax2.set_xlabel("device (by id)" if len(devs) > 30 else "device id")
    if len(devs) <= 30:
        ax2.set_xticks(np.arange(len(devs)), [str(ids[i]) for i in order], fontsize=7)
    ax2.set_ylabel("R_d = (mean R - mean S) / mean S")
    ax2.set_title("Normalized response-time deviation")
    _legend_outside(ax2)
    return _png(fig)


def fig_soak(an: Analysis) -> bytes | None:
    """Per window: rate, send lag / response p50-p99, host CPU, memory of each component."""
    tl = run_timeline(an)
    if tl is None:
        return None
    w = tl.windows
    fig, axs = plt.subplots(4, 1, figsize=(7.5, 9.5), dpi=110, layout="constrained", sharex=True)
    x = w["t_s"] + tl.window_s / 2
    lo, hi = _workload_span_s(an.result["phases"])
    partial = (w["t_s"] < lo - 1e-6) | (w["t_s"] + tl.window_s > hi + 1e-6)
    axs[0].plot(x, w["rate_per_s"].mask(partial), label="sent/s")
    axs[0].plot(x, w["ok_per_s"].mask(partial), ls="--", label="ok/s")
    axs[0].set_ylabel("requests/s")
    axs[0].set_title("Requests per second, per window")
    for col, ls in (("lag_p50_ms", ":"), ("lag_p99_ms", "-"), ("rt_p50_ms", ":"), ("rt_p99_ms", "-")):
        axs[1].plot(x, w[col].mask(partial), ls=ls, label=col.replace("_ms", "").replace("_", " "))
    axs[1].set_yscale("log")
    axs[1].set_ylabel("ms")
    axs[1].set_title("Send lag and response time, per window")
    if "host_cpu_pct" in w:
        axs[2].plot(x, w["host_cpu_pct"], label="host CPU % (all cores)")
    axs[2].set_ylabel("%")
    axs[2].set_title("Host CPU utilisation, per window")
    if "host_mem_mb" in w:
        axs[3].plot(x, w["host_mem_mb"], color="k", lw=1, label="host memory used")
    colour: dict[str, str] = {}
    for col, label in MEM_SERIES.items():     # anonymous memory dashed, in its series' colour
        base = col.removesuffix("_anon")
        if col in w:
            colour.setdefault(base, f"C{len(colour)}")
            axs[3].plot(x, w[col], label=label, color=colour[base], linestyle="--" if col != base else "-")
    axs[3].set_ylabel("MiB")
    axs[3].set_yscale("log")
    axs[3].set_title("Memory, per window (dashed: anonymous memory alone)")
    axs[3].set_xlabel(f"s since t0 ({tl.window_s:g} s windows)")
    for ax in axs:
        ax.grid(True, alpha=0.3)
        _shade_phases(ax, an.result["phases"], label=False)
        _legend_outside(ax)
    return _png(fig)


#: Peers drawn one by one in the RTO figure; with more, their median and range.
_RTO_PEERS = 8


def fig_rto(an: Analysis) -> bytes | None:
    """The RTO over time per peer: each peer's median RTO per time bin, from
    the GEs' RTO logs (ge/rto-<k>.csv); with many peers their median and
    range per bin."""
    frames = []
    for k in (g["ge"] for g in an.result.get("ges", ())):
        path = an.path / layout.GE / layout.ge_rto(int(k))
        try:
            d = read_rto(path)
        except UserError:            # missing or damaged: the congestion part says so
            continue
        frames.append(d.assign(peer=f"GE {k} " + d["peer"].astype(str)))
    rto = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if rto.empty:
        return None
    ph = an.result["phases"]
    b = rto_bins(rto, (float(min(rto["t_us"].min(), ph["measure"][0])), float(max(rto["t_us"].max(),
                                                                                   ph["measure"][1]))))
    fig, ax = _fig()
    peers = b["peer"].unique()
    if len(peers) <= _RTO_PEERS:
        for peer in peers:
            d = b[b["peer"] == peer]
            ax.step(d["t_s"], d["rto_median_us"] / 1e3, where="post", label=str(peer))
    else:
        g = b.groupby("t_s")["rto_median_us"]
        med, lo, hi = g.median(), g.min(), g.max()
        ax.fill_between(med.index, lo / 1e3, hi / 1e3, step="post", alpha=0.25, label=f"range of {len(peers)} peers")
        ax.step(med.index, med / 1e3, where="post", label="median over peers")
    ax.set_yscale("log")
    ax.set_xlabel("time since t0 (s)")
    ax.set_ylabel("RTO, median per bin (ms)")
    ax.set_title(f"RTO over time per peer ({an.result.get('congestion', {}).get('strategy') or 'strategy unknown'})")
    ax.grid(True, alpha=0.3)
    _shade_phases(ax, ph, label=False)
    _legend_outside(ax)
    return _png(fig)


def run_figures(an: Analysis) -> list[FigureEntry]:
    """(file stem, caption, PNG, title) for one run, in reading order; a
    figure without data is left out."""
    out: list[tuple[str, str, bytes | None, str]] = [
        ("timeline", "Throughput and mean response time per second of the workload. Look for a flat line in the "
                     "measurement phase (between the dotted lines): a dip or a climb there means the devices or "
                     "the GE fell behind. Shaded: calibration, warm-up and cool-down, and injected interference, "
                     "if any. Only whole seconds are drawn: the first and last seconds are partial, and "
                     "calibration seconds have no workload requests.", fig_timeline(an),
         "Throughput and response time over the run"),
    ]
    for k in range(len(an.ges)):
        ge = an.ges[k].ge
        out.append((f"rit-cdf-ge{ge}", "CDF of expected (trace) vs submitted (GE) request inter-arrival times, "
                    "with the lowest decile enlarged (paper Fig. 6). The two curves should lie on top of each "
                    "other; a gap, or a vertical step at the left of the zoom, means the GE could not keep the "
                    "schedule (it cannot send faster than some minimum gap).", fig_rit_cdf(an, k),
                    f"GE {ge}: request inter-arrival times, expected vs submitted"))
    out += [
        ("send-lag", "How late requests left the GE relative to their schedule (complementary CDF). The curve "
                     "should cross the 1 % line (dotted, horizontal) left of the p99 limit (red, vertical); a "
                     "long tail to the right means the GE was late.", fig_send_lag(an), "Send lag"),
        ("response", "Response time measured from the actual send, and latency from the intended send "
                     "(coordinated-omission corrected, as wrk2 reports). Where the dashed curve leaves the solid "
                     "one, requests waited in the GE before they were sent.", fig_response_dist(an),
         "Response-time distribution"),
        ("observe-cdf", "Observe: CDF of the notifications' latency (device send stamp to the GE's kernel receive "
                        "stamp) and age (event to receipt), measurement phase. A long right tail means "
                        "notifications queued.", fig_observe_cdf(an), "Observe notifications"),
        ("cd-rd", "Contention detector: R_d of each CD request over time, the calibration baseline, the alarm "
                  "threshold tau the check used, and the per-window medians. Look for window medians that stay "
                  "above the threshold (red: flagged): that is contention; scattered points above it are "
                  "normal.", fig_cd(an), "Contention detector"),
        ("devices", "Per device: mean and p95 response time against throughput, and R_d. Devices should form "
                    "one cloud and their R_d bars sit near the CD node's line; a device far above the rest was "
                    "slowed by something the others were not.", fig_devices(an), "Devices"),
        ("cpu", "Host CPU utilisation from the resource monitor (collectl). A GE's core (dashed, labelled) "
                "busy-polls and sits at 100 % by design; look at the other cores: a device core near 100 % "
                "means the devices ran out of CPU.", fig_cpu(an), "Host CPU utilisation"),
        ("rto", "Congestion control: the RTO estimate over time per peer (median per time bin of the GEs' "
                "per-exchange RTO logs, ge/rto-<k>.csv); log scale. A climbing RTO means retransmissions "
                "backed off.", fig_rto(an), "RTO over time"),
        ("soak", "Timeline per window: rate, send lag and response time (p50 dotted, p99 solid; windows the "
                 "workload fills whole only), host CPU and memory of the host, the GE, devices, CD pair and "
                 "harness (see Timeline and drift). Look for a line that keeps rising in the measurement phase: "
                 "a leak or a backlog.", fig_soak(an),
         "Timeline per window"),
    ]
    out += host_figures(an)
    return [(n, c, p, t) for n, c, p, t in out if p is not None]


def _on_host(intervals: Sequence[dict[str, Any]] | None, hostname: str) -> list[dict[str, Any]]:
    """The interference episodes that ran on one host of a swarm."""
    return [e for e in intervals or () if e.get("node") in (None, hostname)]


def host_figures(an: Analysis) -> list[tuple[str, str, bytes | None, str]]:
    """A run across a swarm: each host's CD R_d and CPU utilisation, as
    (file stem, caption, PNG or None, title)."""
    out: list[tuple[str, str, bytes | None, str]] = []
    phases = an.result["phases"]
    for hp in an.hosts:
        s = an.result["hosts"][hp.hostname]
        slug = re.sub(r"[^A-Za-z0-9_.-]", "_", hp.hostname)
        if hp.cd is not None and s["cd"] is not None:
            out.append((f"cd-rd-{slug}", f"Host {hp.hostname}: its CD node's R_d over time (its CD-GE's clock, "
                        f"on t0{clock_note(s) or ' (the GE node)'}), baseline, alarm threshold tau and window "
                        "medians. Window medians that stay above the threshold mean contention on this host.",
                        _fig_cd(hp.cd, s["cd"], phases, f"{hp.hostname}: CD node",
                                _on_host(an.result.get("interference"), hp.hostname)),
                        f"Host {hp.hostname}: contention detector"))
        if hp.cpu is not None:
            ge = ge_cores(s.get("placement")) if s.get("ge_node") else set()
            out.append((f"cpu-{slug}", f"Host {hp.hostname}: CPU utilisation (collectl on that host)."
                        + (" A GE's core (dashed, labelled) busy-polls and sits at 100 % by design." if ge else "")
                        + " A device core near 100 % means the devices ran out of CPU.",
                        _fig_cpu(hp.cpu, phases, None, f"Host {hp.hostname}: CPU utilisation",
                                 _on_host(an.result.get("interference"), hp.hostname), ge),
                        f"Host {hp.hostname}: CPU utilisation"))
    return out
