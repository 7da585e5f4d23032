"""Placement plan: which cores run the OS/harness/monitor, each gateway
emulator, the CD-GE, the devices and the CD node (paper section 5, Fig. 4).

Pure functions of the CPU list the host offers, so they are tested with fake
CPU lists. The ideal layout needs len(reserve) + GEs + CD-GE + 1 cores; with
fewer the plan degrades by a fixed rule and says so in ``notes``:

1. the workload GEs keep dedicated cores first (their busy loop is the
   measurement); the CD-GE then shares the device cores, where it measures
   the very contention it is there to detect;
2. with fewer cores than GEs + 1, the GEs share the non-reserved cores but
   the last, which is left to the devices;
3. with a single non-reserved core the GEs take it, and the devices, CD node
   and CD-GE share the reserved cores with the OS, harness and monitor;
4. with no non-reserved core (a one-core host) everything shares it;
   reserving every core of a larger host is an error.

A gateway under test (``gateway_under_test.cores``) takes its cores first,
the last non-reserved ones, and never shares them: a host with fewer
cores outside ``placement.reserve`` is refused. What is left is planned by
the rules above; when the gateway takes every non-reserved core, the GEs,
the CD pair and the devices share the reserved cores (a note says so).

On a swarm (:func:`make_cluster_plan`) each node's cores get such a plan:
the GE node's for its GE(s), every device node's for one CD pair and its
devices (the same rules, the same ``placement.reserve``); the device ids
are assigned to nodes by ``cluster.spread``. Pure functions again, of a
node inventory (:mod:`wotbench.engine.inventory`) and the spec's ``cluster``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from wotbench.base.errors import UserError
from wotbench.base.units import plural

if TYPE_CHECKING:
    from wotbench.engine.inventory import Inventory, NodeInfo
    from wotbench.spec import Cluster, NodeSelector

#: The CD-GE's requests are cd.rit apart (1 s by default): spinning between
#: them would only take CPU from whatever shares its core (the devices, on a
#: small host), i.e. cause the contention it is there to detect. It blocks
#: while its next send is more than this far away (wotbench-ge --spin-us).
CD_GE_SPIN_US = 2000
#: ... but at most this share of the interval: a CD-GE that spins 2 ms of
#: every 2 ms exhausts its RT budget (5 % of a core, host/rt.py) and is
#: throttled for most of each second (a 2 ms CD pair's first trial sent 87 %
#: of its requests late, with an 800 ms stall, before this bound; with it and
#: before the RT share of host/rt.py, 54 %).
CD_GE_SPIN_SHARE = 1 / 40
#: The shortest spin: a FIFO task's wake-up from a timed block on this host.
CD_GE_SPIN_MIN_US = 20


def cd_ge_spin_us(cd_rit_us: int | None) -> int:
    """The CD-GE's --spin-us for requests ``cd_rit_us`` apart (None: unknown, the default)."""
    if cd_rit_us is None:
        return CD_GE_SPIN_US
    return max(CD_GE_SPIN_MIN_US, min(CD_GE_SPIN_US, int(cd_rit_us * CD_GE_SPIN_SHARE)))


#: Where the reader of a plan should look for what shared cores cost (the
#: report's twin of this sentence is reporting/_plain.py's degraded_sentence).
SHARED_CORES_DOC = "docs/reading-the-report.md#shared-cores"
#: Where a node's core count came from, in words (engine/inventory.py's CORES_*).
_CORES_FROM = {"NanoCPUs": "as the engine reports", "sched_getaffinity": "this process's CPU affinity",
               "--cores": "from --cores"}


def shared_cores_sentence(have: int, needed: int) -> str:
    """The plan's one wording of shared cores (``Plan.degraded``)."""
    return (f"shared cores: this host has {have}, the paper's layout needs {needed}. The run is valid only if "
            "the contention detector shows the sharing did not slow the devices down; such a run's numbers "
            f"are this host's, not a dedicated-core testbed's (see {SHARED_CORES_DOC})")


