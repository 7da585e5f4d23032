"""analyze_run: a run directory in, the analysis sections of summary.json out
(integrity, R_d, contention verdict, run verdict); plus the data the plots need.

The GE outputs are read out of core: each is converted once to Parquet
(bounded memory) and analysed in one streaming pass over its row groups
(_stream.GeStream); what is exact and what approximate is said there and
in reporting/README.md."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wotbench.base.errors import UserError
from wotbench.reporting._checks import RECORD_CHECKS, run_checks, stability_warnings
from wotbench.reporting._congestion import congestion_section
from wotbench.reporting._gatewayanswer import through_gateway
from wotbench.reporting._gatewaysection import gateway_result
from wotbench.reporting._gesneeded import WINDOW_US, ges_needed, ges_needed_from_peak
from wotbench.reporting._host import CdPlot, cd_section, host_cpu, monitor_section
from wotbench.reporting._injected import read_interference
from wotbench.reporting._load import (
    ANALYSIS_COLUMNS,
    GeData,
    Phases,
    RunFiles,
    find_files,
    ge_data,
    read_monitor,
    read_phases,
    trace_counts,
)
from wotbench.reporting._multihost import (
    HostPlot,
    SwarmRecords,
    busiest_monitor,
    cd_service_us,
    host_sections,
    placement_section,
    swarm_records,
    worst_cd,
)
from wotbench.reporting._notify import ObservePlot, observe_section
from wotbench.reporting._records import device_section, ge_counters, ge_sched, ge_summary, harness_section
from wotbench.reporting._replayed import replay_section
from wotbench.reporting._stream import QGRID, GeStream, PeakBins, prefetched
from wotbench.spec import Spec, Thresholds, load_saved

__all__ = ["Analysis", "analyze", "analyze_run", "summarize_run", "records_verdict", "analysis_error", "late_send_us",
           "thresholds_for", "QGRID"]


@dataclass
class GePlot:
    ge: int
    rit_expected_q: np.ndarray
    rit_submitted_q: np.ndarray
    send_lag_q: np.ndarray
    response_q: np.ndarray
    latency_intended_q: np.ndarray
    per_second: pd.DataFrame
    """t_s, sent, ok, response_mean_us: one row per second of the run."""


@dataclass
class Analysis:
    """The JSON result (``result``) and what the plots draw (arrays, small)."""

    path: Path
    result: dict[str, Any]
    ges: list[GePlot] = field(default_factory=list)
    cd: CdPlot | None = None
    host_cpu: pd.DataFrame | None = None
    """t_s and utilisation % per CPU (cpu<N>) and in total (``all``)."""
    container_cpu: pd.DataFrame | None = None
    """t_s, role, cpu_pct."""
    hosts: list[HostPlot] = field(default_factory=list)
    """Per host of a run across a swarm (then ``cd`` and ``host_cpu`` are None)."""
    timing: dict[str, float] = field(default_factory=dict)
    """Seconds: ``convert_s`` (GE CSVs to Parquet, 0 when cached), ``analyse_s`` (the GE passes)."""
    observe: ObservePlot | None = None
    """Notification latency and age in the measurement phase (an Observe run)."""


def spec_for(files: RunFiles) -> Spec | None:
    """The spec as run (spec.yaml), None without one."""
    return None if files.spec is None else load_saved(files.spec)


def _saved_spec(files: RunFiles) -> Spec | None:
    """The spec as run, or None without one or when it cannot be read (the
    thresholds were given: the analysis does not depend on it)."""
    try:
        return spec_for(files)
    except UserError:
        return None


def thresholds_for(files: RunFiles) -> Thresholds:
    """The run's spec.yaml ``validity:`` overrides, else the defaults."""
    spec = spec_for(files)
    return Thresholds() if spec is None else spec.validity


