"""Reports: a terminal summary, Markdown, and a self-contained HTML page
(plots embedded as base64 PNG) per run and per sweep. Files are written
atomically (temp file + rename)."""

from __future__ import annotations

import base64
import html
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tabulate import tabulate

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.reporting._analyze import Analysis, analysis_error, analyze, records_verdict
from wotbench.reporting._congestion import congestion_lines, congestion_table, shown, side_by_side
from wotbench.reporting._gatewayanswer import answer_line
from wotbench.reporting._gatewaylatency import gateway_latency_table
from wotbench.reporting._injected import interference_table
from wotbench.reporting._load import find_files, read_json
from wotbench.reporting._notify import OBSERVE_NOTE, observe_table
from wotbench.reporting._plots import run_figures, sweep_figures
from wotbench.reporting._reportdir import check_outputs
from wotbench.reporting._tables import (
    HOSTS_NOTE,
    cd_blocks,
    cd_stats_line,
    cd_table,
    checks_table,
    device_table,
    group_table,
    hosts_table,
    latency_table,
    rate_table,
    rit_table,
    run_id,
    run_notes,
    sweep_row,
    sweep_table,
)
from wotbench.reporting._timeline import DRIFT_RULE, drift_table, run_timeline, timeline_table

__all__ = ["sweep_row", "terminal_text", "markdown", "html_page", "write_reports"]

Figures = list[tuple[str, str, bytes]]


# --- terminal ---------------------------------------------------------------------------

def gateway_lines(r: dict[str, Any]) -> list[str]:
    """The two answers apart ("The testbed was valid." / "The gateway MISSED
    the objective: ..."), then the gateway's numbers."""
    gw = r["gateway"]
    ans = gw.get("answer")
    return answer_line(r["verdict"], ans if isinstance(ans, dict) else None) + [
        x for x in (gw.get("numbers"), ans if isinstance(ans, str) else None) if x]


def terminal_text(an: Analysis) -> str:
    r = an.result
    c = r["measure_counts"]
    lines = [f"== {run_id(an)}: {r['verdict'].upper()}", *[f"   x {x}" for x in r["reasons"]],
             f"   {c['requests']} requests to {c['devices']} devices via {c['ges']} GE(s) in the "
             f"measurement phase ({(r['phases']['measure'][1] - r['phases']['measure'][0]) / 1e6:g} s); "
             f"{c['ok']} ok, {c['timeouts']} timeouts, {c['errors']} errors"]
    lines += [f"   ! {n}" for n in run_notes(an)] + [""]
    if r.get("gateway"):
        lines += ["Gateway under test", *[f"   {x}" for x in gateway_lines(r)], ""]
        gt = gateway_latency_table(r["gateway"])
        lines += [tabulate(gt[1], gt[0], tablefmt="simple"), ""] if gt else []
    if shown(r):
        cgt = congestion_table(r["congestion"])
        lines += ["Congestion control", *[f"   {x}" for x in congestion_lines(r["congestion"])],
                  tabulate(cgt[1], cgt[0], tablefmt="simple"), ""]
    for title, (head, rows) in (("Checks", checks_table(r)), ("Rate and send lag", rate_table(r)),
                                ("Request inter-arrival time, expected vs submitted (paper Table 1)", rit_table(r)),
                                ("Latency", latency_table(r))):
        lines += [title, tabulate(rows, head, tablefmt="simple", maxcolwidths=[None, None, 90]
                                  if title == "Checks" else None), ""]
    ot = observe_table(r)
    if ot:
        lines += ["Observe (RFC 7641 notifications)", tabulate(ot[1], ot[0], tablefmt="simple"), OBSERVE_NOTE, ""]
    ht = hosts_table(r)
    if ht:
        lines += ["Hosts (a run across a swarm)", tabulate(ht[1], ht[0], tablefmt="simple"), HOSTS_NOTE, ""]
    lines.append("Contention detection")
    for cd_title, cd in cd_blocks(r):
        ct = cd_table(cd)
        lines += ([cd_title] if cd_title else []) + ([tabulate(ct[1], ct[0], tablefmt="simple")] if ct else [])
        lines.append(cd_stats_line(cd))
    lines.append("")
    it = interference_table(r)
    if it:
        lines += ["Interference (injected; seconds since t0)", tabulate(it[1], it[0], tablefmt="simple"), ""]
    if r["warnings"]:
        lines += ["Warnings"] + [f"  ! {w}" for w in r["warnings"]] + [""]
    return "\n".join(lines)


