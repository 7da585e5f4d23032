"""Teardown: stop the monitors and remove everything of the run from the
engine (label based). Runs on success, error, Ctrl-C and SIGTERM."""

from __future__ import annotations

from wotbench.phases._context import RunContext


def teardown(ctx: RunContext) -> None:
    ctx.sampler.stop()
    if ctx.collectl:
        ctx.collectl.stop(grace_s=2.0)    # only an interrupted run still has it running
    removed = ctx.backend.teardown()
    ctx.say(f"teardown: removed {removed.containers} container(s), {removed.networks} network(s)")
    if removed.stuck and ctx.backend.lost:
        ctx.say(f"warning: {', '.join(removed.stuck)} still in use by lost node(s) "
                f"{', '.join(sorted(ctx.backend.lost))}: `wotbench clean` removes it once the node is "
                "back, or removed from the swarm (docker node rm)")
    elif removed.stuck:
        ctx.say(f"warning: the Docker engine keeps a stale endpoint on {', '.join(removed.stuck)} "
                "(moby#42119); `wotbench clean` retries, restarting dockerd frees it")
