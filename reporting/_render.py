"""Reports: a terminal summary, Markdown, and a self-contained HTML page
(plots embedded as base64 PNG) per run and per sweep. Files are written
atomically (temp file + rename)."""

from __future__ import annotations

import base64
import html
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from wotbench.base import rundir as layout
from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.reporting._analyze import Analysis, analysis_error, analyze, records_verdict, spec_for
from wotbench.reporting._congestion import congestion_lines, congestion_table, shown, side_by_side
from wotbench.reporting._disclosure import disclosure_rows, read_disclosure
from wotbench.reporting._gatewayanswer import answer_line
from wotbench.reporting._gatewaylatency import gateway_latency_table
from wotbench.reporting._hostchecks import cd_sections
from wotbench.reporting._injected import interference_table
from wotbench.reporting._load import find_files, read_json
from wotbench.reporting._notify import OBSERVE_NOTE, observe_table
from wotbench.reporting._plain import (
    ABOUT,
    DOC,
    GLOSSARY,
    cd_status_sentence,
    check_anchor,
    degraded_sentence,
    glossary_anchor,
    meaning,
)
from wotbench.reporting._plots import run_figures
from wotbench.reporting._repetitions import (
    repetition_fields,
    repetition_html,
    repetition_md,
    repetition_points,
    repetition_text,
)
from wotbench.reporting._replayed import REPLAY_RIT_NOTE, replay_sentence
from wotbench.reporting._reportdir import check_outputs
from wotbench.reporting._sweepfigs import repetition_figures, sweep_figures
from wotbench.reporting._tables import (
    HOSTS_NOTE,
    Table,
    cd_blocks,
    cd_stats_line,
    cd_table,
    check_table,
    checks_table,
    device_table,
    group_table,
    hosts_table,
    latency_table,
    md_table,
    rate_table,
    rit_table,
    run_id,
    run_notes,
    sweep_row,
    sweep_table,
    text_table,
    thresholds_table,
)
from wotbench.reporting._timeline import DRIFT_RULE, WINDOW_S, Timeline, drift_table, run_timeline, timeline_table

__all__ = ["sweep_row", "terminal_text", "markdown", "html_page", "write_reports"]

#: (file stem, caption, PNG) or (file stem, caption, PNG, title) per figure.
Figures = Sequence[tuple[Any, ...]]

#: Where the report's shared-cores wording is explained.
SHARED_CORES_DOC = f"{DOC}#shared-cores"


def _ges_phrase(r: dict[str, Any]) -> str:
    """'1 GE (and the contention detector's CD-GE)': the workload's GEs, the
    CD-GEs counted apart."""
    n, m = int(r["measure_counts"]["ges"]), len(cd_sections(r))
    cd = ("" if not m else " (and the contention detector's CD-GE)" if m == 1
          else f" (and the contention detectors' {m} CD-GEs)")
    return units.plural(n, "GE") + cd


def _headline(r: dict[str, Any]) -> str:
    c = r["measure_counts"]
    m = r["phases"]["measure"]
    return (f"{units.fmt_count(c['requests'])} requests to {units.plural(c['devices'], 'device')} via "
            f"{_ges_phrase(r)} in the measurement phase ({units.fmt_duration_us(m[1] - m[0])}); "
            f"{units.fmt_count(c['ok'])} ok, {units.plural(c['timeouts'], 'timeout')}, "
            f"{units.plural(c['errors'], 'error')}")


def _shared_note(r: dict[str, Any], where: bool = True) -> str | None:
    """The headline's note on shared cores (DEGRADED), or None; ``where``:
    ending with where it is explained (the guide's section)."""
    s = degraded_sentence(r)
    if s is None or not where:
        return s
    return f"{s.rstrip('.')} (see {SHARED_CORES_DOC})."


def _short_checks(r: dict[str, Any]) -> Table:
    """The checks table without its statistics column (terminal)."""
    head, rows = check_table(checks_table(r))
    return head[:3], [row[:3] for row in rows]


