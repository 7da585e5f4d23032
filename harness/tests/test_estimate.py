"""`wotbench plan`'s estimate (wotbench.execution.estimate): the load of the
GEs and the device cores, bring-up, test and teardown time, and a warning
only in the clear cases; the start-rate cache the runner writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wotbench.commands.main import main
from wotbench.execution import estimate as est
from wotbench.execution.phases import plan_for
from wotbench.host.gecap import Fingerprint, GeCapacity
from wotbench.spec import Spec, load

REPO = Path(__file__).resolve().parents[2]
SCALE_1000 = REPO / "experiments" / "scale-1000.yaml"
QUICKSTART = REPO / "experiments" / "quickstart.yaml"


def _cap(points: tuple[tuple[float, float], ...] = ((5000.0, 40.0), (10_000.0, 90.0))) -> GeCapacity:
    """A calibration as gecap stores it (points measured elsewhere)."""
    fp = Fingerprint("test CPU", 2, "6.1.0", "0" * 64, "normal")
    return GeCapacity(fp, points, "2026-01-01T00:00:00Z", 1, 0, 1.0)


def _spec(path: Path, scale: str | None = None) -> Spec:
    return load(path, scale)[0].spec


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's ~/.cache/wotbench."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_scale_1000_on_one_shared_core_warns_and_takes_minutes_to_start() -> None:
    hs = _spec(SCALE_1000)
    e = est.estimate(hs, plan_for(hs, [0]), _cap())
    assert e.containers == 1001 and e.shared
    assert e.bringup_s > 120
    assert len(e.warnings) == 1 and "shares its core with 1,000 devices" in e.warnings[0]
    text = e.render()
    assert text.startswith("estimate (typical on this host class")
    assert "WARNING: this run is unlikely to be valid: the GE shares its core" in text
    assert "200 req/s per GE, 2 % of one GE's 10,000 req/s" in text


def test_scale_1000_with_the_ge_on_its_own_core_does_not_warn() -> None:
    """On 2 cores the GE keeps core 1 and 1,000 devices ran VALID here."""
    hs = _spec(SCALE_1000)
    e = est.estimate(hs, plan_for(hs, [0, 1]), _cap())
    assert not e.shared and e.warnings == ()
    assert 0.15 < e.device_demand < 0.25          # 1,001 idle containers x 0.0002 cores, and 200 req/s


def test_quickstart_on_four_cores_is_quiet_and_about_its_phases_long() -> None:
    """Its phases (67 s) and CD calibration (10 s), plus the harness's own
    time: scale-1000 --scale ci took 38 s for 13 s of load and calibration
    here (25 s around them)."""
    hs = _spec(QUICKSTART)
    assert hs.phases is not None
    e = est.estimate(hs, plan_for(hs, [0, 1, 2, 3]), _cap())
    assert e.warnings == ()
    load = (hs.phases.total_us + hs.cd.calibration_us) / 1e6
    assert load + 15 <= e.total_s <= load + 35
    small = _spec(SCALE_1000, "ci")
    assert abs(est.estimate(small, plan_for(small, [0, 1]), _cap()).total_s - 38) <= 0.2 * 38


def test_a_ge_past_its_capacity_and_busy_devices_warn() -> None:
    hs = _spec(QUICKSTART)
    e = est.estimate(hs, plan_for(hs, [0, 1, 2, 3]), _cap(((50.0, 40.0), (100.0, 90.0))))
    assert any("each GE would send" in w for w in e.warnings)
    uncal = est.estimate(hs, plan_for(hs, [0, 1, 2, 3]), None)
    assert uncal.warnings == () and "not calibrated (run `wotbench calibrate-ge`)" in uncal.render()


def test_the_start_rate_cache_takes_the_median_of_the_last_runs(tmp_path: Path) -> None:
    path = tmp_path / "startup.json"
    assert est.load_start(path) is None
    est.remember_startup({"containers": 5, "seconds": 1.0}, "tiny", path)      # too few to time
    assert not path.exists()
    for i, up in enumerate((10.0, 20.0, 40.0)):
        est.remember_startup({"containers": 100, "seconds": up, "ready_seconds": up + 1.0}, f"r{i}", path)
    got = est.load_start(path)
    assert got is not None and got.per_s == 5.0 and got.ready_s_per_container == 0.01
    assert "median of the last 3 runs" in got.source
    for i in range(10):
        est.remember_startup({"containers": 100, "seconds": 10.0}, f"s{i}", path)
    assert len(json.loads(path.read_text())["runs"]) == est.KEEP_RUNS
    path.write_text("{not json")
    assert est.load_start(path) is None                       # a damaged cache is no rate


def test_plan_prints_the_estimate_and_exits_0_when_it_warns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(SCALE_1000), "--cores", "0"]) == 0
    out = capsys.readouterr().out
    assert "estimate (typical on this host class" in out and "WARNING: this run is unlikely to be valid" in out
    assert "shared cores: this host has 1, the paper's layout needs 4" in out


def test_plan_of_a_sweep_totals_its_tests(capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep's plan ends with the time of all its tests: the sum of the
    per-test estimates it printed."""
    import re

    from wotbench.base.units import fmt_duration_us

    assert main(["plan", str(SCALE_1000.with_name("rd-vs-devices.yaml")), "--scale", "ci", "--cores", "0-1"]) == 0
    out = capsys.readouterr().out
    each = re.findall(r"test (\S+ \S+), teardown", out)
    assert len(each) == 2, out
    m = re.search(r"^== all 2 tests: about (.+) in all \(the estimates above\)$", out, re.M)
    assert m is not None, out
    assert m.group(1) != fmt_duration_us(0)
