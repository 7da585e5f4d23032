"""Measure: the monitor for the whole test, then the timeline: the CD-GE
calibrates alone from ``t0 - cd.calibration``, every workload GE starts at
t0 (phases.json); then the wait for every GE."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wotbench import _results as res
from wotbench._monitor import Collectl
from wotbench._plan import Plan
from wotbench.backend import ContainerSpec, Started
from wotbench.phases._context import RunContext
from wotbench.phases._ge import cd_ge_spec, drain_us, ge_spec, trace_lines, write_inputs
from wotbench.phases._plan import Workload
from wotbench.phases._provision import Node

#: Seconds between starting the GE containers and the CD-GE's start instant.
START_LEAD_S = 2.0
#: Extra seconds the GEs get past trace end + timeout before being killed.
FINISH_SLACK_S = 20.0


@dataclass(frozen=True)
class Measured:
    t0_epoch_us: int
    calibration_us: int
    outputs: tuple[tuple[Started, Path], ...]     # each GE and its output CSV (on t0)


def start_monitor(ctx: RunContext, plan: Plan) -> None:
    """collectl and the cgroup sampler, on the reserved cores."""
    ctx.observed.collectl = Collectl.available()
    if ctx.observed.collectl:
        ctx.collectl = Collectl(ctx.run.collectl_dir, plan.reserved)
        ctx.collectl.start()
    ctx.sampler.start()


def _start_instant(ctx: RunContext, calibration_us: int) -> int:
    """t0: every GE container must be up before its start instant, so allow
    for the slowest container start seen so far, per GE, on this host now."""
    n_ge = ctx.hs.gateway.instances + (1 if ctx.hs.cd.enabled else 0)
    lead_us = int((START_LEAD_S + 1.5 * n_ge * ctx.backend.slowest_start_s) * 1e6)
    return time.time_ns() // 1000 + lead_us + calibration_us


def _start_ges(ctx: RunContext, jobs: Sequence[tuple[ContainerSpec, int]], first_start_us: int) -> list[Started]:
    ges = []
    for spec, lines in jobs:
        st = ctx.backend.start_ge(spec)
        ctx.started([st])
        ctx.observed.ge(st.key, container=st.name, trace_lines=lines)
        ges.append(st)
    up_us = time.time_ns() // 1000
    ctx.observed.start = {"start_at_epoch_us": first_start_us, "ges_up_epoch_us": up_us,
                          "late_us": max(0, up_us - first_start_us)}
    return ges


def _wait(ctx: RunContext, ges: Sequence[Started], deadline_s: float) -> None:
    for st in ges:
        code = ctx.backend.wait(st, max(1.0, deadline_s - time.time()))
        ctx.observed.ge(st.key, exit_code=code, killed=code is None)


def measure(ctx: RunContext, plan: Plan, wl: Workload, nodes: Sequence[Node]) -> Measured:
    hs = ctx.hs
    traces = write_inputs(ctx, nodes, wl)
    start_monitor(ctx, plan)
    cal_us = hs.cd.calibration_us if hs.cd.enabled else 0
    t0 = _start_instant(ctx, cal_us)
    jobs, outputs = [], []
    if hs.cd.enabled:
        ctx.run.cd_dir.mkdir()
        jobs.append((cd_ge_spec(ctx, plan, wl, t0 - cal_us), trace_lines(wl.gen.cd_trace)))
        outputs.append(ctx.run.cd_csv)
    for k, (path, lines) in enumerate(traces):
        jobs.append((ge_spec(ctx, plan, wl, k, path, t0), lines))
        outputs.append(ctx.run.ge_csv(k))
    ges = _start_ges(ctx, jobs, t0 - cal_us)
    end_us = wl.duration_us
    windows = hs.phases.windows() if hs.phases else {
        "warmup": [0, 0], "measure": [0, end_us], "cooldown": [end_us, end_us]}
    res.write_json(ctx.run.phases, {"t0_epoch_us": t0, "calibration": [-cal_us, 0], **windows})
    ctx.say(f"test starts at t0 = {time.strftime('%H:%M:%S', time.gmtime(t0 / 1e6))} UTC"
            + (f" after {cal_us / 1e6:.0f} s of CD calibration" if cal_us else "")
            + f"; load for {end_us / 1e6:.0f} s")
    _wait(ctx, ges, (t0 + end_us + drain_us(hs)) / 1e6 + FINISH_SLACK_S)
    return Measured(t0, cal_us, tuple(zip(ges, outputs)))