def cores_phrase(n: int, cores_from: str) -> str:
    """``'1 core (as the engine reports)'``."""
    return f"{plural(n, 'core')} ({_CORES_FROM.get(cores_from, cores_from)})"


def cpuset(cores: Iterable[int]) -> str:
    """Docker's cpuset string: ``[1, 2, 3, 5]`` -> ``'1-3,5'``."""
    out: list[str] = []
    cs = sorted(set(cores))
    i = 0
    while i < len(cs):
        j = i
        while j + 1 < len(cs) and cs[j + 1] == cs[j] + 1:
            j += 1
        out.append(str(cs[i]) if i == j else f"{cs[i]}-{cs[j]}")
        i = j + 1
    return ",".join(out)


#: Linux numbers at most 8,192 CPUs (CONFIG_NR_CPUS): a larger id is not a core.
MAX_CPU_ID = 8191
#: A core or a range of cores, in ASCII digits (``int`` alone also takes ``１``, `` 1`` and ``1_0``).
_CORE_RANGE = re.compile(r"([0-9]{1,5})(?:-([0-9]{1,5}))?", re.ASCII)


def cpu_ids(text: str | None) -> list[int]:
    """The cores of a cpuset string: ``'1-3,5'`` -> ``[1, 2, 3, 5]``
    (ValueError when it is not one, or names a core past MAX_CPU_ID)."""
    out: list[int] = []
    for part in text.split(",") if text else ():
        m = _CORE_RANGE.fullmatch(part)
        if m is None:
            raise ValueError(f"{part[:20]!r} is not a core or a range of cores")
        lo, hi = int(m[1]), int(m[2] or m[1])
        if not 0 <= lo <= hi <= MAX_CPU_ID:
            raise ValueError(f"core range {part!r} outside 0-{MAX_CPU_ID}")
        out += range(lo, hi + 1)
    return out


@dataclass(frozen=True)
class Plan:
    available: tuple[int, ...]
    reserved: tuple[int, ...]
    ge_cores: tuple[int, ...]              # core of GE k
    cd_ge_cpuset: str | None               # one core when dedicated, else the device cores
    device_cores: tuple[int, ...]          # cores devices and the CD node may use
    affinity: bool
    device_cpusets: tuple[str, ...]        # cpuset of device id i (index = device id)
    cd_node_cpuset: str | None
    degraded: bool
    notes: tuple[str, ...] = field(default_factory=tuple)
    cd_ge_spin_us: int | None = None       # the CD-GE's --spin-us (None: no CD-GE)
    scheduler: str = "normal"              # the GEs': fifo or normal (wotbench.host.rt.decide)
    ge_rt_budgets: tuple[str, ...] = ()    # under fifo: --rt-budget R/P of GE k
    cd_ge_rt_budget: str | None = None     # under fifo: the CD-GE's (None: normal scheduler)
    sched_why: tuple[str, ...] = ()        # why (or why not) SCHED_FIFO
    gateway_cores: tuple[int, ...] = ()    # the gateway under test's own cores (none: no gateway)

    @property
    def cores_shared(self) -> bool:
        return self.degraded

    @property
    def cores_needed(self) -> int:
        """Cores of the paper's layout for this plan's parts: the reserve, a
        core per GE, one for the CD-GE, one for the devices and the CD node,
        and the gateway under test's own."""
        cd = 1 if self.cd_ge_cpuset is not None else 0
        dev = 1 if self.device_cpusets or cd else 0
        return len(self.reserved) + len(self.ge_cores) + cd + dev + len(self.gateway_cores)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # The per-device list is long; the summary keeps its shape readable.
        d["device_cpusets"] = list(self.device_cpusets)
        d["cores_shared"] = self.cores_shared
        return d

    def render(self, group_of: Sequence[int] | None = None, group_names: Sequence[str] = ()) -> str:
        lines = [f"cores offered: {cpuset(self.available)} ({len(self.available)})",
                 f"  OS, harness, monitor: {cpuset(self.reserved)}"]
        if self.gateway_cores:
            lines.append(f"  gateway under test: cpuset {cpuset(self.gateway_cores)} (its own)")
        for k, c in enumerate(self.ge_cores):
            lines.append(f"  GE {k}: core {c}, " + (f"SCHED_FIFO, RT budget {self.ge_rt_budgets[k]} us"
                                                    if k < len(self.ge_rt_budgets) else "normal scheduler"))
        if self.cd_ge_cpuset is not None:
            lines.append(f"  CD-GE: cpuset {self.cd_ge_cpuset} (--spin-us {self.cd_ge_spin_us}: blocks between "
                         "requests), "
                         + (f"SCHED_FIFO, RT budget {self.cd_ge_rt_budget} us" if self.cd_ge_rt_budget
                            else "normal scheduler"))
            lines.append(f"  CD node: cpuset {self.cd_node_cpuset}")
        per_core: dict[str, int] = {}
        for cs in self.device_cpusets:
            per_core[cs] = per_core.get(cs, 0) + 1
        how = "pinned round-robin" if self.affinity else "sharing one cpuset"
        if self.device_cpusets:            # none on a swarm node that runs only the GEs
            lines.append(f"  devices ({len(self.device_cpusets)}, {how}): "
                         + ", ".join(f"{n} on {cs}" for cs, n in sorted(per_core.items())))
        if self.degraded:
            lines.append(f"  {shared_cores_sentence(len(self.available), self.cores_needed)}")
        lines += [f"  note: {n}" for n in self.notes]
        lines += [f"  scheduler: {n}" for n in self.sched_why]
        return "\n".join(lines)


