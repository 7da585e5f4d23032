"""`wotbench runs`: the runs of a results folder from its catalogue
(wotbench.reporting.catalogue), filtered, as a table or JSON; ``--rebuild``
makes the catalogue and the index anew from the run folders; ``--write-doc
PAGE`` fills PAGE's catalogue blocks (docs/results.md) from it instead of
listing (wotbench.reporting.resultsdoc): exit 0 when every block was
filled, 1 when one had no run (the page is still written, with a line
saying so)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from wotbench.base.errors import UserError

if TYPE_CHECKING:
    from wotbench.reporting.catalogue import Filters

__all__ = ["register", "cmd_runs"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "runs", help="list past runs from the results catalogue, filtered",
        description="List the runs of a results folder from its catalogue (RESULTS/catalogue.sqlite, written at "
                    "the end of every run), oldest first, filtered by spec, start date, verdict, host, git "
                    "commit and gateway under test. --rebuild makes the catalogue and RESULTS/index.html anew "
                    "from every run folder (a folder without summary.json is listed as incomplete). --write-doc "
                    "PAGE fills the catalogue blocks of a Markdown page (docs/results.md) instead of listing: "
                    "exit 0 when every block was filled, 1 when a block had no run (the page is written with a "
                    "line saying so), 2 on a bad marker (the page is left as it was).")
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
    p.add_argument("--write-doc", metavar="PAGE", type=Path,
                   help="instead of listing, fill the catalogue blocks of the Markdown page PAGE (e.g. "
                        "docs/results.md) from the runs that pass the filters, keeping the rest of it; exit 1 "
                        "when a block has no run (the page is written with a line saying so)")
    p.set_defaults(func=cmd_runs)


def cmd_runs(args: argparse.Namespace) -> int:
    from wotbench.reporting import catalogue

    # Every filter is checked before the catalogue is touched.
    filters = catalogue.Filters.parse(spec=args.spec, since=args.since, until=args.until, verdict=args.verdict,
                                      host=args.host, commit=args.commit, gateway=args.gateway)
    if args.write_doc is not None and args.json:
        raise UserError("--json lists the runs; --write-doc writes a page instead: give one", field="--write-doc")
    if args.write_doc is not None:
        from wotbench.reporting import resultsdoc

        resultsdoc.check_page(args.write_doc)              # its markers, before --rebuild writes anything
    if args.rebuild:
        built = catalogue.rebuild(args.results)
        print(f"catalogue {built.catalogue}: {built.runs} run(s), {built.incomplete} incomplete, from the run "
              f"folders; index {built.index}", file=sys.stderr)
    if args.write_doc is not None:
        return _write_doc(args.results, args.write_doc, filters)
    entries = catalogue.select(args.results, filters)
    if args.json:
        sys.stdout.write(catalogue.as_json(entries))
    elif entries:
        print(catalogue.text_table(entries))
    else:
        print(f"no run in {args.results / catalogue.CATALOGUE} matches", file=sys.stderr)
    return 0


def _write_doc(results: Path, page: Path, filters: Filters) -> int:
    from wotbench.reporting import catalogue, resultsdoc

    done = resultsdoc.write_doc(results, page, filters)
    for line in done.unfilled:
        print(f"not filled: {line}", file=sys.stderr)
    state = "written" if done.changed else "unchanged"
    print(f"{page}: {done.blocks - len(done.unfilled)} of {done.blocks} block(s) filled from "
          f"{results / catalogue.CATALOGUE}; {state}", file=sys.stderr)
    return 1 if done.unfilled else 0
