"""The results catalogue for a person (wotbench.reporting.catalogue): the
terminal table of ``wotbench runs`` and ``<results>/index.html``, one row
per run with a link to its report (``<run>/report/index.html``; a run
without one yet links its folder and says how to make it). The index is
written atomically and only over an index this module wrote (its
generator tag): any other file of that name is refused, never replaced."""

from __future__ import annotations

import html
import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path

from tabulate import tabulate

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.base.units import MISSING, fmt_count, fmt_duration_us, fmt_num, fmt_rate
from wotbench.reporting.catalogue import CATALOGUE, Entry

__all__ = ["GENERATOR", "HEADER", "cells", "terminal_table", "index_html", "write_index"]

#: The index's generator tag: an index.html without it was not written here and is never replaced.
GENERATOR = '<meta name="generator" content="wotbench runs">'
#: The columns of the terminal table and of the index, in order.
HEADER = ["run", "start (UTC)", "scale", "host", "commit", "gateway", "verdict", "requests", "throughput",
          "R p50", "R p95", "R p99", "send lag p99", "errors", "R_d", "R_d CD", "first reason"]
#: The longest first reason the terminal shows (the index and --json have them all).
REASON_CHARS = 60


def _commit(e: Entry) -> str:
    if e.git_commit is None:
        return MISSING
    return e.git_commit[:10] + ("+dirty" if e.git_dirty else "")


def _pct(v: float | None) -> str:
    return MISSING if v is None else f"{v:.2%}"


def cells(e: Entry) -> list[str]:
    """One run's cells under :data:`HEADER` (without the reason)."""
    start = e.start_utc.replace("T", " ")[:16] if e.start_utc else MISSING
    return [e.run_id, start, e.scale or MISSING, e.host or MISSING, _commit(e), e.gateway or MISSING,
            e.verdict.upper(), fmt_count(e.requests), fmt_rate(e.throughput),
            fmt_duration_us(e.response_p50_us), fmt_duration_us(e.response_p95_us),
            fmt_duration_us(e.response_p99_us), fmt_duration_us(e.send_lag_p99_us), _pct(e.error_rate),
            fmt_num(e.rd_median), fmt_num(e.rd_cd_median)]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def terminal_table(entries: Sequence[Entry]) -> str:
    """The runs as tabulate's ``simple`` table (cells are text, never re-read
    as numbers), the first reason of each shortened."""
    rows = [cells(e) + [_short(e.reasons[0]) if e.reasons else ""] for e in entries]
    return tabulate(rows, HEADER, tablefmt="simple", disable_numparse=True)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1600px;
     padding:1.5em 2em;color:#222;line-height:1.4}
table{border-collapse:collapse;font-size:.88em}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f5f5f5;position:sticky;top:0} td:first-child,th:first-child{text-align:left}
td.reason{text-align:left;white-space:normal;min-width:20em}
.valid{color:#2e7d32;font-weight:700} .invalid{color:#c62828;font-weight:700} .incomplete{color:#666;font-weight:700}
.meta{color:#666;font-size:.9em} a{color:#1565c0} .scroll{overflow-x:auto}
"""


def _link(root: Path, e: Entry) -> str:
    """The run id linking its report, or its folder with how to make the report."""
    report = root / e.folder / layout.REPORT / layout.REPORT_HTML
    run = html.escape(e.run_id)
    if report.is_file():
        href = urllib.parse.quote(f"{e.folder}/{layout.REPORT}/{layout.REPORT_HTML}")
        return f'<a href="{href}">{run}</a>'
    href = urllib.parse.quote(f"{e.folder}/")
    how = html.escape(f"wotbench report {os.fspath(root / e.folder)}")
    return f'<a href="{href}">{run}</a><br><span class="meta">no report yet: <code>{how}</code></span>'


def _reasons(e: Entry) -> str:
    if not e.reasons:
        return ""
    items = "".join(f"<li>{html.escape(r)}</li>" for r in e.reasons)
    return f"<details><summary>{html.escape(_short(e.reasons[0]))}</summary><ul>{items}</ul></details>"


def index_html(root: Path, entries: Sequence[Entry]) -> str:
    """The index page: every run, oldest first, each linking its report."""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER[:-1]) + "<th>reasons</th>"
    rows = []
    for e in entries:
        c = [html.escape(x) for x in cells(e)]
        c[0] = _link(root, e)
        c[6] = f'<span class="{html.escape(e.verdict)}">{c[6]}</span>'
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in c) + f'<td class="reason">{_reasons(e)}</td></tr>')
    counts = {v: sum(e.verdict == v for e in entries) for v in sorted({e.verdict for e in entries})}
    said = ", ".join(f"{n} {v}" for v, n in counts.items()) or "none yet"
    title = f"wotbench runs: {root.resolve().name}"
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">{GENERATOR}'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
            f"<h1>{html.escape(title)}</h1>\n"
            f'<p class="meta">{len(entries)} run(s): {html.escape(said)}. Written by <code>wotbench run</code> and '
            f"<code>wotbench runs --rebuild</code> from the catalogue ({html.escape(CATALOGUE)}); "
            "R: response time, every GE's requests pooled; send lag: the worst GE's; R_d: the devices' median "
            "relative delay, R_d CD: the CD node's; all in the measurement phase.</p>\n"
            f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>\n' + "\n".join(rows)
            + "\n</tbody></table></div>\n</body></html>\n")


def _ours(path: Path) -> bool:
    """Whether the file at ``path`` is absent or an index written here."""
    if not os.path.lexists(path):
        return True
    try:
        with open(path, "rb") as fh:
            return GENERATOR.encode() in fh.read(4096)
    except OSError:
        return False


def write_index(root: Path, name: str, entries: Sequence[Entry]) -> Path:
    """Writes ``root/name`` atomically; a file there that this module did
    not write is a UserError (left as it is)."""
    path = root / name
    if not _ours(path):
        raise UserError("not an index written by wotbench runs: left as it is (move it away to get the index)",
                        path)
    write_atomic(path, index_html(root, entries))
    return path
