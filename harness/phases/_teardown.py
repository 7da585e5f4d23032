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
    if removed.stuck:
        ctx.say(f"warning: the Docker engine keeps a stale endpoint on {', '.join(removed.stuck)} "
                "(moby#42119); `wotbench clean` retries, restarting dockerd frees it")
