"""Impair: each device group's network impairment (loss, delay, jitter,
rate), applied by the engine for the whole test and recorded."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._ge import drain_us
from wotbench.execution.phases._preflight import Workload
from wotbench.execution.phases._topology import Node


def impair(ctx: RunContext, nodes: Sequence[Node], netem: bool, wl: Workload) -> None:
    targets = [(n.started, n.group.impairment) for n in nodes
               if n.group is not None and n.group.impairment is not None]
    if not targets:
        ctx.manifest["impairment"] = None
        return
    hs = ctx.hs
    # Rules that expire (Pumba's --duration) must cover the whole test.
    duration_s = int((wl.duration_us + hs.cd.calibration_us + drain_us(hs)) / 1e6) + 60
    applied = ctx.backend.impair(targets, netem, duration_s, ctx.run.pumba_log)
    ctx.manifest["impairment"] = applied
    ctx.observed.impairment = {
        **applied, "requested": len(targets),
        "groups": {n.group.name: asdict(n.group.impairment) for n in nodes
                   if n.group is not None and n.group.impairment is not None}}
    ctx.say(f"  impairment: {applied['how']} on {applied['containers']} device(s)")
