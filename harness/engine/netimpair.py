"""Network impairment per device group (loss, delay, jitter, rate).

With ``pumba`` on PATH the harness drives Pumba with the local nettools
image for loss and delay; otherwise it runs the tools itself: a
short-lived sidecar in the device's network namespace
(``network_mode=container:<id>``) with only NET_ADMIN applies a rate with
``tc tbf`` (every kernel has it), delay and jitter with ``tc netem`` (where
the kernel has it), and loss with netem or, without it, an ``iptables``
statistic rule. The rules live in the device's namespace, so the sidecar
exits once they are in place.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, NotRequired, TypedDict

import docker
import docker.errors

from wotbench.base.errors import UserError
from wotbench.engine.dockerenv import IMAGES, LABEL_OWNER, LABEL_ROLE, LABEL_RUN, owner_label
from wotbench.spec import Impairment

#: The sidecar's limits: tc or iptables for a moment.
SIDECAR_MEMORY, SIDECAR_PIDS = 64 << 20, 32


def local_cores() -> str:
    """The harness's own cores (during a run: the reserved ones)."""
    return ",".join(map(str, sorted(os.sched_getaffinity(0))))


class SidecarArgs(TypedDict):
    """The engine's run arguments of :func:`sidecar_args`."""

    cap_drop: list[str]
    cap_add: list[str]
    security_opt: list[str]
    read_only: bool
    tmpfs: dict[str, str]
    mem_limit: int
    memswap_limit: int
    pids_limit: int
    cpuset_cpus: NotRequired[str]
    labels: dict[str, str]


def sidecar_args(run_id: str, role: str, cpuset: str | None = None) -> SidecarArgs:
    """How a sidecar runs: NET_ADMIN its only capability (it stays root in
    the container: Docker 20.10 has no ambient capabilities for another
    user), no privilege gain, a read-only root with a small tmpfs for
    iptables' lock, memory and pids limits, on ``cpuset`` (this host: the
    harness's reserved cores; a swarm node's engine: its choice)."""
    args: SidecarArgs = {
        "cap_drop": ["ALL"], "cap_add": ["NET_ADMIN"], "security_opt": ["no-new-privileges"],
        "read_only": True, "tmpfs": {"/run": "size=1m,mode=0755"},
        "mem_limit": SIDECAR_MEMORY, "memswap_limit": SIDECAR_MEMORY, "pids_limit": SIDECAR_PIDS,
        "labels": {LABEL_RUN: run_id, LABEL_ROLE: role, LABEL_OWNER: owner_label()}}
    if cpuset:
        args["cpuset_cpus"] = cpuset
    return args


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


def tc_netem_args(imp: Impairment, loss: bool = True) -> list[str]:
    """netem's arguments for delay, jitter and (with ``loss``) loss."""
    args = []
    if imp.delay_us:
        args += ["delay", f"{imp.delay_us}us"]
        if imp.jitter_us:
            args += [f"{imp.jitter_us}us"]
    if loss and imp.loss:
        args += ["loss", f"{imp.loss * 100:.4f}%"]
    return args


#: tbf's bucket: at least two full Ethernet frames (a smaller bucket never
#: passes a full-size frame), else 10 ms at the rate.
TBF_MIN_BURST = 2 * 1514
#: tbf's queue: what waits longer than this for tokens is dropped.
TBF_LATENCY_MS = 1000


