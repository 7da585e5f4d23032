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
from wotbench.reporting._compareset import PER_REPETITION, Match, PointResult, Side
from wotbench.reporting._tables import Table, check_table, text_table

__all__ = ["table", "terminal_text", "warnings", "html_page", "set_text", "set_html", "check_html_target", "write_html",
           "GENERATOR"]

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


def _html_table(rows: Sequence[Row], alpha: float, th: dict[str, Threshold]) -> str:
    head, body = table(rows, alpha, th)
    trs = ["<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r, cells in zip(rows, body, strict=True):
        cls = f' class="{r.verdict}"' if r.verdict in (REGRESSED, "improved") else ""
        trs.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>")
    return "<table>" + "\n".join(trs) + "</table>"


_HTML_NOTE = ('<p class="meta">B − A per metric with its confidence interval; a metric regressed or improved when '
              "its interval excludes 0 and the change reaches its threshold. Only the measurement phase counts.</p>")


def _page(parts: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">" + GENERATOR
            + f"<title>wotbench compare</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def _p(cls: str, lines: Sequence[str]) -> list[str]:
    return [f'<p class="{cls}">{html.escape(x)}</p>' for x in lines]


def html_page(a: RunSample, b: RunSample, rows: Sequence[Row], alpha: float, th: dict[str, Threshold],
              warn: Sequence[str]) -> str:
    return _page([f"<h1>wotbench compare: {html.escape(_headline(rows))}</h1>", *_p("meta", _runs_lines(a, b)),
                  *_p("warn", warn), _html_table(rows, alpha, th), _HTML_NOTE])


# --- two sweeps or repetition sets ------------------------------------------------------

def _set_headline(results: Sequence[PointResult]) -> str:
    def at(verdict: str) -> list[str]:
        return [f"{p.label} ({', '.join(keys)})" for p in results
                if (keys := [r.metric.key for r in p.rows if r.verdict == verdict])]

    bad, good = at(REGRESSED), at("improved")
    if bad:
        return f"REGRESSED: {'; '.join(bad)}" + (f" (improved: {'; '.join(good)})" if good else "")
    if good:
        return f"improved: {'; '.join(good)}; nothing regressed"
    return f"no significant change at {len(results)} test point{'s' if len(results) != 1 else ''}"


def _side_lines(a: Side, b: Side, m: Match) -> list[str]:
    out = [f"{n}: {s.path} ({s.runs} run{'s' if s.runs != 1 else ''}, {len(s.points)} test point"
           f"{'s' if len(s.points) != 1 else ''})" for n, s in (("A", a), ("B", b))]
    out += [f"only in {n}, not compared: {', '.join(map(repr, only))}"
            for n, only in (("A", m.only_a), ("B", m.only_b)) if only]
    return out


def _mode(p: PointResult, alpha: float) -> str:
    if p.mode == PER_REPETITION:
        return f"{p.n_a} vs {p.n_b} runs, per repetition: each run's value of a metric is one observation"
    if p.n_a == p.n_b == 1:
        return "one run each: the two-run comparison"
    return (f"{p.n_a} vs {p.n_b} runs, pooled: too few runs for a per-repetition {(1 - alpha) * 100:g} % interval, "
            "so each side's requests are one sample; the intervals leave out the noise between runs")


def _some(names: Sequence[str], most: int = 4) -> str:
    return ", ".join(names[:most]) + (f" and {len(names) - most} more" if len(names) > most else "")


def _point_warnings(p: PointResult) -> list[str]:
    """Runs that are not valid, grouped by their verdict and first reason; sampled runs."""
    bad: dict[str, list[str]] = {}
    for r in p.runs:
        if r.verdict != "valid":
            why = (r.verdict or "no verdict (no summary.json)") + (f": {r.reasons[0]}" if r.reasons else "")
            bad.setdefault(why, []).append(f"{r.side} {r.run_id}")
    out = [f"warning: runs that are not valid compared: {'; '.join(f'{_some(v)} ({k})' for k, v in bad.items())}"
           ] if bad else []
    sampled = [f"{r.side} {r.run_id}" for r in p.runs if r.sampled]
    return out + ([f"note: per-request values are a seeded random sample in {_some(sampled)}"] if sampled else [])


def set_text(a: Side, b: Side, m: Match, results: Sequence[PointResult], alpha: float, th: dict[str, Threshold],
             warn: Sequence[str]) -> str:
    """The terminal output of two sets: per matched point its table, then the verdict over every point."""
    out = [*_side_lines(a, b, m), *warn]
    for p in results:
        out += ["", f"== {p.label}: {_mode(p, alpha)}", *_point_warnings(p), text_table(table(p.rows, alpha, th)),
                f"   {p.label}: {_headline(p.rows)}"]
    return "\n".join([*out, "", f"verdict: {_set_headline(results)}"]) + "\n"


def set_html(a: Side, b: Side, m: Match, results: Sequence[PointResult], alpha: float, th: dict[str, Threshold],
             warn: Sequence[str]) -> str:
    parts = [f"<h1>wotbench compare: {html.escape(_set_headline(results))}</h1>", *_p("meta", _side_lines(a, b, m)),
             *_p("warn", warn)]
    for p in results:
        parts += [f"<h2>{html.escape(p.label)}: {html.escape(_headline(p.rows))}</h2>", *_p("meta", [_mode(p, alpha)]),
                  *_p("warn", _point_warnings(p)), _html_table(p.rows, alpha, th)]
    return _page([*parts, _HTML_NOTE])


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
