"""How the run verdict uses the contention status: ``inconclusive`` fails
the contention check unless ``validity.allow_inconclusive``, and never
excuses a degraded placement (synthetic run folders, reporting._synth)."""

from __future__ import annotations

from pathlib import Path

from wotbench.reporting import analyze_run
from wotbench.reporting.bench.synth import SynthSpec, synth_run
from wotbench.spec import Thresholds

#: One CD request every 3 s: 5 calibration and 13 measurement samples, too few to decide.
SPARSE = dict(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0, cooldown_s=1.0, calibration_s=15.0,
              cd_rit_s=3.0)


def _check(r: dict, name: str) -> dict:
    return next(c for c in r["checks"] if c["check"] == name)


def test_inconclusive_fails_the_contention_check_unless_allowed(tmp_path: Path):
    run = synth_run(tmp_path / "sparse", SynthSpec(**SPARSE))
    r = analyze_run(run, Thresholds(cd_min_samples=5))
    assert r["cd"]["contention"]["status"] == "inconclusive"
    c = _check(r, "contention")
    assert not c["ok"] and "would decide" in c["reason"] and "allow_inconclusive" in c["reason"]
    assert r["verdict"] == "invalid"
    r = analyze_run(run, Thresholds(cd_min_samples=5, allow_inconclusive=True))
    assert _check(r, "contention")["ok"]


def test_inconclusive_does_not_excuse_shared_cores(tmp_path: Path):
    run = synth_run(tmp_path / "degraded", SynthSpec(**SPARSE, degraded=True))
    r = analyze_run(run, Thresholds(cd_min_samples=5, allow_inconclusive=True))
    c = _check(r, "placement")
    assert not c["ok"] and "(inconclusive)" in c["reason"]


def test_quiet_synthetic_run_is_none_and_valid(tmp_path: Path):
    run = synth_run(tmp_path / "quiet", SynthSpec(**{**SPARSE, "cd_rit_s": 0.1}))
    r = analyze_run(run)
    assert r["cd"]["contention"]["status"] == "none", r["cd"]["contention"]["reason"]
    assert _check(r, "contention")["ok"]
