"""``wotbench report RUN_DIR [RUN_DIR ...]``: terminal summary, Markdown and
HTML reports of one or several runs (a sweep)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["register", "cmd_report"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="summarise, check and plot finished runs",
        description="Analyse run directories (or folders of ge-*.csv files): print a summary with the run "
                    "verdict, write RUN_DIR/report/{index.html,summary.md,figures/}; with several runs also "
                    "a sweep report with the multi-run figures (paper Figs. 5b, 7, 8, 9).")
    p.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR")
    p.add_argument("-o", "--out", default=None,
                   help="folder of the sweep report (several runs; default: <common parent>/sweep-report)")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    for d in args.run_dirs:
        if not d.is_dir():
            raise UserError("not a directory", d)
    out = args.out
    if out is None and len(args.run_dirs) > 1:
        out = Path(os.path.commonpath([d.resolve() for d in args.run_dirs])) / "sweep-report"
    from wotbench.reporting._reportdir import check_outputs

    check_outputs(args.run_dirs, out)       # a bad output folder is refused before the heavy imports
    from wotbench.reporting._render import write_reports

    write_reports(args.run_dirs, out)
    return 0
