"""`wotbench capacity SPEC`: the command line of the capacity search
(harness/studies/capacity_search.py), kept apart so that `wotbench --help` does not load
the runner."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

__all__ = ["register", "cmd_capacity"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("capacity", help="search the largest device count or per-device rate "
                       "that stays valid and meets the spec's response-time objective")
    p.add_argument("spec", type=Path, help="experiment spec (YAML) with a 'capacity' section")
    p.add_argument("--scale", help="one of the spec's scales (spec key 'scales'; default full)")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder that receives results/<capacity-run-id>/ (default: results)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_capacity)


def cmd_capacity(args: argparse.Namespace) -> int:
    from wotbench.studies import capacity_search as capacity  # on use: loads the runner

    progress = not args.no_progress and sys.stderr.isatty()
    out = capacity.run_capacity(args.spec, args.results, args.scale, progress)
    doc = json.loads((out / "capacity.json").read_text())
    cap = capacity.CapacitySpec(**{**doc["capacity"], "objectives": tuple(
        capacity.Objective(**o) for o in doc["capacity"]["objectives"])})
    print(f"{'#':>2}  {cap.vary:<18} {'result':<6} evidence")
    for i, p in enumerate(doc["probes"], 1):
        pr = capacity.ProbeResult(**p)
        verdict = "PASS" if pr.passed else "FAIL"
        print(f"{i:>2}  {capacity.fmt_value(cap, pr.value):<18} {verdict:<6} {capacity.evidence_text(cap, pr)}")
    ans = doc["answer"]
    if ans is None:
        print(f"capacity: none; even {cap.vary} = {capacity.fmt_value(cap, cap.start)} failed")
    else:
        more = (" (the maximum allowed; the real capacity may be higher)" if doc["capped"] else
                f" (first failure at {capacity.fmt_value(cap, doc['first_fail'])})")
        more += " (max_probes reached before the bracket was narrow)" if doc["exhausted"] else ""
        print(f"capacity: {cap.vary} = {capacity.fmt_value(cap, ans)} {cap.unit}{more}")
    print(os.fspath(out))
    return 0
