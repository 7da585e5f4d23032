"""One test as a sequence of phases, each a module with one job, talking to
the container engine only through :class:`wotbench.backend.Backend`:

plan (preflight, workload) -> provision (networks, nodes, readiness) ->
impair -> measure (monitor, CD calibration, GEs, interference hogs) -> collect (states, logs,
outputs, observed.json) -> interference.json -> summarize (manifest, summary.json) -> teardown.
"""

from wotbench.phases._collect import collect
from wotbench.phases._context import Observations, RunContext, RunOptions
from wotbench.phases._impair import impair
from wotbench.phases._interfere import record_interference, render_schedule, schedule
from wotbench.phases._measure import Measured, measure
from wotbench.phases._layout import HostPart, Layout, Node, layout_of
from wotbench.phases._probe import cross_host
from wotbench.phases._plan import (Preflight, Workload, adopt, decide_instances, layout_for, locate, plan_for,
                                   preflight, prepare)
from wotbench.phases._provision import provision
from wotbench.phases._summary import finish_manifest, start_manifest, summarize, write_summary
from wotbench.phases._teardown import teardown

__all__ = ["Layout", "HostPart", "layout_of", "cross_host", "RunContext", "RunOptions", "Observations", "Preflight", "Workload", "Node", "Measured",
           "plan_for", "layout_for", "preflight", "adopt", "decide_instances", "locate", "prepare", "provision", "impair", "measure", "collect",
           "schedule", "render_schedule", "record_interference",
           "start_manifest", "finish_manifest", "summarize", "write_summary", "teardown"]
