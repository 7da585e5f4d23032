"""`wotbench validate-cd SPEC`: the command line of the detector's ground-truth
validation (harness/studies/validate_cd.py), kept apart so that `wotbench --help`
does not load the runner."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["register", "cmd_validate_cd"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("validate-cd", help="run trials with and without injected interference and report "
                       "the contention detector's detection rate, onset error and false alarms")
    p.add_argument("spec", type=Path, nargs="?", help="experiment spec (YAML) with a 'validate_cd' section")
    p.add_argument("--scale", help="one of the spec's scales (spec key 'scales'; default full)")
    p.add_argument("--trials", type=_count, help="trials per episode class (default: validate_cd.trials)")
    p.add_argument("--quiet", type=_count, help="trials without interference (default: validate_cd.quiet)")
    p.add_argument("--classes", nargs="+", metavar="NAME", help="run only these episode classes")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="folder that receives results/<validate-cd-run-id>/ (default: results)")
    p.add_argument("--reanalyze", type=Path, nargs="+", metavar="DIR",
                   help="recompute DIR's validation from its stored trial runs, running nothing; several DIRs: "
                   "combined into a new folder under --results")
    p.add_argument("--seed-base", type=_count, metavar="N",
                   help="with validate_cd.seeds: per-trial, trial i replays workload.seed N + i - 1 "
                   "(default: drawn at random and kept in validation.json)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_validate_cd)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a count >= 0, got {text!r}")
    return n


def cmd_validate_cd(args: argparse.Namespace) -> int:
    from wotbench.studies import validate_cd as vcd

    if args.reanalyze is not None:
        out = vcd.reanalyze(args.reanalyze, args.results)
    elif args.spec is None:
        raise UserError("give the spec (or --reanalyze DIR)", field="SPEC")
    else:
        progress = not args.no_progress and sys.stderr.isatty()
        out = vcd.run_validation(args.spec, args.results, args.scale, args.trials, args.quiet, args.classes,
                                 progress, seed_base=args.seed_base)
    doc = json.loads((out / "validation.json").read_text())
    sys.stdout.write(vcd.markdown(doc).split("\n## Trials")[0].rstrip() + "\n")
    print(os.fspath(out))
    return 0
