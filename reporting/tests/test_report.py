"""`wotbench report`: terminal summary, Markdown and self-contained HTML
per run and per sweep; the HTML opens in headless Chromium without errors
and shows its plots."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from wotbench.commands.main import main

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--enable-logging=stderr", "--v=0"]


@pytest.fixture(scope="module")
def reported(tmp_path_factory) -> dict[str, Path]:
    """Two runs of a sweep (4 and 8 devices, the second with contention),
    reported together; and a run across a swarm of two hosts."""
    from wotbench.reporting.bench.synth import SwarmSynth, synth_run, synth_swarm_run
    from wotbench.reporting.tests.conftest import BASE

    root = tmp_path_factory.mktemp("sweep")
    a = synth_run(root / "run-4", BASE)
    b = synth_run(root / "run-8", replace(BASE, devices=8, contention_from_s=22.0, seed=2))
    assert main(["report", str(a), str(b), "--out", str(root / "sweep")]) == 0
    hosts = synth_swarm_run(root / "swarm", BASE, SwarmSynth())
    assert main(["report", str(hosts)]) == 0
    return {"a": a, "b": b, "sweep": root / "sweep", "hosts": hosts}


class Page(HTMLParser):
    """What the tests read of a report page: its ids, its in-page links, its
    tables (rows of cell texts, with the links of each cell) and glossary terms."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tables: list[list[list[tuple[str, list[str]]]]] = []
        self.terms: list[str] = []
        self._cell: tuple[list[str], list[str]] | None = None
        self._dt: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and (a.get("href") or "").startswith("#"):
            self.hrefs.append(a["href"][1:])
            if self._cell is not None:
                self._cell[1].append(a["href"][1:])
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = ([], [])
        elif tag == "dt":
            self._dt = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append(("".join(self._cell[0]).strip(), self._cell[1]))
            self._cell = None
        elif tag == "dt" and self._dt is not None:
            self.terms.append("".join(self._dt))
            self._dt = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[0].append(data)
        if self._dt is not None:
            self._dt.append(data)

    def table(self, first: str) -> list[list[tuple[str, list[str]]]]:
        """The table whose first header is ``first``."""
        return next(t for t in self.tables if t and t[0] and t[0][0][0] == first)


def _page(reported: dict[str, Path], which: str) -> Page:
    where = reported[which] if which == "sweep" else reported[which] / "report"
    return Page((where / "index.html").read_text())


JARGON = re.compile(r"CUSUM|\btau\b|Mann-Whitney|p ?=|\balpha\b|\bKS\b")


def chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/setup.sh installs it)")
        pytest.skip("chromium is not installed")
    return exe


def run_chromium(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra,
                           page.resolve().as_uri()], capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]


def test_files_are_written_per_run_and_per_sweep(reported):
    for d in (reported["a"] / "report", reported["b"] / "report", reported["sweep"]):
        assert (d / "index.html").is_file() and (d / "summary.md").is_file()
        assert list((d / "figures").glob("*.png"))
        assert not list(d.glob(".tmp-*"))
    names = {p.stem for p in (reported["sweep"] / "figures").glob("*.png")}
    assert {"sweep-response", "sweep-cd", "sweep-rd", "sweep-cpu"} <= names
    names = {p.stem for p in (reported["b"] / "report" / "figures").glob("*.png")}
    assert {"timeline", "rit-cdf-ge0", "send-lag", "response", "cd-rd", "devices", "cpu"} <= names


def test_html_is_self_contained(reported):
    page = (reported["a"] / "report" / "index.html").read_text()
    srcs = re.findall(r'src="([^"]*)"', page)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "http://" not in page and "https://" not in page
    assert "VALID" in page and "paper Table 1" in page


def test_markdown_has_verdict_tables_and_figures(reported):
    md = (reported["b"] / "report" / "summary.md").read_text()
    assert "**Verdict: INVALID**" in md
    assert "| check" in md and "contention" in md
    for link in re.findall(r"\]\((figures/[^)]+)\)", md):
        assert (reported["b"] / "report" / link).is_file()


def test_terminal_summary(reported, capsys):
    assert main(["report", str(reported["a"])]) == 0
    out = capsys.readouterr().out
    assert "VALID" in out and "Checks" in out and "paper Table 1" in out
    assert "Contention detection" in out


def test_checks_lead_with_plain_sentence(reported):
    """Each check's row says in plain words what its result means (no
    statistics jargon) and links to what it tests; the statistics are one
    click away (<details>), in HTML and Markdown."""
    for which in ("a", "b", "hosts"):
        rows = _page(reported, which).table("check")
        assert [c[0] for c in rows[0]] == ["check", "result", "what it means", "statistics"]
        for (name, links), (res, _), (mean, _), (stats, _) in rows[1:]:
            assert res in ("PASS", "FAIL") and links == [f"check-{name}"]
            assert mean and mean.endswith(".") and not JARGON.search(mean), (name, mean)
            assert stats.startswith("statistics") and len(stats) > len("statistics")
        page = (reported[which] / "report" / "index.html").read_text()
        assert page.count("<details><summary>statistics</summary>") >= len(rows) - 1
    md = (reported["b"] / "report" / "summary.md").read_text()
    assert "| check" in md and "what it means" in md and "<details><summary>statistics</summary>" in md
    assert "Something else on the host slowed the devices down" in md


