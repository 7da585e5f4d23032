"""One host's contention detection and monitor data: the ``cd`` and
``monitor`` sections of the analysis. A run on one host has one such host
(the run folder); a run across a swarm one per ``nodes/<hostname>/``, each
analysed by the same code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wotbench.cd import ContentionResult, combine, detect_change, detect_contention, normalized_deviation
from wotbench.reporting._integrity import LATENCY_QUANTILES, GeArrays, dist
from wotbench.reporting._load import ANALYSIS_COLUMNS, Phases, read_ge_table
from wotbench.spec import Thresholds

__all__ = ["CdPlot", "CdTests", "cd_section", "cd_series", "cd_tests", "cd_change", "host_cpu", "monitor_section"]


@dataclass
class CdPlot:
    """The CD-GE's requests of one host (what the R_d figure draws, and the
    same-host R - S of the cross-host comparison)."""

    t_us: np.ndarray
    """intended send, us from t0"""
    rd: np.ndarray
    response_us: np.ndarray
    """R = recv - sent (NaN without a 2.05)"""
    service_us: float | None
    """S echoed by the CD node (median)"""


def host_cpu(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """Utilisation % per CPU from collectl's idle % (harness monitor columns cpu<N>_idle)."""
    if df is None:
        return None
    idle = [c for c in df.columns if c.startswith("cpu") and c.endswith("_idle") and c[3:-5].isdigit()]
    if not idle:
        return None
    out = pd.DataFrame({"t_s": df["t_us"].to_numpy(dtype=np.float64) / 1e6})
    for c in sorted(idle, key=lambda c: int(c[3:-5])):
        out[c[:-5]] = 100.0 - pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=np.float64)
    out["all"] = out[[c[:-5] for c in idle]].mean(axis=1)
    return out.sort_values("t_s", ignore_index=True)


def monitor_section(host: pd.DataFrame | None, raw_present: bool, phases: Phases) -> dict[str, Any]:
    if host is None:
        return {"present": raw_present, "covers_measure": False, "samples": 0, "cpu_util_mean": None,
                "cpu_util_max": None, "per_cpu_mean": {}}
    a, b = phases.measure[0] / 1e6, phases.measure[1] / 1e6
    m = host[(host["t_s"] >= a) & (host["t_s"] < b)]
    per_cpu = {c: float(m[c].mean()) for c in host.columns if c.startswith("cpu") and len(m)}
    # Sampled once a second: covering means samples over at least half of the phase.
    covers = len(m) >= max(1, 0.5 * (b - a))
    return {"present": True, "covers_measure": bool(covers), "samples": int(len(m)),
            "cpu_util_mean": float(m["all"].mean()) if len(m) else None,
            "cpu_util_max": float(m["all"].max()) if len(m) else None, "per_cpu_mean": per_cpu}


def cd_series(cd_csv: Path) -> tuple[GeArrays, np.ndarray, np.ndarray]:
    """One CD-GE output: its arrays, the response time (NaN without a
    response) and R_d of every CD request."""
    t = GeArrays.from_table(read_ge_table(cd_csv, ANALYSIS_COLUMNS))
    resp = np.where(t.ok, t.response, np.nan)
    return t, resp, normalized_deviation(resp, t.service)


@dataclass(frozen=True)
class CdTests:
    """One CD series' two contention tests and the verdict they make together."""

    paper: ContentionResult
    """The paper's test: R_d in the measurement against the calibration (the idle host)."""
    change: ContentionResult
    """The change test: R_d in the measurement against the warm-up (the host already carrying the run)."""
    verdict: ContentionResult
    """wotbench.cd.combine(paper, change): contention when either alarms (the run's verdict)."""


def cd_tests(intended_us: np.ndarray, rd: np.ndarray, phases: Phases, th: Thresholds,
             alpha: float | None = None, service_us: float | None = None, describe: bool = True) -> CdTests:
    """The run's contention tests with its thresholds (``alpha``: another
    cd_alpha, as validate-cd's ROC sweeps it): the paper's test against the
    calibration, its baseline first checked against what the CD node's
    service time ``service_us`` predicts, the change test against the
    warm-up (:func:`cd_change`), and their verdict."""
    paper = detect_contention(intended_us, rd, calibration=phases.calibration, measure=phases.measure,
                              alpha=th.cd_alpha if alpha is None else alpha, min_effect=th.cd_min_effect,
                              window_us=th.cd_window_us, min_samples=th.cd_min_samples, service_us=service_us,
                              baseline_rd_max=th.cd_baseline_rd_max, baseline_excess_us=th.cd_baseline_excess_us,
                              baseline_max_lost=th.cd_baseline_max_lost, min_duration_us=th.cd_min_duration_us,
                              describe=describe)
    change = cd_change(intended_us, rd, phases, th, alpha, describe=describe)
    return CdTests(paper, change, combine(paper, change))


def cd_change(intended_us: np.ndarray, rd: np.ndarray, phases: Phases, th: Thresholds,
              alpha: float | None = None, exceed: float | None = None, describe: bool = True) -> ContentionResult:
    """The change test alone (the CD node's R_d against the warm-up's q99) at
    the run's thresholds, or at ``alpha`` and design exceedance ``exceed``."""
    return detect_change(intended_us, rd, reference=phases.warmup, measure=phases.measure,
                         alpha=th.cd_alpha if alpha is None else alpha,
                         design_exceed=th.cd_change_exceed if exceed is None else exceed,
                         window_us=th.cd_window_us, min_samples=th.cd_min_samples,
                         min_duration_us=th.cd_min_duration_us, describe=describe)


def cd_section(cd_csv: Path | None, phases: Phases, th: Thresholds) -> tuple[dict[str, Any] | None, CdPlot | None]:
    """The contention test of one CD-GE output (its intended_us on t0)."""
    if cd_csv is None:
        return None, None
    t, resp, rd = cd_series(cd_csv)
    svc = t.service[np.isfinite(t.service)]
    s_us = float(np.median(svc)) if svc.size else None
    tests = cd_tests(t.intended, rd, phases, th, service_us=s_us)

    def resp_in(w: tuple[float, float] | None) -> dict[str, Any]:
        if w is None:
            return dist(np.zeros(0), LATENCY_QUANTILES)
        return dist(resp[(t.intended >= w[0]) & (t.intended < w[1])], LATENCY_QUANTILES)

    sec = {"requests": len(t), "ok": int(np.count_nonzero(t.ok)), "service_us": s_us,
           "response_calibration_us": resp_in(phases.calibration), "response_warmup_us": resp_in(phases.warmup),
           "response_measure_us": resp_in(phases.measure),
           "contention": tests.verdict.to_dict(), "change": tests.change.to_dict()}
    return sec, CdPlot(t.intended, rd, resp, s_us)
