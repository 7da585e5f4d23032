"""The run's records beside the GE outputs, as analysis sections for the
checks to judge: what the harness observed (observed.json), the GEs' own
counters (their summary JSON) and the devices' (their --stats JSON).
Missing records are said, not guessed: a folder of GE files alone has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from wotbench.base.errors import UserError
from wotbench.base.formats import DEVICE_STATS_COUNTERS
from wotbench.reporting._load import RunFiles
from wotbench.reporting._shape import ANY, ListOf, MapOf, Obj, read_record

__all__ = ["harness_section", "ge_summary", "ge_counters", "ge_sched", "device_section", "OBSERVED", "GE_SUMMARY"]

#: Roles of the CoAP servers of a run (wotbench.engine: NODE_ROLES).
_NODES = ("device", "cd-node")
#: Device counters shown in the analysis (all of them are in the files).
DEVICE_TOTALS = ("requests", "served", "ok", "overflow", "duplicates", "dropped", "send_errors")

_S, _I, _N, _B, _0 = str, int, float, bool, type(None)
#: What the checks read of observed.json (docs/run-layout.md), and its types.
OBSERVED = Obj({
    "containers": (MapOf(Obj({"key": (_S, _0), "role": (_S, _0), "status": (_S, _0), "exit_code": (_I, _0),
                              "oom_killed": (_B, _0), "started_at": (_S, _0), "restarts": (_I, _0),
                              "address": (_S, _0), "addresses": (ListOf(_S), _0), "node": (_S, _0)})), _0),
    "ges": (MapOf(Obj({"node": (_S, _0), "killed": (_B, _0), "exit_code": (_I, _0), "trace_lines": (_I, _0),
                       "rows": (_I, _0), "statuses": (MapOf(_I), _0)})), _0),
    "start": (Obj({"ges_up_epoch_us": (_N, _0), "late_us": (_N, _0), "start_at_epoch_us": (_N, _0)}), _0),
    "impairment": ANY,
    "collectl": (_B, MapOf((_B, _0)), _0),
    "nodes": (MapOf(Obj({"lost": (_B, _0), "reason": (_S, _0), "state": (_S, _0)})), _0),
    "probe": (MapOf(Obj({"rows": (_I, _0), "ok": (_I, _0), "exit_code": (_I, _0)})), _0),
    "partial": (MapOf(_I), _0),
})
#: What the checks read of a GE's summary JSON (gateway-emulator/README.md).
GE_SUMMARY = Obj({
    "requests": _I, "late_sends": (_I, _0), "send_errors": (_I, _0),
    "tx_stamps_kernel": (_I, _0), "tx_stamps_fallback": (_I, _0),
    "config": (Obj({"late_us": (_N, _0)}), _0),
    "garbage": (Obj({"total": (_I, _0), "truncated": (_I, _0), "unparseable": (_I, _0)}), _0),
    "sched": (Obj({"policy": (_S, _0), "stalls": (_I, _0), "stall_max_us": (_N, _0), "yields": (_I, _0),
                   "yield_us": (_N, _0), "holds": (_I, _0), "hold_max_us": (_N, _0), "majflt": (_I, _0)}), _0),
    "trace_keep": (Obj({"mode": (_S, _0), "probe": (_S, _0), "window_bytes": (_I, _0), "behind": (_I, _0),
                        "lock_error": (_S, _0)}), _0),
}, required=("requests",))
#: A device's --stats file (docs/formats.md): every counter, an integer.
DEVICE_STATS = Obj(dict.fromkeys(DEVICE_STATS_COUNTERS, _I), required=DEVICE_STATS_COUNTERS)


def _observed(files: RunFiles) -> tuple[dict[str, Any] | None, str | None]:
    """observed.json, or (None, why not: missing or damaged)."""
    if files.observed is None:
        return None, None
    try:
        return read_record(files.observed, OBSERVED), None
    except UserError as err:
        return None, str(err)


def _restarted(nodes: dict[str, dict[str, Any]], ges_up_us: int | None) -> list[dict[str, Any]]:
    """Nodes the engine (re)started after the GEs were up, or restarted by a
    policy: their counters and state began again mid-test (``docker restart``)."""
    out = []
    for name, c in sorted(nodes.items()):
        began = c.get("started_at")
        began_us = (pd.Timestamp(began).value // 1000) if began and not began.startswith("0001-") else None
        late = ges_up_us is not None and began_us is not None and began_us > ges_up_us
        if late or (c.get("restarts") or 0) > 0:
            out.append({"container": name, "key": c.get("key"), "role": c.get("role"),
                        "started_at": began, "restarts": c.get("restarts")})
    return out


def _cut_off(nodes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Running nodes whose address was no longer attached at the end
    (``docker network disconnect``, a network removed): the GEs' requests
    to them could not arrive."""
    return [{"container": name, "key": c.get("key"), "role": c.get("role"), "address": c["address"],
             "addresses": c["addresses"]} for name, c in sorted(nodes.items())
            if c.get("status") == "running" and c.get("address") and c.get("addresses") is not None
            and c["address"] not in c["addresses"]]


