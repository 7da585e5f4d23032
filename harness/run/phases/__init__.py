"""One test as a sequence of phases, each a module with one job, talking to
the container engine only through :class:`wotbench.engine.Backend`:

plan (preflight, workload) -> provision (networks, nodes, readiness) ->
impair -> measure (monitor, CD calibration, GEs, interference hogs) -> collect (states, logs,
outputs, observed.json) -> interference.json -> summarize (manifest, summary.json) -> teardown.
"""

from __future__ import annotations

from wotbench.base.lazy import exports

__all__ = ["Layout", "HostPart", "layout_of", "cross_host", "RunContext", "RunOptions", "Observations", "Preflight",
           "Workload", "Node", "Measured", "plan_for", "layout_for", "preflight", "adopt", "decide_instances",
           "locate", "prepare", "provision", "impair", "measure", "collect", "schedule", "render_schedule",
           "record_interference", "start_manifest", "finish_manifest", "summarize", "write_summary", "teardown"]

# Imported lazily: `wotbench plan` needs the planning phases only, not the
# analysis (pandas, SciPy) that collect and summarize bring (peak RSS of
# `plan` under 200 MB, issue W2 5/5).
_WHERE = {
    "collect": "_collect",
    "Observations": "_context", "RunContext": "_context", "RunOptions": "_context",
    "impair": "_impair",
    "record_interference": "_interfere", "render_schedule": "_interfere", "schedule": "_interfere",
    "Measured": "_measure", "measure": "_measure",
    "HostPart": "_topology", "Layout": "_topology", "Node": "_topology", "layout_of": "_topology",
    "cross_host": "_probe",
    "Preflight": "_preflight", "Workload": "_preflight", "adopt": "_preflight", "decide_instances": "_preflight",
    "layout_for": "_preflight", "locate": "_preflight", "plan_for": "_preflight", "preflight": "_preflight", "prepare": "_preflight",
    "provision": "_provision",
    "finish_manifest": "_summary", "start_manifest": "_summary", "summarize": "_summary",
    "write_summary": "_summary",
    "teardown": "_teardown",
}


__getattr__, __dir__ = exports(__name__, _WHERE, __all__)
