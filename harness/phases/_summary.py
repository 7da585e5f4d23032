"""Results: manifest.json (started before the test, finished after it or
when it fails) and summary.json, written last. The verdict in summary.json
is reporting's (``wotbench.reporting.summarize_run``) on the run folder and
observed.json; the harness adds facts, never reasons."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from wotbench import _results as res
from wotbench._plan import Plan
from wotbench.backend import NODE_ROLES
from wotbench.layout import RunDir
from wotbench.phases._context import RunContext
from wotbench.phases._plan import Preflight
from wotbench.reporting import summarize_run


def start_manifest(ctx: RunContext, pre: Preflight) -> None:
    ctx.manifest.update({
        "format": res.FORMAT, "run_id": ctx.run_id, "label": ctx.rs.label, "scale": ctx.rs.scale,
        **res.host_facts(ctx.backend.version()), "images": pre.images,
        "placement": pre.plan.to_dict(), "cores_shared": pre.plan.cores_shared,
        "start_epoch_us": time.time_ns() // 1000})


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


def write_summary(run: RunDir, facts: dict[str, Any]) -> dict[str, Any]:
    """summary.json: ``facts`` (run_id, label, scale, cores_shared, notes),
    the GE output counts and container states of observed.json, and the
    analysis with the verdict."""
    observed = json.loads(run.observed.read_text()) if run.observed.is_file() else {}
    summary = {"format": res.FORMAT, "run_id": facts["run_id"], "label": facts.get("label", ""),
               "complete": True, "scale": facts.get("scale"), "counts": _counts(observed),
               "cores_shared": facts.get("cores_shared", False), "notes": facts.get("notes", []),
               "containers": _containers(observed), **summarize_run(run.root)}
    res.write_json(run.summary, summary)
    return summary


def summarize(ctx: RunContext, plan: Plan) -> dict[str, Any]:
    finish_manifest(ctx, None)
    summary = write_summary(ctx.run, {
        "run_id": ctx.run_id, "label": ctx.rs.label, "scale": ctx.rs.scale, "cores_shared": plan.cores_shared,
        "notes": [f"cores are shared: {n}" for n in plan.notes] if plan.cores_shared else []})
    ctx.run.incomplete.unlink()
    return summary
