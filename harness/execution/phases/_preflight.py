"""Plan: what is decided before a container starts. Preflight (placement,
images, the engine's support for the impairment asked for) runs for every
test of a spec before the first starts; then each test generates its
workload and reads the lateness limit its GEs count against."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from wotbench.base import results as res
from wotbench.base import rundir
from wotbench.base.errors import UserError
from wotbench.engine import GATEWAY_ROLE, Backend, SwarmBackend
from wotbench.engine.dockerenv import IMAGES
from wotbench.engine.inventory import Inventory
from wotbench.engine.netcapture import check_image as check_capture_image
from wotbench.execution import rtplan
from wotbench.execution.instances import (
    HEADROOM,
    WINDOW_US,
    InstancesAuto,
    choose,
    effective_capacity,
    ge_cores_available,
    peak_rps,
)
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._gateway import image_ref
from wotbench.execution.phases._interfere import schedule
from wotbench.execution.phases._topology import HostPart, Layout, layout_of
from wotbench.execution.placement import ClusterPlan, Plan, make_cluster_plan, make_plan
from wotbench.host.gecap import CalibrationSetup, GeCapacity, capacity_for
from wotbench.spec import MAX_GES, Cluster
from wotbench.spec.replayspec import KEPT_SOURCE, standalone_yaml
from wotbench.tracegen import build_requests, generate, replay_info, replay_times

if TYPE_CHECKING:
    from wotbench.spec import RunSpec, Spec, WorkloadSpec
    from wotbench.tracegen import GeneratedWorkload


class Preflight(NamedTuple):
    layout: Layout
    images: dict[str, str]
    netem: bool
    spec: Spec | None = None                 # the spec with gateway.instances decided
    auto: InstancesAuto | None = None        # how, with gateway.instances: auto


def plan_for(hs: Spec, cores: Sequence[int] | None = None) -> Plan:
    """This host's plan (its cores, or ``cores``)."""
    available = sorted(os.sched_getaffinity(0)) if cores is None else list(cores)
    try:
        return make_plan(available, reserve=hs.placement.reserve,
                         ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                         devices=hs.device_count, affinity=hs.placement.affinity,
                         gateway_cores=gateway_cores(hs), cd_rit_us=hs.cd.rit_us)
    except UserError as err:
        err.field = err.field or "placement"
        raise


def gateway_cores(hs: Spec) -> int:
    """Cores the gateway under test takes for itself (0: no gateway)."""
    return hs.gateway_under_test.cores if hs.gateway_under_test is not None else 0


def layout_for(hs: Spec, inventory: Inventory) -> Plan | ClusterPlan:
    """On a swarm manager: every node's plan, by the spec's ``cluster``
    section or its defaults. Elsewhere: this host's plan; a ``cluster``
    section there is a UserError (it needs a swarm)."""
    if not inventory.swarm:
        if hs.cluster is not None:
            raise UserError("this host is not in a swarm: a spec with this section runs on a "
                            "swarm manager (docker swarm init; docs/multi-host.md); without it, "
                            "on this host alone", field="cluster")
        return rtplan.decide(plan_for(hs, inventory.local.cores), hs.gateway.scheduler, cd_rit_us=hs.cd.rit_us)
    return rtplan.decide(make_cluster_plan(inventory, hs.cluster or Cluster(), reserve=hs.placement.reserve,
                                       ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                                       group_sizes=[g.count for g in hs.groups],
                                       affinity=hs.placement.affinity, gateway_cores=gateway_cores(hs),
                                       cd_rit_us=hs.cd.rit_us),
                     hs.gateway.scheduler, inventory.local.hostname, cd_rit_us=hs.cd.rit_us)


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


@functools.lru_cache(maxsize=4)
def _trace_peak(workload: WorkloadSpec) -> float:
    """The trace's peak rate; the requests are built once per workload
    (every test's preflight runs twice: before any test starts, and its own).
    A replay's: of the replayed trace (a capture file is derived for it into
    a temporary folder; a bad capture is a UserError here, before anything starts)."""
    if workload.replay is not None:
        return peak_rps(replay_times(workload))
    return peak_rps(build_requests(workload).t_us)


