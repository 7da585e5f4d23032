"""docs/results.md from the results catalogue (``wotbench runs --write-doc
PAGE``): every marker block of the page (wotbench.reporting._docmarkers)
is filled from the catalogue, the rest of the page is kept byte for byte.

A ``spec=NAME scale=S`` block gets one line saying where its runs come
from (catalogue, dates, hosts, git commits and whether the checkout was
dirty) and a table of the latest run of each test of that spec at that
scale: a sweep's tests and repetitions are told apart by their label; a
test's latest complete run is shown, an incomplete one only when the test
has no other. Columns: the test's label, the verdict (with the first
reason when not valid), throughput, response time p50 and p99, send lag
p99, error rate, the devices' median R_d (when a run has one) and the
run's report (a relative link when the results folder is inside the
page's repository, else its path). A ``host`` block gets the disclosure
(CPU, cores, SMT, governor, caches, memory, kernel) of the newest run
that has one. A block with nothing to show gets one plain line saying so,
never its old content, and is named in :attr:`Written.unfilled`.

The page is written atomically (wotbench.base.results.write_atomic), and
not at all when a marker is wrong or nothing changed."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.base.units import MISSING, fmt_duration_us, fmt_num, fmt_rate, plural
from wotbench.reporting import _docmarkers as markers
from wotbench.reporting import catalogue
from wotbench.reporting._disclosure import disclosure_rows
from wotbench.reporting._tables import md_table

__all__ = ["HEADER", "REASON_CHARS", "HOST_FACTS", "Written", "latest", "spec_block", "host_block", "check_page",
           "write_doc"]

#: The columns of a spec block's table (R_d only when a run has it).
HEADER = ["test", "verdict", "throughput", "R p50", "R p99", "send lag p99", "errors", "R_d", "report"]
#: The longest first reason a table shows (the report and `wotbench runs --json` have them all).
REASON_CHARS = 100
#: The disclosure rows (reporting._disclosure) a host block shows.
HOST_FACTS = ("CPU", "CPUs online", "SMT", "CPU governor", "CPU caches (cpu0)", "memory", "kernel")


@dataclass(frozen=True)
class Written:
    """What :func:`write_doc` did: the blocks filled, and for each one it
    could not fill, ``PAGE:LINE: the line it holds now``."""

    path: Path
    blocks: int
    unfilled: tuple[str, ...]
    changed: bool


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, ``|`` escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def latest(entries: Sequence[catalogue.Entry], spec: str, scale: str) -> list[catalogue.Entry]:
    """The runs a block of ``spec`` at ``scale`` shows: per label (a test
    of a sweep, a repetition) its latest complete run, else its latest
    incomplete one; in the order they started."""
    best: dict[str | None, catalogue.Entry] = {}
    for e in entries:                                   # oldest first: a later run replaces an earlier one
        if e.spec != spec or e.scale != scale:
            continue
        had = best.get(e.label)
        if had is None or e.verdict != catalogue.INCOMPLETE or had.verdict == catalogue.INCOMPLETE:
            best[e.label] = e
    return sorted(best.values(), key=lambda e: (e.start_epoch_us is None, e.start_epoch_us or 0, e.folder))


def _commit(e: catalogue.Entry) -> str:
    if e.git_commit is None:
        return "an unknown commit"
    state = "dirty" if e.git_dirty else "clean" if e.git_dirty is False else "dirty state unknown"
    return f"commit `{e.git_commit[:10]}` ({state})"


def _said(values: Sequence[str]) -> str:
    """Distinct values in first-seen order, each with its count when they differ."""
    counts = {v: values.count(v) for v in dict.fromkeys(values)}
    return next(iter(counts)) if len(counts) == 1 else ", ".join(f"{v} ({plural(n, 'run')})" for v, n in counts.items())


def _host(e: catalogue.Entry) -> str:
    return f"`{e.host}`" if e.host else "unknown"


def _when(runs: Sequence[catalogue.Entry]) -> str:
    stamps = sorted(e.start_utc.replace("T", " ")[:16] for e in runs if e.start_utc)
    if not stamps:
        return "at unknown times"
    return f"on {stamps[0]} UTC" if stamps[0] == stamps[-1] else f"from {stamps[0]} to {stamps[-1]} UTC"


def _where(path: Path, repo: Path | None) -> str:
    """A path as the page says it: relative to the repository when inside it."""
    p = path.resolve()
    return p.relative_to(repo).as_posix() if repo is not None and p.is_relative_to(repo) else os.fspath(p)


def _report(root: Path, e: catalogue.Entry, page: Path, repo: Path | None) -> str:
    report = root / e.folder / layout.REPORT / layout.REPORT_HTML
    if not report.is_file():
        return "no report yet"
    if repo is None or not report.resolve().is_relative_to(repo):
        return f"`{_cell(os.fspath(report.resolve()))}`"
    rel = Path(os.path.relpath(report.resolve(), page.resolve().parent)).as_posix()
    return f"[report]({urllib.parse.quote(rel)})"


def _verdict(e: catalogue.Entry) -> str:
    if e.verdict == "valid" or not e.reasons:
        return e.verdict
    more = f" (+{len(e.reasons) - 1} more)" if len(e.reasons) > 1 else ""
    return _cell(f"{e.verdict}: {_short(e.reasons[0])}{more}")


def spec_block(root: Path, entries: Sequence[catalogue.Entry], spec: str, scale: str, page: Path,
               repo: Path | None) -> str | None:
    """A spec block's text, None when the catalogue has no run of it."""
    runs = latest(entries, spec, scale)
    if not runs:
        return None
    with_rd = any(e.rd_median is not None for e in runs)
    head = [h for h in HEADER if with_rd or h != "R_d"]
    rows = []
    for e in runs:
        row = [_cell(e.label or MISSING), _verdict(e), fmt_rate(e.throughput), fmt_duration_us(e.response_p50_us),
               fmt_duration_us(e.response_p99_us), fmt_duration_us(e.send_lag_p99_us),
               MISSING if e.error_rate is None else f"{e.error_rate:.2%}"]
        rows.append(row + ([fmt_num(e.rd_median)] if with_rd else []) + [_report(root, e, page, repo)])
    cat = _where(root / catalogue.CATALOGUE, repo)
    intro = (f"From `{cat}`: the latest run of each of the {plural(len(runs), 'test')} of `{spec}` at scale "
             f"`{scale}`, "
             f"started {_when(runs)} on host {_said([_host(e) for e in runs])}, "
             f"{_said([_commit(e) for e in runs])}.")
    return intro + "\n\n" + md_table((head, rows))