def _container_cpu(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """CPU % per role, from the cumulative cgroup usage of every container."""
    if df is None or not {"container", "role", "cpu_usage_us"} <= set(df.columns):
        return None
    df = df.sort_values(["container", "t_us"])
    dt = df.groupby("container")["t_us"].diff()
    du = df.groupby("container")["cpu_usage_us"].diff()
    d = df.assign(cpu_pct=100.0 * du / dt).dropna(subset=["cpu_pct"])
    d = d[d["cpu_pct"] >= 0]
    if d.empty:
        return None
    d = d.assign(t_s=(d["t_us"] / 1e6).round())
    return d.groupby(["t_s", "role"])["cpu_pct"].sum().reset_index()


def _groups(files: RunFiles) -> dict[int, str]:
    """device_id -> device group, from the harness's ge/devices-<k>.csv (when present)."""
    out: dict[int, str] = {}
    for ge_csv in files.ge_csvs:
        df = _read_optional_csv(files.ge_devices(ge_csv))
        if df is not None and {"device_id", "group"} <= set(df.columns):
            out.update(zip(df["device_id"].astype(int), df["group"].astype(str), strict=True))
    return out


def _read_optional_csv(path: Path) -> pd.DataFrame | None:
    if not path.is_file():
        return None
    try:
        return pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        return None


def _group_summary(devices: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per device group (heterogeneous devices): sizes, throughput, response time and R_d."""
    if not devices or all(d["group"] is None for d in devices):
        return []
    df = pd.DataFrame(devices)
    df["group"] = df["group"].fillna("(unknown)")
    df["resp_x_ok"] = df["response_mean_us"].astype(float) * df["ok"]
    out = []
    for name, g in df.groupby("group", sort=True):
        ok = int(g["ok"].sum())
        out.append({"group": str(name), "devices": int(len(g)), "requests": int(g["requests"].sum()),
                    "throughput_per_device_mean": float(g["throughput"].astype(float).mean()),
                    "response_mean_us": float(g["resp_x_ok"].sum() / ok) if ok else None,
                    "rd_ratio_mean": float(g["rd_ratio"].astype(float).mean())})
    return out


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return _json_safe(obj.item())
    if isinstance(obj, dict):
        return _json_safe_dict(obj)
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def _json_safe_dict(d: dict[Any, Any]) -> dict[str, Any]:
    return {str(k): _json_safe(v) for k, v in d.items()}


def _ge_sections(files: RunFiles, th: Thresholds
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[GePlot], Phases, dict[str, Any] | None,
                            dict[str, float]]:
    """Per GE and per device, in the measurement phase: integrity and latency,
    one streaming pass over each GE's Parquet cache (_stream); and
    ``ges_needed``. Also returns the seconds spent converting CSV to Parquet
    and analysing."""
    t = time.perf_counter()
    data = ge_data(files)               # CSV -> Parquet once, in bounded memory
    timing = {"convert_s": time.perf_counter() - t}
    t = time.perf_counter()
    phases = read_phases(files, data)
    peak = PeakBins(phases.measure)
    ges, devices, plots, behind = [], [], [], []
    for g, summary, trace in zip(data, files.ge_summaries, files.ge_traces, strict=True):
        s = GeStream(phases.measure, th, peak)
        for arrays in prefetched(g.batches(ANALYSIS_COLUMNS)):
            s.add(arrays)
        out = s.finish()
        sec = out.ge
        sec["ge"] = g.ge
        doc, summary_error = ge_summary(summary)
        sec["counters"] = ge_counters(doc)
        sec["sched"] = ge_sched(doc)
        sec["trace_keep"] = (doc or {}).get("trace_keep")
        cfg = (doc or {}).get("config") or {}
        sec["exchange"] = {"type": (doc or {}).get("type"),
                           "max_retransmit": cfg.get("max_retransmit", (doc or {}).get("max_retransmit"))}
        sec["observes"] = (doc or {}).get("observe") is not None
        sec["evidence"] = _evidence(files, g, summary, summary_error, doc, trace, phases.measure)
        _target_from_trace(sec, sec["evidence"])
        sec["behind_rps"] = s.behind_rps()
        behind.append(sec["behind_rps"])
        ges.append(sec)
        devices += [dict(row, ge=g.ge) for row in out.devices]
        c = out.quantile_curves
        plots.append(GePlot(g.ge, c["rit_expected"], c["rit_submitted"], c["send_lag"], c["response"],
                            c["latency_intended"], out.per_second))
    group_of = _groups(files)
    for d in devices:
        d["group"] = group_of.get(d["device_id"])
    if peak.values is not None:
        need = ges_needed(peak.values, behind)
    else:
        need = ges_needed_from_peak(peak.binned_peak_rps(WINDOW_US), behind, exact=False)
    timing["analyse_s"] = time.perf_counter() - t
    return ges, devices, plots, phases, need, timing


def _rel(files: RunFiles, p: Path | None) -> str | None:
    return None if p is None else (p.relative_to(files.root).as_posix() if p.is_relative_to(files.root) else str(p))


def _evidence(files: RunFiles, g: GeData, summary: Path | None, summary_error: str | None,
              doc: dict[str, Any] | None, trace: Path | None, window: tuple[float, float]) -> dict[str, Any]:
    """What a GE's output is held against: its trace (lines, and those in the
    measurement phase: the target), its summary's request count, and
    observed.json's rows; each None when missing (``*_error`` when damaged)."""
    out: dict[str, Any] = {"output": _rel(files, g.csv), "rows": g.num_rows, "trace": _rel(files, trace),
                           "trace_lines": None, "trace_in_measure": None, "trace_error": None,
                           "summary": _rel(files, summary), "summary_requests": None,
                           "summary_error": summary_error}
    if trace is not None:
        try:
            tc = trace_counts(trace, window)
            out["trace_lines"], out["trace_in_measure"] = tc.lines, tc.in_window
        except UserError as err:
            out["trace_error"] = str(err)
    if doc is not None:
        out["summary_requests"] = doc["requests"]
    return out


def _target_from_trace(sec: dict[str, Any], ev: dict[str, Any]) -> None:
    """The target send rate is the trace's (its requests intended in the
    measurement phase), never the output's: an output that lost rows would
    otherwise lower its own target. Unknown without the trace."""
    dur = sec["duration_s"]
    n = ev["trace_in_measure"]
    target = n / dur if n is not None and dur > 0 else None
    sec["target_rate"] = target
    got = sec["achieved_rate"]
    sec["rate_dev"] = (got - target) / target if target and got is not None else None


def _device_summary(devices: list[dict[str, Any]]) -> dict[str, Any]:
    rds = np.array([d["rd_ratio"] for d in devices if d["rd_ratio"] is not None], dtype=np.float64)
    thr = np.array([d["throughput"] for d in devices if d["throughput"] is not None], dtype=np.float64)
    resp_mean = [d["response_mean_us"] for d in devices if d["response_mean_us"] is not None]
    return {
        "devices": len(devices),
        "throughput_per_device_mean": float(thr.mean()) if thr.size else None,
        "response_mean_us": float(np.mean(resp_mean)) if resp_mean else None,
        "rd_ratio_mean": float(rds.mean()) if rds.size else None,
        "rd_ratio_max": float(rds.max()) if rds.size else None,
    }


@dataclass
class _Hosts:
    """The contention and monitor sections: of the one host, or of every
    host of a swarm (``cd``/``monitor`` then the deciding host's)."""

    cd: dict[str, Any] | None
    monitor: dict[str, Any]
    hosts: dict[str, dict[str, Any]]
    cd_plot: CdPlot | None = None
    host_cpu: pd.DataFrame | None = None
    host_plots: list[HostPlot] = field(default_factory=list)


def _hosts(files: RunFiles, rec: SwarmRecords, spec: Spec | None, phases: Phases, th: Thresholds,
           harness: dict[str, Any]) -> _Hosts:
    if rec.swarm:
        hosts, plots = host_sections(files, rec, phases, th, harness, cd_service_us(spec))
        return _Hosts(worst_cd(hosts), busiest_monitor(hosts, phases), hosts, host_plots=plots)
    cd, cd_plot = cd_section(files.cd_csv, phases, th)
    raw = read_monitor(files.host_monitor)
    cpu = host_cpu(raw)
    return _Hosts(cd, monitor_section(cpu, raw is not None, phases), {}, cd_plot, cpu)


def analyze(run_dir: Path, thresholds: Thresholds | None = None) -> Analysis:
    """The full analysis of one run (GE files alone are enough)."""
    files = find_files(Path(run_dir))
    rec = swarm_records(files)
    # The spec gives the thresholds and, across a swarm, the CD service time S.
    spec = spec_for(files) if thresholds is None or rec.swarm else None
    th = thresholds if thresholds is not None else (spec.validity if spec is not None else Thresholds())
    ges, devices, plots, phases, need, timing = _ge_sections(files, th)
    counts = {k: int(sum(g[k] for g in ges)) for k in ("requests", "ok", "timeouts", "errors", "never_sent")}
    counts["devices"] = len(devices)
    counts["ges"] = len(ges)
    harness = harness_section(files)
    h = _hosts(files, rec, spec, phases, th, harness)
    host_of = {i: name for name, sec in h.hosts.items() for i in sec["device_ids"]}
    for d in devices if rec.swarm else ():
        d["host"] = host_of.get(d["device_id"])
    result: dict[str, Any] = {
        "analysis_format": 1,
        "phases": phases.to_dict(),
        "thresholds": th.to_dict(),
        "harness": harness,
        "measure_counts": counts,
        "ges": ges,
        "ges_needed": need,
        "device_summary": _device_summary(devices),
        "devices": devices,
        "groups": _group_summary(devices),
        "cd": h.cd,
        "device_counters": device_section(files),
        "monitor": h.monitor,
        "placement": placement_section(files),
        "swarm": rec.swarm,
        "hosts": h.hosts,
        "interference": read_interference(files.root),   # injected noisy neighbours, or None
        "replay": replay_section(files),                   # workload.replay: what was replayed, or None
    }
    # Congestion control (strategy, NSTART): its part, and the requests NSTART held,
    # which the send-lag checks do not hold against the GE.
    result["congestion"] = congestion_section(files, ge_data(files), phases, result["device_counters"],
                                              th.late_send_us)
    for sec, part in zip(ges, result["congestion"]["ges"], strict=True):
        sec["nstart_holds"] = part["nstart_holds"]
    result["observe"], obs_plot = observe_section(files, (phases.measure[0], phases.measure[1]))
    gw_spec = spec if spec is not None else _saved_spec(files)
    if gw_spec is not None and gw_spec.gateway_under_test is not None:   # the gateway's failures: not the testbed's
        result["through_gateway"] = through_gateway(files, ge_data(files), phases.measure, ges)
    verdict, reasons, checks = run_checks(result, th)
    result["checks"] = checks
    result["warnings"] = stability_warnings(result, th)
    result["verdict"] = verdict
    result["reasons"] = reasons
    containers = read_monitor(files.containers_monitor)
    # A gateway under test: its numbers, apart from the testbed's verdict.
    result["gateway"] = gateway_result(gw_spec, files, lambda: ge_data(files), phases, ges, containers, verdict)
    return Analysis(files.root, _json_safe(result), plots, h.cd_plot, h.host_cpu,
                    _container_cpu(containers), h.host_plots, timing, obs_plot)


def analyze_run(run_dir: Path, thresholds: Thresholds | None = None) -> dict[str, Any]:
    """The analysis sections for summary.json (JSON-safe: no NaN), including
    ``verdict`` ("valid"/"invalid") and ``reasons``. Works on a run whose
    monitor or CD data are missing (which is then itself a reason)."""
    return analyze(run_dir, thresholds).result


def summarize_run(run_dir: Path) -> dict[str, Any]:
    """What the harness puts in summary.json: :func:`analyze_run`, or, when
    the run's data cannot be analysed (no GE output, a damaged file), the
    verdict of its records alone, invalid, with the analysis error a reason."""
    try:
        return analyze_run(run_dir)
    except Exception as exc:      # the run's data stay; the summary says why
        return records_verdict(Path(run_dir), analysis_error(exc))


def analysis_error(exc: Exception) -> str:
    """How a reason names why a run's data could not be analysed."""
    return str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"


def records_verdict(run_dir: Path, error: str) -> dict[str, Any]:
    """The verdict of a run whose data could not be analysed (``error``
    says why), from its records alone (manifest, observed.json): always
    invalid, the analysis error one of the reasons."""
    files = find_files(run_dir, need_ge=False)
    th = thresholds_for(files)
    a = {"harness": harness_section(files), "analysis_error": error, "swarm": _records_swarm(files)}
    verdict, reasons, checks = run_checks(a, th, RECORD_CHECKS)
    return _json_safe_dict({"analysis_format": 1, "thresholds": th.to_dict(), "harness": a["harness"],
                            "swarm": a["swarm"], "checks": checks, "warnings": [], "verdict": verdict,
                            "reasons": reasons, "analysis_error": error})


def _records_swarm(files: RunFiles) -> bool:
    """Whether the run went across a swarm, also with a damaged manifest."""
    try:
        return swarm_records(files).swarm
    except UserError:
        return bool(files.hosts)


def late_send_us(run_dir: Path) -> int:
    """The send lag (us) beyond which a GE counts a send as late (its
    --late-us): the run's threshold, from its spec.yaml."""
    return int(thresholds_for(find_files(Path(run_dir), need_ge=False)).late_send_us)



