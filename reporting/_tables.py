"""The tables every report format shows (terminal, Markdown, HTML), as
(header, rows) of strings; and the number formatting they share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.reporting._analyze import Analysis
from wotbench.reporting._congestion import sweep_fields
from wotbench.reporting._hostchecks import clock_note, clock_offset
from wotbench.reporting._load import find_files, read_summary

__all__ = ["run_id", "run_notes", "APPROX_NOTE", "has_approx", "checks_table", "rit_table", "rate_table",
           "latency_table", "cd_table", "cd_stats_line", "cd_blocks", "hosts_table", "HOSTS_NOTE", "device_table",
           "group_table", "sweep_row", "sweep_table"]


# --- number formatting --------------------------------------------------------

def _us(v: float | None) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f} s"
    if abs(v) >= 1e3:
        return f"{v / 1e3:.2f} ms"
    return f"{v:.0f} us"


def _pct(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:+.{digits}%}"


def _uq(d: dict[str, Any], key: str) -> str:
    """A quantile of a dist dict; ``~`` when it came from the log-linear histogram (_sketch)."""
    return ("~" if d.get("exact", True) is False and d.get(key) is not None else "") + _us(d.get(key))


def _dq(d: dict[str, Any], key: str) -> str:
    """A device row's quantile, ``~`` when approximate."""
    return _uq({"exact": d.get("quantiles_exact", True), key: d.get(key)}, key)


#: Said under a report whose tables show approximate quantiles.
APPROX_NOTE = ("~: a quantile from a log-linear histogram, within 0.1 % of the exact one (more values than "
               "are kept for exact quantiles); counts, means, rates, min and max are always exact. KS tests use "
               "a uniform random sample of at most 200,000 pairs per GE (ks_pairs).")


def has_approx(r: dict[str, Any]) -> bool:
    """Whether any quantile of the result is approximate."""
    dists = [g[k] for g in r.get("ges", ()) for k in ("send_lag_us", "response_us", "latency_intended_us")]
    dists += [g["rit"][k] for g in r.get("ges", ()) for k in ("expected", "submitted")]
    return (any(d.get("exact") is False for d in dists)
            or any(d.get("quantiles_exact") is False for d in r.get("devices", ())))