def make_plan(available: Iterable[int], *, reserve: Sequence[int], ge_instances: int,
              cd_enabled: bool, devices: int, affinity: bool, gateway_cores: int = 0,
              cd_rit_us: int | None = None) -> Plan:
    avail = tuple(sorted(set(available)))
    reserved, others = _reserve(avail, reserve)
    gw = _gateway_cores(others, gateway_cores, reserved)
    others = others[:len(others) - len(gw)]
    avail_rest = [c for c in avail if c not in gw]
    m, n_ge, cd = len(others), ge_instances, 1 if cd_enabled else 0
    # A core for the devices and the CD node; none on a node of a swarm
    # that runs only the GEs (devices=0, no CD pair).
    dev = 1 if devices or cd else 0
    needed = len(reserved) + n_ge + cd + dev + len(gw)
    short = f"{len(avail)} cores offered, {needed} needed for the paper's layout: "
    notes: list[str] = []
    cd_dedicated = True
    if m >= n_ge + cd + dev:
        ge_cores = others[:n_ge]
        cd_core = others[n_ge] if cd else None
        dev_cores = others[n_ge + cd:]
    elif m >= n_ge + dev:
        ge_cores, cd_core, dev_cores = others[:n_ge], None, others[n_ge:]
        cd_dedicated = False
        notes.append(short + ("every GE has its own core; " if n_ge else "")
                     + "the CD-GE shares the device cores")
    elif m >= 2:
        shared = others[:-1]
        ge_cores = [shared[i % len(shared)] for i in range(n_ge)]
        cd_core, dev_cores, cd_dedicated = None, others[-1:], False
        notes.append(short + f"{n_ge} GEs share core(s) {cpuset(shared)}"
                     + ("; the CD-GE shares the device cores" if cd else ""))
    elif m == 1:
        ge_cores = [others[0]] * n_ge
        cd_core, dev_cores, cd_dedicated = None, list(reserved), False
        notes.append(short + f"the GE(s) take core {others[0]}; devices"
                     + (", the CD node and the CD-GE" if cd else "")
                     + f" share core(s) {cpuset(reserved)} with the OS, harness and monitor")
    elif gw:
        ge_cores = [reserved[i % len(reserved)] for i in range(n_ge)]
        cd_core, dev_cores, cd_dedicated = None, list(reserved), False
        notes.append(short + f"the gateway under test takes core(s) {cpuset(gw)}; the GE(s)"
                     + (", the CD pair" if cd else "") + f" and the devices share core(s) {cpuset(reserved)} "
                     "with the OS, harness and monitor")
    else:
        ge_cores = [avail_rest[i % len(avail_rest)] for i in range(n_ge)]
        cd_core, dev_cores, cd_dedicated = None, list(avail_rest), False
        notes.append("no core left outside placement.reserve: everything shares every core")
    # The CD node takes the first round-robin slot so that it sits with the
    # devices it watches over.
    slots = devices + cd
    if affinity:
        pins = [cpuset([dev_cores[i % len(dev_cores)]]) for i in range(slots)]
    else:
        pins = [cpuset(dev_cores)] * slots
    if affinity and devices > len(dev_cores):
        notes.append(f"{devices / len(dev_cores):.1f} devices per core")
    degraded = not (cd_dedicated and m >= n_ge + cd + dev)
    return Plan(
        available=avail, reserved=reserved, ge_cores=tuple(ge_cores),
        cd_ge_cpuset=(str(cd_core) if cd_core is not None else cpuset(dev_cores)) if cd else None,
        device_cores=tuple(dev_cores), affinity=affinity,
        device_cpusets=tuple(pins[cd:]), cd_node_cpuset=pins[0] if cd else None,
        degraded=degraded, notes=tuple(notes), cd_ge_spin_us=cd_ge_spin_us(cd_rit_us) if cd else None,
        gateway_cores=tuple(gw))


