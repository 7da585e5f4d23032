"""What `wotbench compare` shows: the table of every metric (terminal and
HTML), its warnings, and the HTML page's file, written atomically and only
where nothing else is (a file that holds compare's own page is replaced;
anything else is refused, before anything is computed)."""

from __future__ import annotations

import html
import math
import os
import stat
from collections.abc import Sequence
from pathlib import Path

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.base.units import fmt_duration_us, fmt_num, fmt_rate
from wotbench.reporting._compare import REGRESSED, Metric, Row, RunSample, Threshold
from wotbench.reporting._tables import Table, check_table, text_table

__all__ = ["table", "terminal_text", "warnings", "html_page", "check_html_target", "write_html", "GENERATOR"]

#: The mark of compare's page in its head: a file with it may be replaced.
GENERATOR = '<meta name="generator" content="wotbench compare">'


def _value(m: Metric, v: float | None, signed: bool = False) -> str:
    if v is None:
        return "–"
    sign = "+" if signed and v > 0 else ""
    if m.unit == "us":
        return sign + fmt_duration_us(v)
    if m.unit == "req/s":
        return sign + fmt_rate(v, " req/s")
    if m.key == "errors":
        return f"{sign}{fmt_num(v * 100)} %"
    return sign + fmt_num(v)


def _ci(r: Row) -> str:
    if r.est is None:
        return "–"
    return f"[{_value(r.metric, r.est.lo, True)}, {_value(r.metric, r.est.hi, True)}]"


def _rel(r: Row) -> str:
    rel = r.relative
    if rel is None:
        return "–"
    if not math.isfinite(rel):
        return "new" if rel > 0 else "gone"
    return f"{rel * 100:+.1f} %"


def table(rows: Sequence[Row], alpha: float, th: dict[str, Threshold]) -> Table:
    head = ["metric", "A", "B", "B − A", f"{(1 - alpha) * 100:g} % CI", "change", "threshold", "verdict", "method"]
    body = [[r.metric.label, _value(r.metric, r.a), _value(r.metric, r.b),
             _value(r.metric, r.est.diff if r.est else None, True), _ci(r), _rel(r),
             th[r.metric.key].text(r.metric.unit), r.verdict,
             "; ".join(x for x in (r.method, r.note) if x)] for r in rows]
    return check_table((head, body))


def _verdict_text(s: RunSample) -> str:
    return s.verdict if s.verdict is not None else "no verdict (no summary.json)"


def warnings(a: RunSample, b: RunSample, same_workload: bool | None) -> list[str]:
    """The warning lines: different or unknown workloads (compared because
    the user asked), an invalid run, sampled data."""
    out = []
    if same_workload is False:
        out.append("warning: A and B ran different workloads (trace or expected RITs differ): "
                   "the differences below are not only the system's")
    elif same_workload is None:
        out.append("warning: A or B has no workload/ files: whether they ran the same workload is unknown")
    if a.verdict != "valid" or b.verdict != "valid":
        why = [f"{n} ({s.run_id}): {_verdict_text(s)}" + (f": {s.reasons[0]}" if s.reasons else "")
               for n, s in (("A", a), ("B", b))]
        out.append(f"warning: comparing runs that are not both valid: {'; '.join(why)}")
    for n, s in (("A", a), ("B", b)):
        if s.sampled:
            out.append(f"note: {n}'s per-request values are a seeded random sample: {s.response.size:,} of "
                       f"{s.response_rows:,} response times, {s.lag.size:,} of {s.lag_rows:,} send lags")
    return out


def _headline(rows: Sequence[Row]) -> str:
    bad = [r.metric.key for r in rows if r.verdict == REGRESSED]
    good = [r.metric.key for r in rows if r.verdict == "improved"]
    if bad:
        return f"REGRESSED: {', '.join(bad)}" + (f" (improved: {', '.join(good)})" if good else "")
    if good:
        return f"improved: {', '.join(good)}; nothing regressed"
    return "no significant change"


def _runs_lines(a: RunSample, b: RunSample) -> list[str]:
    return [f"{n}: {s.path} ({_verdict_text(s)}; {s.requests:,} requests in {s.measure_s:g} s of measurement)"
            for n, s in (("A", a), ("B", b))]


def terminal_text(a: RunSample, b: RunSample, rows: Sequence[Row], alpha: float, th: dict[str, Threshold],
                  warn: Sequence[str]) -> str:
    return "\n".join([*_runs_lines(a, b), *warn, "", text_table(table(rows, alpha, th)), "",
                      f"verdict: {_headline(rows)}"]) + "\n"


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#f3f3f3}"
        ".regressed{background:#fdd}.improved{background:#dfd}.warn{color:#8a4b00}.meta{color:#555}")


def html_page(a: RunSample, b: RunSample, rows: Sequence[Row], alpha: float, th: dict[str, Threshold],
              warn: Sequence[str]) -> str:
    head, body = table(rows, alpha, th)
    trs = ["<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r, cells in zip(rows, body, strict=True):
        cls = f' class="{r.verdict}"' if r.verdict in (REGRESSED, "improved") else ""
        trs.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    parts = [f"<h1>wotbench compare: {html.escape(_headline(rows))}</h1>",
             *[f'<p class="meta">{html.escape(x)}</p>' for x in _runs_lines(a, b)],
             *[f'<p class="warn">{html.escape(x)}</p>' for x in warn],
             "<table>" + "\n".join(trs) + "</table>",
             '<p class="meta">B − A per metric with its confidence interval; a metric regressed or improved when '
             "its interval excludes 0 and the change reaches its threshold. Only the measurement phase counts.</p>"]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + GENERATOR
            + f"<title>wotbench compare</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def check_html_target(raw: str | os.PathLike[str]) -> Path:
    """Where --html writes: nothing there yet, or a page compare wrote
    (replaced); anything else is refused (UserError, nothing written)."""
    real = outpath.resolve(raw, "--html")
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        return real
    if not stat.S_ISREG(st.st_mode):
        raise UserError("exists and is not a regular file: refusing to replace it", os.fspath(raw), field="--html")
    try:
        with open(real, "rb") as fh:
            start = fh.read(4096)
    except OSError as err:
        raise UserError(f"cannot read: {err.strerror or err}", os.fspath(raw), field="--html") from None
    if GENERATOR.encode() not in start:
        raise UserError("exists and was not written by wotbench compare: refusing to overwrite it "
                        "(give a new file)", os.fspath(raw), field="--html")
    return real


def write_html(path: Path, page: str) -> None:
    write_atomic(path, page)
