"""A run across a swarm (docs/run-layout.md, "Runs across a swarm"): the
``hosts`` section of the analysis, one entry per host, each with its own
contention test (its CD pair), monitor, clock-offset estimate, plan, node
state and the latency of the cross-host path the GE's requests take.

Latencies are differences of one clock's timestamps (R = recv - sent of
one GE); the one comparison across clocks, a remote host's CD windows
against the GE node's t0 phases, is reported with the clock-offset
estimate the harness measured (manifest ``nodes[].clock``).

The cross-host path: the GE node probes each host's CD node before the
measurement (``probe.csv``, CON, sequential, service time S). Its R - S
beside the same host's CD-GE R - S during calibration (CD pair alone on
that host, same S) gives the extra latency of the path (``extra_us``) that
a device's R - S on that host is read against, with its error
(``extra_err_us``, about 95 %: 1.96 x the two medians' standard errors
combined, each 0.93 x IQR / sqrt(n), the normal's), so a negative
difference reads as noise. Informational: only a probe without answers
fails the run (the ``nodes`` check).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from wotbench.base.errors import UserError
from wotbench.reporting._host import CdPlot, cd_section, host_cpu, monitor_section
from wotbench.reporting._integrity import LATENCY_QUANTILES, GeArrays, dist
from wotbench.reporting._load import ANALYSIS_COLUMNS, HostFiles, Phases, RunFiles, read_ge_table, read_monitor
from wotbench.reporting._shape import ANY, ListOf, Obj, read_record
from wotbench.spec import Spec, Thresholds

__all__ = ["HostPlot", "SwarmRecords", "swarm_records", "host_sections", "placement_section", "worst_cd",
           "busiest_monitor", "cd_service_us"]

#: How much a host's contention status weighs when one host stands for the run.
_STATUS_RANK = {"contention": 4, "disturbed": 3, "unknown": 2, "inconclusive": 1, "none": 0}


@dataclass
class HostPlot:
    """What the per-host figures draw."""

    hostname: str
    cd: CdPlot | None
    cpu: pd.DataFrame | None
    """t_s and utilisation % per CPU and ``all`` (as Analysis.host_cpu)."""


@dataclass(frozen=True)
class SwarmRecords:
    """What manifest.json says about the swarm (nothing on one host)."""

    swarm: bool
    ge_node: str | None = None
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    """manifest ``nodes[]`` by hostname."""
    plans: dict[str, dict[str, Any]] = field(default_factory=dict)
    """manifest ``placement.nodes[]`` (the cluster plan) by hostname."""


_S, _I, _B, _0 = str, int, bool, type(None)
_PLAN = Obj({"degraded": (_B, _0), "cores_shared": (_B, _0), "notes": (ListOf(_S), _0),
             "cd_node_cpuset": (_S, _0), "ge_cores": (ListOf(_I), _0)})
#: What reporting reads of manifest.json (docs/run-layout.md), and its types.
MANIFEST = Obj({
    "swarm": (_B, _0), "ge_node": (_S, _0),
    "placement": (Obj({**_PLAN.fields, "nodes": (ListOf(Obj({"hostname": ANY, "plan": (_PLAN, _0),
                                                               "device_ids": (ListOf(_I), _0)})), _0)}), _0),
    "nodes": (ListOf(Obj({"hostname": ANY, "roles": (ListOf(ANY), _0), "device_ids": (ListOf(_I), _0),
                          "local": ANY, "clock": ANY})), _0),
})


def _manifest(files: RunFiles) -> tuple[dict[str, Any], str | None]:
    """manifest.json, or ({}, why not) when it is damaged ({}, None: missing)."""
    if files.manifest is None:
        return {}, None
    try:
        return read_record(files.manifest, MANIFEST), None
    except UserError as err:
        return {}, str(err)


def _by_hostname(items: Any) -> dict[str, dict[str, Any]]:
    return {str(n["hostname"]): n for n in items or [] if isinstance(n, dict) and n.get("hostname")}


def swarm_records(files: RunFiles) -> SwarmRecords:
    """A swarm run has ``nodes/`` folders or says ``"swarm": true``."""
    m, _ = _manifest(files)
    swarm = bool(files.hosts) or m.get("swarm") is True
    if not swarm:
        return SwarmRecords(False)
    placed = m.get("placement")
    placement = placed if isinstance(placed, dict) else {}
    ge = m.get("ge_node")
    return SwarmRecords(True, str(ge) if ge else None, _by_hostname(m.get("nodes")),
                        _by_hostname(placement.get("nodes")))


def cd_service_us(spec: Spec | None) -> float | None:
    """The CD node's service time S the spec asked for (cd.service, else the devices' mean)."""
    if spec is None:
        return None
    if spec.workload is not None and (spec.workload.replay is None or spec.workload.cd_service_us is not None):
        return float(spec.workload.cd_service_effective_us())
    if spec.workload is not None:     # a replay's auto S is of the replayed trace: as the CD node echoes it
        return None
    return float(spec.cd.service_us) if spec.cd.service_us is not None else None


def _plan_brief(plan: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(plan, dict):
        return None
    return {"degraded": bool(plan.get("degraded", plan.get("cores_shared", False))),
            "notes": [str(n) for n in plan.get("notes", []) or []],
            "ge_cores": [int(c) for c in plan.get("ge_cores", []) or []]}


def placement_section(files: RunFiles) -> dict[str, Any] | None:
    """manifest.json's placement in brief: ``degraded``, ``notes`` and
    ``ge_cores`` (the cores the GEs busy-poll); a cluster plan is degraded
    when any node's plan is (notes name the node), and its ``ge_cores`` are
    the GE node's (each host's own are in its ``hosts`` entry)."""
    m, error = _manifest(files)
    if error is not None:
        return {"degraded": None, "notes": [], "error": error}
    p = m.get("placement")
    if not isinstance(p, dict):
        return None
    if not isinstance(p.get("nodes"), list):
        return _plan_brief(p)
    per = {h: _plan_brief(n.get("plan")) for h, n in _by_hostname(p["nodes"]).items()}
    ge_node = per.get(str(m.get("ge_node"))) or {}
    return {"degraded": any(b["degraded"] for b in per.values() if b),
            "notes": [f"{h}: {n}" for h, b in per.items() if b for n in b["notes"]],
            "ge_cores": list(ge_node.get("ge_cores", []))}


def _device_host(node: dict[str, Any], plan: dict[str, Any], hf: HostFiles) -> bool:
    """Whether the host runs a CD pair (and devices): it then must have CD data and a probe."""
    if node or plan:
        return bool(node.get("device_ids") or plan.get("device_ids") or "CD pair" in (node.get("roles") or [])
                    or (plan.get("plan") or {}).get("cd_node_cpuset"))
    return hf.cd_csv is not None or hf.probe_csv is not None


def _clock(node: dict[str, Any]) -> dict[str, Any] | None:
    c = node.get("clock")
    if not isinstance(c, dict) or not isinstance(c.get("offset_us"), (int, float)):
        return None
    return {"offset_us": float(c["offset_us"]), "uncertainty_us": c.get("uncertainty_us"), "how": c.get("how")}


#: The standard error of a sample median over IQR / sqrt(n), for a normal sample (1.2533 / 1.349).
_MEDIAN_SE_PER_IQR = 0.929
#: The extra latency's error: this many of its standard errors (about 95 %).
_EXTRA_Z = 1.96


def _median_se(x: np.ndarray) -> float | None:
    """The standard error of the median of the finite values of x (None: fewer than 2)."""
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    q1, q3 = np.percentile(x, [25, 75])
    return float(_MEDIAN_SE_PER_IQR * (q3 - q1) / np.sqrt(x.size))


def _probe(hf: HostFiles, s_us: float | None, record: dict[str, Any] | None) -> dict[str, Any]:
    """The GE node's probe of this host's CD node: its R - S (intended_us
    are the probe's own, so every request counts, no phase)."""
    rec = record if isinstance(record, dict) else {}
    out: dict[str, Any] = {"file": hf.probe_csv is not None, "requests": rec.get("rows"), "ok": rec.get("ok"),
                           "exit_code": rec.get("exit_code"), "r_minus_s_us": None, "median_se_us": None}
    if hf.probe_csv is None:
        return out
    p = GeArrays.from_table(read_ge_table(hf.probe_csv, ANALYSIS_COLUMNS))
    out.update(requests=len(p), ok=int(np.count_nonzero(p.ok)))
    if s_us is not None:
        rs = np.where(p.ok, p.response, np.nan) - s_us
        out["r_minus_s_us"] = dist(rs, LATENCY_QUANTILES)
        out["median_se_us"] = _median_se(rs)
    return out


def _echoed_s(hf: HostFiles, cd: CdPlot | None) -> float | None:
    """S as the CD node echoed it (no spec.yaml to say what was asked for)."""
    if cd is not None and cd.service_us is not None:
        return cd.service_us
    if hf.probe_csv is None:
        return None
    svc = GeArrays.from_table(read_ge_table(hf.probe_csv, ANALYSIS_COLUMNS)).service
    svc = svc[np.isfinite(svc)]
    return float(np.median(svc)) if svc.size else None


def _cross_host(hf: HostFiles, cd: CdPlot | None, phases: Phases, spec_s_us: float | None,
                record: dict[str, Any] | None, same_path: bool) -> dict[str, Any]:
    s_us, s_from = (spec_s_us, "spec") if spec_s_us is not None else (_echoed_s(hf, cd), "echoed")
    probe = _probe(hf, s_us, record)
    same, same_se = None, None
    if cd is not None and s_us is not None:
        cal = phases.calibration if phases.calibration is not None else (-np.inf, 0.0)
        rs = cd.response_us[(cd.t_us >= cal[0]) & (cd.t_us < cal[1])] - s_us
        same, same_se = dist(rs, LATENCY_QUANTILES), _median_se(rs)
    p50 = (probe["r_minus_s_us"] or {}).get("p50")
    extra = p50 - same["p50"] if p50 is not None and same is not None and same["p50"] is not None else None
    se_probe = probe["median_se_us"]
    err = (_EXTRA_Z * float(np.hypot(se_probe, same_se))
           if extra is not None and se_probe is not None and same_se is not None else None)
    return {"service_us": s_us, "service_from": s_from if s_us is not None else None, "same_path": same_path,
            "probe": probe, "same_host_r_minus_s_us": same, "extra_us": extra, "extra_err_us": err}


def _host(hf: HostFiles, rec: SwarmRecords, phases: Phases, th: Thresholds, harness: dict[str, Any],
          s_us: float | None) -> tuple[dict[str, Any], HostPlot]:
    name = hf.hostname
    node, plan = rec.nodes.get(name, {}), rec.plans.get(name, {})
    cd, cd_plot = cd_section(hf.cd_csv, phases, th)
    raw = read_monitor(hf.host_monitor)
    cpu = host_cpu(raw)
    device_host = _device_host(node, plan, hf)
    cross = (_cross_host(hf, cd_plot, phases, s_us, (harness.get("probe") or {}).get(name), name == rec.ge_node)
             if device_host or hf.probe_csv is not None else None)
    sec = {"hostname": name, "ge_node": name == rec.ge_node, "local": node.get("local") is True,
           "device_host": device_host,
           "roles": [str(r) for r in node.get("roles") or []],
           "device_ids": [int(i) for i in node.get("device_ids") or plan.get("device_ids") or []],
           "node": (harness.get("node_states") or {}).get(name), "clock": _clock(node),
           "placement": _plan_brief(plan.get("plan")), "cd": cd,
           "monitor": monitor_section(cpu, raw is not None, phases), "cross_host": cross}
    return sec, HostPlot(name, cd_plot, cpu)


def host_sections(files: RunFiles, rec: SwarmRecords, phases: Phases, th: Thresholds, harness: dict[str, Any],
                  s_us: float | None) -> tuple[dict[str, dict[str, Any]], list[HostPlot]]:
    """Every host of the swarm: each ``nodes/<hostname>/`` folder and each
    node of the manifest (a node without a folder has no data, which the
    checks then report). ``s_us``: the CD service time of the spec."""
    by_name = {h.hostname: h for h in files.hosts}
    for name in rec.nodes:
        by_name.setdefault(name, HostFiles(name, files.root, None, None, None, None, None))
    hosts, plots = {}, []
    for name in sorted(by_name):
        sec, plot = _host(by_name[name], rec, phases, th, harness, s_us)
        hosts[name] = sec
        plots.append(plot)
    return hosts, plots


def worst_cd(hosts: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The CD section of the host that decides (contention, then untested,
    then inconclusive; then the largest median R_d shift), with ``host``."""
    def rank(h: str) -> tuple[int, float]:
        c = hosts[h]["cd"]["contention"]
        shift = (c["measure"]["median"] or 0.0) - (c["baseline"]["median"] or 0.0)
        return _STATUS_RANK.get(c["status"], 2), shift

    tested = [h for h, s in hosts.items() if s["cd"] is not None]
    if not tested:
        return None
    h = max(tested, key=rank)
    return {**hosts[h]["cd"], "host": h}


def busiest_monitor(hosts: dict[str, dict[str, Any]], phases: Phases) -> dict[str, Any]:
    """The monitor section of the host with the highest mean CPU utilisation, with ``host``."""
    seen = [h for h, s in hosts.items() if s["monitor"]["cpu_util_mean"] is not None]
    if not seen:
        h = next(iter(hosts), None)
        return {**(hosts[h]["monitor"] if h else monitor_section(None, False, phases)), "host": h}
    h = max(seen, key=lambda h: hosts[h]["monitor"]["cpu_util_mean"])
    return {**hosts[h]["monitor"], "host": h}
