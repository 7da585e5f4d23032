"""The results catalogue (wotbench.reporting.catalogue, `wotbench runs`):
a run folder's row (headline metrics, git commit, gateway), the filters,
the rebuild from the folders (incomplete and damaged runs listed as such),
writers in several processes at once, the HTML index, and bad input: one
line, exit 2, and a file the tool did not make left as it is.

The run folders are manifest.json and summary.json written here, in the
shape of a real run's (a valid quickstart run of issue 27)."""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from wotbench.base.errors import UserError
from wotbench.commands import main as cli
from wotbench.reporting import catalogue as cat

COMMIT = "e52ea74b00a0063b424b4c6ca9b15c1d16f48773"


def _ge(k: int, p50: float, p99: float, lag99: float) -> dict[str, Any]:
    return {"ge": k, "requests": 3000, "ok": 2990, "response_us": {"p50": p50, "p90": p50 * 3, "p99": p99},
            "send_lag_us": {"p50": 0.0, "p99": lag99}, "rd": {"median": 0.04}}


def make_run(root: Path, name: str = "quickstart", stamp: str = "20261126-205400", hexid: str = "5e4454",
             *, verdict: str | None = "valid", reasons: tuple[str, ...] = (), host: str = "vm",
             commit: str | None = COMMIT, dirty: bool = False, gateway: str | None = None,
             summary: bool = True, incomplete: str | None = None, ges: int = 1, label: str = "",
             manifest_extra: dict[str, Any] | None = None) -> Path:
    """A run folder: manifest.json, and summary.json unless ``summary`` is
    False (then INCOMPLETE holds ``incomplete``)."""
    run_id = f"{stamp}-{name}-{hexid}"
    d = root / run_id
    d.mkdir(parents=True)
    manifest: dict[str, Any] = {"format": 1, "run_id": run_id, "label": label, "scale": "small",
                                "git_commit": commit, "git_dirty": dirty, "hostname": host,
                                "start_epoch_us": None, **(manifest_extra or {})}
    if gateway is not None:
        manifest["gateway"] = {"image_ref": gateway, "image_id": "sha256:00"}
    (d / "manifest.json").write_text(json.dumps(manifest))
    if incomplete is not None:
        (d / "INCOMPLETE").write_text(incomplete + "\nTraceback ...\n")
    if summary:
        doc = {"format": 1, "run_id": run_id, "label": label, "complete": True, "scale": "small",
               "phases": {"measure": [5e6, 65e6]},
               "measure_counts": {"requests": 6000, "ok": 5940, "timeouts": 60, "errors": 0},
               "ges": [_ge(k, 3000.0 + 1000 * k, 20_000.0 + 5000 * k, 1.0 + k) for k in range(ges)],
               "devices": [{"device_id": i, "rd_ratio": r} for i, r in enumerate((0.05, 0.01, 0.04, 0.02))],
               "cd": {"contention": {"status": "none", "measure": {"median": 0.0278}}},
               "congestion": {"response_us": {"n": 5940, "p50": 3600.0, "p95": 14000.0, "p99": 24000.0}},
               "gateway": {"image": gateway} if gateway else None,
               "verdict": verdict, "reasons": list(reasons)}
        (d / "summary.json").write_text(json.dumps(doc))
    return d


