"""docs/results.md from the catalogue (wotbench.reporting.resultsdoc,
`wotbench runs --write-doc`): the blocks filled with the runs' numbers
(the latest run of each test), the page outside them kept byte for byte,
a block without runs said in one line (exit 1), bad markers refused in one
line (exit 2, page untouched), the same bytes when run twice, the host's
disclosure, and the report linked relative to the page inside a repository.

The run folders are test_catalogue's synthetic ones (a real run's shape)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from wotbench.base.units import fmt_duration_us
from wotbench.commands import main as cli
from wotbench.reporting import catalogue as cat
from wotbench.reporting import resultsdoc
from wotbench.reporting.tests.test_catalogue import COMMIT, make_run

RD = "<!-- catalogue: spec=rd-vs-devices scale=small -->\n"
END = "<!-- /catalogue -->\n"
HOST = "<!-- catalogue: host -->\n"
#: Prose the command must keep as it is: CRLF, trailing blanks, non-ASCII, a marker quoted inside a line.
BEFORE = "# Results\r\n\nSome prose, µs and ±,   \nquoting `<!-- catalogue: host -->` in a line.\n\n"
AFTER = "\n## Later\n\n| old | table |\n|---|---|\n| 1 | 2 |\nno newline at the end"

DISCLOSURE = {"cpu": {"model": "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz", "online": "0-1", "sockets": 1,
                      "threads_per_core": 1, "smt": {"active": False, "control": "notsupported"},
                      "governors": {"performance": [0, 1]},
                      "caches": [{"level": 2, "type": "Unified", "size": "1024K"}]},
              "memory": {"total_kib": 24 * 1024 * 1024},
              "kernel": {"release": "6.1.0-28-amd64", "version": "#1 SMP Debian"},
              "git": {"commit": COMMIT, "dirty": True, "changed_files": 3}}


def _results(root: Path) -> Path:
    """A results folder and its catalogue: rd-vs-devices at small scale,
    three tests, one run twice (the older one must not be shown), a newer
    incomplete run of a test (its complete run stays), and a quickstart run."""
    def rd(stamp: str, hexid: str, label: str, p99_us: float = 24_000.0, **kw: object) -> Path:
        d = make_run(root, "rd-vs-devices", stamp, hexid, label=label, **kw)  # type: ignore[arg-type]
        if (d / "summary.json").exists():                                     # each run's own p99
            doc = json.loads((d / "summary.json").read_text())
            doc["congestion"]["response_us"]["p99"] = p99_us
            (d / "summary.json").write_text(json.dumps(doc))
        return d

    rd("20261126-200000", "000001", "devices[0].count=1", 777_000.0)        # replaced by the next one
    rd("20261126-210000", "000002", "devices[0].count=1")
    rd("20261126-210500", "000003", "devices[0].count=3", 31_500.0, verdict="invalid",
       reasons=("send_lag: GE 0 p99 send lag 2348us > 1000us: the GE fell behind | its schedule", "placement"))
    rd("20261126-211000", "000004", "devices[0].count=6", 45_250.0, dirty=True)
    rd("20261126-212000", "000005", "devices[0].count=6", summary=False, incomplete="interrupted")
    make_run(root, "quickstart", "20261126-213000", "000006", manifest_extra={"disclosure": DISCLOSURE})
    cat.rebuild(root)
    return root


def _page(path: Path, *blocks: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes((BEFORE + "".join(b + "stale content\n" + END for b in blocks) + AFTER).encode())
    return path


def _write(results: Path, page: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    rc = cli.main(["runs", "--results", str(results), "--write-doc", str(page)])
    return rc, capsys.readouterr().err.splitlines()


def _cells(row: str) -> list[str]:
    """A Markdown table row's cells (an escaped ``\\|`` stays in its cell)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]


def _block(text: str, opening: str) -> str:
    return text.split(opening, 1)[1].split(END, 1)[0]


