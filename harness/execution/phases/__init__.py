"""One test as a sequence of phases, each a module with one job, talking to
the container engine only through :class:`wotbench.engine.Backend`:

plan (preflight, workload) -> provision (networks, nodes, readiness) ->
impair -> measure (monitor, CD calibration, GEs, interference hogs) -> collect (states, logs,
outputs, observed.json) -> interference.json -> summarize (manifest, summary.json) -> teardown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wotbench.base.lazy import exports

# The same names for mypy and editors, which cannot follow __getattr__
# (harness/tests/test_lazy_exports.py holds them to _WHERE and __all__).
if TYPE_CHECKING:
    from wotbench.execution.phases._collect import collect
    from wotbench.execution.phases._context import Observations, RunContext, RunOptions
    from wotbench.execution.phases._impair import impair
    from wotbench.execution.phases._interfere import record_interference, render_schedule, schedule
    from wotbench.execution.phases._measure import Measured, measure
    from wotbench.execution.phases._preflight import (
        Preflight,
        Workload,
        adopt,
        decide_instances,
        layout_for,
        locate,
        plan_for,
        preflight,
        prepare,
    )
    from wotbench.execution.phases._probe import cross_host
    from wotbench.execution.phases._provision import device_spec, provision
    from wotbench.execution.phases._summary import finish_manifest, start_manifest, summarize, write_summary
    from wotbench.execution.phases._teardown import teardown
    from wotbench.execution.phases._topology import HostPart, Layout, Node, layout_of

__all__ = ["Layout", "HostPart", "layout_of", "cross_host", "RunContext", "RunOptions", "Observations", "Preflight",
           "Workload", "Node", "Measured", "plan_for", "layout_for", "preflight", "adopt", "decide_instances",
           "locate", "prepare", "provision", "impair", "measure", "collect", "schedule", "render_schedule",
           "record_interference", "device_spec", "start_manifest", "finish_manifest", "summarize", "write_summary",
           "teardown"]

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
    "layout_for": "_preflight", "locate": "_preflight", "plan_for": "_preflight", "preflight": "_preflight",
    "prepare": "_preflight",
    "provision": "_provision", "device_spec": "_provision",
    "finish_manifest": "_summary", "start_manifest": "_summary", "summarize": "_summary",
    "write_summary": "_summary",
    "teardown": "_teardown",
}


__getattr__, __dir__ = exports(__name__, _WHERE, __all__)
