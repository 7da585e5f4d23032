"""The gateway under test (``gateway_under_test:``, docs/spec.md): its
container, hardened like every other, on its own cores on the GE's host,
on every network of the run with the devices' names in its hosts file;
started after the devices are ready and before the GEs, and ready (its
check answered) before t0. The workload GEs then send every request
through it (:func:`north_args`); the CD pair stays direct: it measures the
testbed, not the gateway."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from wotbench.base import results as res
from wotbench.base.errors import UserError
from wotbench.engine import GATEWAY_ROLE, ContainerSpec, ContainerState, Started, dockerenv, readiness
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._topology import Layout, Node
from wotbench.execution.placement import cpuset

if TYPE_CHECKING:
    from wotbench.spec import GatewayUnderTest

__all__ = ["image_ref", "gateway_spec", "start_gateway", "north_args", "end_state", "record_end"]

#: Its one writable folder under the read-only root.
TMP = "/tmp"
#: gateway.json's format (docs/run-layout.md).
GATEWAY_FORMAT = 1
#: The engine's instant for "never" (StartedAt/FinishedAt of a container not started/not finished).
_NEVER = "0001-01-01T00:00:00Z"


def image_ref(gut: GatewayUnderTest) -> str:
    """The image the gateway runs: a shipped gateway's, or the user's."""
    return dockerenv.gateway_image(gut.image, gut.shipped)


def gateway_spec(gut: GatewayUnderTest, cores: Sequence[int], nodes: Sequence[Node],
                 node: str | None = None) -> ContainerSpec:
    """The gateway's container: its image and command (none: the image's),
    its environment, its own cpuset, its limits, a tmpfs at /tmp, and every
    device (and CD node) by run key and container name in its hosts file."""
    hosts = [(name, n.started.address) for n in nodes if n.started.address
             for name in (n.started.key, n.started.name)]
    return ContainerSpec("gateway", GATEWAY_ROLE, gut.command or (), cpuset(cores), gut.memory_bytes, gut.pids,
                         node=node, image=image_ref(gut), env=gut.env, tmpfs=(TMP,), extra_hosts=tuple(hosts))


def north_args(gut: GatewayUnderTest, address: str) -> list[str]:
    """A workload GE's options that send its requests through the gateway
    (gateway-emulator/README.md: --gateway, --north, --north-sockets,
    --http-path, --http-conns)."""
    host = f"[{address}]" if ":" in address else address
    argv = ["--gateway", f"{host}:{gut.port}", "--north", gut.north]
    if gut.sockets is not None:
        argv += ["--north-sockets", gut.sockets]
    if gut.http_path is not None:
        argv += ["--http-path", gut.http_path]
    if gut.http_conns is not None:
        argv += ["--http-conns", str(gut.http_conns)]
    return argv


def _record(ctx: RunContext, gut: GatewayUnderTest, st: Started, cores: Sequence[int], ready_s: float | None) -> None:
    ctx.manifest["gateway"] = {**gut.to_dict(), "image_ref": image_ref(gut),
                               "image_id": (ctx.manifest.get("images") or {}).get(GATEWAY_ROLE),
                               "container": st.name, "address": st.address, "cpuset": cpuset(cores),
                               "ready_seconds": None if ready_s is None else round(ready_s, 3)}


def start_gateway(ctx: RunContext, lay: Layout, nodes: Sequence[Node],
                  from_ge: Callable[[Started], str | None] | None = None) -> Started | None:
    """Starts the spec's gateway under test and waits until its readiness
    check answers; a gateway that never does is a UserError naming why
    (its log is saved in the run folder's logs). None without one. On a
    swarm the harness cannot reach the overlay: ``from_ge`` checks it from
    the GE node instead (why it is not ready, or None)."""
    gut = ctx.hs.gateway_under_test
    if gut is None:
        return None
    part = lay.ge_part
    cores = part.plan.gateway_cores
    st = ctx.backend.start_gateway(gateway_spec(gut, cores, nodes, part.node))
    ctx.started([st])
    if st.address is None:
        raise RuntimeError("the engine gave the gateway under test no address")
    ctx.say(f"gateway under test {image_ref(gut)} on cpuset {cpuset(cores)} at {st.address}:{gut.port}; "
            f"waiting for it ({gut.ready})")
    t = time.monotonic()
    why = from_ge(st) if from_ge is not None else readiness.wait_service(
        (st.address, gut.port), gut.ready, gut.ready_timeout_us / 1e6, alive=lambda: ctx.backend.pid_of(st) is not None)
    _record(ctx, gut, st, cores, None if why else time.monotonic() - t)
    if why:
        state = ctx.backend.states().get(st.name)
        ctx.backend.save_logs(ctx.run.log)
        end = "" if state is None else f"; container {state.status}, exit code {state.exit_code}" + (
            ", killed for memory (raise gateway_under_test.memory)" if state.oom_killed else "")
        raise ctx.rs.locate(UserError(f"the gateway under test ({image_ref(gut)}) never got ready: {why}{end}; "
                                      f"its log: {ctx.run.log(st.name)}", field="gateway_under_test.ready"))
    ctx.say(f"  gateway ready after {time.monotonic() - t:.1f} s")
    ctx.gateway = st
    return st


def _instant(v: str | None) -> str | None:
    return None if not v or v == _NEVER else v


def end_state(image: str, st: Started, state: ContainerState | None, cores: str | None) -> dict[str, object]:
    """gateway.json (docs/run-layout.md): the gateway container's state
    once the load is over, before anything is stopped; ``missing`` when the
    engine no longer knows it."""
    status = state.status if state is not None and state.status not in (None, "removed") else "missing"
    running = status == "running"
    return {"format": GATEWAY_FORMAT, "image": image, "container": st.name, "state": status,
            "exit_code": None if state is None or running else state.exit_code,
            "oom_killed": bool(state is not None and state.oom_killed), "restarts": int(state.restarts or 0)
            if state is not None else 0,
            "started_at": _instant(state.started_at) if state is not None else None,
            "finished_at": None if state is None or running else _instant(state.finished_at),
            "cpuset": cores}


def record_end(ctx: RunContext, states: dict[str, ContainerState]) -> None:
    """Writes gateway.json (atomically) from the states collect read at the
    end of the load; nothing without a gateway under test. Its log is saved
    with the others' (logs/<container>.log)."""
    st, gut = ctx.gateway, ctx.hs.gateway_under_test
    if st is None or gut is None:
        return
    cores = (ctx.manifest.get("gateway") or {}).get("cpuset")
    res.write_json(ctx.run.gateway, end_state(image_ref(gut), st, states.get(st.name), cores))
