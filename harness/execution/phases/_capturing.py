"""A run that captures itself (``capture:``, docs/capture.md): tcpdump in
each workload GE's network namespace from just before t0 (after the ARP
priming, whose pings it would otherwise hold) until the GEs are done;
stopped by SIGINT before anything else is stopped, so that the last file
is whole; its files and tcpdump's counts into manifest.json (``capture``,
and the ``capture_*`` totals the report's metadata shows)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from typing import Any

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.engine import ENGINE_GONE, Started
from wotbench.engine.netcapture import ring_files
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._topology import Layout
from wotbench.execution.placement import cpuset

__all__ = ["start_captures", "stop_captures", "stop_quietly", "WHERE"]

#: What a capture sees, for the manifest.
WHERE = "each workload GE's network namespace (tcpdump -i any, udp): every request it sends, every answer it gets"


def start_captures(ctx: RunContext, lay: Layout, ges: Sequence[Started], t0_us: int) -> None:
    """One capture per workload GE (``ges``), on the harness's housekeeping
    cores; recorded as incomplete until :func:`stop_captures`."""
    cap = ctx.hs.capture
    if cap is None:
        return
    plan = lay.ge_part.plan
    busy = {*plan.ge_cores, *plan.gateway_cores}
    cores = cpuset(plan.reserved or [c for c in plan.available if c not in busy] or plan.available)
    ctx.manifest["capture"] = {**cap.to_dict(), "where": WHERE, "folder": layout.CAPTURE, "complete": False,
                               "ges": {}}
    for st in ges:
        if st.role != "ge":
            continue
        started = ctx.backend.start_capture(f"capture-{st.key}", st, ctx.run.capture_dir, cap, cores)
        ctx.captures.append(started)
        ctx.started([started])
        listening_us = _now_us()
        ctx.manifest["capture"]["ges"][st.key] = {
            "container": started.name, "ring": f"{st.key}.pcap", "listening_epoch_us": listening_us,
            "late_us": max(0, listening_us - t0_us)}
    ctx.say(f"  capture: tcpdump in {len(ctx.captures)} GE namespace(s) into {layout.CAPTURE}/ "
            f"(at most {cap.files} x {cap.file_mb} MB each)")


def _now_us() -> int:
    return time.time_ns() // 1000


def stop_captures(ctx: RunContext) -> None:
    """Stops every running capture (SIGINT: the last file whole) and
    records its files and counts; idempotent (teardown calls it again)."""
    record: dict[str, Any] = ctx.manifest.get("capture") or {}
    while ctx.captures:
        st = ctx.captures.pop()
        key = st.key.removeprefix("capture-")
        facts = record.setdefault("ges", {}).setdefault(key, {})
        try:
            facts.update(ctx.backend.stop_capture(st))
        except ENGINE_GONE as err:
            facts.update(stopped=False, error=f"{type(err).__name__}: {err}")
        facts["files"] = ring_files(ctx.run.capture_dir, f"{key}.pcap")
        # Every file of the ring written: the oldest packets may have been overwritten.
        facts["ring_full"] = ctx.hs.capture is not None and len(facts["files"]) >= ctx.hs.capture.files
    if not record:
        return
    ges = record.get("ges", {}).values()
    record["complete"] = bool(ges) and all(g.get("stopped") for g in ges)
    files = [f for g in ges for f in g.get("files", [])]
    ctx.manifest.update(
        capture_files=len(files), capture_size_bytes=sum(f["bytes"] for f in files),
        capture_packets=sum(g.get("packets_captured", 0) for g in ges),
        capture_dropped_by_kernel=sum(g.get("packets_dropped_by_kernel", 0) for g in ges))


def stop_quietly(ctx: RunContext) -> None:
    """:func:`stop_captures` at teardown (an interrupted run: the files
    whole, manifest.json written again with them); whatever fails, the
    label-based removal follows."""
    if not ctx.captures:
        return
    with contextlib.suppress(Exception):
        stop_captures(ctx)
        ctx.manifest["capture"].update(complete=False, interrupted=True)   # the run's INCOMPLETE says why
        if ctx.run.manifest.is_file():
            res.write_json(ctx.run.manifest, ctx.manifest)
