"""``wotbench compare A B``: two runs, or two sweeps or repetition sets
(folders of run folders, test point by test point), metric by metric (B -
A with a confidence interval and a verdict); exit 0 when nothing
regressed, 1 when a metric regressed (a CI job gates on it), 2 on bad
input."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["register", "cmd_compare"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "compare", help="compare two runs, sweeps or repetition sets: what changed, with confidence intervals; "
                        "exit 1 on a regression",
        description="Compare run B against run A (the measurement phase of each): per metric (throughput, "
                    "response time shift and p50/p95/p99, send lag p99, error rate, R_d) the difference B - A "
                    "with a confidence interval and a verdict: improved, regressed or no significant change. "
                    "A or B may be a folder of run folders (a sweep or a repetition set): then each test point "
                    "of A is compared with the same point of B (docs/compare.md). "
                    "Exit status 0 when nothing regressed, 1 when a metric regressed, 2 on bad input. Runs of "
                    "different workloads are refused (see --allow-different-workloads).")
    p.add_argument("run_a", type=Path, metavar="A", help="the baseline: a run folder or a folder of run folders")
    p.add_argument("run_b", type=Path, metavar="B", help="compared against it: a run folder or a folder of runs")
    p.add_argument("--threshold", action="append", default=[], metavar="NAME=X[%]",
                   help="the smallest change that counts for a metric, relative to A (p99=5%%) or absolute in "
                        "its unit (errors=0.001, rd=0.05); metrics: throughput, response, p50, p95, p99, "
                        "send_lag_p99, errors, rd (default 5%% each; errors 0.001, rd 0.05); repeatable")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="1 - the confidence of each interval (default 0.05: 95 %%)")
    p.add_argument("--html", default=None, metavar="FILE",
                   help="also write the comparison as an HTML page (a new file, or one compare wrote)")
    p.add_argument("--allow-different-workloads", action="store_true",
                   help="compare runs whose workload/ files differ (or are missing), with a warning")
    p.add_argument("--seed", type=int, default=1, help="seed of the sampling and the bootstrap (default 1)")
    p.add_argument("--max-sample", type=int, default=None, metavar="N",
                   help="the most response times and send lags of a run used (a seeded random sample "
                        "beyond; default 200,000)")
    p.set_defaults(func=cmd_compare)


def _check_args(args: argparse.Namespace) -> None:
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 0.5):
        raise UserError(f"{args.alpha:g}: expected a number in (0, 0.5)", field="--alpha")
    if args.max_sample is not None and args.max_sample < 100:
        raise UserError(f"{args.max_sample}: expected at least 100", field="--max-sample")
    for name, d in (("A", args.run_a), ("B", args.run_b)):
        if not d.exists():
            raise UserError(f"run {name}: no such folder", d)
        if not d.is_dir():
            raise UserError(f"run {name}: not a folder (give a run folder)", d)


def _compare_sets(args: argparse.Namespace, runs_a: list[Path], runs_b: list[Path]) -> int:
    """Two sweeps or repetition sets, test point by test point (reporting/_compareset.py)."""
    from wotbench.reporting._compare import CAP, thresholds
    from wotbench.reporting._compareout import check_html_target, set_html, set_text, write_html
    from wotbench.reporting._compareset import check_workloads, compare_point, match, side

    th = thresholds(args.threshold)
    html_out = check_html_target(args.html) if args.html is not None else None
    a, b = side(args.run_a, runs_a), side(args.run_b, runs_b)
    m = match(a, b)
    warn = check_workloads(m.pairs, args.allow_different_workloads)      # every point before any run is read
    cap = args.max_sample or CAP
    results = [compare_point(label, ra, rb, th, args.alpha, args.seed, cap) for label, ra, rb in m.pairs]
    sys.stdout.write(set_text(a, b, m, results, args.alpha, th, warn))
    if html_out is not None:
        write_html(html_out, set_html(a, b, m, results, args.alpha, th, warn))
        print(f"wrote {html_out}")
    return 1 if any(p.regressed for p in results) else 0


def cmd_compare(args: argparse.Namespace) -> int:
    _check_args(args)
    from wotbench.reporting._compareset import is_run, runs_in

    runs_a, runs_b = runs_in(args.run_a), runs_in(args.run_b)
    for name, d, runs in (("A", args.run_a, runs_a), ("B", args.run_b, runs_b)):
        if runs is None and not is_run(d):
            raise UserError(f"run {name}: neither a run folder (no manifest.json, summary.json, workload/ or "
                            "ge/) nor a folder that holds runs", d)
    if runs_a is not None or runs_b is not None:
        return _compare_sets(args, runs_a or [args.run_a], runs_b or [args.run_b])
    from wotbench.reporting._compare import CAP, compare, sample_run, thresholds, workload_hash
    from wotbench.reporting._compareout import check_html_target, html_page, terminal_text, warnings, write_html

    th = thresholds(args.threshold)
    html_out = check_html_target(args.html) if args.html is not None else None
    wa, wb = workload_hash(args.run_a), workload_hash(args.run_b)
    same = None if wa is None or wb is None else wa == wb
    if same is not True and not args.allow_different_workloads:
        if same is None:
            which = args.run_a if wa is None else args.run_b
            raise UserError("no workload/ files: cannot tell whether A and B ran the same workload "
                            "(--allow-different-workloads compares them anyway)", which, field="workload")
        raise UserError(f"ran another workload than A (sha256 {wb[:12] if wb else ''} vs {wa[:12] if wa else ''}): "
                        "refusing to compare (--allow-different-workloads compares them with a warning)",
                        args.run_b, field="workload")
    cap = args.max_sample or CAP
    a, b = sample_run(args.run_a, cap, args.seed), sample_run(args.run_b, cap, args.seed)
    rows = compare(a, b, th, args.alpha, args.seed)
    warn = warnings(a, b, same)
    sys.stdout.write(terminal_text(a, b, rows, args.alpha, th, warn))
    if html_out is not None:
        write_html(html_out, html_page(a, b, rows, args.alpha, th, warn))
        print(f"wrote {html_out}")
    return 1 if any(r.verdict == "regressed" for r in rows) else 0
