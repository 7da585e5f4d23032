"""Real-time gateway emulators: whether this host's Docker engine can give
containers an RT budget (cgroup v1 with RT group scheduling, dockerd's
``--cpu-rt-runtime``), how the free budget is split between the CD-GE and
the workload GEs (the decision of ``gateway.scheduler`` recorded in the
plan is wotbench.execution.rtplan's: wotbench-ge ``--sched fifo --rt-budget R/P``;
the container gets exactly that budget, nothing else does), and ``give_fifo``: the GE runs
unprivileged (uid 65534, every capability dropped), so the harness, root on
the host, sets SCHED_FIFO on its process once the container started; the
GE waits for it until just before its start instant.

The kernel requires the RT runtime/period ratios of a cgroup's children to
sum to at most the parent's (/docker), so the free share is the parent's
ratio minus what other containers already hold."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Where the local engine's cgroup (v1, cpu controller) lives.
CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
#: The CD-GE sleeps between its sequential requests (--spin-us): 5 % of a
#: period is many times its duty.
CD_GE_SHARE = 0.05
#: ... unless its requests are so close that they need more: a CD-GE costs
#: about 200 us of RT time per request on this 2-core VM (2 % of a core at
#: 100 requests/s, sched.duty_max of the 10 ms trials), twice that is asked
#: for; at 2 ms (500 requests/s) 5 % left it throttled for up to 0.7 s at a
#: time, 54 % of its sends late (with the spin bound of execution/placement.py).
CD_GE_COST_US = 400
#: ... and never more than this share.
CD_GE_SHARE_MAX = 0.25


def cd_ge_share(cd_rit_us: int | None) -> float:
    """The CD-GE's RT share for requests ``cd_rit_us`` apart (None: the default)."""
    if not cd_rit_us:
        return CD_GE_SHARE
    return max(CD_GE_SHARE, min(CD_GE_SHARE_MAX, CD_GE_COST_US / cd_rit_us))
#: Below this share a workload GE would mostly yield: not worth FIFO.
MIN_GE_SHARE = 0.2
#: Kept free for rounding and for the kernel's own check.
SLACK_SHARE = 0.005
#: The SCHED_FIFO priority the harness gives a GE (wotbench-ge's --rt-prio).
RT_PRIO = 50


@dataclass(frozen=True)
class RtAvailable:
    """The RT share Docker's cgroup can still hand out (0 with ``why``)."""

    period_us: int
    free_us: int                   # per period
    why: str = ""

    @property
    def ok(self) -> bool:
        return not self.why and self.free_us > 0


def _read_int(p: Path) -> int:
    return int(p.read_text().strip())


def rt_available(root: Path = CPU_CGROUP, *, uid: int | None = None) -> RtAvailable:
    """The local engine's free RT budget: /docker's runtime/period minus
    the ratios its containers already hold. ``root`` is the cpu cgroup
    mount (a fake tree in tests); ``uid`` the user GE containers run as
    (the caller's: only root can give a GE process SCHED_FIFO)."""
    uid = os.getuid() if uid is None else uid
    docker = root / "docker"
    try:
        runtime, period = _read_int(docker / "cpu.rt_runtime_us"), _read_int(docker / "cpu.rt_period_us")
    except FileNotFoundError:
        return RtAvailable(0, 0, f"no RT group scheduling for Docker ({docker}/cpu.rt_runtime_us "
                                 "missing: cgroup v2 or a kernel without RT_GROUP_SCHED)")
    except (OSError, ValueError) as err:
        return RtAvailable(0, 0, f"cannot read {docker}/cpu.rt_runtime_us: {err}")
    if runtime <= 0:
        return RtAvailable(period, 0, "dockerd has no RT budget (start it with --cpu-rt-runtime=950000; "
                                      ".ci/setup.sh does)")
    held = 0                       # in the parent's period, rounded up
    for child in sorted(p for p in docker.iterdir() if p.is_dir()):
        try:
            r, pp = _read_int(child / "cpu.rt_runtime_us"), _read_int(child / "cpu.rt_period_us")
        except (OSError, ValueError):
            continue
        if r > 0 and pp > 0:
            held += -(-r * period // pp)
    free = runtime - held
    if free <= 0:
        return RtAvailable(period, 0, "other containers hold Docker's whole RT budget "
                                      f"({held / period:.0%} of a core)")
    if uid != 0:
        return RtAvailable(period, free, f"the harness runs as uid {uid}: only root can give the GEs "
                                         "SCHED_FIFO (run the harness as root)")
    return RtAvailable(period, free)


def give_fifo(pid: int | None, priority: int = RT_PRIO) -> str | None:
    """Sets SCHED_FIFO at ``priority`` on every thread of host process
    ``pid`` (a GE container's: the container has no CAP_SYS_NICE, the
    harness has). The policy survives the exec of the container's init into
    the GE. Returns None, or why not (the GE then records its fallback)."""
    if pid is None:
        return "its container has no process"
    try:
        tids = sorted(int(t) for t in os.listdir(f"/proc/{pid}/task"))
    except OSError as err:
        return f"/proc/{pid}/task: {err.strerror}"
    for tid in tids:
        try:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(priority))
        except ProcessLookupError:
            continue                            # a thread that ended meanwhile
        except OSError as err:
            return f"sched_setscheduler({tid}, SCHED_FIFO, {priority}): {err.strerror}"
    return None


@dataclass(frozen=True)
class RtBudget:
    runtime_us: int
    period_us: int

    @property
    def arg(self) -> str:
        """wotbench-ge's ``--rt-budget`` value."""
        return f"{self.runtime_us}/{self.period_us}"

    @classmethod
    def parse(cls, arg: str) -> RtBudget:
        """The budget of an ``arg`` (``R/P``, as the plan records it)."""
        r, p = arg.split("/")
        return cls(int(r), int(p))


def split_budget(avail: RtAvailable, ge_instances: int, cd_ge: bool, cd_share: float = CD_GE_SHARE
                 ) -> tuple[list[RtBudget], RtBudget | None]:
    """The CD-GE gets ``cd_share`` of the period (:func:`cd_ge_share`), the
    workload GEs split the rest (less SLACK_SHARE) equally. Raises ValueError
    with the reason when a workload GE's share would be under MIN_GE_SHARE."""
    p = avail.period_us
    cd = RtBudget(int(cd_share * p), p) if cd_ge else None
    rest = avail.free_us - (cd.runtime_us if cd else 0) - int(SLACK_SHARE * p)
    each = rest // max(1, ge_instances)
    if ge_instances and each < MIN_GE_SHARE * p:
        raise ValueError(f"Docker's free RT budget ({avail.free_us / p:.0%} of a core) leaves each of "
                         f"{ge_instances} GE(s) {max(each, 0) / p:.0%}, under {MIN_GE_SHARE:.0%}")
    return [RtBudget(each, p) for _ in range(ge_instances)], cd
