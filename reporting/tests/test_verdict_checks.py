"""How the run verdict uses the contention status: ``inconclusive`` fails
the contention check unless ``validity.allow_inconclusive``, and never
excuses a degraded placement (synthetic run folders, reporting._synth);
the errors check names the devices whose requests failed; the harness
check counts the CD-GE apart from the workload's GEs; shared cores the
detector cleared pass, in the report's one wording of them."""

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


def test_harness_check_counts_the_cd_ge_apart(tmp_path: Path):
    """'1 GE and 1 CD-GE exited 0', as the headline's '1 GE': the contention
    detector's GE is not one of the workload's (issue 27 item 7); across a
    swarm, one CD-GE per device host."""
    import json

    from wotbench.reporting._checks import _ge_count

    run = synth_run(tmp_path / "quiet", replace(SPARSE, cd_rit_s=0.1, degraded=True))
    n = analyze_run(run)["cd"]["requests"]
    observed = json.loads((run / "observed.json").read_text())      # as the harness records its CD-GE
    observed["ges"]["cd-ge"] = {"container": "wb-cd-ge", "exit_code": 0, "killed": False, "trace_lines": n, "rows": n}
    (run / "observed.json").write_text(json.dumps(observed))
    r = analyze_run(run)
    assert r["verdict"] == "valid", r["reasons"]
    assert "; 1 GE and 1 CD-GE exited 0 with one output row" in _check(r, "harness")["reason"]
    assert _ge_count({"ge-0": {}, "ge-1": {}, "cd-ge-0": {}, "cd-ge-1": {}}) == "2 GEs and 2 CD-GEs"
    assert _ge_count({"ge-0": {}}) == "1 GE"
    # Shared cores the contention detector cleared: PASS, said plainly, once for the report.
    from wotbench.reporting._plain import degraded_sentence, meaning

    c = _check(r, "placement")
    assert c["ok"] and c["reason"].startswith("cores were shared (placement degraded")
    assert "the numbers hold for this host" in c["reason"] and "ruled contention out" in c["reason"]
    said = degraded_sentence(r)
    assert said == meaning("placement", True, r) and said.startswith("Cores were shared")
    assert "did not slow the devices down" in said
    assert degraded_sentence(analyze_run(synth_run(tmp_path / "dedicated", replace(SPARSE, cd_rit_s=0.1)))) is None
