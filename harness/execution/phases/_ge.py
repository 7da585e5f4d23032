"""The gateway emulators of a test: their inputs (hosts file, one trace and
one device list per GE), the one builder of a wotbench-ge command line
(workload GEs and the CD-GE alike), and their container specs."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.engine import ContainerSpec, Mount
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._gateway import north_args
from wotbench.execution.phases._preflight import Workload
from wotbench.execution.phases._topology import HostPart, Layout, Node
from wotbench.execution.placement import Plan
from wotbench.host.rt import RT_PRIO, RtBudget

if TYPE_CHECKING:
    from wotbench.spec import Gateway, Spec

#: Inside a GE container: what it reads, and where it writes.
IN, OUT = "/io/in", "/io/out"
CD_HOSTS_AT = "/io/hosts.csv"
GE_MEMORY = 4 << 30
GE_PIDS = 16


def drain_us(hs: Spec) -> int:
    """Longest a GE may still wait for answers after its last send: a CON
    request times out only after every retransmission (RFC 7252 4.8:
    ACK_TIMEOUT x ACK_RANDOM_FACTOR x (2^(MAX_RETRANSMIT+1) - 1), 93 s with
    the defaults; CoCoA's first timer at most 32 s x ACK_RANDOM_FACTOR and
    the others at most 32 s; Californium's first at most 32 s, the others
    60 s: gateway-emulator/README.md, "Congestion control"), and a separate
    response gets the request timeout on top; with NSTART a request may
    first wait that timeout in its peer's queue."""
    gw = hs.gateway
    ack = gw.ack_timeout_us if gw.ack_timeout_us is not None else 2_000_000
    n = gw.max_retransmit if gw.max_retransmit is not None else 4
    arf = gw.ack_random_factor if gw.ack_random_factor is not None else 1.5
    if gw.congestion == "rfc7252":
        longest = ack * arf * (2 ** (n + 1) - 1)
    elif gw.congestion in ("cocoa", "cocoa-strong"):
        longest = 32_000_000 * (arf + n)
    else:
        longest = 32_000_000 + 60_000_000 * n
    return int(longest) + gw.timeout_us * (2 if gw.nstart is not None else 1)


