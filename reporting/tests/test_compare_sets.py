"""`wotbench compare A B` of two sweeps or repetition sets (issue 28, item
2), on synthetic folders of run folders: a sweep against itself is no
significant change at every point (exit 0); a sweep whose one point has
every service time doubled regresses exactly that point (exit 1), per
repetition with 4 runs a side and pooled with 2; 4 runs against 2 of
themselves is no change (pooled, the runs do not separate); a point whose runs ran
another workload is refused in one line naming it (exit 2); a point on
one side only is listed, and nothing in common is refused.

A real sweep's repetitions run one trace; the synthetic generator draws
its trace from its seed, so each repetition gets its first one's
workload/ files (what compare hashes) and its own seed for the rest."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from wotbench.base import rundir as layout
from wotbench.commands.main import main
from wotbench.reporting import _compare as cmp
from wotbench.reporting import _compareset as sets
from wotbench.reporting._comparestats import mw_rank
from wotbench.reporting.bench.synth import SynthSpec, synth_run
from wotbench.reporting.tests.conftest import BASE

SPEC = replace(BASE, measure_s=10.0, calibration_s=5.0, cd_rit_s=0.5)
#: Two test points: their label and their runs' spec.
POINTS = {"devices[0].count=4": replace(SPEC, devices=4), "devices[0].count=6": replace(SPEC, devices=6)}
SLOW = "devices[0].count=6"
REPS = 4


def _label(run: Path, label: str) -> Path:
    m = json.loads((run / layout.MANIFEST).read_text())
    (run / layout.MANIFEST).write_text(json.dumps({**m, "label": label}))
    return run


def _rep(root: Path, point: str, k: int, spec: SynthSpec, first: Path | None) -> Path:
    run = _label(synth_run(root / f"{point.split('=')[1]}-rep{k}", replace(spec, seed=k)), f"{point} rep={k}")
    if first is not None:                     # the repetitions' one trace
        shutil.rmtree(run / layout.WORKLOAD)
        shutil.copytree(first / layout.WORKLOAD, run / layout.WORKLOAD)
    return run


def _links(folder: Path, runs: list[Path]) -> Path:
    folder.mkdir()
    for r in runs:
        (folder / r.name).symlink_to(r)
    return folder


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sets")
    runs: dict[tuple[str, str], list[Path]] = {}
    for name, slow in (("a", ""), ("slow", SLOW)):
        (root / name).mkdir()
        for point, spec in POINTS.items():
            if name == "slow" and point != slow:
                runs[name, point] = runs["a", point]
                continue
            spec = replace(spec, service_us=spec.service_us * 2) if point == slow else spec
            first = runs["a", point][0] if name == "slow" else None
            got: list[Path] = []
            for k in range(1, REPS + 1):
                got.append(_rep(root / name, point, k, spec, first or (got[0] if got else None)))
            runs[name, point] = got
    out = {"a": _links(root / "A", [r for p in POINTS for r in runs["a", p]]),
           "slow": _links(root / "B", [r for p in POINTS for r in runs["slow", p]]),
           "a2": _links(root / "A2", [r for p in POINTS for r in runs["a", p][:2]]),
           "slow2": _links(root / "B2", [r for p in POINTS for r in runs["slow", p][:2]])}
    other = _label(synth_run(root / "other-4", replace(POINTS["devices[0].count=4"], seed=9)),
                   "devices[0].count=4 rep=1")      # its own trace
    out["other"] = _links(root / "other", [other, *runs["a", SLOW]])
    extra = shutil.copytree(runs["a", SLOW][0], root / "extra-9", symlinks=True)
    _label(extra, "devices[0].count=9 rep=1")
    out["extra"] = _links(root / "extra", [*runs["a", SLOW], extra])
    out["lonely"] = _links(root / "lonely", [extra])
    return out


def _one_error(capsys: pytest.CaptureFixture[str], *words: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err


def _sections(out: str) -> dict[str, str]:
    """The output's text per test point (from its `== point:` line to the next)."""
    parts = out.split("\n== ")[1:]
    return {p.split(":", 1)[0]: p for p in parts}


def test_the_rule_needs_four_runs_a_side_at_95() -> None:
    assert mw_rank(4, 4, 0.05) == 1 and mw_rank(3, 3, 0.05) < 1 and mw_rank(4, 3, 0.05) < 1
    assert mw_rank(3, 3, 0.2) >= 1                   # a lower confidence needs fewer


def test_sweep_against_itself_is_no_change(sweeps: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(sweeps["a"]), str(sweeps["a"])]) == 0
    out = capsys.readouterr().out
    assert out.strip().splitlines()[-1] == "verdict: no significant change at 2 test points"
    secs = _sections(out)
    assert set(secs) == set(POINTS)
    for sec in secs.values():
        assert "4 vs 4 runs, per repetition" in sec and "regressed" not in sec and "improved" not in sec
        assert "Hodges-Lehmann over 4 vs 4 runs" in sec