def _reserve(avail: tuple[int, ...], reserve: Sequence[int]) -> tuple[tuple[int, ...], list[int]]:
    """The reserved cores and the others; a reserve the host lacks, or one
    of every core of a multi-core host, is a UserError."""
    if not avail:
        raise UserError("the host offers no CPU to this process")
    missing = [c for c in reserve if c not in avail]
    if missing:
        raise UserError(f"core(s) {cpuset(missing)} not offered by this host "
                        f"(offered: {cpuset(avail)})", field="placement.reserve")
    reserved = tuple(sorted(reserve))
    others = [c for c in avail if c not in reserved]
    if not others and len(avail) > 1:
        raise UserError(f"reserves every offered core ({cpuset(avail)}): leave at least one for the GE(s)",
                        field="placement.reserve")
    return reserved, others


def _gateway_cores(others: Sequence[int], n: int, reserved: Sequence[int]) -> list[int]:
    """The gateway under test's ``n`` cores: the last ones outside the
    reserve, never shared; fewer there is a UserError."""
    if n <= 0:
        return []
    if n > len(others):
        raise UserError(f"the gateway under test needs {n} core(s) of its own, never shared with the GEs, "
                        f"the CD pair or the devices; {len(others)} offered outside placement.reserve "
                        f"({cpuset(others) or 'none'}; reserved: {cpuset(reserved) or 'none'})",
                        field="gateway_under_test.cores")
    if n == len(others) and not reserved:
        raise UserError(f"the gateway under test would take every core ({cpuset(others)}): none left for "
                        "the GEs and the devices (placement.reserve is empty)", field="gateway_under_test.cores")
    return list(others[len(others) - n:])


# --- per node: a plan for each node of a swarm ----------------------------


