"""Results: manifest.json (started before the test, finished after it or
when it fails) and summary.json, written last. The verdict in summary.json
is reporting's (``wotbench.reporting.summarize_run``) on the run folder and
observed.json; the harness adds facts, never reasons."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir
from wotbench.engine import NODE_ROLES, SwarmBackend
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._preflight import Preflight
from wotbench.execution.phases._topology import Layout
from wotbench.host import disclosure
from wotbench.reporting import OBSERVED, read_record, summarize_run


def _nodes(ctx: RunContext, lay: Layout) -> list[dict[str, Any]]:
    """Each node of a swarm run: what the swarm reports of it, its part, and
    its clock against the manager's."""
    assert isinstance(ctx.backend, SwarmBackend), "only a swarm run has nodes"
    inv = {n.hostname: n for n in ctx.backend.inventory.nodes}
    clocks = ctx.backend.clocks
    ge = clocks.get(lay.ge_part.node or "")
    out = []
    for part in lay.parts:
        assert part.node is not None and lay.cluster is not None
        info = inv[part.node].to_dict()
        engine = getattr(ctx.backend, "engines", {}).get(part.node)
        if engine is not None and info.get("kernel") is None:
            try:
                info["kernel"] = engine.info().get("KernelVersion")
            except Exception:
                pass
        info["roles"] = lay.cluster.nodes[part.index].roles()
        info["device_ids"] = list(part.device_ids)
        off = clocks.get(part.node)
        info["clock"] = None if off is None or ge is None else {      # against the GE node's clock
            "offset_us": round(off.offset_us - ge.offset_us, 1),
            "uncertainty_us": round(off.uncertainty_us + ge.uncertainty_us, 1),
            "how": off.how + ("" if part.node == lay.ge_part.node else ", minus the GE node's")}
        out.append(info)
    return out


def _disclosure(ctx: RunContext, images: dict[str, str]) -> dict[str, Any]:
    """manifest.json's ``disclosure``: the host's facts, the checkout's git
    state, and the build of each binary as its image's label records it."""
    labels = {role: ctx.backend.image_labels(images[role]).get(disclosure.BUILD_INFO_LABEL)
              for role in disclosure.BINARIES if role in images}
    return disclosure.disclosure(images, labels)


def start_manifest(ctx: RunContext, pre: Preflight) -> None:
    lay = pre.layout
    ctx.manifest.update({
        "format": res.FORMAT, "run_id": ctx.run_id, "label": ctx.rs.label, "scale": ctx.rs.scale,
        **res.host_facts(ctx.backend.version()), "images": pre.images,
        "disclosure": _disclosure(ctx, pre.images),
        "placement": lay.to_dict(), "cores_shared": lay.cores_shared,
        # The workload GEs' congestion control and NSTART, and their RTO logs (ge/rto-<k>.csv).
        "congestion": {**ctx.hs.gateway.congestion_record(),
                       "rto_out": [f"{layout.GE}/{layout.ge_rto(k)}" for k in range(ctx.hs.gateway.instances)]},
        "start_epoch_us": time.time_ns() // 1000})
    if lay.swarm:
        ctx.manifest.update(swarm=True, ge_node=lay.ge_part.node, nodes=_nodes(ctx, lay))


def finish_manifest(ctx: RunContext, incomplete: str | None) -> None:
    ctx.manifest["end_epoch_us"] = time.time_ns() // 1000
    ctx.manifest["complete"] = incomplete is None
    if incomplete:
        ctx.manifest["incomplete_reason"] = incomplete
    with contextlib.suppress(OSError):
        res.write_json(ctx.run.manifest, ctx.manifest)


def _counts(observed: dict[str, Any]) -> dict[str, Any]:
    return {k: {"rows": g.get("rows", 0), **g.get("statuses", {}), "trace_lines": g.get("trace_lines")}
            for k, g in observed.get("ges", {}).items()}


def _containers(observed: dict[str, Any]) -> dict[str, Any]:
    cts = observed.get("containers", {})
    return {"total": len(cts), "nodes_not_running_at_end": sorted(
        name for name, c in cts.items() if c.get("role") in NODE_ROLES and c.get("status") != "running")}


def _observed(run: RunDir) -> dict[str, Any]:
    """observed.json for the counts, bounded and checked; {} when missing or
    damaged (the verdict's harness check then names it)."""
    try:
        return read_record(run.observed, OBSERVED) if run.observed.is_file() else {}
    except UserError:
        return {}


def write_summary(run: RunDir, facts: dict[str, Any]) -> dict[str, Any]:
    """summary.json: ``facts`` (run_id, label, scale, cores_shared, notes),
    the GE output counts and container states of observed.json, and the
    analysis with the verdict."""
    observed = _observed(run)
    summary = {"format": res.FORMAT, "run_id": facts["run_id"], "label": facts.get("label", ""),
               "complete": True, "scale": facts.get("scale"), "counts": _counts(observed),
               "cores_shared": facts.get("cores_shared", False), "notes": facts.get("notes", []),
               "containers": _containers(observed), **summarize_run(run.root)}
    res.write_json(run.summary, summary)
    return summary


def summarize(ctx: RunContext, lay: Layout) -> dict[str, Any]:
    finish_manifest(ctx, None)
    summary = write_summary(ctx.run, {
        "run_id": ctx.run_id, "label": ctx.rs.label, "scale": ctx.rs.scale, "cores_shared": lay.cores_shared,
        "notes": ([f"cores are shared: {n}" for n in lay.notes] if lay.cores_shared else [])
        + (ctx.manifest.get("disclosure") or {}).get("notes", [])})
    ctx.run.incomplete.unlink()
    return summary
