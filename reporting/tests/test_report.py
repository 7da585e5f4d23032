"""`wotbench report`: terminal summary, Markdown and self-contained HTML
per run and per sweep; the HTML opens in headless Chromium without errors
and shows its plots."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import replace
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
    """Two runs of a sweep (4 and 8 devices, the second with contention), reported together."""
    from wotbench.reporting.bench.synth import synth_run
    from wotbench.reporting.tests.conftest import BASE

    root = tmp_path_factory.mktemp("sweep")
    a = synth_run(root / "run-4", BASE)
    b = synth_run(root / "run-8", replace(BASE, devices=8, contention_from_s=22.0, seed=2))
    assert main(["report", str(a), str(b), "--out", str(root / "sweep")]) == 0
    return {"a": a, "b": b, "sweep": root / "sweep"}


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


@pytest.mark.parametrize("which", ["b", "sweep"])
def test_html_opens_in_headless_chromium_with_plots(reported, tmp_path, which):
    page = (reported[which] / "report" / "index.html" if which != "sweep" else reported["sweep"] / "index.html")
    n_figures = page.read_text().count("<figure")
    proc = run_chromium(page, tmp_path, "--dump-dom")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert console_errors(proc.stderr) == []
    # The page's load handler records how many images decoded (naturalWidth > 0).
    m = re.search(r'data-images="(\d+)/(\d+)"', proc.stdout)
    assert m, proc.stdout[:500]
    assert int(m.group(1)) == int(m.group(2)) == n_figures > 0
    shot = tmp_path / f"{which}.png"
    proc = run_chromium(page, tmp_path, "--window-size=1200,2400", f"--screenshot={shot}")
    assert proc.returncode == 0 and shot.is_file()
    pixels = mpimg.imread(shot)[..., :3]
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
    assert "   x monitor: no monitor data (monitor/host.csv): collectl is not installed" in out
    assert ("! summary.json says INVALID (collectl is not installed: no host monitor data): "
            "it was written by another analysis of this run") in out
    page = (run / "report" / "index.html").read_text()
    assert "interrupted by SIGINT" in page and "collectl is not installed" in page