def decide_instances(hs: Spec, inventory: Inventory,
                     say: Callable[[str], None] = _stderr) -> tuple[Spec, InstancesAuto | None]:
    """``gateway.instances: auto`` decided (wotbench.execution.instances): the spec
    with that many GEs, and why. An integer stays as written (None)."""
    if not hs.gateway.auto:
        return hs, None

    def ge_part(k: int) -> HostPart:
        n = replace(hs, gateway=replace(hs.gateway, instances=k))
        return layout_of(layout_for(n, inventory), hs.device_count, k, hs.placement.reserve).ge_part

    def distinct(k: int) -> int:
        try:
            return len(set(ge_part(k).plan.ge_cores))
        except UserError:
            return 0

    part = ge_part(1)
    cores = ge_cores_available(distinct, MAX_GES)
    limits = {"cores": cores, "devices": hs.device_count, "max_ges": MAX_GES}
    peak = _trace_peak(hs.workload) if hs.workload is not None else 0.0
    cal: GeCapacity | None = None
    note = ""
    if min(limits.values()) > 1:
        local = part.node is None or part.node == inventory.local.hostname
        plan = part.plan if local else plan_for(replace(hs, gateway=replace(hs.gateway, instances=1)),
                                                inventory.local.cores)
        ge_core = plan.ge_cores[0]
        dev_core = next((c for c in (*plan.device_cores, *plan.reserved, *plan.available) if c != ge_core), ge_core)
        if not local:
            note = f"the GE node {part.node} is not this host: its capacity is this host's figure"
        own = sorted(os.sched_getaffinity(0))
        if ge_core not in own or dev_core not in own:      # planned for other cores (plan --cores)
            ge_core, dev_core = own[-1], own[0]
        # measured under the scheduler the GE will get (wotbench.host.rt decided it in the plan)
        cal = capacity_for(CalibrationSetup(ge_core, dev_core, plan.scheduler), say=say)
    capacity, why_cap = effective_capacity(cal, hs.validity.send_lag_p99_max_us)
    note = "; ".join(x for x in (note, why_cap) if x)
    n, why = choose(peak, capacity, HEADROOM, limits)
    auto = InstancesAuto(peak, WINDOW_US / 1000, capacity, HEADROOM, n, why, cores, cal, note)
    return replace(hs, gateway=replace(hs.gateway, instances=n)), auto


def adopt(ctx: RunContext, pre: Preflight) -> None:
    """The test runs the spec its preflight decided (``gateway.instances: auto``)."""
    if pre.spec is not None and pre.auto is not None:
        ctx.rs = replace(ctx.rs, spec=pre.spec)
        ctx.manifest["instances_auto"] = pre.auto.to_dict()
        ctx.say(pre.auto.render())


def preflight(hs: Spec, backend: Backend, inventory: Inventory) -> Preflight:
    """What must hold before anything starts: ``gateway.instances`` decided,
    a placement on the host or the swarm's nodes (whose engines answer),
    the images on every node, and support for the impairment asked for."""
    hs, auto = decide_instances(hs, inventory)
    lay = layout_of(layout_for(hs, inventory), hs.device_count, hs.gateway.instances, hs.placement.reserve)
    if hs.capture is not None and lay.swarm:       # before any node's engine is asked
        raise UserError("a run across a swarm does not capture itself yet: run it on one host, or leave "
                        "capture out", field="capture")
    if lay.swarm:
        if not isinstance(backend, SwarmBackend):
            raise RuntimeError("a swarm layout needs the swarm backend")
        backend.connect([p.node for p in lay.parts if p.node])
    imps = [(f"devices[{i}].impairment", g.impairment) for i, g in enumerate(hs.groups)
            if g.impairment is not None]
    remote = lay.swarm and any(p.node != inventory.local.hostname for p in lay.parts)
    images = backend.check_images(["device", "ge"] + (["nettools"] if imps or remote or hs.capture else []))
    if hs.capture is not None:
        check_capture_image(backend.image_labels(images["nettools"]), IMAGES["nettools"])
    gut = hs.gateway_under_test
    if gut is not None:            # on the GE node (a swarm: the node cluster.ge names)
        images[GATEWAY_ROLE] = backend.check_image(image_ref(gut), lay.ge_part.node)
    netem = backend.check_impairment(imps) if imps else False
    schedule(hs, lay)              # interference: its cores and node exist in this layout
    return Preflight(lay, images, netem, hs, auto)


def locate(err: UserError, rs: RunSpec) -> UserError:
    """Points an error without a file at the spec line of its key."""
    return rs.locate(err)


def generate_workload(rs: RunSpec, outdir: Path) -> GeneratedWorkload:
    if rs.spec.workload is None:
        raise RuntimeError(f"{rs.label or rs.spec.name}: a test's spec has no workload")
    return generate(rs.spec.workload, outdir)


@dataclass(frozen=True)
class Workload:
    gen: GeneratedWorkload
    group_of: list[int]             # device id -> group index
    late_us: int                    # a send later than this counts as late (GE --late-us)

    @property
    def duration_us(self) -> int:
        return int(self.gen.duration_us)


def prepare(ctx: RunContext) -> Workload:
    """Generates the workload (offline work, before anything starts)."""
    rp = ctx.rs.spec.workload.replay if ctx.rs.spec.workload is not None else None
    ctx.say("generating workload" if rp is None else
            f"replaying {rp.text} (devices x{rp.devices if rp.map is None else 'map'}, rate x{rp.rate:g}, "
            f"service {rp.service})")
    gen = generate_workload(ctx.rs, ctx.run.workload)
    if rp is not None:      # the run names the replay: source, its hash, k, r, map (expected.json "replay")
        ctx.manifest["replay"] = replay_info(gen)
        # spec.yaml refers to the source's copy in workload/: the run folder stands alone
        res.write_atomic(ctx.run.spec, standalone_yaml(ctx.rs.doc, f"{rundir.WORKLOAD}/{KEPT_SOURCE}"))
    group_of = ctx.hs.group_of()
    if tuple(gen.device_group) != tuple(ctx.hs.groups[gi].name for gi in group_of):
        raise RuntimeError("tracegen numbered the devices differently from the spec's groups")
    from wotbench.reporting import late_send_us  # the analysis (pandas, SciPy): not for `plan`

    return Workload(gen, group_of, late_send_us(ctx.run.root))
