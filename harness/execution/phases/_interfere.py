"""Interfere: the spec's noisy neighbours (``interference:``,
docs/interference.md). At plan time each entry becomes one episode per
host (its cores resolved, the spec's core ids and node checked); before
the measurement each episode is a hog container (wotbench-hog from the
device image, hardened like the devices, no network) pinned to its cores
and told the absolute instants to start and stop, so the episode is as
precise as the host's clock whatever the engine's latency; after the
load, what each hog reported is written to interference.json on t0."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wotbench.base import results as res
from wotbench.base.errors import UserError
from wotbench.engine import HOG_ROLE, ContainerSpec, Started
from wotbench.execution.placement import cpu_ids, cpuset
from wotbench.spec import MIN_BUFFER

if TYPE_CHECKING:
    from wotbench.execution.phases._context import RunContext
    from wotbench.execution.phases._topology import HostPart, Layout
    from wotbench.spec import Interference, Spec

__all__ = ["Episode", "schedule", "render_schedule", "start_hogs", "record_interference", "llc_bytes"]

HOG_BINARY = "/wotbench-hog"
#: A cpu hog's memory limit; a membw hog's is its buffers plus this.
HOG_BASE_MEMORY = 64 << 20
CPU_HOG_MEMORY = 16 << 20
_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")


def llc_bytes(cache: Path = _CACHE) -> int | None:
    """This host's level-3 cache size in bytes (sysfs), None when unknown."""
    from wotbench.base import units

    for idx in sorted(cache.glob("index*")):
        try:
            if (idx / "level").read_text().strip() == "3":
                return units.parse_size((idx / "size").read_text().strip())
        except (OSError, UserError):
            continue
    return None


def auto_buffer(cache: Path = _CACHE) -> int:
    """``buffer: auto``: twice the LLC, at least 64 MiB (bytes per thread)."""
    return max(MIN_BUFFER, 2 * (llc_bytes(cache) or 0))


@dataclass(frozen=True)
class Episode:
    """One hog container: an entry of the spec on one host."""

    entry: Interference
    node: str | None              # swarm hostname; None: the one host
    part: int                     # the host part's index
    cores: tuple[int, ...]
    buffer: int | None            # membw: bytes per thread
    planned_start_us: int         # on t0 (the phases windows' time base)
    planned_end_us: int

    @property
    def key(self) -> str:
        return f"hog-{self.entry.name}" + (f"-{self.part}" if self.node is not None else "")

    @property
    def memory_bytes(self) -> int:
        if self.buffer is None:
            return CPU_HOG_MEMORY
        return self.buffer * self.entry.threads + HOG_BASE_MEMORY

    def argv(self, start_at_us: int, end_at_us: int) -> tuple[str, ...]:
        e = self.entry
        return ("--kind", e.kind, "--threads", str(e.threads), "--start-at", str(start_at_us),
                "--end-at", str(end_at_us), *(("--buffer", str(self.buffer)) if self.buffer else ()))


def _cores_on(e: Interference, part: HostPart) -> tuple[int, ...]:
    plan, where = part.plan, f"host {part.node}" if part.node else "this host"
    if isinstance(e.cores, tuple):
        missing = [c for c in e.cores if c not in plan.available]
        if missing:
            raise UserError(f"core(s) {cpuset(missing)} not offered by {where} "
                            f"(offered: {cpuset(plan.available)})", field=f"{e.at}.cores")
        return e.cores
    cores = {"devices": plan.device_cores, "cd": cpu_ids(plan.cd_node_cpuset), "ge": plan.ge_cores}[e.cores]
    if not cores:
        raise UserError(f"{where} has no {e.cores} cores in this test's placement", field=f"{e.at}.cores")
    return tuple(cores)


def _parts_of(e: Interference, lay: Layout) -> list[HostPart]:
    if e.node is not None:
        if not lay.swarm:
            raise UserError("this host is not in a swarm: 'node' names a swarm node", field=f"{e.at}.node")
        part = next((p for p in lay.parts if p.node == e.node), None)
        if part is None:
            raise UserError(f"{e.node!r} is not a node of this test "
                            f"(nodes: {', '.join(p.node or '' for p in lay.parts)})", field=f"{e.at}.node")
        return [part]
    if e.cores == "ge":
        return [lay.ge_part]
    with_devices = [p for p in lay.parts if p.device_ids]
    return with_devices or [lay.parts[0]]