@dataclass(frozen=True)
class NodePlan:
    """One node's part of a run and the per-host plan of its cores."""

    node: NodeInfo
    ge_instances: int                      # workload GEs on this node (0 or all)
    device_ids: tuple[int, ...]            # its devices, in plan.device_cpusets' order
    plan: Plan

    @property
    def hostname(self) -> str:
        return self.node.hostname

    def roles(self) -> list[str]:
        n, d = self.ge_instances, len(self.device_ids)
        return ((["GE" if n == 1 else f"{n} GEs"] if n else [])
                + (["gateway under test"] if self.plan.gateway_cores else [])
                + (["CD pair"] if self.plan.cd_node_cpuset is not None else [])
                + (["1 device" if d == 1 else f"{d} devices"] if d else []))

    def to_dict(self) -> dict[str, Any]:
        return {"hostname": self.hostname, "id": self.node.id, "ge_instances": self.ge_instances,
                "device_ids": list(self.device_ids), "plan": self.plan.to_dict()}

    def render(self, group_of: Sequence[int] = (), group_names: Sequence[str] = ()) -> str:
        n = self.node
        about = ", ".join(x for x in (n.role, cores_phrase(len(n.cores), n.cores_from),
                                      f"engine {n.engine_version}" if n.engine_version else "") if x)
        head = f"node {n.hostname} ({about}): {', '.join(self.roles())}"
        if self.device_ids:
            ids: dict[int, list[int]] = {}
            for i in self.device_ids:
                ids.setdefault(group_of[i] if group_of else -1, []).append(i)
            head += "\n  device ids: " + ", ".join(
                (f"{group_names[g]} " if 0 <= g < len(group_names) else "") + cpuset(v)
                for g, v in ids.items())
        return head + "\n" + "\n".join("  " + line for line in self.plan.render().splitlines())


@dataclass(frozen=True)
class ClusterPlan:
    """A run's layout on a swarm: the node plans (the GE node first) and
    why it is so (the selection and spread rules applied)."""

    nodes: tuple[NodePlan, ...]
    spread: str
    why: tuple[str, ...]

    def node_of(self) -> list[str]:
        """Hostname of every device id."""
        out: dict[int, str] = {i: np.hostname for np in self.nodes for i in np.device_ids}
        return [out[i] for i in range(len(out))]

    def to_dict(self) -> dict[str, Any]:
        return {"spread": self.spread, "why": list(self.why), "nodes": [n.to_dict() for n in self.nodes]}

    def render(self, group_of: Sequence[int] = (), group_names: Sequence[str] = ()) -> str:
        parts = [n.render(group_of, group_names) for n in self.nodes]
        return "\n".join(parts + ["why:"] + [f"  {w}" for w in self.why])