def test_every_plain_sentence_is_plain():
    """Every check's sentence, passing or failing, on a full result and on
    a records-only one, in every contention state: a sentence, no jargon."""
    from wotbench.reporting._checks import CHECKS, RECORD_CHECKS
    from wotbench.reporting._plain import ABOUT, MEANING, meaning

    names = {n for n, _ in CHECKS + RECORD_CHECKS}
    assert names == set(MEANING) == set(ABOUT)
    results = [{}, {"measure_counts": {"requests": 1000, "ok": 990}, "phases": {"measure": [0, 60e6]}}]
    results += [{"cd": {"contention": {"status": s}}} for s in ("none", "contention", "disturbed", "inconclusive",
                                                                 "unknown")]
    results += [{"placement": {"degraded": True}, "checks": [{"check": "placement", "ok": ok}]} for ok in (1, 0)]
    for r in results:
        for name in names:
            for ok in (True, False):
                text = meaning(name, ok, r)
                assert text[:1].isupper() or text[:1].isdigit(), (name, ok, text)
                assert text.endswith(".") and not JARGON.search(text), (name, ok, text)


def test_html_links_resolve(reported):
    """Every in-page link has its target; every check row links to its
    explanation; the glossary has the terms a reader meets first."""
    for which in ("a", "b", "hosts", "sweep"):
        page = _page(reported, which)
        assert set(page.hrefs) <= page.ids, (which, set(page.hrefs) - page.ids)
    page = _page(reported, "a")
    assert {f"check-{c[0][0]}" for c in page.table("check")[1:]} <= page.ids
    for term in ("GE", "CD", "RIT", "R_d", "S", "CON/NON", "5.03", "send lag", "DEGRADED", "p50/p99", "~",
                 "tau/CUSUM", "warm-up/measure/cool-down", "CD-GE"):
        assert any(term == t or term in t.split(" (")[-1] for t in page.terms), term
    assert {"g-ge", "g-rit", "g-send-lag", "g-r-d"} <= set(page.hrefs)      # used where a reader meets them


def test_html_tables_read_as_a_person_would(reported):
    """No raw numbers or keys in the tables of a 40 s run (nan, 3.98e+03,
    start_epoch_us, min_measure_us), and no drift essay where drift does
    not apply; the verdict counts the CD-GE apart."""
    raw = re.compile(r"\bnan\b|\d[eE][+-]\d|\b\w+_(?:us|ms|s|per_s|bytes)\b")
    text = (reported["a"] / "report" / "index.html").read_text()
    page = Page(text)
    for t in page.tables:
        cells = [c for row in t for c, _ in row if not c.startswith("statistics")]
        assert not [c for c in cells if raw.search(c)], [c for c in cells if raw.search(c)]
    assert "least-squares" not in text and "Timeline per 10 s window" in text
    assert "via 1 GE (and the contention detector's CD-GE)" in html.unescape(re.sub(r"<[^>]+>", "", text))
    assert "validity.min_measure" in text and "30 s" in text


def test_drift_essay_only_where_drift_applies(tmp_path):
    """The drift analysis is shown for a run of 5 min or more with a series
    that drifted (or, with `report: {drift: always}`, of 30 s or more); a 60 s quickstart whose
    memory rose in warm-up, or a flat run, shows its timeline alone."""
    from types import SimpleNamespace

    import pandas as pd

    from wotbench.reporting._render import _drift_shown
    from wotbench.reporting._timeline import Drift, Timeline

    def shown(measure_s: float, flagged: bool) -> bool:
        an = SimpleNamespace(result={"phases": {"measure": [0.0, measure_s * 1e6]}}, path=tmp_path)
        d = Drift("GE", "MiB", 10.0, 12.0, 2.0, 11.0, 1.0, 20, flagged)
        return _drift_shown(an, Timeline(pd.DataFrame({"t_s": [0.0]}), [d], 10.0))   # type: ignore[arg-type]

    assert shown(300, True) and not shown(60, True) and not shown(40, True) and not shown(300, False)
    from wotbench.spec import load

    soak = load(Path(__file__).resolve().parents[2] / "experiments" / "soak.yaml", scale="ci")[0]
    (tmp_path / "spec.yaml").write_text(soak.yaml())        # a run of the soak spec: report.drift always
    assert shown(60, False) and shown(40, False) and not shown(20, False)
    # the key decides, not the name: the soak spec without it is auto
    (tmp_path / "spec.yaml").write_text(soak.yaml().replace("drift: always", "drift: auto"))
    assert "drift: auto" in (tmp_path / "spec.yaml").read_text()
    assert not shown(60, False) and not shown(40, False)


