"""A SCHED_FIFO GE that lost its core for over 1 ms (a stall: docs/soak.md,
"The FIFO stall traced"), or any GE whose loop waited in the kernel for
over 1 ms (a hold: "Holes in the schedule"), fails the send_lag check
unless what the gap did is measured and small: every send carries the
kernel's TX stamp, and the longest gap is at most the GE's mean intended
gap. A tolerated one is named in the check and in the run's warnings;
missing evidence (a summary without the hold counters) refuses."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wotbench.reporting import analyze_run
from wotbench.reporting._checks import _fifo_stalls, check_send_lag
from wotbench.reporting.bench.synth import synth_run
from wotbench.reporting.tests.test_verdict_checks import SPARSE
from wotbench.spec import Thresholds

FIFO = {"policy": "fifo", "requested": "fifo", "budget_us": 895000, "period_us": 1000000,
        "yields": 0, "yield_us": 0, "stalls": 1, "stall_max_us": 1564, "holds": 0, "hold_max_us": 0,
        "hold_total_us": 0, "majflt": 0}
KERNEL = {"tx_stamps_kernel": 60_000, "tx_stamps_fallback": 0}


def _ge(**kw: Any) -> dict[str, Any]:
    g = {"ge": 0, "send_lag_us": {"p99": 40.0}, "sched": dict(FIFO), "counters": dict(KERNEL),
         "target_rate": 200.0}
    g.update(kw)
    return g


def test_a_short_stall_with_kernel_stamps_is_tolerated_and_named():
    ok, why = check_send_lag({"ges": [_ge()]}, Thresholds())
    assert ok, why
    assert "GE 0 lost its core 1 time(s) for over 1 ms under SCHED_FIFO, up to 1.6 ms" in why
    assert "within its mean intended gap of 5.0 ms" in why and "stamped by the kernel" in why
    assert _fifo_stalls([_ge()]) == ([], [why.split("; ", 1)[1]])


@pytest.mark.parametrize(("ge", "because"), [
    (_ge(sched=dict(FIFO, stall_max_us=6450)), "longer than its mean intended gap of 5.0 ms"),
    (_ge(target_rate=10_000.0), "longer than its mean intended gap of 0.1 ms"),
    (_ge(counters={"tx_stamps_kernel": 59_990, "tx_stamps_fallback": 10}), "not all its sends carry the kernel"),
    (_ge(counters=None), "not all its sends carry the kernel"),
    (_ge(counters={"tx_stamps_kernel": 0, "tx_stamps_fallback": 0}), "not all its sends carry the kernel"),
    (_ge(target_rate=None), "its mean intended gap is unknown"),
], ids=["long", "fast-ge", "fallback-stamps", "no-counters", "no-sends", "no-rate"])
def test_a_stall_is_refused_when_long_or_unmeasured(ge: dict[str, Any], because: str):
    ok, why = check_send_lag({"ges": [ge]}, Thresholds())
    assert not ok and because in why, why
    assert why.startswith("GE 0 lost its core 1 time(s)")


def test_a_lagging_ge_and_a_stall_are_both_named_in_order():
    ok, why = check_send_lag({"ges": [_ge(send_lag_us={"p99": 2500.0}, sched=dict(FIFO, stall_max_us=9000))]},
                             Thresholds())
    assert not ok
    lag, stall = why.split("; ", 1)
    assert lag == "GE 0 p99 send lag 2500us > 1000us: the GE fell behind its schedule"
    assert stall.startswith("GE 0 lost its core 1 time(s)") and "longer than its mean intended gap" in stall


def test_stalls_under_the_normal_scheduler_are_the_send_lags_business():
    assert check_send_lag({"ges": [_ge(sched=dict(FIFO, policy="other", stall_max_us=50_000))]}, Thresholds())[0]


def _set_summary(run: Path, **kw: Any) -> None:
    (summary,) = (run / "ge").glob("ge-0.summary.json")
    doc = json.loads(summary.read_text())
    doc.update(kw)
    summary.write_text(json.dumps(doc))


def test_a_run_names_a_tolerated_stall_in_its_warnings_and_refuses_a_long_one(tmp_path: Path):
    run = synth_run(tmp_path / "run", replace(SPARSE, cd_rit_s=0.1))
    ge = analyze_run(run)["ges"][0]
    rows, gap_us = ge["counters"]["requests"], 1e6 / ge["target_rate"]
    _set_summary(run, sched=dict(FIFO, stall_max_us=int(gap_us * 0.9)), tx_stamps_kernel=rows, tx_stamps_fallback=0)
    r = analyze_run(run)
    check = next(c for c in r["checks"] if c["check"] == "send_lag")
    assert check["ok"] and "within its mean intended gap" in check["reason"]
    assert any("within its mean intended gap" in w for w in r["warnings"])
    _set_summary(run, sched=dict(FIFO, stall_max_us=int(gap_us * 1.1)))
    r = analyze_run(run)
    check = next(c for c in r["checks"] if c["check"] == "send_lag")
    assert not check["ok"] and "longer than its mean intended gap" in check["reason"]
    assert r["verdict"] == "invalid"


def test_a_send_held_ten_times_past_late_send_is_named_a_hole():
    from wotbench.reporting._checks import _holes
    th = Thresholds()
    assert _holes([_ge(send_lag_us={"p99": 98.0, "max": 9_000.0})], th) == []
    (hole,) = _holes([_ge(send_lag_us={"p99": 98.0, "max": 301_000.0})], th)
    assert hole.startswith("GE 0: a send was 301 ms late (p99 98 us)") and "Holes in the schedule" in hole
    assert _holes([_ge(send_lag_us={"p99": 98.0, "max": 301_000.0})], Thresholds(late_send_us=50_000.0)) == []
    assert _holes([_ge(send_lag_us={"p99": None, "max": None})], th) == []


HOLD = dict(FIFO, policy="other", stalls=0, stall_max_us=0, holds=2, hold_max_us=3100, hold_total_us=4500, majflt=19)


def test_a_hold_is_judged_like_a_stall_under_any_policy():
    ok, why = check_send_lag({"ges": [_ge(sched=dict(HOLD))]}, Thresholds())
    assert ok, why
    assert ("GE 0's loop waited in the kernel 2 time(s) for over 1 ms, up to 3.1 ms, 19 major page fault(s) "
            "in the run") in why and "within its mean intended gap of 5.0 ms" in why
    ok, why = check_send_lag({"ges": [_ge(sched=dict(HOLD, hold_max_us=301_000))]}, Thresholds())
    assert not ok and why.startswith("GE 0's loop waited in the kernel") and "bunched several requests" in why, why
    ok, why = check_send_lag({"ges": [_ge(sched=dict(HOLD), counters={"tx_stamps_kernel": 0,
                                                                         "tx_stamps_fallback": 5})]}, Thresholds())
    assert not ok and "not all its sends carry the kernel" in why, why


def test_a_summary_without_hold_counters_is_refused():
    old = {k: v for k, v in FIFO.items() if k not in ("holds", "hold_max_us", "hold_total_us", "majflt")}
    ok, why = check_send_lag({"ges": [_ge(sched=dict(old, stalls=0))]}, Thresholds())
    assert not ok and why == ("GE 0: its summary has no hold counters (a GE older than this analysis), so whether "
                              "its loop waited in the kernel is unknown"), why


def test_a_summary_without_a_scheduling_record_is_refused():
    """No ``sched`` (a damaged, missing or foreign GE summary): the check's
    evidence is missing, so it fails instead of passing by default."""
    ok, why = check_send_lag({"ges": [_ge(sched=None), _ge(ge=1)]}, Thresholds())
    assert not ok and why.startswith("GE 0: its summary has no scheduling record (sched), so whether its loop "
                                     "lost its core or waited in the kernel is unknown"), why
    assert _fifo_stalls([_ge(ge=1)])[0] == []
