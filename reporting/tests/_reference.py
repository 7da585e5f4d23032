"""The in-memory reference of one GE's statistics (the report's first
analysis, per request on whole NumPy arrays): ``test_outofcore.py`` holds
the streaming pass (``_stream.GeStream``) to these numbers on runs that fit
in memory. Not production code: the report computes them in ``_stream``."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from wotbench.cd import normalized_deviation
from wotbench.reporting._integrity import KS_MAX_PAIRS, LATENCY_QUANTILES, GeArrays, _num, dist, rit_compare
from wotbench.spec import Thresholds

__all__ = ["ge_integrity", "per_device"]


def _rd_ratio(response: np.ndarray, service: np.ndarray) -> float | None:
    """(sum R - sum S) / sum S over answered requests: R_d of the mean response
    time. Unlike the mean of per-request R_d it is not dominated by requests
    whose S is tiny (where network time alone gives R_d >> 1); it is what
    the paper's Fig. 9 plots for devices with exponential service times."""
    keep = np.isfinite(response) & np.isfinite(service)
    s = float(service[keep].sum())
    return (float(response[keep].sum()) - s) / s if s > 0 else None


def window_cv(t: np.ndarray, x: np.ndarray, window: tuple[float, float], n_windows: int = 10) -> float | None:
    """Coefficient of variation of the per-window means of x over ``n_windows``
    equal slices of ``window`` (pyperf-style stability: spread vs mean)."""
    keep = np.isfinite(x)
    t, x = t[keep], x[keep]
    if x.size < 2 * n_windows:
        return None
    idx = np.clip(((t - window[0]) / (window[1] - window[0]) * n_windows).astype(np.int64), 0, n_windows - 1)
    counts = np.bincount(idx, minlength=n_windows)
    sums = np.bincount(idx, weights=x, minlength=n_windows)
    means = sums[counts > 0] / counts[counts > 0]
    if means.size < 2 or means.mean() == 0:
        return None
    return float(means.std(ddof=1) / means.mean())


def ge_integrity(a: GeArrays, window: tuple[float, float], th: Thresholds) -> dict[str, Any]:
    """Rates, RIT integrity, send lag, latency and errors of one GE's stream."""
    dur_s = (window[1] - window[0]) / 1e6
    sent_ok = np.isfinite(a.sent)
    target = len(a) / dur_s if dur_s > 0 else math.nan
    sent_in = np.count_nonzero((a.sent >= window[0]) & (a.sent < window[1]))
    achieved = sent_in / dur_s if dur_s > 0 else math.nan
    throughput = np.count_nonzero(a.ok) / dur_s if dur_s > 0 else math.nan
    # Like with like: the same requests' intended and actual send times.
    rit = rit_compare(np.diff(a.intended[sent_ok]), np.diff(a.sent[sent_ok]), th)
    n = len(a)
    n_ok = int(np.count_nonzero(a.ok))
    n_timeout = int(np.count_nonzero(a.timeout))
    rd = normalized_deviation(np.where(a.ok, a.response, np.nan), a.service)
    return {
        "requests": n, "ok": n_ok, "timeouts": n_timeout, "errors": n - n_ok - n_timeout,
        "never_sent": int(np.count_nonzero(a.timeout & ~sent_ok)),
        "error_rate": (n - n_ok) / n if n else None,
        "late_sends": int(np.count_nonzero(a.send_lag > th.late_send_us)),
        "overloaded": int(np.count_nonzero(a.overload)),
        "devices": int(np.unique(a.device).size),
        "duration_s": dur_s,
        "target_rate": _num(target), "achieved_rate": _num(achieved),
        "rate_dev": _num((achieved - target) / target) if target and math.isfinite(target) else None,
        "throughput": _num(throughput),
        "rit": rit,
        "send_lag_us": dist(a.send_lag, LATENCY_QUANTILES),
        "response_us": dist(np.where(a.ok, a.response, np.nan), LATENCY_QUANTILES),
        "latency_intended_us": dist(np.where(a.ok, a.latency_intended, np.nan), LATENCY_QUANTILES),
        "rd": {"mean": _num(np.nanmean(rd)) if np.isfinite(rd).any() else None,
               "median": _num(np.nanmedian(rd)) if np.isfinite(rd).any() else None,
               "ratio": _rd_ratio(np.where(a.ok, a.response, np.nan), a.service)},
        "response_window_cv": window_cv(a.intended, np.where(a.ok, a.response, np.nan), window),
    }


