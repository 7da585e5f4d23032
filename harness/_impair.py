"""Network impairment per device group (loss, delay, jitter, rate).

With ``pumba`` on PATH the harness drives Pumba with the local nettools
image; otherwise it runs the same tools itself: a short-lived sidecar in
the device's network namespace (``network_mode=container:<id>``) with only
NET_ADMIN applies ``tc netem`` or, for loss alone on a kernel without netem,
an ``iptables`` statistic rule. The rules live in the device's namespace, so
the sidecar exits once they are in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO

import docker
import docker.errors

from wotbench._errors import UserError
from wotbench._dockerenv import IMAGES, LABEL_OWNER, LABEL_ROLE, LABEL_RUN, owner_label
from wotbench.spec import Impairment


#: The sidecar's limits: tc or iptables for a moment.
SIDECAR_MEMORY, SIDECAR_PIDS = 64 << 20, 32


def local_cores() -> str:
    """The harness's own cores (during a run: the reserved ones)."""
    return ",".join(map(str, sorted(os.sched_getaffinity(0))))


def sidecar_args(run_id: str, role: str, cpuset: str | None = None) -> dict[str, object]:
    """How a sidecar runs: NET_ADMIN its only capability (it stays root in
    the container: Docker 20.10 has no ambient capabilities for another
    user), no privilege gain, a read-only root with a small tmpfs for
    iptables' lock, memory and pids limits, on ``cpuset`` (this host: the
    harness's reserved cores; a swarm node's engine: its choice)."""
    return {"cap_drop": ["ALL"], "cap_add": ["NET_ADMIN"], "security_opt": ["no-new-privileges"],
            "read_only": True, "tmpfs": {"/run": "size=1m,mode=0755"},
            "mem_limit": SIDECAR_MEMORY, "memswap_limit": SIDECAR_MEMORY, "pids_limit": SIDECAR_PIDS,
            **({"cpuset_cpus": cpuset} if cpuset else {}),
            "labels": {LABEL_RUN: run_id, LABEL_ROLE: role, LABEL_OWNER: owner_label()}}


def netem_available(c: docker.DockerClient, run_id: str) -> bool:
    """Whether the kernel has the netem qdisc, tried on the loopback of a
    throwaway network namespace (nothing of the host is touched)."""
    try:
        c.containers.run(IMAGES["nettools"], ["tc", "qdisc", "add", "dev", "lo", "root",
                                              "netem", "delay", "1ms"],
                         network_mode="none", remove=True, **sidecar_args(run_id, "probe", local_cores()))
    except docker.errors.ContainerError:
        return False
    return True


def tc_netem_args(imp: Impairment) -> list[str]:
    args = []
    if imp.delay_us:
        args += ["delay", f"{imp.delay_us}us"]
        if imp.jitter_us:
            args += [f"{imp.jitter_us}us"]
    if imp.loss:
        args += ["loss", f"{imp.loss * 100:.4f}%"]
    if imp.rate_bps:
        args += ["rate", f"{imp.rate_bps}bit"]
    return args


def sidecar_script(imp: Impairment, netem: bool) -> str:
    """Shell commands run in the device's namespace. Loss by iptables drops
    each direction with probability p_dir so that a request/response pair
    is lost with probability ``loss``: 1 - (1 - p_dir)^2 = loss."""
    if netem and imp.active:
        return "tc qdisc add dev eth0 root netem " + " ".join(tc_netem_args(imp))
    p_dir = 1.0 - (1.0 - imp.loss) ** 0.5
    rule = f"-m statistic --mode random --probability {p_dir:.6f} -j DROP"
    return (f"iptables -A OUTPUT -o eth0 -p udp {rule} && "
            f"iptables -A INPUT -i eth0 -p udp {rule}")


def check_supported(imps: Sequence[tuple[str, Impairment]], netem: bool, pumba: bool) -> None:
    """Delay, jitter and rate need netem: fail before anything starts."""
    for key, imp in imps:
        if imp.needs_netem and not netem:
            raise UserError("delay, jitter and rate need the kernel's netem qdisc, which this "
                            "host lacks (only loss works here, through iptables)", field=key)
        if pumba and imp.delay_us and imp.rate_bps:
            raise UserError("Pumba applies one netem command per container: give delay or "
                            "rate, not both (or take pumba off PATH)", field=key)


@dataclass
class Applied:
    how: str                    # "pumba" | "sidecar-netem" | "sidecar-iptables"
    containers: int
    processes: list[subprocess.Popen[bytes]]


def apply_sidecars(c: docker.DockerClient, run_id: str, targets: Sequence[tuple[str, Impairment]],
                   netem: bool, cpuset: str | None = None) -> Applied:
    """Runs one sidecar per device container (``targets``: container id and
    its group's impairment); an error in any is fatal to the run."""
    for cid, imp in targets:
        script = sidecar_script(imp, netem)
        try:
            c.containers.run(IMAGES["nettools"], ["sh", "-ec", script],
                             network_mode=f"container:{cid}", remove=True, **sidecar_args(run_id, "nettools", cpuset))
        except docker.errors.ContainerError as exc:
            raise RuntimeError(f"impairment sidecar for {cid[:12]} failed: {exc.stderr!r}") from None
    return Applied("sidecar-netem" if netem else "sidecar-iptables", len(targets), [])


def pumba_commands(names: Sequence[str], imp: Impairment, duration_s: int, netem: bool) -> list[list[str]]:
    """Pumba command lines for one group's containers (``names``)."""
    cmds = []
    img = IMAGES["nettools"]
    common = ["pumba", "--log-level", "error"]
    if netem and imp.needs_netem:
        sub = []
        if imp.delay_us:
            sub = ["delay", "--time", str(max(1, imp.delay_us // 1000)),
                   "--jitter", str(imp.jitter_us // 1000)]
        elif imp.rate_bps:
            sub = ["rate", "--rate", f"{max(1, imp.rate_bps // 1000)}kbit"]
        cmds.append(common + ["netem", "--duration", f"{duration_s}s", "--tc-image", img,
                              "--pull-image=false", "--interface", "eth0"] + sub + list(names))
    if imp.loss:
        cmds.append(common + ["iptables", "--duration", f"{duration_s}s", "--iptables-image", img,
                              "--pull-image=false", "--interface", "eth0", "loss",
                              "--probability", f"{imp.loss:.6f}"] + list(names))
    return cmds


def apply_pumba(groups: Sequence[tuple[list[str], Impairment]], duration_s: int,
                netem: bool, log: BinaryIO) -> Applied:
    """Starts one Pumba process per impairment kind and group; they run for
    the whole test and are stopped at teardown."""
    procs = []
    for names, imp in groups:
        for cmd in pumba_commands(names, imp, duration_s, netem):
            procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))
    return Applied("pumba", sum(len(n) for n, _ in groups), procs)


def pumba_on_path() -> bool:
    return shutil.which("pumba") is not None
