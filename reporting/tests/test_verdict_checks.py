"""How the run verdict uses the contention status: ``inconclusive`` fails
the contention check unless ``validity.allow_inconclusive``, and never
excuses a degraded placement (synthetic run folders, reporting._synth);
the errors check names the devices whose requests failed."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from wotbench.reporting import analyze_run
from wotbench.reporting.bench.synth import SynthSpec, synth_run
from wotbench.spec import Thresholds

#: One CD request every 3 s: 5 calibration and 13 measurement samples, too few to decide.
SPARSE = SynthSpec(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0, cooldown_s=1.0, calibration_s=15.0,
                   cd_rit_s=3.0)


def _check(r: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in r["checks"] if c["check"] == name)


def test_inconclusive_fails_the_contention_check_unless_allowed(tmp_path: Path):
    run = synth_run(tmp_path / "sparse", SPARSE)
    r = analyze_run(run, Thresholds(cd_min_samples=5))
    assert r["cd"]["contention"]["status"] == "inconclusive"
    c = _check(r, "contention")
    assert not c["ok"] and "would decide" in c["reason"] and "allow_inconclusive" in c["reason"]
    assert r["verdict"] == "invalid"
    r = analyze_run(run, Thresholds(cd_min_samples=5, allow_inconclusive=True))
    assert _check(r, "contention")["ok"]


def test_inconclusive_does_not_excuse_shared_cores(tmp_path: Path):
    run = synth_run(tmp_path / "degraded", replace(SPARSE, degraded=True))
    r = analyze_run(run, Thresholds(cd_min_samples=5, allow_inconclusive=True))
    c = _check(r, "placement")
    assert not c["ok"] and "(inconclusive)" in c["reason"]


def test_quiet_synthetic_run_is_none_and_valid(tmp_path: Path):
    run = synth_run(tmp_path / "quiet", replace(SPARSE, cd_rit_s=0.1))
    r = analyze_run(run)
    assert r["cd"]["contention"]["status"] == "none", r["cd"]["contention"]["reason"]
    assert _check(r, "contention")["ok"]


def test_errors_check_names_the_devices_whose_requests_failed():
    """A device cut off the network: the verdict names it (issue W2 5/5), the
    worst first, and counts the devices that answered nothing."""
    from wotbench.reporting._checks import check_errors

    devices = [{"device_id": i, "requests": 100, "ok": 100} for i in range(20)]
    devices[7] = {"device_id": 7, "requests": 90, "ok": 0}          # disconnected
    devices[3] = {"device_id": 3, "requests": 100, "ok": 98}        # two lost
    a = {"measure_counts": {"requests": 1990, "ok": 1898, "timeouts": 92, "errors": 0}, "devices": devices}
    ok, why = check_errors(a, Thresholds())
    assert not ok
    assert why.endswith("; failed requests by device: device 7 90/90, device 3 2/100; "
                        "1 device(s) answered none of their requests")
    a["measure_counts"] = {"requests": 1990, "ok": 1988, "timeouts": 2, "errors": 0}
    devices[7] = {"device_id": 7, "requests": 90, "ok": 90}
    ok, why = check_errors(a, Thresholds())
    assert ok and "by device" not in why
