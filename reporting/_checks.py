"""The run verdict, in the spirit of TPC run rules and Lancet's coordinator:
each check is a small function returning ``(ok, reason)``; the run is
valid when every check passes. The reason is always filled in, so a
passing check still says what it looked at. Thresholds: reporting._thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wotbench.spec import Thresholds

__all__ = ["CHECKS", "run_checks", "stability_warnings"]

Check = tuple[bool, str]
A = dict[str, Any]


def _s(us: float) -> str:
    return f"{us / 1e6:g}s"


def check_measure_length(a: A, th: Thresholds) -> Check:
    ph, n = a["phases"], a["measure_counts"]["requests"]
    dur = ph["measure"][1] - ph["measure"][0]
    src = " (no phases.json: the whole trace counts as measurement)" if ph["inferred"] else ""
    if dur < th.min_measure_us:
        return False, f"measurement phase {_s(dur)} is shorter than {_s(th.min_measure_us)}{src}"
    if n < th.min_requests:
        return False, f"only {n} requests in the measurement phase (need {th.min_requests}){src}"
    return True, f"measurement phase {_s(dur)} with {n} requests{src}"


def check_rate(a: A, th: Thresholds) -> Check:
    bad = []
    for g in a["ges"]:
        dev = g["rate_dev"]
        if dev is None or abs(dev) > th.rate_tolerance:
            got = f"{g['achieved_rate']:.1f}/s" if g["achieved_rate"] is not None else "no rate"
            tgt = f"{g['target_rate']:.1f}/s" if g["target_rate"] is not None else "?"
            bad.append(f"GE {g['ge']} sent {got} vs target {tgt}"
                       + (f" ({dev:+.1%})" if dev is not None else ""))
    if bad:
        return False, "; ".join(bad) + f" (tolerance {th.rate_tolerance:.0%})"
    return True, f"achieved send rate within {th.rate_tolerance:.0%} of the target for every GE"


def check_rit(a: A, th: Thresholds) -> Check:
    """Judged on what the devices under test see (paper section 6.1): a GE
    whose aggregate stream is floored at some minimum gap may still deliver
    every device's RITs faithfully when the per-device load is low (paper
    Table 1, ten devices); that case is a warning, not a failure."""
    dev_bad = [d for d in a["devices"] if not d["rit_ok"]]
    if dev_bad:
        shown = "; ".join(f"device {d['device_id']}: {', '.join(d['rit_problems'])}" for d in dev_bad[:3])
        more = f" (and {len(dev_bad) - 3} more)" if len(dev_bad) > 3 else ""
        ges = sorted({d["ge"] for d in dev_bad})
        return False, (f"submitted workload deviates from the expected one for {len(dev_bad)} device(s): "
                       f"{shown}{more}; GE {', '.join(map(str, ges))} could not keep up: "
                       f"use more GE instances (gateway.instances)")
    return True, "submitted RITs match the expected ones (mean, p5, KS) for every device"


def check_send_lag(a: A, th: Thresholds) -> Check:
    bad = [f"GE {g['ge']} p99 send lag {g['send_lag_us']['p99']:.0f}us"
           for g in a["ges"] if g["send_lag_us"]["p99"] is not None
           and g["send_lag_us"]["p99"] > th.send_lag_p99_max_us]
    if bad:
        return False, "; ".join(bad) + f" > {th.send_lag_p99_max_us:.0f}us: the GE fell behind its schedule"
    return True, f"p99 send lag within {th.send_lag_p99_max_us:.0f}us for every GE"


def check_errors(a: A, th: Thresholds) -> Check:
    c = a["measure_counts"]
    rate = (c["requests"] - c["ok"]) / c["requests"] if c["requests"] else 0.0
    what = f"{c['timeouts']} timeouts and {c['errors']} errors of {c['requests']} requests ({rate:.2%})"
    if rate > th.max_error_rate:
        return False, f"{what} > {th.max_error_rate:.1%}"
    return True, what


def check_contention(a: A, th: Thresholds) -> Check:
    cd = a["cd"]
    if cd is None:
        return (not th.require_cd), "no CD data (cd/cd-ge.csv): contention was not tested"
    status = cd["contention"]["status"]
    reason = cd["contention"]["reason"]
    if status == "contention":
        return False, reason
    if status == "unknown":
        return (not th.require_cd), reason
    return True, reason


def check_monitor(a: A, th: Thresholds) -> Check:
    m = a["monitor"]
    if not m["present"]:
        return (not th.require_monitor), "no monitor data (monitor/host.csv)"
    if not m["covers_measure"]:
        return (not th.require_monitor), "monitor data does not cover the measurement phase"
    return True, f"monitor data present ({m['samples']} samples in the measurement phase)"


def check_placement(a: A, th: Thresholds) -> Check:
    p = a["placement"]
    if p is None:
        return True, "placement unknown (no manifest.json)"
    if not p["degraded"]:
        return True, "placement as planned: dedicated GE cores"
    notes = "; ".join(p["notes"])
    status = a["cd"]["contention"]["status"] if a["cd"] else "unknown"
    if status == "none":
        return True, ("placement degraded (cores shared" + (f": {notes}" if notes else "")
                      + "), accepted because the contention detector ruled contention out")
    return False, ("placement degraded (cores shared" + (f": {notes}" if notes else "")
                   + f") and the contention detector could not rule contention out ({status})")


CHECKS: tuple[tuple[str, Callable[[A, Thresholds], Check]], ...] = (
    ("measurement", check_measure_length),
    ("rate", check_rate),
    ("rit_integrity", check_rit),
    ("send_lag", check_send_lag),
    ("errors", check_errors),
    ("contention", check_contention),
    ("monitor", check_monitor),
    ("placement", check_placement),
)


def run_checks(a: A, th: Thresholds) -> tuple[str, list[str], list[dict[str, Any]]]:
    """(verdict, reasons of the failed checks, every check with ok and reason)."""
    results = []
    for name, fn in CHECKS:
        ok, reason = fn(a, th)
        results.append({"check": name, "ok": bool(ok), "reason": reason})
    reasons = [r["reason"] if r["reason"].startswith(r["check"]) else f"{r['check']}: {r['reason']}"
               for r in results if not r["ok"]]
    return ("valid" if not reasons else "invalid"), reasons, results


def stability_warnings(a: A, th: Thresholds) -> list[str]:
    """pyperf-style warnings: numbers that are not wrong but may not be stable."""
    out = []
    ges_with_bad_devices = {d["ge"] for d in a["devices"] if not d["rit_ok"]}
    for g in a["ges"]:
        if not g["rit"]["ok"] and g["ge"] not in ges_with_bad_devices:
            out.append(f"GE {g['ge']}'s aggregate stream deviates from the trace ({'; '.join(g['rit']['problems'])}); "
                       f"the devices' RITs are still within tolerance, but more GE instances would remove the doubt")
        cv = g["response_window_cv"]
        if cv is not None and cv > th.instability_cv:
            out.append(f"GE {g['ge']}: mean response time varies {cv:.0%} between the ten slices of "
                       f"the measurement phase (> {th.instability_cv:.0%}): the result may be unstable; "
                       f"run longer or check the host")
    few = [d["device_id"] for d in a["devices"] if d["ok"] < th.min_device_samples]
    if few:
        out.append(f"{len(few)} device(s) have fewer than {th.min_device_samples} measured responses "
                   f"(e.g. {', '.join(map(str, few[:5]))}): their percentiles are not reliable")
    if a["cd"] is not None:
        c = a["cd"]["contention"]
        if c["status"] == "inconclusive":
            out.append(c["reason"])
        n = c["measure"]["n"]
        if 0 < n < 30:
            out.append(f"only {n} CD samples in the measurement phase: the contention test has little power")
    if a["phases"]["inferred"]:
        out.append("no phases.json: the whole trace is treated as the measurement phase (no warm-up cut)")
    return out
