"""`wotbench runs`: the runs of a results folder from its catalogue
(wotbench.reporting.catalogue), filtered, as a table or JSON; ``--rebuild``
makes the catalogue and the index anew from the run folders."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["register", "cmd_runs"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "runs", help="list past runs from the results catalogue, filtered",
        description="List the runs of a results folder from its catalogue (RESULTS/catalogue.sqlite, written at "
                    "the end of every run), oldest first, filtered by spec, start date, verdict, host, git "
                    "commit and gateway under test. --rebuild makes the catalogue and RESULTS/index.html anew "
                    "from every run folder (a folder without summary.json is listed as incomplete).")
    p.add_argument("--results", type=Path, default=Path("results"),
                   help="the results folder (default: results)")
    p.add_argument("--rebuild", action="store_true",
                   help="drop the catalogue and make it anew from the run folders, then list")
    p.add_argument("--spec", metavar="NAME", help="the spec's name (a shell pattern: * ? [..])")
    p.add_argument("--since", metavar="DATE", help="started on or after DATE (YYYY-MM-DD[THH:MM[:SS]], UTC)")
    p.add_argument("--until", metavar="DATE", help="started on or before DATE (a date: that whole day)")
    p.add_argument("--verdict", choices=["valid", "invalid", "incomplete"])
    p.add_argument("--host", metavar="NAME", help="the host that ran it (a shell pattern)")
    p.add_argument("--commit", metavar="HEX", help="a prefix of the git commit it ran")
    p.add_argument("--gateway", metavar="IMAGE",
                   help="the gateway under test's image (a shell pattern; none: runs without one)")
    p.add_argument("--json", action="store_true", help="print the rows as a JSON array (with the manifests)")
    p.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    from wotbench.reporting import catalogue

    # Every filter is checked before the catalogue is touched.
    filters = catalogue.Filters.parse(spec=args.spec, since=args.since, until=args.until, verdict=args.verdict,
                                      host=args.host, commit=args.commit, gateway=args.gateway)
    if args.rebuild:
        built = catalogue.rebuild(args.results)
        print(f"catalogue {built.catalogue}: {built.runs} run(s), {built.incomplete} incomplete, from the run "
              f"folders; index {built.index}", file=sys.stderr)
    entries = catalogue.select(args.results, filters)
    if args.json:
        sys.stdout.write(catalogue.as_json(entries))
    elif entries:
        print(catalogue.text_table(entries))
    else:
        print(f"no run in {args.results / catalogue.CATALOGUE} matches", file=sys.stderr)
    return 0
