"""wotbench.load_run: DataFrames and the summary for notebooks."""

from __future__ import annotations

import json
import math

import pandas as pd

import wotbench
from wotbench.base.formats import GE_OUTPUT_COLUMNS


def test_load_run_returns_frames_and_summary(make_run):
    run = make_run(ges=2, devices=4)
    (run / "summary.json").write_text(json.dumps(
        {"format": 1, "run_id": "20260101-000000-x-abcdef", "complete": True, "verdict": "invalid",
         "reasons": ["monitor: no monitor data"]}))
    r = wotbench.load_run(run)
    assert list(r.requests.columns) == ["ge", *GE_OUTPUT_COLUMNS]
    assert set(r.requests["ge"]) == {0, 1}
    assert isinstance(r.cd, pd.DataFrame) and (r.cd["intended_us"] < 0).any()  # calibration requests
    assert r.monitor is not None and "cpu0_idle" in r.monitor.columns
    assert r.summary is not None and r.summary.run_id == "20260101-000000-x-abcdef"
    assert r.summary.verdict == "invalid" and r.summary.reasons == ("monitor: no monitor data",)
    m = r.requests
    assert m["intended_us"].min() >= r.phases.measure[0] and m["intended_us"].max() < r.phases.measure[1]
    # Missing response times are missing, not zero.
    assert r.all_requests["response_us"].isna().sum() == (r.all_requests["status"] != "ok").sum()


def test_load_run_without_optional_parts(make_run):
    r = wotbench.load_run(make_run(cd=False, monitor=False))
    assert r.cd is None and r.monitor is None and r.summary is None


def test_measure_ok_rows_give_the_reports_latency(make_run):
    """What the docstrings promise a notebook: ``run.requests``' ok rows are
    what the report's latency quantiles are computed on (``run.measure`` is
    the same), and ``run.all_requests`` is every phase's rows."""
    from wotbench.reporting import analyze_run

    run = make_run(ges=2, devices=4)
    r = wotbench.load_run(run)
    result = analyze_run(run)
    assert len(r.all_requests) > len(r.requests) > 0     # the warm-up and cool-down are in all_requests only
    assert r.measure.equals(r.requests)
    for sec in result["ges"]:
        m = r.requests[r.requests["ge"] == sec["ge"]]
        ok = m[m["status"] == "ok"]
        assert sec["response_us"]["exact"] and sec["response_us"]["n"] == len(ok) > 0
        for q, key in ((0.5, "p50"), (0.99, "p99")):
            assert math.isclose(ok["response_us"].quantile(q), sec["response_us"][key], rel_tol=1e-12)
        assert sec["requests"] == len(m)
