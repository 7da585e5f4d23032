"""Teardown: stop the monitors and remove everything of the run from the
engine (label based). Runs on success, error, Ctrl-C and SIGTERM."""

from __future__ import annotations

import time

from wotbench.phases._context import RunContext


def teardown(ctx: RunContext) -> None:
    ctx.sampler.stop()
    if ctx.collectl:
        ctx.collectl.stop(grace_s=2.0)    # only an interrupted run still has it running
    t = time.monotonic()
    removed = ctx.backend.teardown(progress=ctx.opts.progress)
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