def schedule(hs: Spec, lay: Layout, cache: Path = _CACHE) -> list[Episode]:
    """Every episode of the test, or a UserError naming the spec key (a
    core the host lacks, a node not in the swarm)."""
    if not hs.interference:
        return []
    warmup = hs.phases.warmup_us if hs.phases else 0
    buffer = auto_buffer(cache)
    return [Episode(e, p.node, p.index, _cores_on(e, p),
                    (e.buffer or buffer) if e.kind == "membw" else None,
                    warmup + e.start_us, warmup + e.end_us)
            for e in hs.interference for p in _parts_of(e, lay)]


def render_schedule(episodes: Sequence[Episode]) -> str:
    """What ``wotbench plan`` prints: where and when each hog runs."""
    if not episodes:
        return ""
    lines = ["interference (times since t0; the measurement phase starts at the warm-up's end):"]
    for ep in episodes:
        e = ep.entry
        what = f"{e.threads} {e.kind} thread(s)" + (f" x {ep.buffer / 2**20:.0f} MiB" if ep.buffer else "")
        lines.append(f"  {e.name}: {what} on cpuset {cpuset(ep.cores)}"
                     + (f" of {ep.node}" if ep.node else "")
                     + f", {ep.planned_start_us / 1e6:g} s to {ep.planned_end_us / 1e6:g} s")
    return "\n".join(lines)


def start_hogs(ctx: RunContext, episodes: Sequence[Episode], t0: int) -> list[tuple[Episode, Started]]:
    """One hog container per episode, told its instants on its node's clock."""
    out = []
    for ep in episodes:
        off = t0 + ctx.clock_us(ep.node)
        spec = ContainerSpec(ep.key, HOG_ROLE, ep.argv(off + ep.planned_start_us, off + ep.planned_end_us),
                             cpuset(ep.cores), ep.memory_bytes, ep.entry.threads + 8, node=ep.node,
                             entrypoint=(HOG_BINARY,))
        st = ctx.backend.start_offline(spec)
        ctx.started([st])
        out.append((ep, st))
    if episodes:
        ctx.say(f"  interference: {len(episodes)} hog container(s) armed")
    return out


def _report(log: Path) -> dict[str, Any] | None:
    """The hog's JSON line in its saved log (each line after a timestamp)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    for line in reversed(text.splitlines()):
        body = line.split(" ", 1)[-1].strip()
        if body.startswith("{"):
            try:
                doc = json.loads(body)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and "start_us" in doc:
                return doc
    return None


def _entry(ctx: RunContext, ep: Episode, st: Started, t0: int) -> dict[str, Any]:
    e = ep.entry
    seen = ctx.observed.containers.get(st.name, {})
    doc = _report(ctx.run.log(st.name))
    base = t0 + ctx.clock_us(ep.node)
    out: dict[str, Any] = {
        "name": e.name, "kind": e.kind, "threads": e.threads, "cores": cpuset(ep.cores), "node": ep.node,
        "container": st.name, "buffer": ep.buffer,
        "planned_start_us": ep.planned_start_us, "planned_end_us": ep.planned_end_us,
        "start_us": None, "end_us": None, "exit_code": seen.get("exit_code"), "reason": None}
    if doc is None:
        out["reason"] = (f"the hog reported nothing (status {seen.get('status')}, exit code "
                         f"{seen.get('exit_code')}, oom_killed {seen.get('oom_killed')})")
        return out
    out.update(start_us=int(doc["start_us"]) - base, end_us=int(doc["end_us"]) - base,
               interrupted=bool(doc.get("interrupted")))
    for k in ("loops", "bytes", "gbps"):
        if k in doc and not (isinstance(doc[k], float) and math.isnan(doc[k])):
            out[k] = doc[k]
    if out["interrupted"]:
        out["reason"] = "stopped before its end (SIGTERM)"
    return out


def record_interference(ctx: RunContext, hogs: Sequence[tuple[Episode, Started]], t0: int) -> None:
    """interference.json: each episode planned and observed, on t0 (after
    collect: the hogs' logs are saved and their states known)."""
    if not hogs:
        return
    entries = [_entry(ctx, ep, st, t0) for ep, st in hogs]
    res.write_json(ctx.run.interference, entries)
    ctx.manifest["interference"] = [{k: x[k] for k in ("name", "kind", "threads", "cores", "node",
                                                         "planned_start_us", "planned_end_us")}
                                    for x in entries]
    missing = [x["name"] for x in entries if x["start_us"] is None]
    if missing:
        ctx.say(f"warning: hog(s) {', '.join(missing)} reported nothing (interference.json says why)")