# --- Markdown ---------------------------------------------------------------------------

def _md_table(t: tuple[list[str], list[list[str]]]) -> str:
    return tabulate(t[1], t[0], tablefmt="github")


def _protocol_md(r: dict[str, Any]) -> list[str]:
    """The gateway-under-test and congestion-control parts of the Markdown report."""
    out: list[str] = []
    if r.get("gateway"):
        out += ["## Gateway under test", "", *[x + "  " for x in gateway_lines(r)], ""]
        gt = gateway_latency_table(r["gateway"])
        out += [_md_table(gt), ""] if gt else []
    if shown(r):
        out += ["## Congestion control", "", *[x + "  " for x in congestion_lines(r["congestion"])], "",
                _md_table(congestion_table(r["congestion"])), ""]
    return out


def markdown(an: Analysis, figures: Figures, fig_dir: str | None) -> str:
    r = an.result
    c = r["measure_counts"]
    out = [f"# WoTbench run {run_id(an)}", "",
           f"**Verdict: {r['verdict'].upper()}** — {c['requests']} requests, {c['devices']} devices, "
           f"{c['ges']} GE(s); {c['ok']} ok, {c['timeouts']} timeouts, {c['errors']} errors.", ""]
    if r["reasons"]:
        out += ["Reasons:", ""] + [f"- {x}" for x in r["reasons"]] + [""]
    notes = run_notes(an)
    if notes:
        out += ["Notes:", ""] + [f"- {x}" for x in notes] + [""]
    out += _protocol_md(r)
    out += ["## Checks", "", _md_table(checks_table(r)), ""]
    if r["warnings"]:
        out += ["## Warnings", ""] + [f"- {w}" for w in r["warnings"]] + [""]
    out += ["## Workload integrity", "", "Rate and send lag:", "", _md_table(rate_table(r)), "",
            "Request inter-arrival time, expected vs submitted (paper Table 1):", "", _md_table(rit_table(r)), "",
            "## Latency", "", _md_table(latency_table(r)), ""]
    ot = observe_table(r)
    if ot:
        out += ["## Observe", "", _md_table(ot), "", OBSERVE_NOTE, ""]
    ht = hosts_table(r)
    if ht:
        out += ["## Hosts", "", _md_table(ht), "", HOSTS_NOTE, ""]
    out += ["## Contention detection", ""]
    for title, cd in cd_blocks(r):
        ct = cd_table(cd)
        out += ([f"### {title}", ""] if title else []) + ([_md_table(ct), ""] if ct else [])
        out += [cd_stats_line(cd) if ct else "No CD data.", ""]
    it = interference_table(r)
    if it:
        out += ["## Interference", "", "Injected noisy neighbours, seconds since t0:", "", _md_table(it), ""]
    gt = group_table(r)
    if gt:
        out += ["## Device groups", "", _md_table(gt), ""]
    dt = drift_table(run_timeline(an))
    if dt:
        out += ["## Timeline and drift", "", DRIFT_RULE, "", _md_table(dt), ""]
    head, rows, n = device_table(r)
    out += ["## Devices" + (f" (worst {len(rows)} of {n} by R_d)" if n > len(rows) else ""), "",
            _md_table((head, rows)), ""]
    if fig_dir is not None:
        out += ["## Figures", ""] + [f"![{cap}]({fig_dir}/{name}.png)\n" for name, cap, _ in figures]
    return "\n".join(out)


_SIDE_BY_SIDE = ("Congestion control, strategies side by side per condition (measurement phase: completion = "
                 "ok / requests, response-time percentiles of the ok requests, transmissions per request = 1 + "
                 "retransmissions, spurious retransmissions counted by the GE and duplicates recognised by the "
                 "devices over the whole run, ok responses per second)")


def sweep_markdown(rows: Sequence[dict[str, Any]], figures: Figures, fig_dir: str) -> str:
    sbs = side_by_side(rows)
    return "\n".join(["# WoTbench sweep", "", _md_table(sweep_table(rows)), ""]
                     + (["## Congestion control", "", _SIDE_BY_SIDE + ".", "", _md_table(sbs), ""] if sbs else [])
                     + ["## Figures", ""]
                     + [f"![{cap}]({fig_dir}/{name}.png)\n" for name, cap, _ in figures])