def make_cluster_plan(inventory: Inventory, cluster: Cluster, *, reserve: Sequence[int],
                      ge_instances: int, cd_enabled: bool, group_sizes: Sequence[int],
                      affinity: bool, gateway_cores: int = 0, cd_rit_us: int | None = None) -> ClusterPlan:
    """Each node's plan for a run of ``group_sizes`` devices (device ids
    numbered group after group) on the swarm ``inventory``. A node or label
    the swarm lacks, a node that is not Ready and active, no device node
    left, or more GEs than the GE node has cores for is a UserError naming
    the spec field, before anything starts. A gateway under test
    (``gateway_cores``) goes on the GE node, on cores of its own there."""
    ge_node, why = _ge_node(inventory, cluster.ge)
    dev_nodes, dev_why = _device_nodes(inventory, cluster.devices, ge_node)
    why += dev_why

    def plan_of(node: NodeInfo, n_ge: int, devices: int) -> Plan:
        try:
            return make_plan(node.cores, reserve=reserve, ge_instances=n_ge,
                             cd_enabled=cd_enabled and devices > 0, devices=devices, affinity=affinity,
                             gateway_cores=gateway_cores if node is ge_node else 0, cd_rit_us=cd_rit_us)
        except UserError as err:
            err.what = f"node {node.hostname}: {err.what}"
            err.field = err.field or "placement"
            raise

    on_ge = 1 if any(n is ge_node for n in dev_nodes) else 0
    _check_ges(ge_node, reserve, ge_instances, lambda k: plan_of(ge_node, k, on_ge))
    devices = sum(group_sizes)
    if cluster.spread == "even":
        ids = spread_even(group_sizes, len(dev_nodes))
        why.append(f"spread even: {devices} devices over {len(dev_nodes)} node(s), every group "
                   "split evenly: " + ", ".join(f"{n.hostname} {len(i)}" for n, i in zip(dev_nodes, ids, strict=True)))
    else:
        caps = [cluster.per_core * len(plan_of(n, ge_instances if n is ge_node else 0, 1).device_cores)
                for n in dev_nodes]
        ids = spread_fill(devices, caps, cluster.per_core)
        why.append(f"spread fill: nodes in order, {cluster.per_core} devices per device core: "
                   + ", ".join(f"{n.hostname} {len(i)} of {c}" for n, i, c in zip(dev_nodes, ids, caps, strict=True)))
    idle = [n.hostname for n, i in zip(dev_nodes, ids, strict=True) if not i]
    if idle:
        why.append(f"no device left for {', '.join(idle)}: it runs nothing")
    if cd_enabled:
        why.append("one CD pair (CD-GE + CD node) on every device node, with its devices")
    why.append(f"on every node: core(s) {cpuset(reserve)} for the OS, harness and monitor "
               "(placement.reserve), the per-host rules for the rest")
    if gateway_cores:
        why.append(f"gateway under test on the GE node {ge_node.hostname}, {gateway_cores} core(s) of its own")
    parts = [(ge_node, next((i for n, i in zip(dev_nodes, ids, strict=True) if n is ge_node), []))]
    parts += [(n, i) for n, i in zip(dev_nodes, ids, strict=True) if i and n is not ge_node]
    plans = [NodePlan(n, ge_instances if n is ge_node else 0, tuple(i),
                      plan_of(n, ge_instances if n is ge_node else 0, len(i))) for n, i in parts]
    return ClusterPlan(tuple(plans), cluster.spread, tuple(why))


def spread_even(group_sizes: Sequence[int], nodes: int) -> list[list[int]]:
    """Device ids per node: each group split into ``nodes`` contiguous
    blocks whose sizes differ by at most one, the extra devices of
    successive groups on successive nodes (so node totals differ by at most
    one too)."""
    out: list[list[int]] = [[] for _ in range(nodes)]
    first = turn = 0
    for size in group_sizes:
        base, extra = divmod(size, nodes)
        for j in range(nodes):
            n = base + (1 if (j - turn) % nodes < extra else 0)
            out[j].extend(range(first, first + n))
            first += n
        turn = (turn + extra) % nodes
    return out


def spread_fill(devices: int, capacities: Sequence[int], per_core: int) -> list[list[int]]:
    """Device ids per node: each node in order filled to its capacity."""
    if devices > sum(capacities):
        raise UserError(f"{devices} devices do not fit: {per_core} per device core make room for "
                        f"{sum(capacities)} on the device nodes", field="cluster.per_core")
    out, first = [], 0
    for cap in capacities:
        n = min(cap, devices - first)
        out.append(list(range(first, first + n)))
        first += n
    return out


def _check_ges(node: NodeInfo, reserve: Sequence[int], n_ge: int, plan_of: Callable[[int], Plan]) -> None:
    """On a swarm the GE node is chosen: its GEs must not share cores."""
    shared = len(set(plan_of(n_ge).ge_cores))
    if shared == n_ge:
        return
    fit = next(k for k in range(n_ge - 1, 0, -1) if len(set(plan_of(k).ge_cores)) == k)
    raise UserError(f"{n_ge} GEs would share {shared} core(s) on the GE node {node.hostname} "
                    f"({len(node.cores)} cores, placement.reserve {cpuset(reserve)}): at most {fit} "
                    "get a core of their own there", field="gateway.instances")


def _condition(node: NodeInfo) -> str:
    return f"{node.state}, {node.availability}"


