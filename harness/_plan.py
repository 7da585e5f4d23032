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
4. with no non-reserved core everything shares every core.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from wotbench._errors import UserError

#: The CD-GE's requests are cd.rit apart (1 s by default): spinning between
#: them would only take CPU from whatever shares its core (the devices, on a
#: small host), i.e. cause the contention it is there to detect. It blocks
#: while its next send is more than this far away (wotbench-ge --spin-us).
CD_GE_SPIN_US = 2000


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

    @property
    def cores_shared(self) -> bool:
        return self.degraded

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        # The per-device list is long; the summary keeps its shape readable.
        d["device_cpusets"] = list(self.device_cpusets)
        d["cores_shared"] = self.cores_shared
        return d

    def render(self, group_of: Sequence[int] | None = None, group_names: Sequence[str] = ()) -> str:
        lines = [f"cores offered: {cpuset(self.available)} ({len(self.available)})",
                 f"  OS, harness, monitor: {cpuset(self.reserved)}"]
        for k, c in enumerate(self.ge_cores):
            lines.append(f"  GE {k}: core {c}")
        if self.cd_ge_cpuset is not None:
            lines.append(f"  CD-GE: cpuset {self.cd_ge_cpuset} (--spin-us {self.cd_ge_spin_us}: blocks between requests)")
            lines.append(f"  CD node: cpuset {self.cd_node_cpuset}")
        per_core: dict[str, int] = {}
        for cs in self.device_cpusets:
            per_core[cs] = per_core.get(cs, 0) + 1
        how = "pinned round-robin" if self.affinity else "sharing one cpuset"
        lines.append(f"  devices ({len(self.device_cpusets)}, {how}): "
                     + ", ".join(f"{n} on {cs}" for cs, n in sorted(per_core.items())))
        if self.degraded:
            lines.append("  DEGRADED: cores are shared; results carry this note")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def make_plan(available: Iterable[int], *, reserve: Sequence[int], ge_instances: int,
              cd_enabled: bool, devices: int, affinity: bool) -> Plan:
    avail = tuple(sorted(set(available)))
    if not avail:
        raise UserError("the host offers no CPU to this process")
    missing = [c for c in reserve if c not in avail]
    if missing:
        raise UserError(f"core(s) {cpuset(missing)} not offered by this host "
                        f"(offered: {cpuset(avail)})", field="placement.reserve")
    reserved = tuple(sorted(reserve))
    others = [c for c in avail if c not in reserved]
    m, n_ge, cd = len(others), ge_instances, 1 if cd_enabled else 0
    needed = len(reserved) + n_ge + cd + 1
    short = f"{len(avail)} cores offered, {needed} needed for the paper's layout: "
    notes: list[str] = []
    cd_dedicated = True
    if m >= n_ge + cd + 1:
        ge_cores = others[:n_ge]
        cd_core = others[n_ge] if cd else None
        dev_cores = others[n_ge + cd:]
    elif m >= n_ge + 1:
        ge_cores, cd_core, dev_cores = others[:n_ge], None, others[n_ge:]
        cd_dedicated = False
        notes.append(short + "every GE has its own core; the CD-GE shares the device cores")
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
    else:
        ge_cores = [avail[i % len(avail)] for i in range(n_ge)]
        cd_core, dev_cores, cd_dedicated = None, list(avail), False
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
    degraded = not (cd_dedicated and m >= n_ge + cd + 1)
    return Plan(
        available=avail, reserved=reserved, ge_cores=tuple(ge_cores),
        cd_ge_cpuset=(str(cd_core) if cd_core is not None else cpuset(dev_cores)) if cd else None,
        device_cores=tuple(dev_cores), affinity=affinity,
        device_cpusets=tuple(pins[cd:]), cd_node_cpuset=pins[0] if cd else None,
        degraded=degraded, notes=tuple(notes), cd_ge_spin_us=CD_GE_SPIN_US if cd else None)