def runs(argv: list[str], capsys) -> tuple[int, str, list[str]]:
    rc = cli.main(["runs", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err.splitlines()


# --- one folder's row -----------------------------------------------------------------

def test_a_row_holds_the_headline_metrics_of_the_measurement_phase(tmp_path):
    e = cat.entry(make_run(tmp_path, ges=2, gateway="wotbench/gw-libcoap:i28", label="devices[0].count=8 rep=1"))
    assert (e.run_id, e.spec, e.scale, e.host, e.verdict) == (
        "20261126-205400-quickstart-5e4454", "quickstart", "small", "vm", "valid")
    assert e.start_utc == "2026-11-26T20:54:00Z" and e.start_epoch_us == 1795726440 * 10**6   # from the run id
    assert (e.git_commit, e.git_dirty, e.gateway, e.label) == (COMMIT, False, "wotbench/gw-libcoap:i28",
                                                               "devices[0].count=8 rep=1")
    assert (e.requests, e.ok) == (6000, 5940)
    assert e.throughput == pytest.approx(5940 / 60.0)                 # ok responses per second of the 60 s phase
    assert (e.response_p50_us, e.response_p95_us, e.response_p99_us) == (3600.0, 14000.0, 24000.0)   # pooled
    assert e.send_lag_p99_us == 2.0                                   # the worst GE's
    assert e.error_rate == pytest.approx(0.01)
    assert e.rd_median == pytest.approx(0.03)                          # median of 0.01 0.02 0.04 0.05
    assert e.rd_cd_median == 0.0278
    assert e.manifest is not None and e.manifest["hostname"] == "vm"


def test_throughput_is_what_arrived_in_the_phase_when_the_summary_has_it(tmp_path):
    """A saturated link answers the phase's requests long after it: the
    congestion section's delivered rate, not the answered requests per
    second of the phase (which would read as the offered rate)."""
    d = make_run(tmp_path)
    doc = json.loads((d / "summary.json").read_text())
    doc["congestion"]["throughput_ok_per_s"] = 52.5
    (d / "summary.json").write_text(json.dumps(doc))
    assert cat.entry(d).throughput == 52.5
    del doc["congestion"]
    (d / "summary.json").write_text(json.dumps(doc))
    assert cat.entry(d).throughput == pytest.approx(5940 / 60.0)


def test_without_the_pooled_percentiles_the_worst_ge_is_shown(tmp_path):
    d = make_run(tmp_path, ges=2)
    doc = json.loads((d / "summary.json").read_text())
    del doc["congestion"]
    (d / "summary.json").write_text(json.dumps(doc))
    e = cat.entry(d)
    assert (e.response_p50_us, e.response_p95_us, e.response_p99_us) == (4000.0, None, 25000.0)   # GE 1's


def test_the_disclosure_section_names_the_commit_when_the_manifest_has_one(tmp_path):
    d = make_run(tmp_path, commit=None, manifest_extra={
        "start_epoch_us": 1795726441170500, "disclosure": {"git": {"commit": "abcdef12" * 5, "dirty": True}}})
    e = cat.entry(d)
    assert (e.git_commit, e.git_dirty) == ("abcdef12" * 5, True)
    assert e.start_epoch_us == 1795726441170500 and e.start_utc == "2026-11-26T20:54:01Z"


def test_a_run_without_summary_is_incomplete_with_its_reason(tmp_path):
    running = cat.entry(make_run(tmp_path, summary=False, incomplete="running"))
    assert (running.verdict, running.reasons, running.requests, running.throughput) == (
        "incomplete", ("running",), None, None)
    bare = cat.entry(make_run(tmp_path, hexid="000001", summary=False))
    assert bare.verdict == "incomplete" and bare.reasons == ("no summary.json",)
    damaged = make_run(tmp_path, hexid="000002")
    (damaged / "summary.json").write_text('{"verdict": ')
    e = cat.entry(damaged)
    assert e.verdict == "incomplete" and "summary.json" in e.reasons[0] and "invalid JSON" in e.reasons[0]


def test_a_summary_of_records_alone_gives_no_metrics_but_its_verdict(tmp_path):
    d = make_run(tmp_path)
    (d / "summary.json").write_text(json.dumps({"verdict": "invalid", "reasons": ["no GE output"],
                                                "analysis_error": "no GE output"}))
    e = cat.entry(d)
    assert (e.verdict, e.reasons, e.requests, e.response_p99_us, e.rd_median) == (
        "invalid", ("no GE output",), None, None, None)


# --- writing, rebuilding, filtering ------------------------------------------------------

def _fleet(root: Path) -> dict[str, Path]:
    return {
        "a": make_run(root, "quickstart", "20261120-100000", "00000a"),
        "b": make_run(root, "quickstart", "20261124-120000", "00000b", verdict="invalid", reasons=("send lag",),
                      host="lab2", commit="1234567" + "0" * 33),
        "c": make_run(root, "contention", "20261125-235959", "00000c", gateway="wotbench/gw-libcoap:i28"),
        "d": make_run(root, "soak", "20261126-000000", "00000d", summary=False, incomplete="running"),
    }


def test_add_then_every_filter(tmp_path):
    fleet = _fleet(tmp_path)
    for d in fleet.values():
        cat.add(tmp_path, d)

    def ids(**kw: str) -> set[str]:
        return {e.folder[-1] for e in cat.select(tmp_path, cat.Filters.parse(**kw))}

    assert [e.folder[-1] for e in cat.select(tmp_path)] == ["a", "b", "c", "d"]      # oldest first
    assert ids(spec="quickstart") == {"a", "b"} and ids(spec="*t*n*") == {"c"}
    assert ids(verdict="invalid") == {"b"} and ids(verdict="INCOMPLETE") == {"d"}
    assert ids(host="lab*") == {"b"} and ids(commit="1234") == {"b"} and ids(commit=COMMIT[:8].upper()) == {
        "a", "c", "d"}
    assert ids(gateway="*libcoap*") == {"c"} and ids(gateway="none") == {"a", "b", "d"}
    assert ids(since="2026-11-24") == {"b", "c", "d"} and ids(until="2026-11-25") == {"a", "b", "c"}
    assert ids(since="2026-11-24T12:00:01", until="2026-11-25T23:59:59") == {"c"}
    assert ids(since="2026-11-25T23:59:59+00:00", until="2026-11-26T00:00") == {"c", "d"}
    assert ids(spec="quickstart", verdict="valid") == {"a"}
    cat.add(tmp_path, fleet["a"])                                     # again: its row replaced, not doubled
    assert len(cat.select(tmp_path)) == 4


def test_rebuild_makes_it_anew_from_the_folders(tmp_path):
    fleet = _fleet(tmp_path)
    cat.add(tmp_path, fleet["a"])
    gone = make_run(tmp_path, "old", "20250101-000000", "0000ff")
    cat.add(tmp_path, gone)
    for p in gone.iterdir():                 # the test's own folder, removed behind the catalogue's back
        p.unlink()
    gone.rmdir()
    (tmp_path / "sweep-report").mkdir()                                 # not a run folder
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "summary.json").write_text("{}")
    built = cat.rebuild(tmp_path)
    assert (built.runs, built.incomplete) == (4, 1)
    assert [e.folder[-1] for e in cat.select(tmp_path)] == ["a", "b", "c", "d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*(d.name for d in fleet.values()), ".hidden", "sweep-report", "catalogue.sqlite", "index.html"])
    with contextlib.closing(sqlite3.connect(tmp_path / "catalogue.sqlite")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        manifest = json.loads(db.execute("SELECT manifest FROM runs WHERE folder LIKE '%00000b'").fetchone()[0])
        assert manifest["hostname"] == "lab2"


def test_a_catalogue_of_another_schema_is_rebuilt_not_read(tmp_path, capsys):
    cat.add(tmp_path, make_run(tmp_path))
    with contextlib.closing(sqlite3.connect(tmp_path / "catalogue.sqlite")) as db:
        db.execute("PRAGMA user_version = 99")
    rc, _, err = runs(["--results", str(tmp_path)], capsys)
    assert rc == 2 and len(err) == 1 and "schema 99" in err[0] and "wotbench runs --rebuild" in err[0]
    rc, out, _ = runs(["--results", str(tmp_path), "--rebuild"], capsys)
    assert rc == 0 and "20261126-205400-quickstart-5e4454" in out


def _adder(root: str, folder: str, start: Any) -> None:
    start.wait()
    cat.add(Path(root), Path(folder))


def _rebuilder(root: str, folder: str, start: Any) -> None:
    start.wait()
    cat.rebuild(Path(root))


def test_writers_in_several_processes_at_once_lose_nothing(tmp_path):
    n = 6
    folders = [make_run(tmp_path, "load", f"20261126-1000{i:02d}", f"{i:06x}") for i in range(n)]
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(n + 1)
    procs = [ctx.Process(target=_adder, args=(str(tmp_path), str(f), start)) for f in folders]
    procs.append(ctx.Process(target=_rebuilder, args=(str(tmp_path), "", start)))
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * (n + 1)
    assert [e.folder for e in cat.select(tmp_path)] == [f.name for f in folders]
    with contextlib.closing(sqlite3.connect(tmp_path / "catalogue.sqlite")) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    index = (tmp_path / "index.html").read_text()
    assert all(f.name in index for f in folders)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".index.html") or p.name.endswith("-journal")]


# --- the command ----------------------------------------------------------------------

def test_the_table_and_json(tmp_path, capsys):
    _fleet(tmp_path)
    rc, out, err = runs(["--results", str(tmp_path), "--rebuild"], capsys)
    assert rc == 0 and err == [f"catalogue {tmp_path / 'catalogue.sqlite'}: 4 run(s), 1 incomplete, from the run "
                               f"folders; index {tmp_path / 'index.html'}"]
    head, rule, *rows = out.splitlines()
    assert head.split()[:4] == ["run", "start", "(UTC)", "scale"] and set(rule) <= {"-", " "} and len(rows) == 4
    assert "INVALID" in rows[1] and "send lag" in rows[1] and "e52ea74b00" in rows[0] and "99 /s" in rows[0]
    rc, out, _ = runs(["--results", str(tmp_path), "--verdict", "valid", "--json"], capsys)
    doc = json.loads(out)
    assert rc == 0 and [d["folder"][-1] for d in doc] == ["a", "c"]
    assert doc[1]["gateway"] == "wotbench/gw-libcoap:i28" and doc[0]["manifest"]["git_commit"] == COMMIT
    assert doc[0]["reasons"] == [] and doc[0]["throughput"] == pytest.approx(99.0)
    rc, out, err = runs(["--results", str(tmp_path), "--host", "nowhere"], capsys)
    assert rc == 0 and out == "" and err == [f"no run in {tmp_path / 'catalogue.sqlite'} matches"]


def test_the_index_links_every_report(tmp_path):
    fleet = _fleet(tmp_path)
    (fleet["a"] / "report").mkdir()
    (fleet["a"] / "report" / "index.html").write_text("<html></html>")
    cat.rebuild(tmp_path)
    page = (tmp_path / "index.html").read_text()
    assert f'<a href="{fleet["a"].name}/report/index.html">{fleet["a"].name}</a>' in page
    assert f'<a href="{fleet["b"].name}/">' in page and f"wotbench report {fleet['b']}" in page
    assert page.count("<tr>") == 1 + 4 and "send lag" in page and 'class="incomplete"' in page


@pytest.mark.parametrize("argv, says", [
    (["--since", "yesterday"], "error: --since: not a date: 'yesterday' (YYYY-MM-DD"),
    (["--until", "2026-13-01"], "error: --until: not a date: '2026-13-01'"),
    (["--since", "2026-11-26", "--until", "2026-11-20"], "error: --until: 2026-11-20 is before --since"),
    (["--commit", "xyz"], "error: --commit: not a git commit: 'xyz' (4 to 40 hex digits"),
    (["--commit", "abc"], "error: --commit: not a git commit: 'abc'"),
    (["--spec", " "], "error: --spec: empty"),
    (["--verdict", "maybe"], "error: wotbench runs: argument --verdict: invalid choice: 'maybe'"),
    (["--limit", "3"], "error: wotbench: unrecognized arguments: --limit 3"),
])
def test_bad_filters_are_one_line_and_touch_nothing(tmp_path, capsys, argv, says):
    make_run(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, out, err = runs(["--results", str(tmp_path), "--rebuild", *argv], capsys)
    assert rc == 2 and out == "" and len(err) == 1 and err[0].startswith(says), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before                     # not even rebuilt


def test_no_results_folder_or_no_catalogue_says_how(tmp_path, capsys):
    rc, _, err = runs(["--results", str(tmp_path / "none")], capsys)
    assert rc == 2 and err == [f"error: {tmp_path / 'none'}: --results: no such folder"]
    rc, _, err = runs(["--results", str(tmp_path / "none"), "--rebuild"], capsys)
    assert rc == 2 and err == [f"error: {tmp_path / 'none'}: --results: no such folder"]
    rc, _, err = runs(["--results", "/etc", "--rebuild"], capsys)                   # never written there
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: /etc: --results: ") and "system folder" in err[0]
    rc, _, err = runs(["--results", str(tmp_path)], capsys)
    assert rc == 2 and err == [f"error: {tmp_path / 'catalogue.sqlite'}: no catalogue here yet: "
                               "`wotbench runs --rebuild` makes it from the run folders"]
    assert list(tmp_path.iterdir()) == []


def test_files_the_tool_did_not_make_are_left_as_they_are(tmp_path, capsys):
    make_run(tmp_path)
    db = tmp_path / "catalogue.sqlite"
    with contextlib.closing(sqlite3.connect(db)) as conn:              # someone else's database
        conn.execute("CREATE TABLE runs (x)")
    before = db.read_bytes()
    rc, _, err = runs(["--results", str(tmp_path), "--rebuild"], capsys)
    assert rc == 2 and err == [f"error: {db}: not a wotbench catalogue (another SQLite database): left as it is; "
                               "move it away"]
    assert db.read_bytes() == before and not (tmp_path / "index.html").exists()
    db.write_text("not a database at all\n")
    rc, _, err = runs(["--results", str(tmp_path)], capsys)
    assert rc == 2 and len(err) == 1 and err[0].startswith(f"error: {db}: the catalogue cannot be used: ")
    db.unlink()
    (tmp_path / "index.html").write_text("<html>my own page</html>")
    rc, _, err = runs(["--results", str(tmp_path), "--rebuild"], capsys)
    assert rc == 2 and err == [f"error: {tmp_path / 'index.html'}: not an index written by wotbench runs: left as "
                               "it is (move it away to get the index)"]
    assert (tmp_path / "index.html").read_text() == "<html>my own page</html>"
    assert len(cat.select(tmp_path)) == 1                              # the catalogue itself was written


def test_a_catalogue_that_is_a_symlink_out_is_refused(tmp_path, capsys):
    """A catalogue.sqlite that links to a file elsewhere (a user's own) is
    neither opened nor written through: one line, exit 2, the target as it was."""
    results, elsewhere = tmp_path / "results", tmp_path / "elsewhere"
    results.mkdir()
    elsewhere.mkdir()
    make_run(results)
    target = elsewhere / "mine.sqlite"
    target.write_bytes(b"my own bytes\n")
    (results / "catalogue.sqlite").symlink_to(target)
    rc, _, err = runs(["--results", str(results), "--rebuild"], capsys)
    assert rc == 2 and err == [f"error: {results / 'catalogue.sqlite'}: is not a regular file: refusing to use it "
                               "as the catalogue"]
    assert target.read_bytes() == b"my own bytes\n" and sorted(p.name for p in elsewhere.iterdir()) == ["mine.sqlite"]
    assert not (results / "index.html").exists()


def test_the_runner_warns_when_the_catalogue_cannot_be_written(tmp_path):
    from wotbench.execution import runner

    d = make_run(tmp_path)
    (tmp_path / "catalogue.sqlite").mkdir()                            # not a file: cannot be the catalogue
    log = io.StringIO()
    opts = runner.RunOptions(results_root=tmp_path, progress=False, log=log)
    runner._catalogue(opts, d)
    said = log.getvalue().splitlines()
    assert len(said) == 1 and said[0].startswith(
        f"warning: the results catalogue was not updated for {d.name} (UserError: {tmp_path / 'catalogue.sqlite'}: "
        "is not a regular file")
    assert said[0].endswith(f"`wotbench runs --rebuild --results {tmp_path}` makes it anew")
    (tmp_path / "catalogue.sqlite").rmdir()
    (tmp_path / "index.html").write_text("<html>my own page</html>")
    runner._catalogue(opts, d)                                         # written; the index is not the tool's
    said = log.getvalue().splitlines()
    assert len(said) == 2 and f"{d.name} is in the catalogue, but the index was not written" in said[1]
    assert (tmp_path / "index.html").read_text() == "<html>my own page</html>"
    (tmp_path / "index.html").unlink()
    runner._catalogue(opts, d)
    assert len(log.getvalue().splitlines()) == 2 and [e.folder for e in cat.select(tmp_path)] == [d.name]


def test_filters_parse_refuses_a_bad_verdict_in_python_too():
    with pytest.raises(UserError, match="not a verdict: 'maybe'"):
        cat.Filters.parse(verdict="maybe")


def test_a_results_folder_with_odd_characters_in_its_path(tmp_path):
    root = tmp_path / "my runs #1 100%?"
    d = make_run(root)
    cat.rebuild(root)
    assert [e.folder for e in cat.select(root)] == [d.name]
