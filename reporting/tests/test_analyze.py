"""analyze_run on synthetic runs with known properties: the verdict, its
reasons, workload integrity (paper Table 1), contention and latency."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wotbench import UserError
from wotbench.reporting import Thresholds, analyze_run, load_run

#: A spec of one device; a test adds its ``validity`` section.
SPEC = "name: spec\ndevices: [{count: 1, rit: exp:1s, service: det:1ms}]\nphases: {measure: 60s}\n"


def check(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["check"] == name)


def test_clean_run_is_valid_and_json_safe(make_run):
    r = analyze_run(make_run())
    assert r["verdict"] == "valid", r["reasons"]
    assert r["reasons"] == []
    assert all(c["ok"] and c["reason"] for c in r["checks"])
    assert r["cd"]["contention"]["status"] == "none"
    json.dumps(r, allow_nan=False)  # summary.json must be strict JSON


def test_latency_from_intended_send_includes_send_lag(make_run):
    r = analyze_run(make_run())
    g = r["ges"][0]
    # Coordinated-omission-corrected latency is never below the measured one.
    for q in ("p50", "p99", "max"):
        assert g["latency_intended_us"][q] >= g["response_us"][q]
    assert g["send_lag_us"]["p50"] > 0


def test_rates_and_counts(make_run):
    r = analyze_run(make_run())
    g = r["ges"][0]
    # 4 devices at 50/s each.
    assert g["target_rate"] == pytest.approx(200, rel=0.1)
    assert abs(g["rate_dev"]) < 0.01
    assert r["measure_counts"]["devices"] == 4
    assert r["device_summary"]["throughput_per_device_mean"] == pytest.approx(50, rel=0.1)


@pytest.mark.parametrize("devices", [1, 10])
def test_ge_floored_at_30us_like_paper_table_1(make_run, devices):
    """Aggregate stream exp(300us), GE unable to send closer than 30 us apart.
    One device: the device's p5 RIT doubles (15 -> 30 us): integrity fails.
    Ten devices: per-device RITs (3 ms) are intact: a warning, not a failure."""
    run = make_run(f"table1-{devices}", devices=devices, rit_us=300.0 * devices, ge_floor_us=30.0,
                   measure_s=10.0, warmup_s=0.5, cooldown_s=0.5)
    r = analyze_run(run, Thresholds(min_measure_us=5e6))
    ge = r["ges"][0]["rit"]
    assert ge["expected"]["mean"] == pytest.approx(300, rel=0.05)
    assert ge["expected"]["p5"] == pytest.approx(15, abs=2)
    assert ge["submitted"]["p5"] == pytest.approx(30, abs=1)
    assert ge["ks_d"] > 0.05 and not ge["ok"]
    rit = check(r, "rit_integrity")
    if devices == 1:
        assert not rit["ok"]
        assert re.search(r"p5 RIT 30us vs expected 1[4-7]us", rit["reason"]), rit["reason"]
        assert "more GE instances" in rit["reason"]
        assert r["verdict"] == "invalid"
    else:
        assert rit["ok"], rit["reason"]
        dev = r["devices"][0]
        assert dev["rit_expected_p5_us"] == pytest.approx(150, rel=0.15)
        assert dev["rit_submitted_p5_us"] == pytest.approx(dev["rit_expected_p5_us"], rel=0.1)
        assert any("aggregate stream deviates" in w for w in r["warnings"])


def test_ge_that_cannot_keep_the_rate_fails_rate_and_lag(make_run):
    run = make_run("slow-ge", devices=1, rit_us=300.0, ge_floor_us=450.0, measure_s=10.0,
                   warmup_s=0.5, cooldown_s=0.5)
    r = analyze_run(run, Thresholds(min_measure_us=5e6))
    assert not check(r, "rate")["ok"]
    assert not check(r, "send_lag")["ok"]
    assert r["ges"][0]["achieved_rate"] < 0.8 * r["ges"][0]["target_rate"]


def test_injected_contention_is_detected_with_onset(make_run):
    run = make_run("contended", contention_from_s=22.0)
    r = analyze_run(run)
    c = r["cd"]["contention"]
    assert c["status"] == "contention"
    # Windows of 10 s aligned to the measurement start (2 s): 22 s opens a window.
    assert c["onset_us"] == 22e6
    assert r["verdict"] == "invalid"
    assert any(x.startswith("contention: ") for x in r["reasons"])
    assert r["device_summary"]["rd_ratio_mean"] > 0.1


def test_missing_cd_and_monitor_are_reasons(make_run):
    run = make_run("bare", cd=False, monitor=False)
    r = analyze_run(run)
    assert r["verdict"] == "invalid"
    assert "contention: no CD data (cd/cd-ge.csv): contention was not tested" in r["reasons"]
    assert "monitor: no monitor data (monitor/host.csv)" in r["reasons"]
    relaxed = analyze_run(run, Thresholds(require_cd=False, require_monitor=False))
    assert relaxed["verdict"] == "valid", relaxed["reasons"]


def test_spec_validity_overrides_are_used(make_run):
    run = make_run("spec", monitor=False)
    (run / "spec.yaml").write_text(SPEC + "validity:\n  require_monitor: false\n")
    assert analyze_run(run)["verdict"] == "valid"
    (run / "spec.yaml").write_text(SPEC + "validity:\n  require_monitr: false\n")
    with pytest.raises(UserError, match="spec.yaml:5: validity.require_monitr: unknown key"):
        analyze_run(run)


def test_error_rate_limit(make_run):
    r = analyze_run(make_run("lossy", error_rate=0.05))
    errs = check(r, "errors")
    assert not errs["ok"] and "timeouts" in errs["reason"]


def test_degraded_placement_is_accepted_only_when_cd_rules_contention_out(make_run):
    r = analyze_run(make_run("degraded-ok", degraded=True))
    p = check(r, "placement")
    assert p["ok"] and "degraded" in p["reason"] and "ruled contention out" in p["reason"]
    r = analyze_run(make_run("degraded-bad", degraded=True, contention_from_s=10.0))
    assert not check(r, "placement")["ok"]


def test_short_measurement_and_few_requests(make_run):
    r = analyze_run(make_run("short", measure_s=5.0))
    assert not check(r, "measurement")["ok"]
    assert "shorter than 30s" in check(r, "measurement")["reason"]


def test_ge_files_alone_are_enough(make_run, tmp_path: Path):
    run = make_run("full")
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(run / "ge" / "ge-0.csv", alone / "ge-0.csv")
    r = analyze_run(alone)
    assert r["phases"]["inferred"]
    assert r["measure_counts"]["requests"] > 0
    assert any("no phases.json" in w for w in r["warnings"])
    assert r["verdict"] == "invalid"  # no CD, no monitor: said, not guessed


def test_unstable_response_time_warns(make_run):
    r = analyze_run(make_run("unstable", contention_from_s=25.0, contention_extra=2.0),
                    Thresholds(require_cd=False))
    assert any("varies" in w and "unstable" in w for w in r["warnings"])


def test_several_ges_and_per_device_rows(make_run):
    r = analyze_run(make_run("two-ges", devices=6, ges=2))
    assert [g["ge"] for g in r["ges"]] == [0, 1]
    assert sorted(d["device_id"] for d in r["devices"]) == list(range(6))
    assert {d["ge"] for d in r["devices"] if d["device_id"] % 2} == {1}


def test_bad_ge_output_is_a_user_error(tmp_path: Path):
    d = tmp_path / "bad"
    (d / "ge").mkdir(parents=True)
    (d / "ge" / "ge-0.csv").write_text("device_id,method,uri,intended_us,sent_us,recv_us,response_us,"
                                       "latency_intended_us,send_lag_us,status,code,retransmissions,service_us\n"
                                       "0,GET,coap://a/r,abc,1,2,1,2,1,ok,2.05,0,5\n")
    with pytest.raises(UserError) as err:
        analyze_run(d)
    assert err.value.file == d / "ge" / "ge-0.csv"
    with pytest.raises(UserError, match="no GE output"):
        analyze_run(tmp_path)


def test_bad_phases_file_is_a_user_error(make_run):
    run = make_run()
    (run / "phases.json").write_text('{"measure": [5, 1]}')
    with pytest.raises(UserError, match="phases.json: measure: expected"):
        analyze_run(run)


def test_parquet_cache_is_built_once_and_rebuilt_when_csv_changes(make_run):
    run = make_run()
    csv = run / "ge" / "ge-0.csv"
    cache = csv.with_suffix(".parquet")
    first = analyze_run(run)
    assert cache.is_file()
    mtime = cache.stat().st_mtime_ns
    assert analyze_run(run)["ges"] == first["ges"]
    assert cache.stat().st_mtime_ns == mtime
    # Drop the last 100 rows: the stale cache must not be used.
    lines = csv.read_text().splitlines(keepends=True)
    csv.write_text("".join(lines[:-100]))
    analyze_run(run)
    assert cache.stat().st_mtime_ns != mtime
    assert len(load_run(run).all_requests) == len(lines) - 1 - 100


def test_rd_of_devices_uses_echoed_service_time(make_run):
    r = analyze_run(make_run())
    # Network time only (about 150 us + jitter) over a 5 ms mean service time.
    assert 0.01 < r["device_summary"]["rd_ratio_mean"] < 0.08
    assert np.isfinite(r["cd"]["contention"]["baseline"]["median"])


def test_device_groups_from_the_harness_device_lists(make_run):
    run = make_run("groups", devices=4)
    (run / "ge" / "devices-0.csv").write_text(
        "device_id,group,container,address\n0,sensors,d0,10.0.0.2\n1,sensors,d1,10.0.0.3\n"
        "2,actuators,d2,10.0.0.4\n3,actuators,d3,10.0.0.5\n")
    r = analyze_run(run)
    assert {d["device_id"]: d["group"] for d in r["devices"]} == {0: "sensors", 1: "sensors", 2: "actuators",
                                                                   3: "actuators"}
    groups = {g["group"]: g for g in r["groups"]}
    assert groups["sensors"]["devices"] == 2 and groups["actuators"]["devices"] == 2
    assert sum(g["requests"] for g in r["groups"]) == r["measure_counts"]["requests"]
    assert analyze_run(make_run("nogroups"))["groups"] == []


def test_deterministic_rit_with_clock_jitter_passes_but_a_real_deviation_fails():
    """A point-mass RIT (det:33ms) sent with 1 us of jitter is intact: the KS
    distance ignores deviations within rit_slack. A GE that was stalled and
    sent a tenth of its requests late still fails."""
    from wotbench.reporting._integrity import rit_compare
    from wotbench.spec import Thresholds

    th = Thresholds()
    rng = np.random.default_rng(3)
    expected = np.full(2000, 33_333.0)
    jitter = expected + rng.integers(-1, 2, expected.size)
    ok = rit_compare(expected, jitter, th)
    assert ok["ok"], ok["problems"]
    assert ok["ks_d"] < th.rit_ks_max

    stalled = expected.copy()
    stalled[::10] = 5.0  # sent back to back after a stall
    bad = rit_compare(expected, stalled, th)
    assert not bad["ok"]
    assert bad["ks_d"] >= 0.09


def test_ks_distance_of_a_few_jittered_rits_is_not_a_deviation():
    """A device with two requests whose second RIT is 43 us late (of 10 s)
    has D = 0.5, but two values cannot show that the distribution differs
    (p ~ 1): no KS problem. The same distance over 2,000 RITs is one."""
    from wotbench.reporting._integrity import rit_compare
    from wotbench.spec import Thresholds

    th = Thresholds()
    few = rit_compare(np.array([10_428_153.0, 9_199_841.0]), np.array([10_428_110.0, 9_199_841.0]), th)
    assert few["ks_d"] == 0.5 and few["ks_p"] > th.rit_ks_alpha and few["ok"], few["problems"]

    rng = np.random.default_rng(4)
    expected = rng.exponential(5_000.0, 2000)
    shifted = np.where(np.arange(expected.size) % 2 == 0, expected * 1.3, expected)   # half sent 30 % late
    many = rit_compare(expected, shifted, th)
    assert many["ks_d"] > th.rit_ks_max and many["ks_p"] < th.rit_ks_alpha
    assert not many["ok"] and any("KS distance" in p for p in many["problems"])


def test_a_run_whose_ge_was_killed_gets_an_invalid_report_not_an_error(make_run, capsys):
    """`wotbench report` on a run whose GE was killed before writing its
    output renders the run as INVALID from its records (exit 0, index.html
    and summary.md), naming why; a folder that is no run at all is still
    the one-line error."""
    import json

    from wotbench.reporting._render import write_reports

    run = make_run("killed-ge")
    csv = run / "ge" / "ge-0.csv"
    csv.rename(csv.with_name("ge-0.csv.partial"))
    (run / "ge" / "ge-0.summary.json").unlink(missing_ok=True)
    obs = json.loads((run / "observed.json").read_text())
    obs["ges"]["ge-0"].update(exit_code=None, killed=True)
    obs["partial"] = {"ge-0.csv.partial": 1234}
    (run / "observed.json").write_text(json.dumps(obs))
    (written,) = write_reports([run])
    page = written.read_text()
    assert "INVALID" in page and "no GE output" in page
    out = capsys.readouterr().out
    assert out.startswith("== ") and ": INVALID" in out.splitlines()[0]
    md = (run / "report" / "summary.md").read_text()
    assert "**Verdict: INVALID**" in md and "ge-0" in md
    assert "ge-0.csv.partial: the output written before it was killed (1234 rows" in md
    empty = run.parent / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="no GE output"):
        write_reports([empty])
