"""Placement plan: which cores run the OS/harness/monitor, each gateway
emulator, the CD-GE, the devices and the CD node (paper section 5, Fig. 4).

Pure functions of the CPU list the host offers, so they are tested with fake
CPU lists. The ideal layout needs len(reserve) + GEs + CD-GE + 1 cores; with
fewer the plan degrades by a fixed rule and says so in ``notes``:

1. the GEs (and the CD-GE) share the non-reserved cores but the last, which
   is left to the devices;
2. with a single non-reserved core, all GEs take it and the devices and the
   CD node share the reserved cores with the OS, harness and monitor;
3. with no non-reserved core everything shares every core.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from wotbench._errors import UserError


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
    cd_ge_core: int | None
    device_cores: tuple[int, ...]          # cores devices and the CD node may use
    affinity: bool
    device_cpusets: tuple[str, ...]        # cpuset of device id i (index = device id)
    cd_node_cpuset: str | None
    degraded: bool
    notes: tuple[str, ...] = field(default_factory=tuple)

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
        if self.cd_ge_core is not None:
            lines.append(f"  CD-GE: core {self.cd_ge_core}")
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
    n_ge_roles = ge_instances + (1 if cd_enabled else 0)
    notes: list[str] = []
    degraded = True
    if len(others) >= n_ge_roles + 1:
        degraded = False
        ge_role_cores = others[:n_ge_roles]
        dev_cores = others[n_ge_roles:]
    elif len(others) >= 2:
        shared = others[:-1]
        ge_role_cores = [shared[i % len(shared)] for i in range(n_ge_roles)]
        dev_cores = others[-1:]
        notes.append(f"{len(avail)} cores offered, {len(reserved) + n_ge_roles + 1} needed: "
                     f"{n_ge_roles} GE role(s) share core(s) {cpuset(shared)}")
    elif len(others) == 1:
        ge_role_cores = [others[0]] * n_ge_roles
        dev_cores = list(reserved)
        notes.append(f"{len(avail)} cores offered, {len(reserved) + n_ge_roles + 1} needed: "
                     f"the GE role(s) share core {others[0]}; devices and the CD node share "
                     f"core(s) {cpuset(reserved)} with the OS, harness and monitor")
    else:
        ge_role_cores = [avail[i % len(avail)] for i in range(n_ge_roles)]
        dev_cores = list(avail)
        notes.append("no core left outside placement.reserve: everything shares every core")
    if degraded and n_ge_roles > 1 and len(set(ge_role_cores)) < n_ge_roles:
        notes.append("the CD-GE shares a core with a workload GE" if cd_enabled
                     else "workload GEs share cores")
    ge_cores = tuple(ge_role_cores[:ge_instances])
    cd_ge_core = ge_role_cores[ge_instances] if cd_enabled else None
    # The CD node takes the first round-robin slot so that it sits with the
    # devices it watches over.
    slots = devices + (1 if cd_enabled else 0)
    if affinity:
        pins = [cpuset([dev_cores[i % len(dev_cores)]]) for i in range(slots)]
    else:
        pins = [cpuset(dev_cores)] * slots
    cd_node = pins[0] if cd_enabled else None
    dev_pins = tuple(pins[1:] if cd_enabled else pins)
    if affinity and devices > len(dev_cores):
        notes.append(f"{devices / len(dev_cores):.1f} devices per core")
    return Plan(avail, reserved, ge_cores, cd_ge_core, tuple(dev_cores), affinity,
                dev_pins, cd_node, degraded, tuple(notes))