def host_block(root: Path, entries: Sequence[catalogue.Entry], repo: Path | None) -> str | None:
    """A host block's text: the newest run's disclosure; None when no run has one."""
    with_d = [e for e in entries if isinstance((e.manifest or {}).get("disclosure"), dict)]
    if not with_d:
        return None
    e = with_d[-1]                                      # entries are oldest first
    d = (e.manifest or {})["disclosure"]
    rows = [r for r in disclosure_rows(d) if r[0] in HOST_FACTS]
    cat = _where(root / catalogue.CATALOGUE, repo)
    intro = (f"From `{cat}`: the host of its newest run with a disclosure, `{e.run_id}` (host "
             f"{_host(e)}, started {_when([e])}, {_commit(e)}).")
    return intro + "\n\n" + md_table((["fact", "value"], [[_cell(a), _cell(b)] for a, b in rows]))


def _repo(page: Path) -> Path | None:
    """The git repository holding the page (a folder with ``.git``), if any."""
    for p in page.resolve().parents:
        if (p / ".git").exists():
            return p
    return None


def _read(page: Path) -> str:
    try:
        return page.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(f"not UTF-8 text (byte {err.start})", page, field="--write-doc") from None
    except OSError as err:
        raise UserError(f"cannot be read: {err.strerror or err}", page, field="--write-doc") from None


def check_page(page: Path) -> None:
    """The page's markers checked (a UserError on the first bad one), nothing written."""
    markers.parse(_read(page), page)


def write_doc(root: Path, page: Path, filters: catalogue.Filters | None = None) -> Written:
    """Fills every block of ``page`` from the catalogue of ``root`` (its
    rows that pass ``filters``) and writes the page when it changed. A bad
    marker, an unreadable page or catalogue is a UserError before anything
    is written."""
    text = _read(page)
    lines, blocks = markers.parse(text, page)
    entries = catalogue.select(root, filters)
    repo = _repo(page)
    cat = _where(root / catalogue.CATALOGUE, repo)
    contents, unfilled = [], []
    for b in blocks:
        if b.kind == markers.HOST:
            body = host_block(root, entries, repo)
            empty = f"no run with a host disclosure in {cat}"
        else:
            body = spec_block(root, entries, str(b.spec), str(b.scale), page, repo)
            empty = f"no run of {b.spec} at scale {b.scale} in {cat}"
        if body is None:
            body = empty
            unfilled.append(f"{page}:{b.line}: {empty}")
        contents.append(body)
    new = markers.splice(lines, blocks, contents)
    if new != text:      # a page that is a symbolic link: its target is rewritten, the link kept
        write_atomic(page.resolve(), new)
    return Written(page, len(blocks), tuple(unfilled), new != text)
