"""The run's records beside the GE outputs, as analysis sections for the
checks to judge: what the harness observed (observed.json), the GEs' own
counters (their summary JSON) and the devices' (their --stats JSON).
Missing records are said, not guessed: a folder of GE files alone has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from wotbench.formats import DEVICE_STATS_COUNTERS
from wotbench.reporting._load import RunFiles, read_json

__all__ = ["harness_section", "ge_summary", "ge_counters", "ge_sched", "device_section"]

#: Roles of the CoAP servers of a run (wotbench.backend: NODE_ROLES).
_NODES = ("device", "cd-node")
#: Device counters shown in the analysis (all of them are in the files).
DEVICE_TOTALS = ("requests", "served", "ok", "overflow", "duplicates", "dropped", "send_errors")


def _object(path: Path) -> dict[str, Any]:
    doc = read_json(path)
    return doc if isinstance(doc, dict) else {}


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
    swarm), and across a swarm each node's state and probe."""
    if files.observed is None:
        return {"recorded": False}
    doc = _object(files.observed)
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


def ge_summary(summary: Path | None) -> dict[str, Any] | None:
    """A GE's summary JSON (read once for its counters and scheduler), None without one."""
    return None if summary is None else _object(summary)


def ge_counters(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A GE's own whole-run counters (from its summary JSON), None without one."""
    if doc is None:
        return None
    garbage = doc.get("garbage") or {}
    return {"requests": doc.get("requests"), "late_sends": doc.get("late_sends"),
            "late_us": (doc.get("config") or {}).get("late_us"), "send_errors": doc.get("send_errors"),
            "garbage": garbage.get("total"),
            "malformed": sum(int(garbage.get(k) or 0) for k in ("truncated", "unparseable"))}


def ge_sched(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """A GE's scheduler (its summary's ``sched``: policy, fallback error, RT
    budget, yields, stalls); None from a GE without it."""
    sched = doc.get("sched") if doc is not None else None
    return sched if isinstance(sched, dict) else None


def _node_roles(files: RunFiles) -> dict[str, str]:
    """container -> device | cd-node: from observed.json, else every stats file is a device's."""
    if files.observed is None:
        return dict.fromkeys(files.device_stats, "device")
    containers = _object(files.observed).get("containers") or {}
    return {n: c["role"] for n, c in containers.items() if c.get("role") in _NODES}


def device_section(files: RunFiles) -> dict[str, Any]:
    """Whole-run totals of the devices' --stats counters (the CD nodes' apart),
    and the devices whose file is missing (killed, or an older run)."""
    roles = _node_roles(files)
    totals = dict.fromkeys(DEVICE_TOTALS, 0)
    cd_node: dict[str, int] | None = None
    for name, path in files.device_stats.items():
        doc = _object(path)
        counts = {k: int(doc.get(k) or 0) for k in DEVICE_STATS_COUNTERS if k in DEVICE_TOTALS}
        if roles.get(name) == "cd-node":      # one per device host across a swarm: summed
            cd_node = {k: v + (cd_node or {}).get(k, 0) for k, v in counts.items()}
            continue
        for k, v in counts.items():
            totals[k] += v
    devices = [n for n, r in roles.items() if r == "device"]
    return {"devices": len(devices), "files": sum(1 for n in devices if n in files.device_stats),
            "missing": sorted(n for n in devices if n not in files.device_stats),
            "totals": totals, "cd_node": cd_node}