def _usable(node: NodeInfo, at: str) -> NodeInfo:
    if not node.usable:
        raise UserError(f"node {node.hostname} is {_condition(node)}: it must be ready and active "
                        "(docker node ls; docker node update --availability active)", field=at)
    return node


def _by_name(inv: Inventory, name: str, at: str) -> NodeInfo:
    found = [n for n in inv.nodes if n.hostname == name] or [n for n in inv.nodes if n.id == name]
    if not found:
        raise UserError(f"the swarm has no node {name!r} (nodes: "
                        f"{', '.join(n.hostname for n in inv.nodes)})", field=at)
    if len(found) > 1:
        raise UserError(f"{len(found)} nodes are named {name!r}: give a node ID "
                        f"({', '.join(n.id for n in found)})", field=at)
    return _usable(found[0], at)


def _labelled(inv: Inventory, sel: NodeSelector, at: str) -> list[NodeInfo]:
    assert sel.label is not None
    found = sorted((n for n in inv.nodes if n.has_label(*sel.label)), key=lambda n: n.hostname)
    if not found:
        have = sorted({f"{k}={v}" for n in inv.nodes for k, v in n.labels})
        raise UserError(f"no node of the swarm has the label {sel.label_text} (labels: "
                        f"{', '.join(have) or 'none'}; docker node update --label-add)", field=at)
    return found


def _ge_node(inv: Inventory, sel: NodeSelector | None) -> tuple[NodeInfo, list[str]]:
    if sel is None:
        node = _usable(inv.local, "cluster.ge")
        return node, [f"GE node {node.hostname}: the manager wotbench runs on (cluster.ge not given)"]
    if sel.hostnames:
        node = _by_name(inv, sel.hostnames[0], "cluster.ge.node")
        return node, [f"GE node {node.hostname}: cluster.ge.node"]
    found = _labelled(inv, sel, "cluster.ge.label")
    if len(found) > 1:
        raise UserError(f"{len(found)} nodes have the label {sel.label_text} "
                        f"({', '.join(n.hostname for n in found)}): the GEs run on one node",
                        field="cluster.ge.label")
    node = _usable(found[0], "cluster.ge.label")
    return node, [f"GE node {node.hostname}: the node with the label {sel.label_text} (cluster.ge.label)"]


def _device_nodes(inv: Inventory, sel: NodeSelector | None,
                  ge_node: NodeInfo) -> tuple[list[NodeInfo], list[str]]:
    if sel is not None and sel.hostnames:
        nodes = [_by_name(inv, h, f"cluster.devices.nodes[{i}]") for i, h in enumerate(sel.hostnames)]
        return nodes, [f"device nodes {', '.join(n.hostname for n in nodes)}: as listed (cluster.devices.nodes)"]
    if sel is not None:
        found, at = _labelled(inv, sel, "cluster.devices.label"), "cluster.devices.label"
        how = f"the nodes with the label {sel.label_text}"
        src = "cluster.devices.label"
    elif len(inv.nodes) == 1:
        return [ge_node], [f"device nodes {ge_node.hostname}: a one-node swarm runs the devices "
                           "on its only node (cluster.devices not given)"]
    else:
        found = sorted((n for n in inv.nodes if n is not ge_node), key=lambda n: n.hostname)
        at, how = "cluster.devices", f"the nodes but the GE node {ge_node.hostname}"
        src = "cluster.devices not given"
    nodes = [n for n in found if n.usable]
    skipped = [f"{n.hostname} ({_condition(n)})" for n in found if not n.usable]
    if not nodes:
        raise UserError(f"no device node left: none of {how} is ready and active "
                        f"({', '.join(skipped)})", field=at)
    why = [f"device nodes {', '.join(n.hostname for n in nodes)}: the ready, active ones of {how} ({src})"]
    return nodes, why + ([f"skipped: {', '.join(skipped)}"] if skipped else [])
