"""Teardown: stop the monitors and remove everything of the run from the
engine (label based). Runs on success, error, Ctrl-C and SIGTERM."""

from __future__ import annotations

import time
from collections.abc import Callable

from wotbench.engine import ENGINE_GONE, Removed
from wotbench.execution.phases._capturing import stop_quietly
from wotbench.execution.phases._context import RunContext

#: How long teardown waits for an engine that stopped answering (dockerd
#: restarted mid-run comes back within seconds), retrying every RETRY_S.
ENGINE_WAIT_S, RETRY_S = 60.0, 2.0


def with_engine(step: Callable[[], Removed], say: Callable[[str], None],
                wait_s: float = ENGINE_WAIT_S, retry_s: float = RETRY_S) -> Removed | None:
    """``step`` (a teardown), retried while the engine does not answer, for
    up to ``wait_s``; None (with a line naming `wotbench clean`) if it never
    came back."""
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            return step()
        except ENGINE_GONE as err:
            if time.monotonic() + retry_s > deadline:
                say(f"error: the Docker engine did not answer for {wait_s:.0f} s ({type(err).__name__}): the "
                    "run's containers and networks may remain; `wotbench clean` (or the next `wotbench run`) "
                    "removes them")
                return None
            if not told:
                say(f"the Docker engine is not answering ({type(err).__name__}); retrying the teardown "
                    f"for up to {wait_s:.0f} s")
                told = True
            time.sleep(retry_s)


def teardown(ctx: RunContext) -> None:
    ctx.sampler.stop()
    ctx.self_sampler.stop()
    if ctx.collectl:
        try:
            ctx.collectl.stop(grace_s=2.0)    # only an interrupted run still has it running
        except ENGINE_GONE:
            pass                              # its container goes with the rest below
    stop_quietly(ctx)                         # an interrupted run's captures: their last files whole
    t = time.monotonic()
    removed = with_engine(lambda: ctx.backend.teardown(progress=ctx.opts.progress), ctx.say)
    if removed is None:
        return
    took = time.monotonic() - t
    stopped = ctx.backend.times.walls.get("stop")      # collect stopped them first (SIGTERM)
    ctx.say(f"teardown: removed {removed.containers} container(s), {removed.networks} network(s) "
            f"in {took:.1f} s ({removed.containers / max(1e-3, took):.1f}/s)"
            + (f"; stopping them took {stopped:.1f} s" if stopped is not None else ""))
    if removed.stuck and ctx.backend.lost:
        ctx.say(f"warning: {', '.join(removed.stuck)} still in use by lost node(s) "
                f"{', '.join(sorted(ctx.backend.lost))}: `wotbench clean` removes it once the node is "
                "back, or removed from the swarm (docker node rm)")
    elif removed.stuck:
        ctx.say(f"warning: the Docker engine keeps a stale endpoint on {', '.join(removed.stuck)} "
                "(moby#42119); `wotbench clean` retries, restarting dockerd frees it")
