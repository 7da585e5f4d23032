"""Keeps a run's containers off the host itself (issue W2 5/5).

Docker's ``internal`` bridges have no route out, and Docker's isolation
chains drop forwarding between bridges (so a run cannot reach another
run's network), but a container may still open a connection to the host
on the bridge's gateway address, or on any other address of the host:
that traffic is the host's INPUT, which Docker leaves open. Each run
bridge therefore gets one rule at the top of INPUT (and of ip6tables'
INPUT where the host has it) that drops every packet from that bridge
that is not part of a flow the host began: the harness's readiness probe
(host to container, its replies ESTABLISHED) still works; a container
opening anything to the host does not.

Each rule carries the comment ``wotbench-run:<run-id>``, so it is removed
with the run's networks (``wotbench.engine.dockerenv.remove_labelled``: teardown, the
reaper, ``wotbench clean``) and never anything else.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Collection

__all__ = ["COMMENT", "available", "guard", "rules", "drop"]

COMMENT = "wotbench-run:"
_TOOLS = ("iptables", "ip6tables")


def available() -> str | None:
    """None when rules can be set here, else why not."""
    if shutil.which("iptables") is None:
        return "iptables is not installed"
    if os.geteuid() != 0:
        return "the harness does not run as root"
    return None


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, "-w", "5", *args], capture_output=True, text=True, timeout=30)


def _rule(bridge: str, run_id: str) -> list[str]:
    return ["INPUT", "-i", bridge, "-m", "conntrack", "!", "--ctstate", "RELATED,ESTABLISHED",
            "-m", "comment", "--comment", f"{COMMENT}{run_id}", "-j", "DROP"]


def guard(bridge: str, run_id: str) -> list[str]:
    """Drops what the containers on ``bridge`` open towards the host (IPv4
    and, where ip6tables works, IPv6). Returns the tools that set it;
    raises RuntimeError when IPv4 could not be set."""
    done = []
    for tool in _TOOLS:
        if shutil.which(tool) is None:
            continue
        r = _run(tool, "-I", *_rule(bridge, run_id))
        if r.returncode == 0:
            done.append(tool)
        elif tool == "iptables":
            raise RuntimeError(f"iptables -I INPUT -i {bridge} ... failed: {r.stderr.strip()}")
    return done


def rules() -> list[tuple[str, str, list[str]]]:
    """(tool, run id, the rule's arguments) of every guard rule on this host."""
    out = []
    for tool in _TOOLS:
        if shutil.which(tool) is None:
            continue
        r = _run(tool, "-S", "INPUT")
        if r.returncode != 0:
            continue
        for line in r.stdout.splitlines():
            args = shlex.split(line)
            if "--comment" not in args:
                continue
            comment = args[args.index("--comment") + 1]
            if comment.startswith(COMMENT) and args[:2] == ["-A", "INPUT"]:
                out.append((tool, comment[len(COMMENT):], args[1:]))
    return out


def drop(run_id: str | None = None, keep: Collection[str] = ()) -> int:
    """Removes the guard rules of ``run_id`` (or of every run not in
    ``keep`` when None). Returns how many were removed."""
    n = 0
    for tool, rid, args in rules():
        if (run_id is not None and rid != run_id) or rid in keep:
            continue
        if _run(tool, "-D", *args).returncode == 0:
            n += 1
    return n