def test_reading_guide_has_every_anchor_the_report_names():
    """docs/reading-the-report.md: a section per check and #shared-cores, which the report points to."""
    from wotbench.reporting._plain import DOC, MEANING

    doc = (Path(__file__).resolve().parents[2] / DOC).read_text()
    ids = set(re.findall(r'id="([^"]+)"', doc))
    assert {"shared-cores", *[f"check-{n}" for n in MEANING]} <= ids


def test_cli_bad_dir_is_one_error_line(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "nope" in err[0]


def test_chromium_detects_a_broken_page(tmp_path):
    """The console check below can fail: a page that throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<html><body><script>throw new Error("boom")</script></body></html>')
    proc = run_chromium(bad, tmp_path, "--dump-dom")
    assert any("boom" in ln for ln in console_errors(proc.stderr))


def test_chromium_counts_what_does_not_fit(tmp_path):
    """The page's own counts can fail: an element wider than the page outside
    a scroll box, and an image without a title, are counted."""
    from wotbench.reporting._render import _page

    page = tmp_path / "wide.html"
    page.write_text(_page("wide", '<p style="width:3000px">wide</p><div class="scroll"><p style="width:3000px">'
                                  'scrolls</p></div><img alt="no title">'))
    proc = run_chromium(page, tmp_path, "--window-size=1200,800", "--dump-dom")
    body = re.search(r"<body([^>]*)>", proc.stdout)
    assert body, proc.stdout[:500]
    got = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    assert got["overflow"] == "1" and got["img-untitled"] == "1" and int(got["scrollw"]) > 1200, got


@pytest.mark.parametrize("which", ["b", "sweep", "hosts"])
def test_html_opens_in_headless_chromium_with_plots(reported, tmp_path, which):
    page = (reported[which] / "report" / "index.html" if which != "sweep" else reported["sweep"] / "index.html")
    n_figures = page.read_text().count("<figure")
    proc = run_chromium(page, tmp_path, "--window-size=1200,2400", "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_errors(proc.stderr) == []
    # The page's load handler records how many images decoded (naturalWidth > 0), the
    # elements wider than the page outside a scroll box, the images without alt and
    # title, and the page's scroll width.
    body = re.search(r"<body([^>]*)>", proc.stdout)
    assert body, proc.stdout[:500]
    got = dict(re.findall(r'data-([a-z-]+)="([^"]*)"', body.group(1)))
    n, total = map(int, got["images"].split("/"))
    assert n == total == n_figures > 0
    assert got["overflow"] == "0" and got["img-untitled"] == "0", got
    assert int(got["scrollw"]) <= 1200
    shot = tmp_path / f"{which}.png"
    proc = run_chromium(page, tmp_path, "--window-size=1200,2400", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.is_file()
    pixels = mpimg.imread(shot)[..., :3]
    assert pixels.shape[1] == 1200
    # Not blank: plenty of non-white pixels and real contrast (tables, text, plots).
    non_white = np.mean(np.any(pixels < 0.95, axis=-1))
    assert non_white > 0.05 and pixels.std() > 0.1


def test_degenerate_runs_still_report(make_run, tmp_path, capsys):
    """Every request timed out; a GE file with only its header: reports, not tracebacks."""
    dead = make_run("dead", error_rate=1.0)
    empty = tmp_path / "empty"
    (empty / "ge").mkdir(parents=True)
    header = (dead / "ge" / "ge-0.csv").read_text().splitlines()[0]
    (empty / "ge" / "ge-0.csv").write_text(header + "\n")
    assert main(["report", str(dead), str(empty), "--out", str(tmp_path / "sweep")]) == 0
    out = capsys.readouterr().out
    assert "== dead: INVALID" in out and "== empty: INVALID" in out
    assert (tmp_path / "sweep" / "index.html").is_file()


def test_interrupted_run_and_harness_observations_are_shown(make_run, capsys):
    """INCOMPLETE is a note; what the harness observed (collectl missing) is a
    reason of the verdict; a summary.json that says otherwise is a note."""
    import json

    run = make_run("interrupted", monitor=False)
    observed = json.loads((run / "observed.json").read_text())
    (run / "observed.json").write_text(json.dumps({**observed, "collectl": False}))
    (run / "INCOMPLETE").write_text("interrupted by SIGINT\ntraceback ...\n")
    (run / "summary.json").write_text(json.dumps({"format": 1, "run_id": "r1", "complete": False,
                                                  "verdict": "invalid",
                                                  "reasons": ["collectl is not installed: no host monitor data"]}))
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert "== r1: INVALID" in out
    assert "! run did not finish (INCOMPLETE): interrupted by SIGINT" in out
    assert "   x monitor: The host's CPU and memory use was not recorded" in out
    assert "\n       no monitor data (monitor/host.csv): collectl is not installed" in out   # what it saw, below
    assert ("! summary.json says INVALID (collectl is not installed: no host monitor data): "
            "it was written by another analysis of this run") in out
    page = (run / "report" / "index.html").read_text()
    assert "interrupted by SIGINT" in page and "collectl is not installed" in page
