"""Plan: what is decided before a container starts. Preflight (placement,
images, the engine's support for the impairment asked for) runs for every
test of a spec before the first starts; then each test generates its
workload and reads the lateness limit its GEs count against."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from wotbench._errors import UserError
from wotbench._inventory import Inventory
from wotbench._plan import ClusterPlan, Plan, make_cluster_plan, make_plan
from wotbench.backend import Backend
from wotbench.phases._context import RunContext
from wotbench.phases._layout import Layout, layout_of
from wotbench.reporting import late_send_us
from wotbench.tracegen._generate import generate

from wotbench.spec import Cluster

if TYPE_CHECKING:
    from wotbench.spec import RunSpec, Spec


class Preflight(NamedTuple):
    layout: Layout
    images: dict[str, str]
    netem: bool


def plan_for(hs: Spec, cores: Sequence[int] | None = None) -> Plan:
    """This host's plan (its cores, or ``cores``)."""
    available = sorted(os.sched_getaffinity(0)) if cores is None else list(cores)
    try:
        return make_plan(available, reserve=hs.placement.reserve,
                         ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                         devices=hs.device_count, affinity=hs.placement.affinity)
    except UserError as err:
        err.field = err.field or "placement"
        raise


def layout_for(hs: Spec, inventory: Inventory) -> Plan | ClusterPlan:
    """On a swarm manager: every node's plan, by the spec's ``cluster``
    section or its defaults. Elsewhere: this host's plan; a ``cluster``
    section there is a UserError (it needs a swarm)."""
    if not inventory.swarm:
        if hs.cluster is not None:
            raise UserError("this host is not in a swarm: a spec with this section runs on a "
                            "swarm manager (docker swarm init; docs/multi-host.md); without it, "
                            "on this host alone", field="cluster")
        return plan_for(hs, inventory.local.cores)
    return make_cluster_plan(inventory, hs.cluster or Cluster(), reserve=hs.placement.reserve,
                             ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                             group_sizes=[g.count for g in hs.groups], affinity=hs.placement.affinity)


def preflight(hs: Spec, backend: Backend, inventory: Inventory) -> Preflight:
    """What must hold before anything starts: a placement on the host or
    the swarm's nodes (whose engines answer), the images on every node, and
    support for the impairment asked for."""
    lay = layout_of(layout_for(hs, inventory), hs.device_count, hs.gateway.instances, hs.placement.reserve)
    if lay.swarm:
        backend.connect([p.node for p in lay.parts if p.node])   # type: ignore[attr-defined]
    imps = [(f"devices[{i}].impairment", g.impairment) for i, g in enumerate(hs.groups)
            if g.impairment is not None]
    remote = lay.swarm and any(p.node != inventory.local.hostname for p in lay.parts)
    images = backend.check_images(["device", "ge"] + (["nettools"] if imps or remote else []))
    netem = backend.check_impairment(imps) if imps else False
    return Preflight(lay, images, netem)


def locate(err: UserError, rs: RunSpec) -> UserError:
    """Points an error without a file at the spec line of its key."""
    return rs.locate(err)


def generate_workload(rs: RunSpec, outdir: Path) -> Any:
    return generate(rs.spec.workload, outdir)


@dataclass(frozen=True)
class Workload:
    gen: Any                        # tracegen's GeneratedWorkload
    group_of: list[int]             # device id -> group index
    late_us: int                    # a send later than this counts as late (GE --late-us)

    @property
    def duration_us(self) -> int:
        return int(self.gen.duration_us)


def prepare(ctx: RunContext) -> Workload:
    """Generates the workload (offline work, before anything starts)."""
    ctx.say("generating workload")
    gen = generate_workload(ctx.rs, ctx.run.workload)
    group_of = ctx.hs.group_of()
    if tuple(gen.device_group) != tuple(ctx.hs.groups[gi].name for gi in group_of):
        raise RuntimeError("tracegen numbered the devices differently from the spec's groups")
    return Workload(gen, group_of, late_send_us(ctx.run.root))