#: Said under the terminal's checks table.
def failed(r: dict[str, Any]) -> list[tuple[str | None, str, str]]:
    """(check, plain sentence, its statistics) per reason of the verdict, in
    its order: the sentence says what the failure means for the numbers,
    the statistics (the check's own reason) say what it saw; a reason no
    failed check carries stands as it is (check None)."""
    bad = [c for c in r.get("checks", []) if not c.get("ok")]
    if len(bad) != len(r["reasons"]):
        return [(None, x, "") for x in r["reasons"]]
    out: list[tuple[str | None, str, str]] = []
    for c in bad:
        name, why = str(c["check"]), str(c["reason"])
        out.append((name, meaning(name, False, r), why.removeprefix(f"{name}: ")))
    return out


def _term_reasons(r: dict[str, Any]) -> list[str]:
    """``   x check: plain sentence`` and, indented below, what it saw."""
    out = []
    for name, plain, why in failed(r):
        out += [f"   x {name}: {plain}" if name else f"   x {plain}"] + ([f"       {why}"] if why else [])
    return out


def _md_reasons(r: dict[str, Any]) -> list[str]:
    return [f"- {name}: {plain}" + (f" <details><summary>statistics</summary>{why}</details>" if why else "")
            if name else f"- {plain}" for name, plain, why in failed(r)]


def _html_reasons(r: dict[str, Any]) -> str:
    items = []
    for name, plain, why in failed(r):
        head = (f'<a href="#{check_anchor(name)}">{html.escape(name)}</a>: ' if name else "") + html.escape(plain)
        items.append(f"<li>{head}" + (f"<details><summary>statistics</summary>{html.escape(why)}</details>"
                                       if why else "") + "</li>")
    return '<ul class="reasons">' + "".join(items) + "</ul>"


STATS_NOTE = "   (each check's statistics: the report's HTML page or summary.md, under \"statistics\")"


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
    shared = _shared_note(r)
    lines = [f"== {run_id(an)}: {r['verdict'].upper()}", *_term_reasons(r),
             f"   {_headline(r)}"]
    lines += [f"   workload: {replay_sentence(r['replay'])}"] if r.get("replay") else []
    lines += [f"   ! {shared}"] if shared else []
    lines += [f"   ! {n}" for n in run_notes(an)] + [""]
    if r.get("gateway"):
        lines += ["Gateway under test", *[f"   {x}" for x in gateway_lines(r)], ""]
        gt = gateway_latency_table(r["gateway"])
        lines += [text_table(gt), ""] if gt else []
    if shown(r):
        lines += ["Congestion control", *[f"   {x}" for x in congestion_lines(r["congestion"])],
                  text_table(congestion_table(r["congestion"])), ""]
    lines += ["Checks", text_table(_short_checks(r), maxcolwidths=[None, None, 90]), STATS_NOTE, ""]
    replay_note = [REPLAY_RIT_NOTE] if r.get("replay") else []
    for title, t, note in (("Rate and send lag", rate_table(r), []),
                           ("Request inter-arrival time, expected vs submitted (paper Table 1)", rit_table(r),
                            replay_note),
                           ("Latency", latency_table(r), [])):
        lines += [title, text_table(t), *note, ""]
    ot = observe_table(r)
    if ot:
        lines += ["Observe (RFC 7641 notifications)", text_table(ot), OBSERVE_NOTE, ""]
    ht = hosts_table(r)
    if ht:
        lines += ["Hosts (a run across a swarm)", text_table(ht), HOSTS_NOTE, ""]
    lines.append("Contention detection")
    for cd_title, cd in cd_blocks(r):
        ct = cd_table(cd)
        lines += ([cd_title] if cd_title else []) + ([text_table(ct)] if ct else [])
        lines += [cd_status_sentence(cd["contention"].get("status"))] if cd is not None else []
        lines.append(cd_stats_line(cd))
    lines.append("")
    it = interference_table(r)
    if it:
        lines += ["Interference (injected; seconds since t0)", text_table(it), ""]
    if r["warnings"]:
        lines += ["Warnings"] + [f"  ! {w}" for w in r["warnings"]] + [""]
    return "\n".join(lines)


