"""`wotbench run`, `wotbench plan` and `wotbench clean`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("run", help="run an experiment spec on a Docker testbed")
    p.add_argument("spec", type=Path, help="experiment spec (YAML)")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder that receives results/<run-id>/ (default: results)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--scale", help="one of the spec's scales (spec key 'scales'; default full)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("plan", help="validate a spec and print its placement plan")
    p.add_argument("spec", type=Path)
    p.add_argument("--cores", help="plan for these cores instead of this host's, e.g. 0-7")
    p.add_argument("--scale", help="one of the spec's scales (spec key 'scales'; default full)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("clean", help="remove containers and networks left by crashed runs")
    p.add_argument("--run", help="only this run id (even if its harness still runs)")
    p.add_argument("--all", action="store_true",
                   help="also the runs of harness processes still running on this host")
    from wotbench.engine import cleanup as _clean

    _clean.register_flags(p)
    p.set_defaults(func=cmd_clean)


def _cores(text: str) -> list[int]:
    from wotbench.base.errors import UserError
    from wotbench.execution.placement import MAX_CPU_ID, cpu_ids

    try:
        return cpu_ids(text or "-")
    except ValueError:
        raise UserError(f"expected a core list such as 0-7 or 0,2,4 (cores 0-{MAX_CPU_ID}), got {text!r}",
                        field="--cores") from None


def cmd_plan(args: argparse.Namespace) -> int:
    """Prints each test's layout: this host's cores, or on a swarm manager
    every node's (docs/spec.md, ``cluster``), and an estimate of its load
    and time (wotbench.execution.estimate); exit status 0 even when the
    estimate warns."""
    from dataclasses import replace

    from wotbench.base.errors import UserError
    from wotbench.engine.inventory import Inventory, read_inventory
    from wotbench.execution import estimate
    from wotbench.execution.phases import decide_instances, layout_for, layout_of, render_schedule, schedule
    from wotbench.execution.placement import Plan
    from wotbench.spec import budget, load

    runs = load(args.spec, args.scale)
    cores = tuple(_cores(args.cores)) if args.cores else None
    # On a swarm manager every spec is planned across the swarm's nodes.
    inventory = read_inventory()
    if cores is not None:      # this host's cores replaced; the other nodes' stay
        local = replace(inventory.local, cores=cores, cores_from="--cores")
        inventory = Inventory(inventory.swarm, tuple(local if n.local else n for n in inventory.nodes))
    # The host's memory and limits; its core count is the one planned for (--cores).
    host = replace(budget.Host.read(), cores=len(cores)) if cores is not None else None
    total_s = 0.0
    for rs in runs:
        if rs.repetition > 1:
            continue
        if len(runs) > 1:
            print(f"== {rs.label}")
        try:
            budget.check(rs.spec, None, host, swarm=inventory.swarm)
            hs, auto = decide_instances(rs.spec, inventory)
            layout = layout_for(hs, inventory)
            hogs = render_schedule(schedule(hs, layout_of(layout, hs.device_count, hs.gateway.instances,
                                                          hs.placement.reserve)))
        except UserError as err:
            raise rs.locate(err) from None
        if hs.workload is not None and hs.workload.replay is not None:
            print(hs.workload.replay.render())
        if auto is not None:
            print(auto.render())
        print(layout.render() if isinstance(layout, Plan)
              else layout.render(hs.group_of(), [g.name for g in hs.groups]))
        if hogs:
            print(hogs)
        est = estimate.of_plan(hs, layout, auto.calibration if auto is not None else None)
        print(est.render())
        # Every test is repeated as often (`repetitions`), each time as long as the first.
        total_s += est.total_s * max(r.repetition for r in runs)
    if len(runs) > 1:
        from wotbench.base.units import fmt_duration_us

        print(f"== all {len(runs)} tests: about {fmt_duration_us(total_s * 1e6)} in all (the estimates above)")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from wotbench.base.errors import UserError
    from wotbench.execution.runner import RunFailed, RunOptions, run_spec
    from wotbench.spec import load

    runs = load(args.spec, args.scale)  # every variant validated before anything starts
    progress = not args.no_progress and sys.stderr.isatty()
    try:
        dirs = run_spec(runs, RunOptions(results_root=args.results, progress=progress))
    except RunFailed as exc:
        if isinstance(exc.cause, UserError):
            raise exc.cause from None
        where = f" (details: {exc.details})" if exc.details is not None else ""   # never a file that is not there
        print(f"error: run failed: {exc}{where}", file=sys.stderr)
        return 1
    for d in dirs:
        print(os.fspath(d))
    return 0


def cmd_clean(args: argparse.Namespace) -> int:
    from wotbench.engine import cleanup as _clean

    return _clean.cmd_clean(args)
