"""The GEs' scheduler decided on a placement plan (``gateway.scheduler``:
auto, fifo or normal): SCHED_FIFO inside the RT budget this host's Docker
engine has free (wotbench.host.rt measures it and splits it), or the normal
scheduler with the reason, recorded in the plan."""

from __future__ import annotations

from dataclasses import replace

from wotbench.base.errors import UserError
from wotbench.execution.placement import ClusterPlan, Plan
from wotbench.host.rt import RtAvailable, RtBudget, cd_ge_share, rt_available, split_budget

__all__ = ["decide"]


def _decide(plan: Plan, scheduler: str, avail: RtAvailable, remote_cd: bool, cd_rit_us: int | None) -> Plan:
    """``plan`` with each GE's scheduler, budget and why (the CD-GE's share
    grows for a CD interval ``cd_rit_us`` under 8 ms, wotbench.host.rt)."""
    share = cd_ge_share(cd_rit_us)
    n_ge, cd = len(plan.ge_cores), plan.cd_ge_cpuset is not None
    if scheduler == "normal":
        return replace(plan, scheduler="normal", sched_why=("gateway.scheduler: normal",))
    why = avail.why
    ges: list[RtBudget] = []
    cd_b: RtBudget | None = None
    if not why:
        try:
            ges, cd_b = split_budget(avail, n_ge, cd and not remote_cd, share)
        except ValueError as err:
            why = str(err)
    if why:
        if scheduler == "fifo":
            raise UserError(f"SCHED_FIFO is not available: {why}", field="gateway.scheduler")
        return replace(plan, scheduler="normal", sched_why=(f"normal scheduler: {why}",))
    notes = [f"SCHED_FIFO inside an RT budget: Docker's free share is {avail.free_us}/{avail.period_us} us; "
             f"CD-GE {share:.0%}, the GE(s) split the rest"]
    if remote_cd and cd:
        notes.append("this node's CD-GE runs on a remote engine as uid 65534: normal scheduler")
    return replace(plan, scheduler="fifo", ge_rt_budgets=tuple(b.arg for b in ges),
                   cd_ge_rt_budget=cd_b.arg if cd_b else None, sched_why=tuple(notes))


def decide(layout: Plan | ClusterPlan, scheduler: str, local: str | None = None,
           avail: RtAvailable | None = None, cd_rit_us: int | None = None) -> Plan | ClusterPlan:
    """The plan (or every node's) with ``gateway.scheduler`` decided. On a
    swarm only the local node (``local``: its hostname) can run FIFO: remote
    containers run as uid 65534 (normal scheduler, with a note)."""
    avail = rt_available() if avail is None else avail
    if isinstance(layout, Plan):
        return _decide(layout, scheduler, avail, remote_cd=False, cd_rit_us=cd_rit_us)
    nodes = []
    for np_ in layout.nodes:
        if np_.hostname == local:
            nodes.append(replace(np_, plan=_decide(np_.plan, scheduler, avail, remote_cd=False, cd_rit_us=cd_rit_us)))
        else:
            nodes.append(replace(np_, plan=replace(np_.plan, scheduler="normal", sched_why=(
                "remote node: its containers run as uid 65534 (no SCHED_FIFO); normal scheduler",))))
    return replace(layout, nodes=tuple(nodes))
