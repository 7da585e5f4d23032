"""Probes from the GE node, for a run across a swarm: the harness cannot
reach overlay addresses, so a short wotbench-ge run in a container on the
GE node (i) checks that every node answers CoAP (readiness), and (ii)
measures the cross-host path to each host's CD node before the load
(nodes/<hostname>/probe.csv): R - S from the GE node against the R - S the
host's own CD-GE sees, so that devices' R - S are read against it."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.engine import ContainerSpec, Mount, Started
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._gateway import north_args
from wotbench.execution.phases._ge import GE_MEMORY, GE_PIDS, ge_argv
from wotbench.execution.phases._preflight import Workload
from wotbench.execution.phases._topology import Layout, Node

__all__ = ["ready_from_ge", "gateway_ready_from_ge", "cross_host", "PROBE_REQUESTS"]

#: Cross-host probe: at most this many requests per host CD node (at least
#: PROBE_MIN), about PROBE_S seconds in all, each 3 S + 5 ms after the last
#: to the same node (the CD node serves one at a time: no queueing).
PROBE_REQUESTS, PROBE_MIN, PROBE_S = 200, 20, 10.0
_IN, _OUT = "/io/in", "/io/out"
#: Requests of one readiness probe through the gateway (0.5 s apart).
GW_READY_REQUESTS = 4


def _run_probe(ctx: RunContext, lay: Layout, key: str, lines: Sequence[str],
               hosts: Sequence[tuple[str, str]], retries: int, folder: Path,
               timeout_s: float, extra: Sequence[str] = ()) -> tuple[int | None, pd.DataFrame | None]:
    """Runs one GE on the GE node over ``lines`` (trace rows) with ``hosts``
    (and ``extra`` options); returns its exit code and output (None when it
    wrote none)."""
    inp, out = folder / f"{key}-in", folder / f"{key}-out"
    inp.mkdir(parents=True)
    out.mkdir()
    (inp / "trace.csv").write_text("device_id,send_ts_us,method,uri\n" + "".join(lines))
    res.write_csv(inp / layout.HOSTS, pd.DataFrame(hosts, columns=["host", "address"]))
    part = lay.ge_part
    core = str(part.plan.ge_cores[0])          # the GE's core, free until the load starts
    gw = dataclasses.replace(ctx.hs.gateway, type="con", ack_timeout_us=300_000, max_retransmit=retries,
                             timeout_us=2_000_000)
    start = (time.time_ns() // 1000 + int((2.0 + 1.5 * ctx.backend.slowest_start_s) * 1e6)
             + ctx.clock_us(part.node))
    argv = ge_argv(gw, trace=f"{_IN}/trace.csv", hosts=f"{_IN}/{layout.HOSTS}", out=f"{_OUT}/out.csv",
                   summary=f"{_OUT}/summary.json", start_at_us=start, late_us=1_000_000, cpu=core,
                   spin_us=2000) + list(extra)
    spec = ContainerSpec(key, "probe", tuple(argv), core, GE_MEMORY, GE_PIDS, as_caller=True, node=part.node,
                         mounts=(Mount(inp, _IN), Mount(out, _OUT, writable=True)))
    st = ctx.backend.start_ge(spec)
    ctx.started([st])
    code = ctx.backend.wait(st, timeout_s)
    ctx.backend.fetch([st.name])
    csv = out / "out.csv"
    return code, pd.read_csv(csv, dtype={"code": str}) if csv.is_file() else None


def ready_from_ge(ctx: RunContext, lay: Layout, started: Sequence[Started]) -> list[str]:
    """Keys of the nodes that did not answer GET /.well-known/core from the
    GE node (retransmitted for about 30 s)."""
    lines = [f"{i},{i * 1000},GET,coap://{st.key}/.well-known/core\n" for i, st in enumerate(started)]
    hosts = [(st.key, st.address or "") for st in started]
    code, df = _run_probe(ctx, lay, "ready", lines, hosts, 5, ctx.run.probe_dir, 90 + 0.01 * len(started))
    if code != 0 or df is None:
        raise RuntimeError(f"the readiness probe on node {lay.ge_part.node} failed (exit {code}); see its log")
    answered = set(df.loc[df["code"].notna(), "device_id"].astype(int))
    return [st.key for i, st in enumerate(started) if i not in answered]


def gateway_ready_from_ge(ctx: RunContext, lay: Layout, nodes: Sequence[Node], gateway: Started) -> str | None:
    """The gateway under test's readiness on a swarm, checked from the GE
    node through the gateway itself: GET /.well-known/core of the first
    node, sent the way the GEs will send (north_args), a few requests a
    second until any answer comes back (any code: the gateway answers) or
    ``gateway_under_test.ready_timeout`` ends. Why it is not ready, or None."""
    gut = ctx.hs.gateway_under_test
    if gut is None or gateway.address is None or not nodes:
        return "no gateway address or no node to ask for"
    first = nodes[0].started
    lines = [f"0,{i * 500_000},GET,coap://{first.key}/.well-known/core\n" for i in range(GW_READY_REQUESTS)]
    end = time.monotonic() + gut.ready_timeout_us / 1e6
    for attempt in range(1, 1000):
        code, df = _run_probe(ctx, lay, f"gwready{attempt}", lines, [(first.key, first.address or "")], 0,
                              ctx.run.probe_dir, 60, extra=north_args(gut, gateway.address))
        if df is not None and df["code"].notna().any():
            return None
        if ctx.backend.pid_of(gateway) is None:
            return "its container is not running"
        if time.monotonic() > end:
            return (f"no answer through it from the GE node in {gut.ready_timeout_us / 1e6:.0f} s "
                    f"({attempt} probes; the last exited {code})")
    return "no answer through it from the GE node"


def cross_host(ctx: RunContext, lay: Layout, nodes: Sequence[Node], wl: Workload) -> None:
    """PROBE_REQUESTS sequential CON requests from the GE node to every
    host's CD node; their output, one file per host (nodes/<hostname>/probe.csv)."""
    cds = {n.started.key: n for n in nodes if n.started.role == "cd-node"}
    targets = [(p, cds[p.key("cd-node")]) for p in lay.parts if p.cd and p.key("cd-node") in cds]
    if not targets:
        return
    path = pd.read_csv(wl.gen.cd_resource)["path"].iloc[0]
    gap = 3 * int(wl.gen.cd_service_us) + 5_000                 # between two requests to one node
    count = max(PROBE_MIN, min(PROBE_REQUESTS, int(PROBE_S * 1e6 / gap)))
    step = gap // len(targets)
    lines = [f"{i},{k * gap + i * step},GET,coap://{n.started.key}{path}\n"
             for k in range(count) for i, (_, n) in enumerate(targets)]
    hosts = [(n.started.key, n.started.address or "") for _, n in targets]
    ctx.say(f"  probing the path from the GE node to {len(targets)} CD node(s)")
    code, df = _run_probe(ctx, lay, "xprobe", lines, hosts, 4, ctx.run.probe_dir, 60 + count * gap / 1e6)
    for i, (part, _) in enumerate(targets):
        if df is None:          # recorded: reporting fails the run naming the host
            ctx.observed.probe[part.node or ""] = {"rows": 0, "ok": 0, "exit_code": code}
            continue
        hd = ctx.run.host(part.node)
        hd.root.mkdir(parents=True, exist_ok=True)
        mine = df[df["device_id"] == i]
        res.write_csv(hd.probe_csv, mine)
        statuses = mine["status"].value_counts()
        res.write_json(hd.probe_summary, {
            "from": lay.ge_part.node, "to": part.node, "cd_node": part.key("cd-node"),
            "requests": int(len(mine)), "gap_us": gap, "service_us": int(wl.gen.cd_service_us),
            **{str(k): int(v) for k, v in statuses.items()}})
        ctx.observed.probe[part.node or ""] = {"rows": int(len(mine)), "ok": int(statuses.get("ok", 0)),
                                               "exit_code": code}
