"""`wotbench swarm-lab up|down`: a real Docker Swarm on this one machine
(harness/engine/swarmlab.py), for trying multi-host runs and for the tests."""

from __future__ import annotations

import argparse
import signal
import time

__all__ = ["register", "cmd_swarm_lab"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("swarm-lab", help="a real Docker Swarm on this machine: the host is the manager, "
                                         "each worker a container running its own dockerd")
    cmds = p.add_subparsers(dest="lab_cmd", required=True, metavar="up|down")
    up = cmds.add_parser("up", help="make a lab (records the host first)")
    up.add_argument("--workers", type=int, default=1, help="node containers (0: the host alone)")
    up.add_argument("--image", action="append", help="image to load into every node (repeatable)")
    up.add_argument("--node-cpus", metavar="LIST",
                    help="cpuset of every node container, lowest CPUs first (e.g. 0): each node then "
                         "reports those alone, so the nodes do not share the manager's GE core")
    cmds.add_parser("down", help="remove a lab, check the host is as found").add_argument("--id")
    p.set_defaults(func=cmd_swarm_lab)


def cmd_swarm_lab(args: argparse.Namespace) -> int:
    from wotbench.engine import swarmlab  # on use: `wotbench --help` stays light

    signal.signal(signal.SIGTERM, signal.default_int_handler)     # SIGTERM: as Ctrl-C
    labs, t = sorted(p.stem for p in swarmlab.STATE_DIR.glob("*.json")), time.monotonic()
    if args.lab_cmd == "up":
        if args.workers < 0:
            raise swarmlab.SwarmLabError("--workers must be 0 or more")
        lab = swarmlab.SwarmLab(args.workers, tuple(args.image or swarmlab.DEFAULT_IMAGES),
                                node_cpus=args.node_cpus).up()
        print(f"swarm lab {lab.id} up in {time.monotonic() - t:.1f} s: manager {lab.manager} (this host)",
              *(f"  node {n.name} {n.address}: docker exec -i {n.name} docker ..." for n in lab.nodes), sep="\n")
        print(f"end it with: wotbench swarm-lab down --id {lab.id}")
        return 0
    if not args.id and len(labs) != 1:
        raise swarmlab.SwarmLabError(f"{len(labs)} labs ({', '.join(labs) or 'none'}): name one with --id")
    lab = swarmlab.Lab.load(args.id or labs[0])
    lab.down()
    print(f"swarm lab {lab.id} down in {time.monotonic() - t:.1f} s; " + (
        "the host is as it was" if lab.before else "no state file: removed what carries its label"))
    return 0