def ge_argv(gw: Gateway, *, trace: str, hosts: str, out: str, summary: str, start_at_us: int,
            late_us: int, cpu: str | None = None, coap_type: str | None = None,
            spin_us: int | None = None, rt_budget: str | None = None) -> list[str]:
    """wotbench-ge's command line (gateway-emulator/README.md)."""
    argv = ["--trace", trace, "--hosts", hosts, "--out", out, "--summary", summary,
            "--type", coap_type or gw.type, "--timeout-ms", str(max(1, gw.timeout_us // 1000))]
    if gw.ack_timeout_us is not None:
        argv += ["--ack-timeout-ms", str(max(1, gw.ack_timeout_us // 1000))]
    if gw.max_retransmit is not None:
        argv += ["--max-retransmit", str(gw.max_retransmit)]
    argv += ["--start-at", str(start_at_us), "--late-us", str(late_us)]
    if cpu is not None:
        argv += ["--cpu", cpu]
    if spin_us is not None:
        argv += ["--spin-us", str(spin_us)]
    if rt_budget is not None:          # the plan's SCHED_FIFO budget (wotbench.host.rt)
        argv += ["--sched", "fifo", "--rt-prio", str(RT_PRIO), "--rt-budget", rt_budget]
    return argv


def split_devices(device_ids: Sequence[int], instances: int) -> list[np.ndarray]:
    """Contiguous, near-equal blocks of device ids, one per GE."""
    return list(np.array_split(np.asarray(sorted(device_ids), dtype=np.int64), instances))


def _header(trace: Path) -> str | None:
    """The trace's header line, if it has one."""
    with trace.open() as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                return line if line.split(",")[0].strip() == "device_id" else None
    return None


def trace_lines(trace: Path) -> int:
    """Request lines of a trace (no header, comments or blank lines)."""
    with trace.open() as fh:
        n = sum(1 for line in fh if line.strip() and not line.startswith("#"))
    return n - (1 if _header(trace) else 0)


def split_trace(trace: Path, blocks: list[np.ndarray], paths: Sequence[Path], total_lines: int,
                chunk_rows: int = 1_000_000) -> list[tuple[Path, int]]:
    """One trace per GE (``paths``) holding its devices' lines in the original
    order; returns (path, lines) per GE. Streams the trace in chunks so that
    a 10-million-line trace never sits in memory whole."""
    if len(blocks) == 1:
        return [(trace, total_lines)]
    ge_of = np.full(int(max(b.max() for b in blocks if b.size)) + 1, -1, dtype=np.int64)
    for k, b in enumerate(blocks):
        ge_of[b] = k
    header = _header(trace)
    counts = [0] * len(blocks)
    files = [p.open("w") for p in paths]
    try:
        for f in files:
            f.write(header or "")
        reader = pd.read_csv(trace, comment="#", dtype=str, keep_default_na=False, header=None,
                             skiprows=1 if header else 0, chunksize=chunk_rows)
        for chunk in reader:
            ks = ge_of[chunk.iloc[:, 0].str.strip().astype(np.int64).to_numpy()]
            for k, f in enumerate(files):
                part = chunk[ks == k]
                counts[k] += len(part)
                part.to_csv(f, header=False, index=False)
    finally:
        for f in files:
            f.close()
    return list(zip(paths, counts, strict=True))


def write_inputs(ctx: RunContext, nodes: Sequence[Node], wl: Workload, lay: Layout) -> list[tuple[Path, int]]:
    """ge/hosts.csv (every node), ge/devices-<k>.csv, the trace of each GE,
    and each host's cd/hosts.csv (the CD trace's host -> that host's CD node)."""
    run = ctx.run
    run.ge_dir.mkdir()
    res.write_csv(run.ge_hosts, pd.DataFrame({"host": [n.started.key for n in nodes],
                                           "address": [n.started.address for n in nodes]}))
    address = {n.started.key: n.started.address for n in nodes}
    for part in lay.parts:
        if part.cd:
            hd = run.host(part.node)
            hd.cd_dir.mkdir(parents=True, exist_ok=True)
            res.write_csv(hd.cd_hosts, pd.DataFrame({"host": [wl.gen.cd_host],
                                                     "address": [address[part.key("cd-node")]]}))
    blocks = split_devices(range(len(wl.group_of)), ctx.hs.gateway.instances)
    for k, block in enumerate(blocks):
        members = set(block.tolist())
        rows = [n for n in nodes if n.device_id in members]
        res.write_csv(run.ge_devices(k), pd.DataFrame({
            "device_id": [n.device_id for n in rows], "group": [n.group.name if n.group else "" for n in rows],
            "container": [n.started.name for n in rows], "address": [n.started.address for n in rows]}))
    return split_trace(wl.gen.trace, blocks, [run.ge_trace(k) for k in range(len(blocks))],
                       int(wl.gen.requests))


def _budget(arg: str | None) -> RtBudget | None:
    """The container's RT budget: the one its --rt-budget says (the plan's)."""
    return RtBudget.parse(arg) if arg is not None else None


def cd_ge_spec(ctx: RunContext, part: HostPart, wl: Workload, start_at_us: int) -> ContainerSpec:
    """A host's CD-GE: CON, on the CD trace, blocking between its requests,
    on its host (the CD pair's path never leaves the host)."""
    plan, hd = part.plan, ctx.run.host(part.node)
    cpus = plan.cd_ge_cpuset or ""
    argv = ge_argv(ctx.hs.gateway, trace=f"{IN}/{wl.gen.cd_trace.name}", hosts=CD_HOSTS_AT,
                   out=f"{OUT}/{layout.CD_RAW}", summary=f"{OUT}/{layout.CD_SUMMARY}",
                   start_at_us=start_at_us, late_us=wl.late_us, cpu=cpus if cpus.isdigit() else None,
                   coap_type="con", spin_us=plan.cd_ge_spin_us, rt_budget=plan.cd_ge_rt_budget)
    mounts = (Mount(wl.gen.cd_trace.parent, IN), Mount(hd.cd_hosts, CD_HOSTS_AT), Mount(hd.cd_dir, OUT, writable=True))
    return ContainerSpec(part.key("cd-ge"), "cd-ge", tuple(argv), cpus, GE_MEMORY, GE_PIDS, as_caller=True,
                         node=part.node, rt_budget=_budget(plan.cd_ge_rt_budget), mounts=mounts)


def ge_spec(ctx: RunContext, plan: Plan, wl: Workload, k: int, trace: Path, start_at_us: int) -> ContainerSpec:
    """Workload GE k on its own core, its trace read-only, writing to ge/."""
    core = str(plan.ge_cores[k])
    budget = plan.ge_rt_budgets[k] if k < len(plan.ge_rt_budgets) else None
    argv = ge_argv(ctx.hs.gateway, trace=f"{IN}/{trace.relative_to(ctx.run.workload)}",
                   hosts=f"{OUT}/{layout.HOSTS}", out=f"{OUT}/{layout.ge_output(k)}",
                   summary=f"{OUT}/{layout.ge_summary(k)}", start_at_us=start_at_us, late_us=wl.late_us,
                   cpu=core, rt_budget=budget)
    if wl.gen.observations:            # Observe: the notifications received, one row each
        argv += ["--notify-out", f"{OUT}/{layout.ge_notify(k)}"]
    gut, gw = ctx.hs.gateway_under_test, ctx.gateway
    if gut is not None and gw is not None and gw.address:     # every request through the gateway
        argv += north_args(gut, gw.address)
    # Congestion control, NSTART and the per-exchange RTO log: the workload
    # GEs only (the CD-GE's workload is deterministic and sequential).
    argv += ctx.hs.gateway.congestion_args() + ["--rto-out", f"{OUT}/{layout.ge_rto(k)}"]
    return ContainerSpec(f"ge-{k}", "ge", tuple(argv), core, GE_MEMORY, GE_PIDS, as_caller=True,
                         rt_budget=_budget(budget), mounts=(
        Mount(ctx.run.workload, IN), Mount(ctx.run.ge_dir, OUT, writable=True)))
