"""`wotbench clean`: removes what runs whose harness is gone left on the
engines (containers, networks, host-guard rules), and, with the user's
consent, restarts the local Docker engine when a network it cannot remove
remains (a stale endpoint, moby#42119: only a dockerd restart frees it;
restarting the engine stops every container on it)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from wotbench.base.errors import UserError
from wotbench.engine import daemon as engine

if TYPE_CHECKING:
    from docker import DockerClient

#: The flag that restarts the engine, and the one that consents without a terminal.
RESTART_FLAG, YES_FLAG = "--restart-engine", "--yes"


def register_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(RESTART_FLAG, action="store_true",
                   help="if a network stays that the engine cannot remove (a stale endpoint, moby#42119), restart "
                        "this host's Docker engine to free it: this STOPS EVERY CONTAINER on the engine, of any "
                        "tool; they are listed and you are asked first")
    p.add_argument(YES_FLAG, action="store_true",
                   help=f"with {RESTART_FLAG}: do not ask (needed when stdin is not a terminal)")


def _node_engines(c: DockerClient) -> list[tuple[str, DockerClient]]:
    """The engines of a swarm's other nodes that carry an engine label
    (docs/multi-host.md); none outside a swarm. A node whose engine does
    not answer is reported, and skipped."""
    from wotbench.engine import dockerenv
    from wotbench.engine.inventory import read_inventory

    out = []
    for node in read_inventory(c).nodes:
        url = dict(node.labels).get(dockerenv.LABEL_ENGINE)
        if node.local or not url:
            continue
        try:
            out.append((node.hostname, dockerenv.engine_client(url, node.hostname)))
        except UserError as err:
            print(f"warning: node {node.hostname} skipped: {err.what}", file=sys.stderr)
    return out


def _remove(c: DockerClient, args: argparse.Namespace, keep: set[str]) -> tuple[int, int, list[str]]:
    """Every engine's leftovers (a swarm's other nodes first, then this
    one's): containers and networks removed, networks that stayed."""
    from wotbench.engine import dockerenv

    n_ct = n_net = 0
    stuck: list[str] = []
    for host, eng in _node_engines(c):
        try:
            k = keep | (set() if args.run or args.all else dockerenv.live_runs(eng))
            a, b, s = dockerenv.remove_labelled(eng, args.run, keep=k, swarm_networks=False, local=False)
        except UserError as err:
            print(f"warning: node {host} skipped: {err.what}", file=sys.stderr)
            continue
        n_ct, n_net, stuck = n_ct + a, n_net + b, stuck + [f"{host}: {x}" for x in s]
    a, b, s = dockerenv.remove_labelled(c, args.run, keep=keep, network_attempts=8)
    return n_ct + a, n_net + b, stuck + s


def stale_message(stuck: list[str], running: list[str]) -> str:
    """The one line that names the networks the engine keeps and the flag
    that frees them, with what that flag stops."""
    local = [s for s in stuck if ": " not in s]
    how = (f"`wotbench clean {RESTART_FLAG}` restarts this host's Docker engine to free "
           f"{'it' if len(local) == 1 else 'them'}, which stops every container on the engine "
           f"({len(running)} running now)" if local else
           "restart the Docker engine of the node named (it stops every container on it)")
    return (f"not removable (the engine keeps a stale endpoint, moby#42119): {', '.join(stuck)}; {how}")


def cmd_clean(args: argparse.Namespace) -> int:
    from wotbench.engine import dockerenv

    restart = bool(getattr(args, "restart_engine", False))
    if args.yes and not restart:
        raise UserError(f"consents to an engine restart: it goes only with {RESTART_FLAG}", field=YES_FLAG)
    how = engine.restart_plan(args.yes, sys.stdin.isatty()) if restart else None   # refused before anything
    c = dockerenv.client()
    keep = set() if args.run or args.all else dockerenv.live_runs(c)
    n_ct, n_net, stuck = _remove(c, args, keep)
    print(f"removed {n_ct} container(s) and {n_net} network(s)")
    if keep:
        print(f"left alone (their harness is still running): {', '.join(sorted(keep))}")
    if not stuck:
        if how is not None:
            print("no network is stuck: the Docker engine was not restarted")
        return 0
    running = engine.running_containers(c)
    local = [s for s in stuck if ": " not in s]
    if how is None or not local:
        print(f"error: {stale_message(stuck, running)}", file=sys.stderr)
        return 1
    if not engine.consent(how, local, running, args, dockerenv.live_runs(c)):
        print("error: the Docker engine was not restarted; "
              f"{', '.join(local)} stay{'s' if len(local) == 1 else ''}", file=sys.stderr)
        return 1
    return _after_restart(engine.restart(how, print), args, keep)


def _after_restart(c: DockerClient, args: argparse.Namespace, keep: set[str]) -> int:
    """Removes again what stayed, now that the engine forgot the endpoint."""
    from wotbench.engine import dockerenv

    a, b, stuck = dockerenv.remove_labelled(c, args.run, keep=keep, network_attempts=8)
    print(f"after the restart: removed {a} container(s) and {b} network(s)")
    if stuck:
        print(f"error: still not removable after the restart: {', '.join(stuck)}", file=sys.stderr)
        return 1
    return 0
