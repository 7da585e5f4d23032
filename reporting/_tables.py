"""The tables every report format shows (terminal, Markdown, HTML), as
(header, rows) of strings (a ``Table``); the number formatting they share;
and the one renderer of a table as text (``text_table``, the terminal) and
as Markdown (``md_table``), each checking first that every row has as many
cells as the header has columns (``check_table``: tabulate would otherwise
pad the header and shift every column name)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.units import MISSING, fmt_count, fmt_duration_us, fmt_num, fmt_rate, fmt_size
from wotbench.reporting._analyze import Analysis
from wotbench.reporting._congestion import sweep_fields
from wotbench.reporting._disclosure import disclosure_notes, read_disclosure
from wotbench.reporting._hostchecks import clock_note, clock_offset
from wotbench.reporting._load import find_files, read_summary
from wotbench.reporting._plain import meaning

__all__ = ["Table", "check_table", "text_table", "md_table", "run_id", "run_notes", "APPROX_NOTE", "has_approx",
           "checks_table", "rit_table", "rate_table", "latency_table", "cd_table", "cd_stats_line", "cd_blocks",
           "hosts_table", "HOSTS_NOTE", "device_table", "group_table", "sweep_row", "sweep_table",
           "thresholds_table", "threshold_value"]

#: A table: its header and its rows, every cell a string.
Table = tuple[list[str], list[list[str]]]


def check_table(t: Table) -> Table:
    """``t`` itself, when every row has one cell per header; else a
    ValueError naming the table (its first header), the row and the counts."""
    head, rows = t
    for i, row in enumerate(rows):
        if len(row) != len(head):
            raise ValueError(f"table {head[0] if head else ''!r}: row {i} has {len(row)} cells for "
                             f"{len(head)} headers")
    return t


def text_table(t: Table, maxcolwidths: list[int | None] | None = None) -> str:
    """A table for the terminal (tabulate's ``simple``; cells are text, never
    re-read as numbers), checked first."""
    head, rows = check_table(t)
    return tabulate(rows, head, tablefmt="simple", disable_numparse=True, maxcolwidths=maxcolwidths)


def md_table(t: Table) -> str:
    """A table in GitHub Markdown, checked first."""
    head, rows = check_table(t)
    return tabulate(rows, head, tablefmt="github", disable_numparse=True)


# --- number formatting --------------------------------------------------------

def _us(v: float | None) -> str:
    return fmt_duration_us(v)


def _pct(v: float | None, digits: int = 1) -> str:
    return MISSING if v is None else f"{v:+.{digits}%}"


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
    return MISSING if v is None or v != v else format(v, fmt)


def _p(v: float | None) -> str:
    """A p-value: two significant digits, never an exponent (below 0.0001: "< 0.0001")."""
    if v is None or v != v:
        return MISSING
    return "< 0.0001" if 0 < v < 1e-4 else fmt_num(v, 2)


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
    """What the run folder says beyond this analysis: an interrupted run,
    a summary.json whose verdict differs (written by an older analysis), and
    the disclosure's notes (manifest.json: a dirty checkout, binaries built
    from another commit)."""
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
    return notes + disclosure_notes(read_disclosure(files.manifest))   # a dirty checkout, other binaries


def checks_table(r: dict[str, Any]) -> Table:
    """One row per check: its name, PASS or FAIL, what that means for the
    numbers in a plain sentence (_plain.meaning), and the statistics (the
    check's own reason)."""
    return ["check", "result", "what it means", "statistics"], [
        [c["check"], "PASS" if c["ok"] else "FAIL", meaning(c["check"], bool(c["ok"]), r), c["reason"]]
        for c in r["checks"]]


def rit_table(r: dict[str, Any]) -> Table:
    """Paper Table 1 (mean and p5 of expected vs submitted RIT) plus p50/p95/p99 and KS."""
    head = ["GE", "devices", "RIT", "mean", "p5", "p50", "p95", "p99", "KS D", "KS p", "ok"]
    rows = []
    for g in r["ges"]:
        rit = g["rit"]
        for label, d in (("expected", rit["expected"]), ("submitted", rit["submitted"])):
            sub = label == "submitted"
            rows.append([str(g["ge"]) if not sub else "", fmt_count(g["devices"]) if not sub else "", label,
                         _us(d["mean"]), _uq(d, "p5"), _uq(d, "p50"), _uq(d, "p95"), _uq(d, "p99"),
                         _f(rit["ks_d"]) if sub else "", _p(rit["ks_p"]) if sub else "",
                         ("yes" if rit["ok"] else "NO") if sub else ""])
    return head, rows


def rate_table(r: dict[str, Any]) -> Table:
    head = ["GE", "target rate", "achieved", "deviation", "send lag p50", "p99", "p99.9", "max",
            "errors", "scheduler"]
    rows = [[str(g["ge"]), fmt_rate(g["target_rate"]), fmt_rate(g["achieved_rate"]),
             _pct(g["rate_dev"], 2), _uq(g["send_lag_us"], "p50"), _uq(g["send_lag_us"], "p99"),
             _uq(g["send_lag_us"], "p99_9"), _us(g["send_lag_us"]["max"]),
             _pct(g["error_rate"], 2).lstrip("+"), sched_cell(g.get("sched"))] for g in r["ges"]]
    return head, rows


def sched_cell(s: dict[str, Any] | None) -> str:
    """A GE's scheduler: FIFO with its RT budget, yields and stalls, or
    normal (and why, when FIFO was asked for and refused)."""
    if not s:
        return MISSING
    if s.get("policy") == "fifo":
        return (f"FIFO {s['budget_us'] / s['period_us']:.0%} budget, {s['yields']} yields, "
                f"{s['stalls']} stalls")
    if s.get("requested") == "fifo":
        return f"normal (FIFO refused: {s.get('error')})"
    return "normal"


def latency_table(r: dict[str, Any]) -> Table:
    head = ["GE", "latency", "mean", "p50", "p90", "p99", "p99.9", "max"]
    rows = []
    for g in r["ges"]:
        for label, key in (("measured (recv - sent)", "response_us"),
                           ("from intended send", "latency_intended_us")):
            d = g[key]
            rows.append([str(g["ge"]) if key == "response_us" else "", label, _us(d["mean"]), _uq(d, "p50"),
                         _uq(d, "p90"), _uq(d, "p99"), _uq(d, "p99_9"), _us(d["max"])])
    return head, rows


def cd_table(cd: dict[str, Any] | None) -> Table | None:
    """One CD test: calibration against measurement."""
    if cd is None:
        return None
    c = cd["contention"]
    head = ["", "samples", "R_d median", "R_d mean", "R_d p95", "response p50", "response p99"]
    # The verdict's baseline is the calibration's, or the warm-up's when the change test decided it.
    warm = c.get("reference") == "warm-up"
    ref_resp = cd.get("response_warmup_us") if warm else cd["response_calibration_us"]
    ref_resp = ref_resp or {"p50": None, "p99": None}
    rows = [["warm-up (the run's own load)" if warm else "calibration (CD pair alone)", fmt_count(c["baseline"]["n"]),
             _f(c["baseline"]["median"], ".4f"), _f(c["baseline"]["mean"], ".4f"), _f(c["baseline"]["p95"], ".4f"),
             _us(ref_resp["p50"]), _us(ref_resp["p99"])],
            ["measurement", fmt_count(c["measure"]["n"]), _f(c["measure"]["median"], ".4f"),
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


def _extra_cell(x: dict[str, Any]) -> str:
    """The path's extra latency with its error: ``+12 µs ± 30 µs``; within
    its error of zero ``≈ 0 (-56 µs ± 80 µs)`` (a negative difference of two
    medians is noise, not a path faster than none)."""
    extra, err = x["extra_us"], x.get("extra_err_us")
    if extra is None:
        return MISSING
    text = ("+" if extra >= 0 else "") + _us(extra)
    if err is not None:
        text += f" ± {fmt_duration_us(err, 2)}"
        if abs(extra) <= err:
            text = f"≈ 0 ({text})"
    return text + (" (same host)" if x["same_path"] else "")


def _probe_cells(x: dict[str, Any] | None) -> list[str]:
    """probe R - S p50 and p99 (n), same-host R - S p50, extra latency of the path (± its error)."""
    if x is None:
        return [MISSING] * 3
    p, same = x["probe"], x["same_host_r_minus_s_us"] or {}
    rs = p["r_minus_s_us"] or {}
    probe = ("NO ANSWERS" if p["requests"] and not p["ok"] else MISSING if not rs.get("n")
             else f"{_us(rs['p50'])} / {_us(rs['p99'])} (n={rs['n']})")
    return [probe, _us(same.get("p50")), _extra_cell(x)]


def _status(c: dict[str, Any] | None, device_host: bool) -> str:
    """A host's contention status; what fails the run in capitals."""
    if c is None:
        return "NO CD DATA" if device_host else MISSING
    status: str = c["status"]
    return status.upper() if status == "contention" else status


def hosts_table(r: dict[str, Any]) -> Table | None:
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
        roles = ", ".join(s["roles"]) or (f"{len(s['device_ids'])} devices" if s["device_ids"] else MISSING)
        rows.append([h + (" (GE node)" if s["ge_node"] else ""), roles,
                     "LOST" if node.get("lost") else str(node.get("state") or MISSING),
                     _status(c, s["device_host"]),
                     _f(c["baseline"]["median"], ".4f") if c else MISSING,
                     _f(c["measure"]["median"], ".4f") if c else MISSING,
                     *_probe_cells(s["cross_host"]), clock_offset(s) or "GE node's clock",
                     _f(s["monitor"]["cpu_util_mean"], ".1f") + " %" if s["monitor"]["present"] else "no data"])
    return head, rows


HOSTS_NOTE = ("R-S: response time minus the CD node's service time S, each from one GE's own clock. Probe: "
              "the GE node's requests to that host's CD node before the measurement; same-host: that host's "
              "CD-GE during calibration; extra: their medians' difference, the latency of the path from the "
              "GE node, which every device's R-S on that host includes, ± the error of that difference (the "
              "two medians' standard errors combined): a negative extra is estimate noise, the path adds less "
              "than that error, and shows as ≈ 0. Clock offset: that host's engine "
              "clock minus the GE node's (± half the round trip of the estimate); a remote host's CD windows "
              "are placed on the run's t0 with it.")


def device_table(r: dict[str, Any], limit: int = 40) -> tuple[list[str], list[list[str]], int]:
    """The devices, worst R_d first (at most ``limit`` rows); across a swarm with their host."""
    devs = sorted(r["devices"], key=lambda d: -(d["rd_ratio"] if d["rd_ratio"] is not None else -1e9))
    head = ["device", "GE", "requests", "throughput", "R mean", "R p95", "R p99", "R_d", "RIT mean exp/sub",
            "RIT p5 exp/sub", "KS D", "RIT ok"]
    rows = [[str(d["device_id"]), str(d["ge"]), fmt_count(d["requests"]), fmt_rate(d["throughput"]),
             _us(d["response_mean_us"]), _dq(d, "response_p95_us"), _dq(d, "response_p99_us"),
             _f(d["rd_ratio"], ".4f"), f"{_us(d['rit_expected_mean_us'])} / {_us(d['rit_submitted_mean_us'])}",
             f"{_dq(d, 'rit_expected_p5_us')} / {_dq(d, 'rit_submitted_p5_us')}", _f(d["rit_ks_d"]),
             "yes" if d["rit_ok"] else "NO"] for d in devs[:limit]]
    if r.get("swarm"):       # which host each device ran on: read its R against that host's row
        head.insert(2, "host")
        for row, d in zip(rows, devs[:limit], strict=True):
            row.insert(2, str(d.get("host") or MISSING))
    return head, rows, len(devs)


def group_table(r: dict[str, Any]) -> Table | None:
    if len(r["groups"]) < 2:
        return None
    head = ["group", "devices", "requests", "throughput/device", "R mean", "R_d"]
    return head, [[g["group"], fmt_count(g["devices"]), fmt_count(g["requests"]),
                   fmt_rate(g["throughput_per_device_mean"]),
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


def sweep_table(rows: Sequence[dict[str, Any]]) -> Table:
    head = ["run", "devices", "throughput/device", "R mean", "R_d devices", "R_d CD (baseline)",
            "contention (p)", "CPU %", "verdict"]
    body = [[r["run"], fmt_count(r["devices"]), fmt_rate(r["throughput_per_device"]), _us(r["response_mean_us"]),
             _f(r["rd_devices"], ".4f"), f"{_f(r['rd_cd'], '.4f')} ({_f(r['rd_cd_baseline'], '.4f')})",
             f"{r['contention']} ({_p(r['contention_p'])})", _f(r["cpu_util"], ".1f") + " %"
             if r["cpu_util"] is not None else MISSING, r["verdict"].upper()]
            for r in rows]
    return head, body


# --- thresholds -----------------------------------------------------------------------

#: Thresholds that are shares, shown as percentages (spec._validity's fractions but the KS distance).
_PERCENT = ("rate_tolerance", "rit_mean_tolerance", "rit_p5_tolerance", "max_late_sends", "max_error_rate",
            "instability_cv", "cd_baseline_max_lost", "max_repetition_spread")


def threshold_value(key: str, v: Any) -> str:
    """One threshold's value as the spec would write it, in words: durations
    (``_us``) as ``30 s``, sizes (``_bytes``) as ``64 MiB``, shares as
    ``5 %``, booleans as yes/no, counts with separators."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if not isinstance(v, (int, float)):
        return MISSING if v is None else str(v)
    if key.endswith("_us"):
        return fmt_duration_us(v)
    if key.endswith("_bytes"):
        return fmt_size(v)
    if key in _PERCENT:
        return f"{fmt_num(v * 100)} %"
    return fmt_count(v) if isinstance(v, int) else fmt_num(v)


def thresholds_table(r: dict[str, Any]) -> Table:
    """The limits the run was judged by, one row each: the spec key that
    sets it (``validity.min_measure``) and its value with its unit."""
    rows = [[f"validity.{k.removesuffix('_us').removesuffix('_bytes')}", threshold_value(k, v)]
            for k, v in (r.get("thresholds") or {}).items()]
    return ["spec key", "value"], rows
