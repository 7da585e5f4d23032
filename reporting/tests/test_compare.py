"""`wotbench compare A B` (issue 28, item 2) on synthetic runs: the same run
twice is no significant change (exit 0); B with every service time 20 %
longer regresses p99 and the response shift (exit 1); runs of another
workload are refused (exit 2) or compared with a warning when allowed; an
invalid run is compared with a warning naming both verdicts; the HTML page
is written and replaced only over compare's own; bad inputs are one line,
exit 2. The statistics: the Hodges-Lehmann shift and its interval equal
the brute-force order statistics of every pairwise difference, the interval
covers a known shift in a seeded simulation, and the exact bootstrap of a
quantile matches resampling."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wotbench.base import rundir as layout
from wotbench.commands.main import main
from wotbench.reporting import _compare as cmp
from wotbench.reporting._comparestats import hl_shift, quantile_diff
from wotbench.reporting.bench.synth import synth_run
from wotbench.reporting.tests.conftest import BASE

SPEC = replace(BASE, devices=16, measure_s=20.0, calibration_s=5.0)   # 16,000 requests


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compare")
    return {"a": synth_run(root / "a", SPEC), "a2": synth_run(root / "a2", SPEC),
            "slow": synth_run(root / "slow", replace(SPEC, service_us=SPEC.service_us * 1.2)),
            "other": synth_run(root / "other", replace(SPEC, seed=2))}


def _one_error(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


def test_same_run_twice_is_no_change(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs["a"]), str(runs["a2"])]) == 0
    out = capsys.readouterr().out
    assert "verdict: no significant change" in out
    assert "regressed" not in out and "improved" not in out


def test_slower_service_regresses_p99(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs["a"]), str(runs["slow"])]) == 1
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("verdict: REGRESSED: ") and "p99" in last and "response" in last, last
    rows = {r.metric.key: r for r in cmp.compare(cmp.sample_run(runs["a"]), cmp.sample_run(runs["slow"]),
                                                 cmp.thresholds([]), 0.05)}
    assert rows["p99"].verdict == cmp.REGRESSED
    assert rows["p99"].relative is not None and 0.1 < rows["p99"].relative < 0.3
    # Nothing else of the workload changed: the sends and their rate are the same.
    assert rows["throughput"].verdict == rows["send_lag_p99"].verdict == rows["errors"].verdict == cmp.NO_CHANGE
    # A threshold above the effect turns p99 into no significant change (significant, below it).
    rows = {r.metric.key: r for r in cmp.compare(cmp.sample_run(runs["a"]), cmp.sample_run(runs["slow"]),
                                                 cmp.thresholds(["p99=50%"]), 0.05)}
    assert rows["p99"].verdict == cmp.NO_CHANGE and "below the 50 % threshold" in rows["p99"].note


def test_other_workload_refused_or_warned(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(runs["a"]), str(runs["other"])]) == 2
    _one_error(capsys, "workload", "--allow-different-workloads")
    assert main(["compare", str(runs["a"]), str(runs["other"]), "--allow-different-workloads"]) in (0, 1)
    assert "warning: A and B ran different workloads" in capsys.readouterr().out


def test_invalid_run_compared_with_warning(runs: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    b = synth_run(tmp_path / "b", SPEC)
    (b / layout.SUMMARY).write_text(json.dumps({"run_id": "b", "verdict": "invalid",
                                                "reasons": ["send_lag: p99 2 ms > 1 ms"]}))
    assert main(["compare", str(runs["a"]), str(b)]) == 0
    out = capsys.readouterr().out
    warn = [x for x in out.splitlines() if x.startswith("warning: comparing runs that are not both valid")]
    assert len(warn) == 1 and "B (b): invalid: send_lag" in warn[0] and "no verdict" in warn[0], out


def test_html_written_and_only_over_its_own(runs: dict[str, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "out" / "cmp.html"
    assert main(["compare", str(runs["a"]), str(runs["slow"]), "--html", str(page)]) == 1
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "REGRESSED" in text and 'class="regressed"' in text
    assert main(["compare", str(runs["a"]), str(runs["a2"]), "--html", str(page)]) == 0   # its own: replaced
    assert "no significant change" in page.read_text()
    foreign = tmp_path / "notes.html"
    foreign.write_text("<p>mine</p>")
    capsys.readouterr()
    assert main(["compare", str(runs["a"]), str(runs["a2"]), "--html", str(foreign)]) == 2
    _one_error(capsys, "--html", "not written by wotbench compare")
    assert foreign.read_text() == "<p>mine</p>"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".notes")]


@pytest.mark.parametrize("args, words", [
    (["{tmp}/nope", "{a}"], ["run A: no such folder"]),
    (["{a}", "{file}"], ["run B: not a folder"]),
    (["{a}", "{a2}", "--threshold", "p99:5%"], ["--threshold", "expected NAME=X%"]),
    (["{a}", "{a2}", "--threshold", "p98=5%"], ["--threshold", "no metric"]),
    (["{a}", "{a2}", "--alpha", "0.7"], ["--alpha"]),
    (["{a}", "{empty}"], ["no GE output"]),
    (["{a}", "{other}"], ["run B: neither a run folder", "nor a folder that holds runs"]),
])
def test_bad_input_one_line(runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
                            args: list[str], words: list[str]) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "other" / "notes").mkdir(parents=True)         # a folder of something else
    (tmp_path / "other" / "notes" / "x.txt").write_text("x")
    (tmp_path / "empty" / layout.WORKLOAD).mkdir(parents=True)
    (tmp_path / "empty" / layout.WORKLOAD / layout.TRACE).write_bytes((runs["a"] / layout.WORKLOAD
                                                                      / layout.TRACE).read_bytes())
    subs = {"tmp": str(tmp_path), "a": str(runs["a"]), "a2": str(runs["a2"]), "file": str(tmp_path / "f.txt"),
            "empty": str(tmp_path / "empty"), "other": str(tmp_path / "other")}
    assert main(["compare", *(x.format(**subs) for x in args)]) == 2
    _one_error(capsys, *words)


def test_sampled_runs_say_so_and_repeat(runs: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compare", str(runs["a"]), str(runs["slow"]), "--max-sample", "2000", "--seed", "7"]
    assert main(argv) == 1
    first = capsys.readouterr().out
    assert "note: A's per-request values are a seeded random sample: 2,000 of " in first
    assert main(argv) == 1
    assert capsys.readouterr().out == first


def _brute(x: np.ndarray, y: np.ndarray, k: int) -> float:
    return float(np.sort((y[:, None] - x[None, :]).ravel())[k - 1])


def test_hl_equals_brute_force() -> None:
    rng = np.random.default_rng(3)
    for n, m, whole in ((7, 9, True), (40, 31, True), (120, 120, True), (50, 60, False)):
        x, y = rng.exponential(100, n), rng.exponential(100, m) + 20
        if whole:       # whole microseconds, ties and all (the bisection on whole numbers)
            x, y = np.round(x), np.round(y)
        est = hl_shift(x, y, 0.05)
        d = np.sort((y[:, None] - x[None, :]).ravel())
        assert est.diff == pytest.approx(float(np.median(d)))
        k = int(np.floor(n * m / 2 - 1.959963984540054 * np.sqrt(n * m * (n + m + 1) / 12)))
        assert (est.lo, est.hi) == (_brute(x, y, k), _brute(x, y, n * m - k + 1))


def test_hl_interval_covers_the_true_shift() -> None:
    rng = np.random.default_rng(11)
    shift, covered = 25.0, 0
    for _ in range(60):
        x, y = rng.lognormal(5, 0.5, 200), rng.lognormal(5, 0.5, 250) + shift
        est = hl_shift(x, y, 0.05)
        covered += est.lo <= shift <= est.hi
    assert covered >= 52            # 95 % nominal: P(fewer than 52 of 60) < 1 %


def test_quantile_bootstrap_matches_resampling() -> None:
    rng = np.random.default_rng(5)
    x, y = rng.exponential(1000, 400), rng.exponential(1200, 500)
    qa, qb, est = quantile_diff(x, y, 0.9, 0.05, np.random.default_rng(1), reps=20_000)
    assert qa == np.sort(x)[int(np.ceil(0.9 * 400)) - 1]
    naive = [np.sort(rng.choice(y, 500))[449] - np.sort(rng.choice(x, 400))[359] for _ in range(4000)]
    lo, hi = np.quantile(naive, [0.025, 0.975])
    spread = hi - lo
    assert abs(est.lo - lo) < 0.1 * spread and abs(est.hi - hi) < 0.1 * spread