# --- Markdown ---------------------------------------------------------------------------

def _md_table(t: Table) -> str:
    return md_table(t)


def _md_cell(text: str) -> str:
    """Text inside a Markdown table cell: no pipe, no line break."""
    return html.escape(text, quote=False).replace("|", "&#124;").replace("\n", " ")


def _md_checks(r: dict[str, Any]) -> str:
    """The checks with their plain meaning; the statistics one click away (<details>)."""
    head, rows = check_table(checks_table(r))
    return md_table((head, [[name, res, _md_cell(mean), f"<details><summary>statistics</summary>{_md_cell(st)}"
                                                          "</details>"] for name, res, mean, st in rows]))


def _md_glossary() -> list[str]:
    return ["## Glossary", "", *[f"- **{term}**: {text}" for term, _, text in GLOSSARY], ""]


def _fig_title(f: tuple[Any, ...]) -> str:
    """A figure's title: its 4th element, else the caption's first clause."""
    if len(f) > 3 and f[3]:
        return str(f[3])
    cap = str(f[1])
    return cap.split(": ")[0].split(". ")[0].rstrip(".")


def _md_figures(figures: Figures, fig_dir: str) -> list[str]:
    return ["## Figures", ""] + [f"### {_fig_title(f)}\n\n![{f[1]}]({fig_dir}/{f[0]}.png)\n" for f in figures]


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


#: Measurement windows (WINDOW_S each) a run needs before its drift analysis is shown: a run's whose
#: spec says `report: {drift: always}` (a soak's, even at its 40 s ci scale), and any other run's that
#: drifted (a trend over a minute is warm-up, not drift: the 60 s quickstart shows none).
DRIFT_WINDOWS_SOAK, DRIFT_WINDOWS_OTHER = 3, 30


def _drift_shown(an: Analysis, tl: Timeline | None) -> bool:
    """The drift analysis applies: a spec with ``report: {drift: always}``
    measuring at least DRIFT_WINDOWS_SOAK windows, or a run of DRIFT_WINDOWS_OTHER windows or
    more with a series that drifted. Otherwise the timeline shows alone."""
    if tl is None or not tl.drifts:
        return False
    m = an.result["phases"]["measure"]
    windows = (m[1] - m[0]) / 1e6 / WINDOW_S
    if windows >= DRIFT_WINDOWS_OTHER and any(d.flagged for d in tl.drifts):
        return True
    if windows < DRIFT_WINDOWS_SOAK:
        return False
    try:
        spec = spec_for(find_files(an.path, need_ge=False))
    except UserError:
        return False
    return spec is not None and spec.report.drift == "always"