def tbf_args(rate_bps: int) -> list[str]:
    """tbf shaping to ``rate_bps`` (bits/s, counted on Ethernet frames)."""
    burst = max(TBF_MIN_BURST, rate_bps // 8 // 100)
    return ["tbf", "rate", f"{rate_bps}bit", "burst", str(burst), "latency", f"{TBF_LATENCY_MS}ms"]


def sidecar_script(imp: Impairment, netem: bool) -> str:
    """Shell commands run in the device's namespace (its eth0).

    - rate: a token bucket (tbf, in every kernel) as eth0's root qdisc: what
      the device sends (its replies) leaves at most at ``rate``, as with
      netem's and Pumba's rate; a queue of TBF_LATENCY_MS, beyond it drops.
    - delay, jitter: netem (root, or tbf's child under a rate), which this
      kernel may lack (then refused before the run, check_supported).
    - loss: netem's loss where netem is there; else iptables statistic
      rules dropping each direction with p_dir such that a request/response
      pair is lost with probability ``loss``: 1 - (1 - p_dir)^2 = loss.
    """
    cmds = []
    netem_args = tc_netem_args(imp, loss=netem) if netem else []
    if imp.rate_bps:
        cmds.append("tc qdisc add dev eth0 root handle 1: " + " ".join(tbf_args(imp.rate_bps)))
        if netem_args:
            cmds.append("tc qdisc add dev eth0 parent 1:1 handle 10: netem " + " ".join(netem_args))
    elif netem_args:
        cmds.append("tc qdisc add dev eth0 root netem " + " ".join(netem_args))
    if imp.loss and not netem:
        p_dir = 1.0 - (1.0 - imp.loss) ** 0.5
        rule = f"-m statistic --mode random --probability {p_dir:.6f} -j DROP"
        cmds += [f"iptables -A OUTPUT -o eth0 -p udp {rule}", f"iptables -A INPUT -i eth0 -p udp {rule}"]
    return " && ".join(cmds)


def check_supported(imps: Sequence[tuple[str, Impairment]], netem: bool, pumba: bool) -> None:
    """Delay and jitter need netem: fail before anything starts (rate is
    tbf and loss iptables where netem is missing)."""
    for key, imp in imps:
        if imp.needs_netem and not netem:
            raise UserError("delay and jitter need the kernel's netem qdisc, which this host lacks "
                            "(loss works here through iptables, rate through tbf)", field=key)
        if pumba and imp.delay_us and imp.rate_bps:
            raise UserError("Pumba's netem takes the root qdisc that rate's tbf needs: give delay or "
                            "rate, not both (or take pumba off PATH)", field=key)


@dataclass
class Applied:
    how: str                    # "pumba", or "sidecar-" and the tools joined by "+": netem, tbf, iptables
    containers: int
    processes: list[subprocess.Popen[bytes]]


def apply_sidecars(c: docker.DockerClient, run_id: str, targets: Sequence[tuple[str, Impairment]],
                   netem: bool, cpuset: str | None = None) -> Applied:
    """Runs one sidecar per device container (``targets``: container id and
    its group's impairment); an error in any is fatal to the run."""
    tools: set[str] = set()
    for cid, imp in targets:
        script = sidecar_script(imp, netem)
        tools.update(t for t in ("netem", "tbf", "iptables") if f" {t} " in f" {script} ")
        try:
            c.containers.run(IMAGES["nettools"], ["sh", "-ec", script],
                             network_mode=f"container:{cid}", remove=True, **sidecar_args(run_id, "nettools", cpuset))
        except docker.errors.ContainerError as exc:
            raise RuntimeError(f"impairment sidecar for {cid[:12]} failed: {exc.stderr!r}") from None
    return Applied(sidecar_how(tools), len(targets), [])


def sidecar_how(tools: set[str]) -> str:
    """``sidecar-`` and the tools a run's sidecars used (netem, tbf, iptables)."""
    return "sidecar-" + "+".join(t for t in ("netem", "tbf", "iptables") if t in tools)


def pumba_commands(names: Sequence[str], imp: Impairment, duration_s: int, netem: bool) -> list[list[str]]:
    """Pumba command lines for one group's containers (``names``)."""
    cmds = []
    img = IMAGES["nettools"]
    common = ["pumba", "--log-level", "error"]
    if netem and imp.needs_netem:
        sub = ["delay", "--time", str(max(1, imp.delay_us // 1000)), "--jitter", str(imp.jitter_us // 1000)]
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