def _f(v: float | None, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _p(v: float | None) -> str:
    return "-" if v is None else f"{v:.2g}"


# --- tables shared by every output format -------------------------------------------

def run_id(an: Analysis) -> str:
    files = find_files(an.path)
    if files.summary is not None:
        try:
            return read_summary(files.summary).run_id
        except UserError:       # damaged: run_notes says so
            pass
    return an.path.name


def run_notes(an: Analysis) -> list[str]:
    """What the run folder says beyond this analysis: an interrupted run, and
    a summary.json whose verdict differs (written by an older analysis)."""
    files = find_files(an.path)
    notes = []
    if files.incomplete is not None:
        first = files.incomplete.read_text(errors="replace").strip().splitlines()[:1]
        notes.append(f"run did not finish ({layout.INCOMPLETE})" + (f": {first[0]}" if first else ""))
    try:
        s = read_summary(files.summary) if files.summary is not None else None
    except UserError as err:
        notes.append(f"{layout.SUMMARY} cannot be read ({err}): this report is the only verdict")
        s = None
    if s is not None and (s.verdict, list(s.reasons)) != (an.result["verdict"], an.result["reasons"]):
        notes.append(f"{layout.SUMMARY} says {str(s.verdict).upper()}"
                     + (f" ({'; '.join(s.reasons)})" if s.reasons else "")
                     + ": it was written by another analysis of this run")
    if has_approx(an.result):
        notes.append(APPROX_NOTE)
    return notes


def checks_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    return ["check", "result", "detail"], [[c["check"], "PASS" if c["ok"] else "FAIL", c["reason"]]
                                          for c in r["checks"]]


def rit_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Paper Table 1 (mean and p5 of expected vs submitted RIT) plus p50/p95/p99 and KS."""
    head = ["GE", "devices", "RIT", "mean", "p5", "p50", "p95", "p99", "KS D", "KS p", "ok"]
    rows = []
    for g in r["ges"]:
        rit = g["rit"]
        for label, d in (("expected", rit["expected"]), ("submitted", rit["submitted"])):
            sub = label == "submitted"
            rows.append([str(g["ge"]) if not sub else "", str(g["devices"]) if not sub else "", label,
                         _us(d["mean"]), _uq(d, "p5"), _uq(d, "p50"), _uq(d, "p95"), _uq(d, "p99"),
                         _f(rit["ks_d"]) if sub else "", _p(rit["ks_p"]) if sub else "",
                         ("yes" if rit["ok"] else "NO") if sub else ""])
    return head, rows


def rate_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["GE", "target rate", "achieved", "deviation", "send lag p50", "p99", "p99.9", "max",
            "errors", "scheduler"]
    rows = [[str(g["ge"]), _f(g["target_rate"], ".1f") + "/s", _f(g["achieved_rate"], ".1f") + "/s",
             _pct(g["rate_dev"], 2), _uq(g["send_lag_us"], "p50"), _uq(g["send_lag_us"], "p99"),
             _uq(g["send_lag_us"], "p99_9"), _us(g["send_lag_us"]["max"]),
             _pct(g["error_rate"], 2).lstrip("+"), sched_cell(g.get("sched"))] for g in r["ges"]]
    return head, rows


def sched_cell(s: dict[str, Any] | None) -> str:
    """A GE's scheduler: FIFO with its RT budget, yields and stalls, or
    normal (and why, when FIFO was asked for and refused)."""
    if not s:
        return "-"
    if s.get("policy") == "fifo":
        return (f"FIFO {s['budget_us'] / s['period_us']:.0%} budget, {s['yields']} yields, "
                f"{s['stalls']} stalls")
    if s.get("requested") == "fifo":
        return f"normal (FIFO refused: {s.get('error')})"
    return "normal"


def latency_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    head = ["GE", "latency", "mean", "p50", "p90", "p99", "p99.9", "max"]
    rows = []
    for g in r["ges"]:
        for label, key in (("measured (recv - sent)", "response_us"),
                           ("from intended send", "latency_intended_us")):
            d = g[key]
            rows.append([str(g["ge"]) if key == "response_us" else "", label, _us(d["mean"]), _uq(d, "p50"),
                         _uq(d, "p90"), _uq(d, "p99"), _uq(d, "p99_9"), _us(d["max"])])
    return head, rows


def cd_table(cd: dict[str, Any] | None) -> tuple[list[str], list[list[str]]] | None:
    """One CD test: calibration against measurement."""
    if cd is None:
        return None
    c = cd["contention"]
    head = ["", "samples", "R_d median", "R_d mean", "R_d p95", "response p50", "response p99"]
    rows = [["calibration (CD pair alone)", str(c["baseline"]["n"]), _f(c["baseline"]["median"], ".4f"),
             _f(c["baseline"]["mean"], ".4f"), _f(c["baseline"]["p95"], ".4f"),
             _us(cd["response_calibration_us"]["p50"]), _us(cd["response_calibration_us"]["p99"])],
            ["measurement", str(c["measure"]["n"]), _f(c["measure"]["median"], ".4f"),
             _f(c["measure"]["mean"], ".4f"), _f(c["measure"]["p95"], ".4f"),
             _us(cd["response_measure_us"]["p50"]), _us(cd["response_measure_us"]["p99"])]]
    return head, rows


def cd_stats_line(cd: dict[str, Any] | None) -> str:
    if cd is None:
        return "no CD data"
    c = cd["contention"]
    ci = c["shift_ci"]
    parts = [f"status: {c['status']}", f"S = {_us(cd['service_us'])}"]
    if c["shift"] is not None:
        parts += [f"shift {c['shift']:+.4f} ({c['confidence']:.0%} CI {ci[0]:+.4f}..{ci[1]:+.4f})",
                  f"one-sided Mann-Whitney p = {_p(c['p_value'])} (alpha {c['alpha']:g})",
                  f"P(R_d above baseline) = {_f(c['prob_superiority'], '.2f')}",
                  f"min effect {c['min_effect']:g}", f"window {c['window_us'] / 1e6:g} s"]
    if c["onset_us"] is not None:
        parts.append(f"onset t = {c['onset_us'] / 1e6:.1f} s")
    return "; ".join(parts)


def cd_blocks(r: dict[str, Any]) -> list[tuple[str | None, dict[str, Any] | None]]:
    """(title, CD section) of every CD test: the run's, or one per host of a
    swarm that ran (or should have run) a CD pair, titled with its clock."""
    if not r.get("swarm"):
        return [(None, r["cd"])]
    return [(f"host {h}" + clock_note(s), s["cd"]) for h, s in r["hosts"].items()
            if s["device_host"] or s["cd"] is not None]


def _probe_cells(x: dict[str, Any] | None) -> list[str]:
    """probe R - S p50 and p99 (n), same-host R - S p50, extra latency of the path."""
    if x is None:
        return ["-"] * 4
    p, same = x["probe"], x["same_host_r_minus_s_us"] or {}
    rs = p["r_minus_s_us"] or {}
    probe = ("NO ANSWERS" if p["requests"] and not p["ok"] else "-" if not rs.get("n")
             else f"{_us(rs['p50'])} / {_us(rs['p99'])} (n={rs['n']})")
    extra = "-" if x["extra_us"] is None else ("+" if x["extra_us"] >= 0 else "") + _us(x["extra_us"])
    return [probe, _us(same.get("p50")), extra + (" (same host)" if x["same_path"] and x["extra_us"] is not None
                                                  else "")]


def _status(c: dict[str, Any] | None, device_host: bool) -> str:
    """A host's contention status; what fails the run in capitals."""
    if c is None:
        return "NO CD DATA" if device_host else "-"
    status: str = c["status"]
    return status.upper() if status == "contention" else status


def hosts_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """A run across a swarm, one row per host: what it ran, its CD verdict
    and R_d, the cross-host latency, its clock offset and CPU."""
    if not r.get("swarm"):
        return None
    head = ["host", "roles", "node", "contention", "R_d baseline", "R_d measure", "probe R-S p50 / p99",
            "same-host R-S p50", "extra (path)", "clock offset", "CPU busy"]
    rows = []
    for h, s in r["hosts"].items():
        c = s["cd"]["contention"] if s["cd"] else None
        node = s["node"] or {}
        roles = ", ".join(s["roles"]) or (f"{len(s['device_ids'])} devices" if s["device_ids"] else "-")
        rows.append([h + (" (GE node)" if s["ge_node"] else ""), roles,
                     "LOST" if node.get("lost") else str(node.get("state") or "-"),
                     _status(c, s["device_host"]),
                     _f(c["baseline"]["median"], ".4f") if c else "-", _f(c["measure"]["median"], ".4f") if c else "-",
                     *_probe_cells(s["cross_host"]), clock_offset(s) or "GE node's clock",
                     _f(s["monitor"]["cpu_util_mean"], ".1f") + " %" if s["monitor"]["present"] else "no data"])
    return head, rows


HOSTS_NOTE = ("R-S: response time minus the CD node's service time S, each from one GE's own clock. Probe: "
              "the GE node's requests to that host's CD node before the measurement; same-host: that host's "
              "CD-GE during calibration; extra: their medians' difference, the latency of the path from the "
              "GE node, which every device's R-S on that host includes. Clock offset: that host's engine "
              "clock minus the GE node's (± half the round trip of the estimate); a remote host's CD windows "
              "are placed on the run's t0 with it.")


def device_table(r: dict[str, Any], limit: int = 40) -> tuple[list[str], list[list[str]], int]:
    """The devices, worst R_d first (at most ``limit`` rows); across a swarm with their host."""
    devs = sorted(r["devices"], key=lambda d: -(d["rd_ratio"] if d["rd_ratio"] is not None else -1e9))
    head = ["device", "GE", "requests", "throughput", "R mean", "R p95", "R p99", "R_d", "RIT mean exp/sub",
            "RIT p5 exp/sub", "KS D", "RIT ok"]
    rows = [[str(d["device_id"]), str(d["ge"]), str(d["requests"]), _f(d["throughput"], ".2f") + "/s",
             _us(d["response_mean_us"]), _dq(d, "response_p95_us"), _dq(d, "response_p99_us"),
             _f(d["rd_ratio"], ".4f"), f"{_us(d['rit_expected_mean_us'])} / {_us(d['rit_submitted_mean_us'])}",
             f"{_dq(d, 'rit_expected_p5_us')} / {_dq(d, 'rit_submitted_p5_us')}", _f(d["rit_ks_d"]),
             "yes" if d["rit_ok"] else "NO"] for d in devs[:limit]]
    if r.get("swarm"):       # which host each device ran on: read its R against that host's row
        head.insert(2, "host")
        for row, d in zip(rows, devs[:limit], strict=True):
            row.insert(2, str(d.get("host") or "-"))
    return head, rows, len(devs)


def group_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    if len(r["groups"]) < 2:
        return None
    head = ["group", "devices", "requests", "throughput/device", "R mean", "R_d"]
    return head, [[g["group"], str(g["devices"]), str(g["requests"]), _f(g["throughput_per_device_mean"], ".2f") + "/s",
                   _us(g["response_mean_us"]), _f(g["rd_ratio_mean"], ".4f")] for g in r["groups"]]


def sweep_row(an: Analysis) -> dict[str, Any]:
    """One run's numbers for the sweep table and figures."""
    r = an.result
    cd = r["cd"]
    c = cd["contention"] if cd else None
    return {
        "run": run_id(an), "devices": r["device_summary"]["devices"], "verdict": r["verdict"],
        "throughput_per_device": r["device_summary"]["throughput_per_device_mean"],
        "response_mean_us": r["device_summary"]["response_mean_us"],
        "rd_devices": r["device_summary"]["rd_ratio_mean"],
        "cd_response_mean_us": cd["response_measure_us"]["mean"] if cd else None,
        "cd_service_us": cd["service_us"] if cd else None,
        "rd_cd": c["measure"]["mean"] if c else None,
        "rd_cd_baseline": c["baseline"]["mean"] if c else None,
        "contention": c["status"] if c else "no CD data",
        "contention_p": c["p_value"] if c else None,
        "cpu_util": r["monitor"]["cpu_util_mean"],
        "congestion": sweep_fields(r),
    }


def sweep_table(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = ["run", "devices", "throughput/device", "R mean", "R_d devices", "R_d CD (baseline)",
            "contention (p)", "CPU %", "verdict"]
    body = [[r["run"], str(r["devices"]), _f(r["throughput_per_device"], ".2f") + "/s", _us(r["response_mean_us"]),
             _f(r["rd_devices"], ".4f"), f"{_f(r['rd_cd'], '.4f')} ({_f(r['rd_cd_baseline'], '.4f')})",
             f"{r['contention']} ({_p(r['contention_p'])})", _f(r["cpu_util"], ".1f"), r["verdict"].upper()]
            for r in rows]
    return head, body