def test_a_block_shows_the_latest_run_of_each_test_with_its_numbers(tmp_path, capsys):
    results = _results(tmp_path / "results")
    page = _page(tmp_path / "page.md", RD)
    rc, err = _write(results, page, capsys)
    assert rc == 0 and err == [f"{page}: 1 of 1 block(s) filled from {results / cat.CATALOGUE}; written"]
    block = _block(page.read_text(), RD)
    rows = [ln for ln in block.splitlines() if ln.startswith("| devices")]
    assert [_cells(r)[0] for r in rows] == ["devices[0].count=1", "devices[0].count=3", "devices[0].count=6"]
    one = _cells(rows[0])
    # 5,940 ok in the 60 s phase; pooled p50 and p99; the worst GE's send lag; 60 of 6,000 failed; median R_d.
    assert one == ["devices[0].count=1", "valid", "99 /s", fmt_duration_us(3600.0), fmt_duration_us(24000.0),
                   fmt_duration_us(1.0), "1.00%", "0.03", "no report yet"]
    assert [_cells(r)[4] for r in rows] == ["24 ms", "31.5 ms", "45.2 ms"]   # each run's own p99
    assert "777" not in block and "stale content" not in block
    assert "invalid: send_lag: GE 0 p99 send lag 2348us > 1000us: the GE fell behind \\| its schedule (+1 more)" \
        in rows[1]
    assert _cells(rows[2])[1] == "valid"                    # its newer incomplete run is not shown
    assert ("the latest run of each of the 3 tests of `rd-vs-devices` at scale `small`, started from "
            "2026-11-26 21:00 to 2026-11-26 21:10 UTC on host `vm`") in block
    assert f"commit `{COMMIT[:10]}` (clean) (2 runs), commit `{COMMIT[:10]}` (dirty) (1 run)" in block


def test_everything_outside_the_blocks_is_kept_byte_for_byte(tmp_path, capsys):
    results = _results(tmp_path / "results")
    page = _page(tmp_path / "page.md", RD, "\nmiddle prose\n\n" + HOST)
    rc, _ = _write(results, page, capsys)
    assert rc == 0
    text = page.read_bytes().decode()
    assert text.startswith(BEFORE + RD) and text.endswith(END + AFTER)
    assert ("\n" + END + "\nmiddle prose\n\n" + HOST) in text
    host = _block(text, HOST)
    assert "| CPU " in host and "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz" in host and "24 GiB" in host
    assert "performance on 2 CPUs" in host and "not active" in host and "6.1.0-28-amd64" in host
    assert "`20261126-213000-quickstart-000006`" in host


def test_a_block_without_runs_says_so_in_one_line_and_exits_1(tmp_path, capsys):
    results = _results(tmp_path / "results")
    missing = "<!-- catalogue: spec=affinity scale=small -->\n"
    page = _page(tmp_path / "page.md", RD, missing)
    rc, err = _write(results, page, capsys)
    where = results.resolve() / cat.CATALOGUE
    line = BEFORE.count("\n") + 3 + 1                                  # after the rd block's three lines
    assert rc == 1
    assert err == [f"not filled: {page}:{line}: no run of affinity at scale small in {where}",
                   f"{page}: 1 of 2 block(s) filled from {results / cat.CATALOGUE}; written"]
    assert _block(page.read_text(), missing) == f"\nno run of affinity at scale small in {where}\n\n"