def harness_section(files: RunFiles) -> dict[str, Any]:
    """observed.json in brief: the nodes that were not running at the end of
    the load, every GE's exit and rows vs trace lines, the start, the
    impairment applied, whether collectl ran (a bool, or per host across a
    swarm), and across a swarm each node's state and probe. Without it (or
    damaged: ``error`` says where) ``recorded`` is false."""
    doc, error = _observed(files)
    if doc is None:
        return {"recorded": False, "error": error}
    containers = doc.get("containers") or {}
    nodes = {n: c for n, c in containers.items() if c.get("role") in _NODES}
    return {
        "recorded": True,
        "nodes": len(nodes),
        "nodes_not_running": [{"container": n, **c} for n, c in sorted(nodes.items())
                              if c.get("status") != "running"],
        "nodes_restarted": _restarted(nodes, (doc.get("start") or {}).get("ges_up_epoch_us")),
        "nodes_cut_off": _cut_off(nodes),
        "ges": doc.get("ges") or {},
        "start": doc.get("start"),
        "impairment": doc.get("impairment"),
        "collectl": doc.get("collectl"),
        # A run across a swarm: hostname -> {state, lost, reason}, and the GE
        # node's probe of each host -> {rows, ok, exit_code}; empty on one host.
        "node_states": doc.get("nodes") or {},
        "probe": doc.get("probe") or {},
        # The output a GE or CD-GE killed before its end had written: file -> rows.
        "partial": doc.get("partial") or {},
    }


def ge_summary(summary: Path | None) -> tuple[dict[str, Any] | None, str | None]:
    """A GE's summary JSON (read once for its counters and scheduler), and
    why it is missing: (None, None) without a file, (None, error) damaged."""
    if summary is None:
        return None, None
    try:
        return read_record(summary, GE_SUMMARY), None
    except UserError as err:
        return None, str(err)


def ge_counters(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A GE's own whole-run counters (from its summary JSON), None without one."""
    if doc is None:
        return None
    garbage = doc.get("garbage") or {}
    return {"requests": doc.get("requests"), "late_sends": doc.get("late_sends"),
            "late_us": (doc.get("config") or {}).get("late_us"), "send_errors": doc.get("send_errors"),
            "garbage": garbage.get("total"),
            "tx_stamps_kernel": doc.get("tx_stamps_kernel"), "tx_stamps_fallback": doc.get("tx_stamps_fallback"),
            "malformed": sum(int(garbage.get(k) or 0) for k in ("truncated", "unparseable"))}


def ge_sched(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A GE's scheduler (its summary's ``sched``: policy, fallback error, RT
    budget, yields, stalls); None from a GE without it."""
    sched = doc.get("sched") if doc is not None else None
    return sched if isinstance(sched, dict) else None


def _node_roles(files: RunFiles) -> dict[str, dict[str, Any]]:
    """container -> its observed.json entry, for the devices and CD nodes;
    without observed.json every stats file is a device's (state unknown)."""
    doc, _ = _observed(files)
    if doc is None:
        return {n: {"role": "device"} for n in files.device_stats}
    return {n: c for n, c in (doc.get("containers") or {}).items() if c.get("role") in _NODES}


def device_section(files: RunFiles) -> dict[str, Any]:
    """Whole-run totals of the devices' --stats counters (the CD nodes' apart),
    the devices whose file is missing (``missing``: killed, or an older run;
    ``missing_running``: those observed running to the end, whose file
    should be there) and the files that cannot be read (``damaged``)."""
    nodes = _node_roles(files)
    totals = dict.fromkeys(DEVICE_TOTALS, 0)
    cd_node: dict[str, int] | None = None
    damaged = []
    for name, path in files.device_stats.items():
        try:
            doc = read_record(path, DEVICE_STATS)
        except UserError as err:
            damaged.append(str(err))
            continue
        counts = {k: int(doc[k]) for k in DEVICE_STATS_COUNTERS if k in DEVICE_TOTALS}
        if nodes.get(name, {}).get("role") == "cd-node":      # one per device host across a swarm: summed
            cd_node = {k: v + (cd_node or {}).get(k, 0) for k, v in counts.items()}
            continue
        for k, v in counts.items():
            totals[k] += v
    devices = [n for n, c in nodes.items() if c.get("role") == "device"]
    missing = sorted(n for n in devices if n not in files.device_stats)
    return {"devices": len(devices), "files": sum(1 for n in devices if n in files.device_stats),
            "missing": missing,
            "missing_running": [n for n in missing if nodes[n].get("status") == "running"],
            "damaged": damaged, "totals": totals, "cd_node": cd_node}
