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
from wotbench.reporting import late_send_us
from wotbench.tracegen._generate import generate

if TYPE_CHECKING:
    from wotbench.spec import RunSpec, Spec


class Preflight(NamedTuple):
    plan: Plan
    images: dict[str, str]
    netem: bool


def plan_for(hs: Spec, cores: Sequence[int] | None = None) -> Plan:
    """This host's plan (its cores, or ``cores``)."""
    if hs.cluster is not None:
        raise UserError("a run across a swarm's nodes needs the Swarm backend, which is not there "
                        "yet; without this section the run uses this host alone", field="cluster")
    available = sorted(os.sched_getaffinity(0)) if cores is None else list(cores)
    try:
        return make_plan(available, reserve=hs.placement.reserve,
                         ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                         devices=hs.device_count, affinity=hs.placement.affinity)
    except UserError as err:
        err.field = err.field or "placement"
        raise


def layout_for(hs: Spec, inventory: Inventory) -> Plan | ClusterPlan:
    """A spec with a ``cluster`` section: every node's plan (it needs a
    swarm manager). Without one: this host's plan, as `wotbench run` runs it
    (until the Swarm backend runs tests across nodes, a swarm's defaults
    would describe a run that does not happen)."""
    if hs.cluster is None:
        return plan_for(hs, inventory.local.cores)
    if not inventory.swarm:
        raise UserError("this host is not in a swarm: a spec with this section is planned on a "
                        "swarm manager (docker swarm init); without it, for this host alone",
                        field="cluster")
    return make_cluster_plan(inventory, hs.cluster, reserve=hs.placement.reserve,
                             ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                             group_sizes=[g.count for g in hs.groups], affinity=hs.placement.affinity)


def preflight(hs: Spec, backend: Backend) -> Preflight:
    """What must hold before anything starts: a placement, the images, and
    support for the impairment asked for."""
    plan = plan_for(hs)
    imps = [(f"devices[{i}].impairment", g.impairment) for i, g in enumerate(hs.groups)
            if g.impairment is not None]
    images = backend.check_images(["device", "ge"] + (["nettools"] if imps else []))
    netem = backend.check_impairment(imps) if imps else False
    return Preflight(plan, images, netem)


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
