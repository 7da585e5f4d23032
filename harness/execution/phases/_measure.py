"""Measure: the monitor for the whole test, then the timeline: the CD-GE
calibrates alone from ``t0 - cd.calibration``, every workload GE starts at
t0 (phases.json); then the wait for every GE."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from wotbench.base import results as res
from wotbench.base.formats import DEFAULT_COAP_PORT as COAP_PORT
from wotbench.engine import ContainerSpec, Mount, Started
from wotbench.execution.monitor import Collectl
from wotbench.execution.phases._capturing import start_captures
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._ge import cd_ge_spec, drain_us, ge_spec, trace_lines, write_inputs
from wotbench.execution.phases._interfere import Episode, schedule, start_hogs
from wotbench.execution.phases._preflight import Workload
from wotbench.execution.phases._topology import Layout, Node
from wotbench.execution.placement import cpuset
from wotbench.host import prime as _prime
from wotbench.host import rt as _rt

#: Seconds between starting the GE containers and the CD-GE's start instant.
START_LEAD_S = 2.0
#: Priming stops this long before the first GE starts.
PRIME_SLACK_S = 0.2
#: Extra seconds the GEs get past trace end + timeout before being killed.
FINISH_SLACK_S = 20.0

#: The drain the progress bar expects after the last send (about a round
#: trip when every answer comes; the wait's limit is drain_us, far longer).
DRAIN_S = 1.0

#: Samples per container the cgroup sampler takes at most: past 900 s of test its 1 s interval grows (1 h: 4 s).
SAMPLES_PER_RUN = 900

#: A remote node's collectl container (nettools image).
MONITOR_MEMORY, MONITOR_PIDS = 128 << 20, 16


@dataclass(frozen=True)
class Measured:
    t0_epoch_us: int
    calibration_us: int
    outputs: tuple[tuple[Started, Path], ...]     # each GE and its output CSV (on t0)
    monitors: tuple[tuple[str, Started], ...] = ()   # remote host -> its collectl container
    hogs: tuple[tuple[Episode, Started], ...] = ()   # interference: each episode's hog container


def start_monitor(ctx: RunContext, lay: Layout) -> list[tuple[str, Started]]:
    """collectl on this host (and the cgroup sampler) on the reserved cores;
    on every other node of a swarm, collectl in a container there (no
    network: CPU and memory of that host; its reserved cores)."""
    here = next((p.node for p in lay.parts if not ctx.backend.remote(p.node)), None)
    ctx.observed.collectl = Collectl.available()
    if lay.swarm:                 # the other nodes' collectl is the nettools image's
        ctx.observed.collectl = {p.node or "": bool(ctx.observed.collectl) or ctx.backend.remote(p.node)
                                 for p in lay.parts}
    if Collectl.available():
        ctx.collectl = Collectl(ctx.run.host(here).collectl_dir, lay.reserve or lay.parts[0].plan.reserved)
        ctx.collectl.start()
    if ctx.hs.phases is not None:     # at most ~SAMPLES_PER_RUN samples per container: bounded for a soak
        ctx.sampler.interval_s = max(ctx.sampler.interval_s, ctx.hs.phases.total_us / 1e6 / SAMPLES_PER_RUN)
    ctx.sampler.spool = ctx.run.containers_spool
    ctx.sampler.start()
    ctx.self_sampler.start()
    remote = []
    for part in lay.parts:
        if not ctx.backend.remote(part.node):
            continue
        folder = ctx.run.host(part.node).collectl_dir
        folder.mkdir(parents=True, exist_ok=True)
        spec = ContainerSpec(f"monitor-{part.index}", "monitor", (
            "collectl", "-scmC", "-i1", "-P", "-oUmz", "-F1", "-f", "/io/collectl"),
            cpuset(part.plan.reserved or part.plan.available), MONITOR_MEMORY, MONITOR_PIDS, as_caller=True,
            node=part.node, mounts=(Mount(folder, "/io/collectl", writable=True),))
        st = ctx.backend.start_offline(spec)
        ctx.started([st])
        remote.append((part.node or "", st))
    return remote


def _start_instant(ctx: RunContext, lay: Layout, calibration_us: int, hogs: int = 0, prime_nodes: int = 0,
                   gateway_nodes: int = 0, captures: int = 0) -> int:
    """t0: every GE container must be up before its start instant, so allow
    for the slowest container start seen so far, per GE, on this host now,
    and for priming the GEs' ARP entries (harness/host/prime.py) after that
    (``prime_nodes`` each), and the gateway under test's (``gateway_nodes``),
    and the ``captures`` (started after the priming, each until tcpdump listens)."""
    n_ge = ctx.hs.gateway.instances + sum(1 for p in lay.parts if p.cd) + hogs   # hogs start after the GEs
    n_ge += 2 * captures                    # a capture: a start and tcpdump's own start-up
    prime_s = ctx.hs.gateway.instances * _prime.budget_s(prime_nodes) + _prime.budget_s(gateway_nodes)
    lead_us = int((START_LEAD_S + 1.5 * n_ge * ctx.backend.slowest_start_s + prime_s) * 1e6)
    return time.time_ns() // 1000 + lead_us + calibration_us


def _start_ges(ctx: RunContext, jobs: Sequence[tuple[ContainerSpec, int]], first_start_us: int,
               parallel: bool) -> list[Started]:
    """Starts every GE (on a swarm all at once: they are on several nodes)."""
    with ThreadPoolExecutor(len(jobs) if parallel else 1, thread_name_prefix="ge") as pool:
        started = list(pool.map(ctx.backend.start_ge, [spec for spec, _ in jobs]))
    ges = []
    for st, (spec, lines) in zip(started, jobs, strict=True):
        ctx.started([st])
        ctx.observed.ge(st.key, container=st.name, trace_lines=lines,
                        **({"node": st.node} if st.node is not None else {}))
        if spec.rt_budget is not None:        # it runs unprivileged: FIFO comes from here
            why = _rt.give_fifo(ctx.backend.pid_of(st))
            if why:
                ctx.say(f"{st.key}: could not give it SCHED_FIFO ({why}); it will run under the normal scheduler")
        ges.append(st)
    up_us = time.time_ns() // 1000
    ctx.observed.start = {"start_at_epoch_us": first_start_us, "ges_up_epoch_us": up_us,
                          "late_us": max(0, up_us - first_start_us)}
    return ges


def _prime_ges(ctx: RunContext, ges: Sequence[Started], targets: Sequence[tuple[str, int]],
               first_start_us: int) -> None:
    """Resolves every node's address in each workload GE's namespace before
    the first GE (the CD-GE's calibration) starts; recorded in observed.json."""
    for st in ges:
        deadline = time.monotonic() + (first_start_us / 1e6 - time.time()) - PRIME_SLACK_S
        done = _prime.prime_from(ctx.backend.pid_of(st), targets, deadline)
        ctx.observed.ge(st.key, primed=done.as_dict())
        ctx.say(f"{st.key}: ARP entries of {done.answered}/{done.nodes} nodes primed in {done.seconds:.1f} s"
                + (f" (skipped: {done.skipped})" if done.skipped else ""))


def _prime_gateway(ctx: RunContext, gw: Started, targets: Sequence[tuple[str, int]], first_start_us: int) -> None:
    """Resolves every node's address in the gateway under test's namespace
    (it sends to each device) before the load; recorded in manifest.json's
    ``gateway.primed``."""
    deadline = time.monotonic() + (first_start_us / 1e6 - time.time()) - PRIME_SLACK_S
    done = _prime.prime_from(ctx.backend.pid_of(gw), targets, deadline)
    ctx.manifest.setdefault("gateway", {})["primed"] = done.as_dict()
    ctx.say(f"gateway under test: ARP entries of {done.answered}/{done.nodes} nodes primed in {done.seconds:.1f} s"
            + (f" (skipped: {done.skipped})" if done.skipped else ""))


def prime_targets(nodes: Sequence[str], gateway: tuple[str, int] | None) -> tuple[list[tuple[str, int]],
                                                                                 list[tuple[str, int]]]:
    """What the workload GEs reach (the ``nodes``' CoAP ports, or the gateway
    under test they send every request to) and what the gateway reaches
    (the nodes; none without a gateway): the ARP entries to prime. An HTTP
    gateway does not answer the CoAP ping (``answered`` 0); sending it
    resolves the gateway's entry all the same."""
    devices = [(a, COAP_PORT) for a in nodes]
    return ([gateway], devices) if gateway is not None else (devices, [])


#: Seconds between the progress bar's updates.
TICK_S = 1.0
#: The timeline's spans as a person names them (phases.json's keys).
_SPAN_NAMES = (("calibration", "CD calibration"), ("warmup", "warm-up"), ("measure", "measure"),
               ("cooldown", "cool-down"), ("drain", "drain"))


def timeline(cal_us: int, windows: Mapping[str, Sequence[int]], drain_s: float) -> list[tuple[str, int, int]]:
    """(name, start us, end us) of every non-empty span, relative to t0:
    the CD calibration, the phases and the drain after the last send
    (``drain_s``: what the wait expects, not its limit)."""
    end = max((int(w[1]) for w in windows.values()), default=0)
    spans = {"calibration": (-cal_us, 0), **{k: (int(v[0]), int(v[1])) for k, v in windows.items()},
             "drain": (end, end + int(drain_s * 1e6))}
    return [(name, *spans[key]) for key, name in _SPAN_NAMES if key in spans and spans[key][1] > spans[key][0]]


def _span_at(spans: Sequence[tuple[str, int, int]], rel_us: int) -> str:
    if spans and rel_us < spans[0][1]:
        return "starting the GEs"
    return next((name for name, a, b in spans if a <= rel_us < b), "waiting for the GEs to finish")


@contextlib.contextmanager
def ticker(spans: Sequence[tuple[str, int, int]], t0_us: int, progress: bool, out: TextIO,
           say: Callable[[str], None], clock_us: Callable[[], int] = lambda: time.time_ns() // 1000,
           ) -> Iterator[threading.Thread]:
    """While the harness waits for the GEs: a progress bar on ``out`` (tqdm:
    the current span, seconds done of the timeline and tqdm's time left)
    when ``progress``, else one ``say`` line per span change. A daemon
    thread ticks every :data:`TICK_S`; it is stopped and joined on the way
    out, whatever ends the wait (an error, Ctrl-C). It only reads the
    clock: the wait itself (``Backend.wait``, which kills on timeout) is
    untouched."""
    first, last = (spans[0][1], spans[-1][2]) if spans else (0, 0)
    total_s = max(1, round((last - first) / 1e6))
    bar = tqdm(total=total_s, desc="starting the GEs", unit="s", file=out, leave=False, dynamic_ncols=True,
               bar_format="{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}]",
               disable=not progress)
    stop = threading.Event()

    def tick() -> None:
        said = ""
        while True:
            rel = clock_us() - t0_us
            name = _span_at(spans, rel)
            if progress:
                bar.set_description_str(name, refresh=False)
                bar.update(min(total_s, max(0.0, (rel - first) / 1e6)) - bar.n)
            elif name != said:
                say(f"phase: {name}" + next((f" ({(b - a) / 1e6:.0f} s)" for n, a, b in spans if n == name), ""))
            said = name
            if stop.wait(TICK_S):
                return

    th = threading.Thread(target=tick, name="progress", daemon=True)
    th.start()
    try:
        yield th
    finally:
        stop.set()
        th.join()
        bar.close()


def _wait(ctx: RunContext, ges: Sequence[Started], deadline_s: float) -> None:
    for st in ges:
        code = ctx.backend.wait(st, max(1.0, deadline_s - time.time()))
        ctx.observed.ge(st.key, exit_code=code, killed=code is None)


def _jobs(ctx: RunContext, lay: Layout, wl: Workload, traces: Sequence[tuple[Path, int]],
          t0: int, cal_us: int) -> tuple[list[tuple[ContainerSpec, int]], list[Path]]:
    """Every host's CD-GE (started at t0 - calibration on its own clock,
    i.e. corrected by the node's clock offset), then the workload GEs."""
    jobs, outputs = [], []
    for part in lay.parts:
        if not part.cd:
            continue
        hd = ctx.run.host(part.node)
        hd.cd_dir.mkdir(parents=True, exist_ok=True)
        spec = cd_ge_spec(ctx, part, wl, t0 - cal_us + ctx.clock_us(part.node))
        jobs.append((spec, trace_lines(wl.gen.cd_trace)))
        outputs.append(hd.cd_csv)
    ge = lay.ge_part
    for k, (path, lines) in enumerate(traces):
        jobs.append((replace(ge_spec(ctx, ge.plan, wl, k, path, t0 + ctx.clock_us(ge.node)), node=ge.node), lines))
        outputs.append(ctx.run.ge_csv(k))
    return jobs, outputs


def measure(ctx: RunContext, lay: Layout, wl: Workload, nodes: Sequence[Node]) -> Measured:
    hs = ctx.hs
    traces = write_inputs(ctx, nodes, wl, lay)
    monitors = start_monitor(ctx, lay)
    cal_us = hs.cd.calibration_us if hs.cd.enabled else 0
    episodes = schedule(hs, lay)
    gw, gut = ctx.gateway, hs.gateway_under_test
    targets, via_gateway = prime_targets(
        [n.started.address for n in nodes if n.started.address],
        (gw.address, gut.port) if gw is not None and gw.address and gut is not None else None,
    ) if not lay.swarm else ([], [])
    captures = ctx.hs.gateway.instances if ctx.hs.capture is not None else 0
    t0 = _start_instant(ctx, lay, cal_us, len(episodes), len(targets), len(via_gateway), captures)
    jobs, outputs = _jobs(ctx, lay, wl, traces, t0, cal_us)
    ges = _start_ges(ctx, jobs, t0 - cal_us, parallel=lay.swarm)
    if targets:
        _prime_ges(ctx, [st for st in ges if st.role == "ge"], targets, t0 - cal_us)
    if via_gateway and gw is not None:
        _prime_gateway(ctx, gw, via_gateway, t0 - cal_us)
    start_captures(ctx, lay, [st for st in ges if st.role == "ge"], t0)
    hogs = start_hogs(ctx, episodes, t0)          # asleep until their instants
    end_us = wl.duration_us
    windows = hs.phases.windows() if hs.phases else {
        "warmup": [0, 0], "measure": [0, end_us], "cooldown": [end_us, end_us]}
    res.write_json(ctx.run.phases, {"t0_epoch_us": t0, "calibration": [-cal_us, 0], **windows})
    ctx.say(f"test starts at t0 = {time.strftime('%H:%M:%S', time.gmtime(t0 / 1e6))} UTC"
            + (f" after {cal_us / 1e6:.0f} s of CD calibration" if cal_us else "")
            + f"; load for {end_us / 1e6:.0f} s")
    with ticker(timeline(cal_us, windows, DRAIN_S), t0, ctx.opts.progress, ctx.opts.log, ctx.say):
        _wait(ctx, ges, (t0 + end_us + drain_us(hs)) / 1e6 + FINISH_SLACK_S)
    return Measured(t0, cal_us, tuple(zip(ges, outputs, strict=True)), tuple(monitors), tuple(hogs))