def markdown(an: Analysis, figures: Figures, fig_dir: str | None) -> str:
    r = an.result
    shared = _shared_note(r)
    out = [f"# WoTbench run {run_id(an)}", "", f"**Verdict: {r['verdict'].upper()}** — {_headline(r)}.", ""]
    out += [f"Workload: {replay_sentence(r['replay'])}.", ""] if r.get("replay") else []
    if shared:
        out += [f"> {shared}", ""]
    if r["reasons"]:
        out += ["Reasons:", ""] + _md_reasons(r) + [""]
    notes = run_notes(an)
    if notes:
        out += ["Notes:", ""] + [f"- {x}" for x in notes] + [""]
    out += _protocol_md(r)
    out += ["## Checks", "", _md_checks(r), ""]
    if r["warnings"]:
        out += ["## Warnings", ""] + [f"- {w}" for w in r["warnings"]] + [""]
    out += ["## Workload integrity", "", "Rate and send lag:", "", _md_table(rate_table(r)), "",
            "Request inter-arrival time, expected vs submitted (paper Table 1):", "", _md_table(rit_table(r)), "",
            *([REPLAY_RIT_NOTE, ""] if r.get("replay") else []),
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
        out += [f"{cd_status_sentence(cd['contention'].get('status'))} ({cd_stats_line(cd)})"
                if ct and cd is not None else "No CD data.", ""]
    it = interference_table(r)
    if it:
        out += ["## Interference", "", "Injected noisy neighbours, seconds since t0:", "", _md_table(it), ""]
    gt = group_table(r)
    if gt:
        out += ["## Device groups", "", _md_table(gt), ""]
    tl = run_timeline(an)
    dt = drift_table(tl)
    if tl is not None and dt and _drift_shown(an, tl):
        out += ["## Timeline and drift", "", DRIFT_RULE, "", _md_table(dt), ""]
    head, rows, n = device_table(r)
    out += ["## Devices" + (f" (worst {len(rows)} of {n} by R_d)" if n > len(rows) else ""), "",
            _md_table((head, rows)), ""]
    if fig_dir is not None:
        out += _md_figures(figures, fig_dir)
    out += ["## Thresholds", "", _md_table(thresholds_table(r)), ""] + _md_glossary()
    return "\n".join(out)


_SIDE_BY_SIDE = ("Congestion control, strategies side by side per condition (measurement phase: completion = "
                 "ok / requests, response-time percentiles of the ok requests, transmissions per request = 1 + "
                 "retransmissions, spurious retransmissions counted by the GE and duplicates recognised by the "
                 "devices over the whole run, ok responses per second)")


def sweep_markdown(rows: Sequence[dict[str, Any]], figures: Figures, fig_dir: str) -> str:
    sbs = side_by_side(rows)
    return "\n".join(["# WoTbench sweep", "", _md_table(sweep_table(rows)), ""]
                     + repetition_md(repetition_points(rows))
                     + (["## Congestion control", "", _SIDE_BY_SIDE + ".", "", _md_table(sbs), ""] if sbs else [])
                     + _md_figures(figures, fig_dir))


# --- HTML --------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1400px;
     padding:1.5em 2em;color:#222;line-height:1.4;overflow-wrap:break-word}
h1{font-size:1.6em;margin-bottom:.2em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.verdict{display:inline-block;padding:.25em .8em;border-radius:.4em;font-weight:700;color:#fff;font-size:1.1em}
.valid{background:#2e7d32} .invalid{background:#c62828}
.scroll{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ddd;padding:.25em .55em;text-align:right;vertical-align:top;white-space:nowrap}
th{background:#f5f5f5} td:first-child,th:first-child{text-align:left}
td.reason,th.reason{text-align:left;min-width:18em;max-width:680px;white-space:normal}
td.stats,th.stats{text-align:left;max-width:680px;white-space:normal}
details summary{cursor:pointer;color:#1565c0}
.pass{color:#2e7d32;font-weight:700} .fail{color:#c62828;font-weight:700}
.warn{background:#fff8e1;border-left:4px solid #f9a825;padding:.4em .8em;margin:.3em 0}
.reasons li{color:#c62828}
a{color:#1565c0} a.term{color:inherit;text-decoration:underline dotted}
figure{margin:1.2em 0;max-width:100%} figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#555;max-width:900px}
dl.glossary dt{font-weight:700;margin-top:.5em} dl.glossary dd{margin-left:1.5em}
.meta{color:#666;font-size:.9em;overflow-wrap:anywhere}
"""

# Records on <body>, for a headless browser test: how many images decoded
# (data-images), the elements wider than the page outside a scroll box
# (data-overflow), the images without both alt and title (data-img-untitled)
# and the page's scroll width (data-scrollw).
_SCRIPT = """
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
  var b = document.body, w = document.documentElement.clientWidth;
  b.setAttribute('data-images', ok + '/' + imgs.length);
  var wide = Array.prototype.slice.call(b.querySelectorAll('*')).filter(function (e) {
    return !e.closest('.scroll') && e.getBoundingClientRect().right > w + 1; });
  b.setAttribute('data-overflow', String(wide.length));
  b.setAttribute('data-img-untitled', String(imgs.filter(function (i) {
    return !i.getAttribute('alt') || !i.getAttribute('title'); }).length));
  b.setAttribute('data-scrollw', String(document.documentElement.scrollWidth));
});
"""

#: Glossary terms linked at their first use in a heading or a table header: (pattern, anchor).
_TERMS: tuple[tuple[str, str], ...] = (
    (r"CD-GE", glossary_anchor("CD-GE")), (r"\bCD\b(?!-)", glossary_anchor("CD")),
    (r"\bGE\b(?!-)", glossary_anchor("GE")), (r"\bRIT\b", glossary_anchor("RIT")),
    (r"\bR_d\b", glossary_anchor("R_d")), (r"send lag", glossary_anchor("send lag")),
    (r"\bp50\b", glossary_anchor("p50/p99")), (r"\b5\.03\b", glossary_anchor("5.03")),
    (r"\bCON\b", glossary_anchor("CON/NON")), (r"\bNON\b", glossary_anchor("CON/NON")),
    (r"\bcalibration\b", glossary_anchor("calibration")),
)
_FAIL_CELLS = ("FAIL", "NO", "INVALID", "LOST", "NO ANSWERS", "CONTENTION", "NO CD DATA")


class _Terms:
    """Links each glossary term at its first use on a page (headings and table headers)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, text: str) -> str:
        """``text`` escaped, the first not yet linked term of it linked."""
        esc = html.escape(text)
        for pat, anchor in _TERMS:
            if anchor in self.seen:
                continue
            m = re.search(pat, esc)
            if m:
                self.seen.add(anchor)
                return (f'{esc[:m.start()]}<a class="term" href="#{anchor}">{m.group(0)}</a>{esc[m.end():]}')
        return esc


def _scroll(table: str) -> str:
    return f'<div class="scroll">{table}</div>'


def _html_table(t: Table, reason_col: int | None = None, terms: _Terms | None = None) -> str:
    head, rows = check_table(t)
    th = ['<th class="reason">' if i == reason_col else "<th>" for i in range(len(head))]
    cell = terms or html.escape
    out = ["<table><tr>" + "".join(f"{t}{cell(h)}</th>" for t, h in zip(th, head, strict=True)) + "</tr>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = ""
            if v == "PASS":
                cls = ' class="pass"'
            elif v in _FAIL_CELLS:
                cls = ' class="fail"'
            elif i == reason_col:
                cls = ' class="reason"'
            cells.append(f"<td{cls}>{html.escape(v)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return _scroll("\n".join(out) + "</table>")


def _html_checks(r: dict[str, Any]) -> str:
    """The checks: each name links to what it tests (#check-<name>), its
    plain meaning in the row, its statistics one click away."""
    head, rows = check_table(checks_table(r))
    th = ["<th>", "<th>", '<th class="reason">', '<th class="stats">']
    out = ["<table><tr>" + "".join(f"{t}{html.escape(h)}</th>" for t, h in zip(th, head, strict=True)) + "</tr>"]
    for name, res, mean, stats in rows:
        out.append(f'<tr><td><a href="#{check_anchor(name)}">{html.escape(name)}</a></td>'
                   f'<td class="{"pass" if res == "PASS" else "fail"}">{res}</td>'
                   f'<td class="reason">{html.escape(mean)}</td>'
                   f'<td class="stats"><details><summary>statistics</summary>{html.escape(stats)}</details></td></tr>')
    return _scroll("\n".join(out) + "</table>")


def _html_about(checks: Sequence[str]) -> list[str]:
    """What each check shown tests and which spec keys set it (the targets of the checks' links)."""
    out = ['<h2 id="about-checks">About the checks</h2>',
           f'<p class="meta">More in {html.escape(DOC)} (one section per check).</p>']
    for name in checks:
        what, keys = ABOUT.get(name, ("", ()))
        out.append(f'<h3 id="{check_anchor(name)}">{html.escape(name)}</h3><p>{html.escape(what)}'
                   + (" Set by " + ", ".join(f"<code>validity.{k}</code>" for k in keys)
                      + ' (values under <a href="#thresholds">Thresholds</a>).' if keys else "") + "</p>")
    return out


def _html_glossary() -> list[str]:
    return ['<h2 id="glossary">Glossary</h2>', '<dl class="glossary">',
            *[f'<dt id="{a}">{html.escape(t)}</dt><dd>{html.escape(x)}</dd>' for t, a, x in GLOSSARY], "</dl>"]


def _html_figures(figures: Figures) -> str:
    out = []
    for f in figures:
        name, cap, png = f[0], str(f[1]), f[2]
        title = html.escape(_fig_title(f))
        out.append(f'<figure id="fig-{name}"><h3>{title}</h3><img alt="{html.escape(cap)}" title="{title}" '
                   f'src="data:image/png;base64,{base64.b64encode(png).decode()}"><figcaption>{html.escape(cap)}'
                   f"</figcaption></figure>")
    return "\n".join(out)


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style><script>{_SCRIPT}</script></head><body>\n{body}\n</body></html>\n")


def _meta_row(k: str, v: Any) -> list[str] | None:
    """A manifest fact for a person: empty values left out, times of day,
    durations and sizes in their units, readable names."""
    if v is None or v == "" or isinstance(v, (dict, list)) or k.endswith("_sha256"):
        return None
    name = k
    if isinstance(v, bool):
        text = "yes" if v else "no"
    elif k.endswith("_epoch_us") and isinstance(v, (int, float)):
        name, text = k[:-len("_epoch_us")], units.fmt_epoch_us(v)
    elif k.endswith("_us") and isinstance(v, (int, float)):
        name, text = k[:-3], units.fmt_duration_us(v)
    elif k.endswith("_bytes") and isinstance(v, (int, float)):
        name, text = k[:-6], units.fmt_size(v)
    elif isinstance(v, float):
        text = units.fmt_num(v)
    elif isinstance(v, int):
        text = units.fmt_count(v)
    else:
        text = str(v)
    return [name.replace("_", " "), text]


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
    rows = [row for k, v in m.items() if (row := _meta_row(str(k), v)) is not None]
    rows += disclosure_rows(read_disclosure(files.manifest))      # manifest.json's disclosure
    return ['<h2 id="metadata">Run metadata</h2>', _html_table((["fact", "value"], rows), reason_col=1)] if rows else []


_MISSING = '<p class="fail">'


def _html_timeline(an: Analysis, terms: _Terms) -> list[str]:
    """The drift analysis where it applies (`report: {drift: always}`, or a series that
    drifted), else the timeline alone, folded."""
    tl = run_timeline(an)
    if tl is None or tl.windows.empty:
        return []
    dt = drift_table(tl)
    if dt and _drift_shown(an, tl):
        return ['<h2 id="drift">Timeline and drift</h2>', f"<p>{html.escape(DRIFT_RULE)}</p>", _html_table(dt),
                _html_table(timeline_table(tl), terms=terms)]
    return [f'<details id="timeline"><summary>Timeline per {WINDOW_S:g} s window</summary>',
            _html_table(timeline_table(tl), terms=terms), "</details>"]


def html_page(an: Analysis, figures: Figures) -> str:
    r = an.result
    rid = run_id(an)
    terms = _Terms()
    shared = _shared_note(r, where=False)
    head = html.escape(_headline(r)).replace(" GE", f' <a class="term" href="#{glossary_anchor("GE")}">GE</a>', 1)
    head = head.replace("CD-GE", f'<a class="term" href="#{glossary_anchor("CD-GE")}">CD-GE</a>', 1)
    terms.seen |= {glossary_anchor("GE"), glossary_anchor("CD-GE")}
    parts = [f"<h1>WoTbench run {html.escape(rid)}</h1>",
             f'<p id="verdict"><span class="verdict {r["verdict"]}">{r["verdict"].upper()}</span> {head}.</p>']
    parts += [f'<p id="replay">Workload: {html.escape(replay_sentence(r["replay"]))}.</p>'] if r.get("replay") else []
    if r["reasons"]:
        parts.append(_html_reasons(r))
    if shared:
        parts.append(f'<div class="warn" id="shared-cores">{html.escape(shared)} '
                     f'<a href="#{glossary_anchor("shared cores")}">What shared cores mean</a>; more in '
                     f"{html.escape(SHARED_CORES_DOC)}.</div>")
    parts += [f'<div class="warn">{html.escape(n)}</div>' for n in run_notes(an)]
    if r.get("gateway"):
        parts += ["<h2>Gateway under test</h2>", *[f"<p>{html.escape(x)}</p>" for x in gateway_lines(r)]]
        gt = gateway_latency_table(r["gateway"])
        parts += [_html_table(gt, terms=terms)] if gt else []
    if shown(r):
        parts += ['<h2 id="congestion">Congestion control</h2>',
                  *[(_MISSING if x.startswith("MISSING") else "<p>") + f"{html.escape(x)}</p>"
                    for x in congestion_lines(r["congestion"])],
                  _html_table(congestion_table(r["congestion"]), terms=terms)]
    parts += ['<h2 id="checks">Checks</h2>', _html_checks(r),
              '<p class="meta">Each check links to what it tests (<a href="#about-checks">About the checks</a>); '
              'terms are explained in the <a href="#glossary">Glossary</a>.</p>']
    if r["warnings"]:
        parts += ["<h2>Warnings</h2>"] + [f'<div class="warn">{html.escape(w)}</div>' for w in r["warnings"]]
    parts += ["<h2>Workload integrity</h2>", f"<h3>{terms('Rate and send lag')}</h3>",
              _html_table(rate_table(r), terms=terms),
              f"<h3>{terms('Request inter-arrival time (RIT), expected vs submitted (paper Table 1)')}</h3>",
              _html_table(rit_table(r), terms=terms),
              *([f'<p class="meta">{html.escape(REPLAY_RIT_NOTE)}</p>'] if r.get("replay") else []),
              '<h2 id="latency">Latency</h2>', _html_table(latency_table(r), terms=terms)]
    ot = observe_table(r)
    if ot:
        parts += ['<h2 id="observe">Observe</h2>', _html_table(ot, terms=terms),
                  f'<p class="meta">{html.escape(OBSERVE_NOTE)}</p>']
    ht = hosts_table(r)
    if ht:
        parts += ['<h2 id="hosts">Hosts</h2>', _html_table(ht, terms=terms),
                  f'<p class="meta">{html.escape(HOSTS_NOTE)}</p>']
    parts.append(f'<h2 id="contention">{terms("Contention detection (CD)")}</h2>')
    for title, cd in cd_blocks(r):
        ct = cd_table(cd)
        parts += [f"<h3>{html.escape(title)}</h3>"] if title else []
        if cd is None or ct is None:
            parts.append("<p>No CD data.</p>")
        else:
            parts += [_html_table(ct, terms=terms),
                      f"<p>{html.escape(cd_status_sentence(cd['contention'].get('status')))}</p>",
                      f"<details><summary>statistics</summary><p>{html.escape(cd_stats_line(cd))}</p>"
                      f"<p>{html.escape(cd['contention']['reason'])}</p></details>"]
    it = interference_table(r)
    if it:
        parts += ["<h2>Interference</h2>", "<p>Injected noisy neighbours, seconds since t0.</p>", _html_table(it)]
    gt = group_table(r)
    if gt:
        parts += ["<h2>Device groups</h2>", _html_table(gt, terms=terms)]
    parts += _html_timeline(an, terms)
    dhead, rows, n = device_table(r)
    parts += [f"<h2 id=\"devices\">Devices{f' (worst {len(rows)} of {n} by R_d)' if n > len(rows) else ''}</h2>",
              _html_table((dhead, rows), terms=terms), '<h2 id="figures">Figures</h2>', _html_figures(figures),
              *_metadata(an),
              '<h2 id="thresholds">Thresholds</h2>', _html_table(thresholds_table(r), reason_col=1),
              *_html_about([c["check"] for c in r["checks"]]), *_html_glossary(),
              f'<p class="meta">{html.escape(str(an.path))}</p>']
    return _page(f"WoTbench {rid}", "\n".join(parts))


def sweep_html(rows: Sequence[dict[str, Any]], figures: Figures, links: Sequence[str] = ()) -> str:
    runs = "".join(f'<li><a href="{html.escape(link)}">{html.escape(r["run"])}</a></li>'
                   for r, link in zip(rows, links, strict=False))    # links=(): no list of runs
    sbs = side_by_side(rows)
    parts = [f"<h1>WoTbench sweep of {len(rows)} runs</h1>", _html_table(sweep_table(rows)),
             *repetition_html(repetition_points(rows), _html_table, html.escape),
             *(['<h2 id="congestion">Congestion control</h2>', f"<p>{html.escape(_SIDE_BY_SIDE)}.</p>",
                _html_table(sbs)] if sbs else []),
             f"<p>Per-run reports:</p><ul>{runs}</ul>" if runs else "",
             "<h2>Figures</h2>", _html_figures(figures)]
    return _page("WoTbench sweep", "\n".join(parts))


# --- writing ------------------------------------------------------------------------------

def _write_set(out: Path, md: str, page: str, figures: Figures) -> None:
    for name, _, png, *_ in figures:
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
    term = "\n".join([f"== {rid}: {r['verdict'].upper()}", *_term_reasons(r),
                      f"   ! {head}", *[f"   ! {n}" for n in notes], "", "Checks",
                      text_table(_short_checks(r), maxcolwidths=[None, None, 90]), STATS_NOTE, ""])
    md = "\n".join([f"# WoTbench run {rid}", "", f"**Verdict: {r['verdict'].upper()}** ({head}).", "",
                    "Reasons:", "", *_md_reasons(r), "",
                    *([("Notes:"), "", *[f"- {n}" for n in notes], ""] if notes else []),
                    "## Checks", "", _md_checks(r), ""])
    body = [f"<h1>WoTbench run {html.escape(rid)}</h1>",
            f'<p><span class="verdict {r["verdict"]}">{r["verdict"].upper()}</span> {html.escape(head)}.</p>',
            _html_reasons(r),
            *[f'<div class="warn">{html.escape(n)}</div>' for n in notes],
            '<h2 id="checks">Checks</h2>', _html_checks(r), *_html_about([c["check"] for c in r["checks"]]),
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
        rows.append({**sweep_row(an), **repetition_fields(an)})     # the repetitions' point and metrics
        del an, figs
    if len(rows) > 1:
        assert sweep is not None
        points = repetition_points(rows)
        figs = sweep_figures(rows) + repetition_figures(points)
        links = [os.path.relpath(p, sweep) for p in analysed]
        _write_set(sweep, sweep_markdown(rows, figs, layout.FIGURES), sweep_html(rows, figs, links), figs)
        echo("== sweep")
        echo(text_table(sweep_table(rows)))
        for line in repetition_text(points):
            echo(line)
        sbs = side_by_side(rows)
        if sbs:
            echo("== congestion control, strategies side by side per condition")
            echo(text_table(sbs))
        echo(f"   report: {sweep / layout.REPORT_HTML}")
        written.append(sweep / layout.REPORT_HTML)
    return written
