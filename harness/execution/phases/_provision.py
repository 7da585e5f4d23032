"""Provision: the run's networks, the CD node and the devices (started in
parallel), and the readiness probe (every node answered CoAP)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from wotbench.base import rundir as layout
from wotbench.base.formats import DEFAULT_COAP_PORT
from wotbench.engine import ContainerSpec, Mount
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._gateway import start_gateway
from wotbench.execution.phases._preflight import Workload
from wotbench.execution.phases._probe import gateway_ready_from_ge, ready_from_ge
from wotbench.execution.phases._topology import Layout, Node

if TYPE_CHECKING:
    from wotbench.spec import DeviceGroup

#: Inside a device container: its resource file and its writable folder.
RESOURCES_AT = "/io/resources.csv"
STATS_AT = "/io/stats"
#: The device image's user (docker/device.Dockerfile).
DEVICE_UID = 65534
CD_NODE_MEMORY = 32 << 20


def _device_folder(path: Path) -> Path:
    """The one folder a device may write (its --stats file): owned by the
    device's user; world-writable when the harness may not chown."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        os.chown(path, DEVICE_UID, DEVICE_UID)
    except PermissionError:
        path.chmod(0o777)
    return path


def device_spec(key: str, device_id: int | None, group: DeviceGroup | None, cpuset: str,
                resources: Path, folder: Path | None, mode: str = "sleep") -> ContainerSpec:
    """A wotbench-device container: a device of ``group``, or the CD node
    (no group; in ``mode``, the mode of the devices it stands for, so that
    it competes for the host as they do); with ``folder`` it writes its
    --stats counters there."""
    if not resources.exists():
        raise RuntimeError(f"tracegen wrote no resource file {resources}")
    threads = group.threads if group else 1
    argv = ["--listen", f"0.0.0.0:{DEFAULT_COAP_PORT}", "--resources", RESOURCES_AT,
            "--mode", group.mode if group else mode, "--threads", str(threads)]
    if group and group.queue:
        argv += ["--queue", str(group.queue)]
    mounts = [Mount(resources, RESOURCES_AT)]
    if folder is not None:
        argv += ["--stats", f"{STATS_AT}/{layout.DEVICE_STATS}"]
        mounts.append(Mount(folder, STATS_AT, writable=True))
    return ContainerSpec(
        key, "device" if group else "cd-node", tuple(argv), cpuset,
        memory_bytes=group.memory_bytes if group else CD_NODE_MEMORY, pids=threads + 16,
        nano_cpus=group.nano_cpus if group else None, device_id=device_id, mounts=tuple(mounts))


def node_spec(ctx: RunContext, key: str, device_id: int | None, group: DeviceGroup | None,
              cpuset: str, resources: Path, mode: str = "sleep") -> ContainerSpec:
    folder = _device_folder(ctx.run.device_dir(ctx.backend.name_of(key)))
    return device_spec(key, device_id, group, cpuset, resources, folder, mode)


def cd_node_mode(modes: Sequence[str], fallback: str) -> str:
    """The CD node's service mode: the one most of its host's devices use
    (ties: busy, the mode a CPU neighbour slows down), else ``fallback``."""
    if not modes:
        return fallback
    busy = sum(m == "busy" for m in modes)
    return "busy" if 2 * busy >= len(modes) else "sleep"


def _todo(ctx: RunContext, lay: Layout, wl: Workload) -> list[tuple[ContainerSpec, int | None, DeviceGroup | None]]:
    """Every host's CD node first (it takes the first placement slot there),
    then its devices, each with its planned cpuset on its node."""
    hs = ctx.hs
    todo: list[tuple[ContainerSpec, int | None, DeviceGroup | None]] = []
    for part in lay.parts:
        if part.cd:
            mode = cd_node_mode([hs.groups[wl.group_of[d]].mode for d in part.device_ids], hs.groups[0].mode)
            spec = node_spec(ctx, part.key("cd-node"), None, None, part.plan.cd_node_cpuset or "",
                             wl.gen.cd_resource, mode)
            todo.append((replace(spec, node=part.node), None, None))
    for part in lay.parts:
        for j, dev_id in enumerate(part.device_ids):
            g = hs.groups[wl.group_of[dev_id]]
            spec = node_spec(ctx, f"dev-{dev_id}", dev_id, g, part.plan.device_cpusets[j],
                             wl.gen.resources[dev_id])
            todo.append((replace(spec, node=part.node), dev_id, g))
    return todo


def provision(ctx: RunContext, lay: Layout, wl: Workload) -> list[Node]:
    """The networks, the CD nodes and the devices, ready; then the gateway
    under test (if the spec has one), ready too."""
    todo = _todo(ctx, lay, wl)
    n_net = ctx.backend.create_networks(len(todo))
    if (arp := ctx.backend.host_changes.get("neigh")) is not None:
        ctx.say(f"raised net.ipv4.neigh.default.gc_thresh2/3 from {arp['before'][0]}/{arp['before'][1]} to "
                f"{arp['after'][0]}/{arp['after'][1]}: the host-wide ARP table must hold ~4 entries per container")
    if (guard := ctx.backend.host_changes.get("host_guard") or {}).get("not_applied"):
        ctx.say(f"warning: host guard not applied ({guard['not_applied']}): this run's containers can open "
                f"connections to this host's own addresses")
    where = f" on {len(lay.parts)} nodes" if lay.swarm else ""
    ctx.say(f"starting {len(todo)} containers{where} on {n_net} network(s)")
    t = time.monotonic()
    started = ctx.backend.start_nodes([spec for spec, _, _ in todo], ctx.opts.progress)
    ctx.started(started)
    up_s = time.monotonic() - t
    ctx.say(f"  started in {up_s:.1f} s ({len(todo) / max(1e-3, up_s):.1f}/s); waiting for CoAP readiness")
    if ctx.backend.probes_from_host:
        missing = ctx.backend.wait_ready(started, timeout_s=30 + 0.05 * len(started))
    else:
        missing = ready_from_ge(ctx, lay, started)
    ready_s = time.monotonic() - t
    # Where the start-up time went: each phase's wall and engine calls (create, start, ready).
    ctx.manifest["startup"] = {"containers": len(todo), "networks": n_net, "seconds": round(up_s, 3),
                               "ready_seconds": round(ready_s, 3), "phases": ctx.backend.times.summary(),
                               "host_changes": ctx.backend.host_changes}
    if missing:
        raise RuntimeError(f"{len(missing)} device(s) never answered GET /.well-known/core: "
                           + ", ".join(missing[:10]))
    ctx.say(f"  all {len(started)} ready after {ready_s:.1f} s")
    nodes = [Node(st, dev_id, g) for st, (_, dev_id, g) in zip(started, todo, strict=True)]
    start_gateway(ctx, lay, nodes, None if ctx.backend.probes_from_host
                  else lambda gw: gateway_ready_from_ge(ctx, lay, nodes, gw))
    return nodes