def test_one_point_slower_regresses_exactly_that_point(sweeps: dict[str, Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(sweeps["a"]), str(sweeps["slow"])]) == 1
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith(f"verdict: REGRESSED: {SLOW} (") and "devices[0].count=4" not in last, last
    assert "p99" in last and "response" in last
    secs = _sections(out)
    assert "regressed" not in secs["devices[0].count=4"]
    assert f"   {SLOW}: REGRESSED: " in secs[SLOW]
    # Per repetition: B's four runs each slower than A's four (complete separation, k = 1 at 95 %).
    th = cmp.thresholds([])
    a_runs = sorted((sweeps["a"]).glob("6-rep*"))
    b_runs = sorted((sweeps["slow"]).glob("6-rep*"))
    res = sets.compare_point(SLOW, a_runs, b_runs, th, 0.05, 1, cmp.CAP)
    rows = {r.metric.key: r for r in res.rows}
    assert res.mode == sets.PER_REPETITION and rows["p99"].verdict == cmp.REGRESSED
    va = [v for p in a_runs if (v := sets.run_values(cmp.sample_run(p))["p99"]) is not None]
    vb = [v for p in b_runs if (v := sets.run_values(cmp.sample_run(p))["p99"]) is not None]
    assert len(va) == len(vb) == REPS
    assert rows["p99"].a == pytest.approx(float(np.median(va))) and rows["p99"].b == pytest.approx(float(np.median(vb)))
    assert rows["p99"].est is not None and rows["p99"].est.lo == pytest.approx(min(vb) - max(va))
    assert rows["throughput"].verdict == rows["errors"].verdict == cmp.NO_CHANGE     # the sends did not change


def test_two_repetitions_are_pooled_and_say_so(sweeps: dict[str, Path], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cmp.html"
    assert main(["compare", str(sweeps["a2"]), str(sweeps["slow2"]), "--html", str(page)]) == 1
    out = capsys.readouterr().out
    secs = _sections(out)
    assert "2 vs 2 runs, pooled" in secs[SLOW] and "pooled 2 vs 2 runs; " in secs[SLOW]
    assert "regressed" in secs[SLOW] and "regressed" not in secs["devices[0].count=4"]
    text = page.read_text()
    assert text.count("<h2>") == 2 and 'class="regressed"' in text and f"REGRESSED: {SLOW}" in text


def test_pooled_runs_must_separate(sweeps: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """A's 4 runs against 2 of themselves: the pooled requests differ (each run draws its own service
    times), but B's runs are among A's, so no change stands."""
    assert main(["compare", str(sweeps["a"]), str(sweeps["a2"])]) == 0
    out = capsys.readouterr().out
    assert "4 vs 2 runs, pooled" in out and "improved" not in out and "regressed" not in out
    assert out.strip().splitlines()[-1] == "verdict: no significant change at 2 test points"


def test_another_workload_at_a_point_is_refused_naming_it(sweeps: dict[str, Path],
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(sweeps["a"]), str(sweeps["other"])]) == 2
    _one_error(capsys, "workload", "test point 'devices[0].count=4'", "--allow-different-workloads")
    assert main(["compare", str(sweeps["a"]), str(sweeps["other"]), "--allow-different-workloads"]) in (0, 1)
    out = capsys.readouterr().out
    assert "warning: test point devices[0].count=4: its runs ran different workloads" in out


def test_unmatched_points_are_listed_and_nothing_in_common_refused(sweeps: dict[str, Path],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(sweeps["a"]), str(sweeps["extra"])]) == 0
    out = capsys.readouterr().out
    assert "only in A, not compared: 'devices[0].count=4'" in out
    assert "only in B, not compared: 'devices[0].count=9'" in out
    assert set(_sections(out)) == {SLOW}
    assert main(["compare", str(sweeps["a"]), str(sweeps["lonely"])]) == 2
    _one_error(capsys, "no test point of A is in B", "'devices[0].count=9'")


def test_runs_values_and_pooling() -> None:
    assert [m.key for m in cmp.METRICS] == list(sets.run_values(_sample([1.0, 2.0, 3.0])))
    s = sets.run_values(_sample([float(v) for v in range(1, 101)]))
    assert (s["p50"], s["p95"], s["p99"], s["response"]) == (50.0, 95.0, 99.0, 50.5)
    p = sets.pool([_sample([1.0, 2.0]), _sample([3.0], verdict="invalid")])
    assert (p.requests, p.ok, p.response.tolist(), p.verdict) == (6, 6, [1.0, 2.0, 3.0], "invalid")


def _sample(resp: list[float], verdict: str = "valid") -> cmp.RunSample:
    return cmp.RunSample(path=Path("x"), run_id="x", verdict=verdict, reasons=(), measure_s=1.0, requests=3, ok=3,
                         ok_per_s=np.array([3.0]), response=np.array(resp), response_rows=len(resp),
                         lag=np.zeros(3), lag_rows=3)