# --- HTML --------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1100px;
     padding:1.5em 2em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.verdict{display:inline-block;padding:.25em .8em;border-radius:.4em;font-weight:700;color:#fff;font-size:1.1em}
.valid{background:#2e7d32} .invalid{background:#c62828}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f5f5f5} td:first-child,th:first-child{text-align:left}
td.reason,th.reason{text-align:left;max-width:680px;white-space:normal}
.pass{color:#2e7d32;font-weight:700} .fail{color:#c62828;font-weight:700}
.warn{background:#fff8e1;border-left:4px solid #f9a825;padding:.4em .8em;margin:.3em 0}
.reasons li{color:#c62828}
figure{margin:1.2em 0} figure img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.88em;color:#555;max-width:900px}
.meta{color:#666;font-size:.9em}
"""

# Records on <body> how many images decoded, so a headless browser test can check them.
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  document.body.setAttribute('data-images', ok + '/' + imgs.length);
});
"""


def _html_table(t: tuple[list[str], list[list[str]]], reason_col: int | None = None) -> str:
    head, rows = t
    th = ['<th class="reason">' if i == reason_col else "<th>" for i in range(len(head))]
    out = ["<table><tr>" + "".join(f"{t}{html.escape(h)}</th>" for t, h in zip(th, head, strict=True)) + "</tr>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = ""
            if v == "PASS":
                cls = ' class="pass"'
            elif v in ("FAIL", "NO", "INVALID", "LOST", "NO ANSWERS", "CONTENTION", "NO CD DATA"):
                cls = ' class="fail"'
            elif i == reason_col:
                cls = ' class="reason"'
            cells.append(f"<td{cls}>{html.escape(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


def _html_figures(figures: Figures) -> str:
    return "\n".join(
        f'<figure id="fig-{name}"><img alt="{html.escape(cap)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"><figcaption>{html.escape(cap)}'
        f"</figcaption></figure>" for name, cap, png in figures)


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style><script>{_SCRIPT}</script></head><body>\n{body}\n</body></html>\n")


def _metadata(an: Analysis) -> list[str]:
    """The manifest's scalar facts (host, versions, run id, ...) as a table."""
    files = find_files(an.path)
    if files.manifest is None:
        return []
    try:
        m = read_json(files.manifest)
    except UserError:                 # damaged: the placement check says so
        return []
    if not isinstance(m, dict):
        return []
    rows = [[k, str(v)] for k, v in m.items() if isinstance(v, (str, int, float, bool)) and not k.endswith("_sha256")]
    return ["<h2>Run metadata</h2>", _html_table((["manifest", "value"], rows), reason_col=1)] if rows else []


_MISSING = '<p class="fail">'


def html_page(an: Analysis, figures: Figures) -> str:
    r = an.result
    c = r["measure_counts"]
    rid = run_id(an)
    parts = [f"<h1>WoTbench run {html.escape(rid)}</h1>",
             f'<p><span class="verdict {r["verdict"]}">{r["verdict"].upper()}</span> '
             f"{c['requests']} requests to {c['devices']} devices via {c['ges']} GE(s) in the measurement "
             f"phase; {c['ok']} ok, {c['timeouts']} timeouts, {c['errors']} errors.</p>"]
    if r["reasons"]:
        parts.append('<ul class="reasons">' + "".join(f"<li>{html.escape(x)}</li>" for x in r["reasons"]) + "</ul>")
    parts += [f'<div class="warn">{html.escape(n)}</div>' for n in run_notes(an)]
    if r.get("gateway"):
        parts += ["<h2>Gateway under test</h2>", *[f"<p>{html.escape(x)}</p>" for x in gateway_lines(r)]]
        gt = gateway_latency_table(r["gateway"])
        parts += [_html_table(gt)] if gt else []
    if shown(r):
        parts += ['<h2 id="congestion">Congestion control</h2>',
                  *[(_MISSING if x.startswith("MISSING") else "<p>") + f"{html.escape(x)}</p>"
                    for x in congestion_lines(r["congestion"])], _html_table(congestion_table(r["congestion"]))]
    parts += ["<h2>Checks</h2>", _html_table(checks_table(r), reason_col=2)]
    if r["warnings"]:
        parts += ["<h2>Warnings</h2>"] + [f'<div class="warn">{html.escape(w)}</div>' for w in r["warnings"]]
    parts += ["<h2>Workload integrity</h2>", "<h3>Rate and send lag</h3>", _html_table(rate_table(r)),
              "<h3>Request inter-arrival time, expected vs submitted (paper Table 1)</h3>", _html_table(rit_table(r)),
              "<h2>Latency</h2>", _html_table(latency_table(r))]
    ot = observe_table(r)
    if ot:
        parts += ['<h2 id="observe">Observe</h2>', _html_table(ot), f'<p class="meta">{html.escape(OBSERVE_NOTE)}</p>']
    ht = hosts_table(r)
    if ht:
        parts += ['<h2 id="hosts">Hosts</h2>', _html_table(ht), f'<p class="meta">{html.escape(HOSTS_NOTE)}</p>']
    parts.append("<h2>Contention detection</h2>")
    for title, cd in cd_blocks(r):
        ct = cd_table(cd)
        parts += [f"<h3>{html.escape(title)}</h3>"] if title else []
        if cd is None or ct is None:
            parts.append("<p>No CD data.</p>")
        else:
            parts += [_html_table(ct), f"<p>{html.escape(cd_stats_line(cd))}</p>",
                      f"<p>{html.escape(cd['contention']['reason'])}</p>"]
    it = interference_table(r)
    if it:
        parts += ["<h2>Interference</h2>", "<p>Injected noisy neighbours, seconds since t0.</p>", _html_table(it)]
    gt = group_table(r)
    if gt:
        parts += ["<h2>Device groups</h2>", _html_table(gt)]
    tl = run_timeline(an)
    dt = drift_table(tl)
    if tl is not None and dt:
        parts += ['<h2 id="drift">Timeline and drift</h2>',
                  f"<p>{html.escape(DRIFT_RULE)}</p>", _html_table(dt), _html_table(timeline_table(tl))]
    head, rows, n = device_table(r)
    parts += [f"<h2>Devices{f' (worst {len(rows)} of {n} by R_d)' if n > len(rows) else ''}</h2>",
              _html_table((head, rows)), "<h2>Figures</h2>", _html_figures(figures),
              *_metadata(an),
              "<h2>Thresholds</h2>",
              _html_table((["threshold", "value"], [[k, str(v)] for k, v in r["thresholds"].items()])),
              f'<p class="meta">{html.escape(str(an.path))}</p>']
    return _page(f"WoTbench {rid}", "\n".join(parts))


def sweep_html(rows: Sequence[dict[str, Any]], figures: Figures, links: Sequence[str] = ()) -> str:
    runs = "".join(f'<li><a href="{html.escape(link)}">{html.escape(r["run"])}</a></li>'
                   for r, link in zip(rows, links, strict=False))    # links=(): no list of runs
    sbs = side_by_side(rows)
    parts = [f"<h1>WoTbench sweep of {len(rows)} runs</h1>", _html_table(sweep_table(rows)),
             *(['<h2 id="congestion">Congestion control</h2>', f"<p>{html.escape(_SIDE_BY_SIDE)}.</p>",
                _html_table(sbs)] if sbs else []),
             f"<p>Per-run reports:</p><ul>{runs}</ul>" if runs else "",
             "<h2>Figures</h2>", _html_figures(figures)]
    return _page("WoTbench sweep", "\n".join(parts))


# --- writing ------------------------------------------------------------------------------

def _write_set(out: Path, md: str, page: str, figures: Figures) -> None:
    for name, _, png in figures:
        write_atomic(out / layout.FIGURES / f"{name}.png", png)
    write_atomic(out / layout.REPORT_MD, md.encode())
    write_atomic(out / layout.REPORT_HTML, page.encode())


def _records_only(d: Path, err: UserError) -> tuple[str, str, str, str] | None:
    """The report of a run folder whose data cannot be analysed (its GE was
    killed before writing, a damaged file): the verdict of its records,
    invalid, naming why; None when ``d`` is not a run folder at all (the
    error then stands). Returns (run id, terminal text, Markdown, HTML)."""
    files = find_files(d, need_ge=False)
    if files.manifest is None and files.incomplete is None and files.summary is None:
        return None
    r = records_verdict(d, analysis_error(err))
    rid = d.name
    if files.summary is not None:
        try:
            s = read_json(files.summary)
        except UserError:             # damaged: the run id is the folder's name
            s = None
        rid = str(s.get("run_id", rid)) if isinstance(s, dict) else rid
    notes = []
    if files.incomplete is not None:
        first = files.incomplete.read_text(errors="replace").strip().splitlines()[:1]
        notes.append(f"run did not finish ({layout.INCOMPLETE})" + (f": {first[0]}" if first else ""))
    head = "the run's data could not be analysed: verdict from its records alone"
    term = "\n".join([f"== {rid}: {r['verdict'].upper()}", *[f"   x {x}" for x in r["reasons"]],
                      f"   ! {head}", *[f"   ! {n}" for n in notes], "", "Checks",
                      tabulate(checks_table(r)[1], checks_table(r)[0], tablefmt="simple",
                               maxcolwidths=[None, None, 90]), ""])
    md = "\n".join([f"# WoTbench run {rid}", "", f"**Verdict: {r['verdict'].upper()}** ({head}).", "",
                    "Reasons:", "", *[f"- {x}" for x in r["reasons"]], "",
                    *([("Notes:"), "", *[f"- {n}" for n in notes], ""] if notes else []),
                    "## Checks", "", _md_table(checks_table(r)), ""])
    body = [f"<h1>WoTbench run {html.escape(rid)}</h1>",
            f'<p><span class="verdict {r["verdict"]}">{r["verdict"].upper()}</span> {html.escape(head)}.</p>',
            '<ul class="reasons">' + "".join(f"<li>{html.escape(x)}</li>" for x in r["reasons"]) + "</ul>",
            *[f'<div class="warn">{html.escape(n)}</div>' for n in notes],
            "<h2>Checks</h2>", _html_table(checks_table(r), reason_col=2),
            f'<p class="meta">{html.escape(str(d))}</p>']
    return rid, term, md, _page(f"WoTbench {rid}", "\n".join(body))


def write_reports(run_dirs: Sequence[Path], sweep_out: str | os.PathLike[str] | None = None,
                  echo: Callable[[str], object] = print) -> list[Path]:
    """Analyse each run, write ``RUN_DIR/report/{index.html,summary.md,figures/}``,
    print the terminal summary with ``echo``; with several runs also the sweep
    report in ``sweep_out``. A run whose data cannot be analysed (no GE
    output, a damaged file) still gets a report: the verdict of its records,
    invalid, and why (it has no place in the sweep). Returns the HTML files
    written."""
    outs, sweep = check_outputs(run_dirs, sweep_out)     # every refusal before anything is written
    written: list[Path] = []
    analysed: list[Path] = []
    rows = []
    for d, out in zip(run_dirs, outs, strict=True):
        try:
            an = analyze(Path(d))
        except UserError as err:
            rec = _records_only(Path(d), err)
            if rec is None:
                raise
            _, term, md, page = rec
            _write_set(out, md, page, [])
            echo(term)
            echo(f"   report: {out / layout.REPORT_HTML}\n")
            written.append(out / layout.REPORT_HTML)
            continue
        figs = run_figures(an)
        _write_set(out, markdown(an, figs, layout.FIGURES), html_page(an, figs), figs)
        echo(terminal_text(an))
        echo(f"   report: {out / layout.REPORT_HTML}\n")
        written.append(out / layout.REPORT_HTML)
        analysed.append(out / layout.REPORT_HTML)
        rows.append(sweep_row(an))
        del an, figs
    if len(rows) > 1:
        assert sweep is not None
        figs = sweep_figures(rows)
        links = [os.path.relpath(p, sweep) for p in analysed]
        _write_set(sweep, sweep_markdown(rows, figs, layout.FIGURES), sweep_html(rows, figs, links), figs)
        echo("== sweep")
        echo(tabulate(sweep_table(rows)[1], sweep_table(rows)[0], tablefmt="simple"))
        sbs = side_by_side(rows)
        if sbs:
            echo("== congestion control, strategies side by side per condition")
            echo(tabulate(sbs[1], sbs[0], tablefmt="simple", disable_numparse=True))
        echo(f"   report: {sweep / layout.REPORT_HTML}")
        written.append(sweep / layout.REPORT_HTML)
    return written