@pytest.mark.parametrize(("blocks", "line", "what"), [
    ((RD + "x\n",), 6, "a block never closed"),
    ((END,), 6, "a closing marker without an opening one"),
    ((RD + RD,), 7, "a block opened inside the block of line 6"),
    (("<!-- catalogue: spec=rd-vs-devices scale=small mode=busy -->\n",), 6, "unknown 'mode=busy'"),
    (("<!-- catalogue: spec=rd-vs-devices -->\n",), 6, "scale= missing"),
    (("<!-- catalogue spec=x scale=y -->\n",), 6, "not a catalogue marker"),
    ((), None, "no catalogue block"),
])
def test_a_bad_marker_is_one_line_exit_2_and_the_page_untouched(tmp_path, capsys, blocks, line, what):
    results = _results(tmp_path / "results")
    page = tmp_path / "page.md"
    page.write_bytes((BEFORE + "".join(blocks) + AFTER).encode())
    before = page.read_bytes()
    rc, err = _write(results, page, capsys)
    assert rc == 2 and len(err) == 1 and page.read_bytes() == before
    where = f"{page}:{line}:" if line else f"{page}:"
    assert err[0].startswith(f"error: {where} marker: {what}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.md", "results"]      # no temporary file left


def test_writing_twice_gives_the_same_bytes(tmp_path, capsys):
    results = _results(tmp_path / "results")
    page = _page(tmp_path / "page.md", HOST, RD, "<!-- catalogue: spec=nothing scale=ci -->\n")
    assert _write(results, page, capsys)[0] == 1
    first = page.read_bytes()
    rc, err = _write(results, page, capsys)
    assert rc == 1 and page.read_bytes() == first and err[-1].endswith("; unchanged")


def test_a_page_that_is_a_symbolic_link_is_written_through_it(tmp_path, capsys):
    """The link stays a link; its target gets the new page."""
    results = _results(tmp_path / "results")
    target = _page(tmp_path / "real" / "page.md", RD)
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert _write(results, link, capsys)[0] == 0
    assert link.is_symlink() and link.readlink() == target
    assert "stale content" not in target.read_text() and "| devices[0].count=1 |" in target.read_text()


def test_inside_a_repository_the_report_is_a_relative_link(tmp_path, capsys):
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    results = _results(repo / "results")
    report = results / "20261126-210000-rd-vs-devices-000002" / "report" / "index.html"
    report.parent.mkdir()
    report.write_text("<html></html>")
    page = _page(repo / "docs" / "results.md", RD)
    assert _write(results, page, capsys)[0] == 0
    block = _block(page.read_text(), RD)
    assert "[report](../results/20261126-210000-rd-vs-devices-000002/report/index.html)" in block
    assert block.startswith("\nFrom `results/catalogue.sqlite`:")
    outside = _page(tmp_path / "elsewhere" / "results.md", RD)        # not in the repository: the path as text
    assert _write(results, outside, capsys)[0] == 0
    assert f"`{report.resolve()}`" in outside.read_text()


def test_the_latest_runs_keep_a_test_whose_only_run_is_incomplete(tmp_path):
    root = tmp_path / "results"
    make_run(root, "soak", "20261126-200000", "00000a", summary=False, incomplete="interrupted by the user")
    cat.rebuild(root)
    runs = resultsdoc.latest(cat.select(root), "soak", "small")
    assert [(e.verdict, e.reasons) for e in runs] == [("incomplete", ("interrupted by the user",))]


def test_json_and_write_doc_together_are_refused_before_anything_is_written(tmp_path, capsys):
    results = _results(tmp_path / "results")
    page = _page(tmp_path / "page.md", RD)
    before = page.read_bytes()
    rc = cli.main(["runs", "--results", str(results), "--write-doc", str(page), "--json"])
    assert rc == 2 and page.read_bytes() == before
    assert capsys.readouterr().err.startswith("error: --write-doc: --json lists the runs")


def test_a_bad_marker_stops_a_rebuild_before_it_writes_the_catalogue(tmp_path, capsys):
    root = tmp_path / "results"
    make_run(root, "rd-vs-devices", label="devices[0].count=1")
    page = tmp_path / "page.md"
    page.write_text(BEFORE + RD + AFTER)                                 # never closed
    rc = cli.main(["runs", "--results", str(root), "--rebuild", "--write-doc", str(page)])
    assert rc == 2 and "a block never closed" in capsys.readouterr().err
    assert not (root / cat.CATALOGUE).exists() and not (root / cat.INDEX).exists()