def per_device(a: GeArrays, window: tuple[float, float], th: Thresholds) -> list[dict[str, Any]]:
    """One row per device: counts, throughput, response time, R_d and RIT integrity."""
    if len(a) == 0:
        return []
    dur_s = (window[1] - window[0]) / 1e6
    # Stable: keeps trace (time) order within a device. Ids that fit 16 bits
    # (the usual case) sort by radix, about ten times faster than int32.
    key = a.device.astype(np.uint16) if a.device.min() >= 0 and a.device.max() < 1 << 16 else a.device
    order = np.argsort(key, kind="stable")
    dev = a.device[order]
    bounds = np.flatnonzero(np.diff(dev)) + 1
    starts = np.concatenate(([0], bounds))
    ends = np.concatenate((bounds, [dev.size]))
    intended, sent = a.intended[order], a.sent[order]
    ok, tmo = a.ok[order], a.timeout[order]
    resp = np.where(ok, a.response[order], np.nan)
    lat_i = np.where(ok, a.latency_intended[order], np.nan)
    svc = a.service[order]
    rd = normalized_deviation(resp, svc)
    # The per-device KS tests share one budget of pairs, so that their total
    # cost does not grow with the number of requests.
    ks_pairs = max(5000, 4 * KS_MAX_PAIRS // max(1, starts.size))
    rows = []
    for s, e in zip(starts, ends, strict=True):
        sl = slice(s, e)
        sent_ok = np.isfinite(sent[sl])
        rit = rit_compare(np.diff(intended[sl][sent_ok]), np.diff(sent[sl][sent_ok]), th, ks_pairs)
        r = resp[sl]
        rr = r[np.isfinite(r)]
        d = rd[sl]
        d = d[np.isfinite(d)]
        n_ok = int(np.count_nonzero(ok[sl]))
        p50, p95, p99 = np.percentile(rr, [50, 95, 99]) if rr.size else (math.nan,) * 3
        li = lat_i[sl]
        li = li[np.isfinite(li)]
        rows.append({
            "device_id": int(dev[s]), "requests": int(e - s), "ok": n_ok,
            "timeouts": int(np.count_nonzero(tmo[sl])),
            "never_sent": int(np.count_nonzero(tmo[sl] & ~np.isfinite(sent[sl]))),
            "error_rate": (int(e - s) - n_ok) / int(e - s),
            "throughput": n_ok / dur_s if dur_s > 0 else None,
            "response_mean_us": _num(rr.mean()) if rr.size else None,
            "response_p50_us": _num(p50), "response_p95_us": _num(p95), "response_p99_us": _num(p99),
            "latency_intended_p99_us": _num(np.percentile(li, 99)) if li.size else None,
            "rd_mean": _num(d.mean()) if d.size else None,
            "rd_ratio": _rd_ratio(r, svc[sl]),
            "rd_median": _num(np.median(d)) if d.size else None,
            "rit_expected_mean_us": rit["expected"]["mean"], "rit_expected_p5_us": rit["expected"]["p5"],
            "rit_submitted_mean_us": rit["submitted"]["mean"], "rit_submitted_p5_us": rit["submitted"]["p5"],
            "rit_ks_d": rit["ks_d"], "rit_ok": rit["ok"], "rit_problems": rit["problems"],
        })
    return rows
