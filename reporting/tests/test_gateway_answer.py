"""The second answer of a run with a gateway under test (summary.json's
``gateway.answer``, reporting/_gatewayanswer.py), on synthetic runs: the
objective over the ok response times, the gateway's error rate, its end
state (gateway.json), the GE counters of what it sent; and the testbed's
verdict kept apart: the gateway's 5.02/5.04/502/504 and timeouts do not
count against the testbed, its own errors still do."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from wotbench.base.rundir import RunDir
from wotbench.reporting import analyze_run, write_reports

SPEC = ("name: spec\ndevices: [{count: 4, rit: exp:20ms, service: det:1ms}]\nphases: {measure: 40s}\n"
        "gateway_under_test: {image: libcoap, north: coap-uri, objective: {p99: 50ms}}\n")
RUNNING = {"format": 1, "image": "wotbench/gw-libcoap:1", "container": "wb-x-gateway", "state": "running",
           "exit_code": None, "oom_killed": False, "restarts": 0, "started_at": "2026-01-01T00:00:00Z",
           "finished_at": None, "cpuset": "1"}


def _gateway_run(make_run, spec: str = SPEC, end: dict[str, object] | None = RUNNING, **synth):
    run = make_run(**synth)
    (run / "spec.yaml").write_text(spec)
    if end is not None:
        (run / "gateway.json").write_text(json.dumps(end))
    return run


def _recode(run, every: int, code: str | None, status: str, first: int = 0) -> int:
    """Every ``every``-th ok row from ``first`` becomes ``status`` with ``code``; returns how many in the
    measurement phase."""
    csv = run / "ge" / "ge-0.csv"
    df = pd.read_csv(csv, dtype={"code": str})
    rows = df.index[df["status"] == "ok"][first::every]
    df.loc[rows, ["code", "status"]] = [code, status]
    if code is None:
        df.loc[rows, ["recv_us", "response_us", "latency_intended_us"]] = None
    df.to_csv(csv, index=False, float_format="%.3f")
    a, b = json.loads((run / "phases.json").read_text())["measure"]
    inside = df.loc[rows]
    return int(((inside["intended_us"] >= a) & (inside["intended_us"] < b)).sum())


def _summary(run, **parts) -> None:
    """Adds counters to GE 0's summary JSON (e.g. garbage={...}, http={...})."""
    path = RunDir(run).ge_summary(0)
    doc = json.loads(path.read_text())
    for k, v in parts.items():
        doc[k] = {**(doc.get(k) or {}), **v} if isinstance(v, dict) else v
    path.write_text(json.dumps(doc))


def _check(r, name):
    return next(c for c in r["checks"] if c["check"] == name)


def test_a_clean_gateway_meets_its_objective_and_the_report_says_both_answers(make_run):
    run = _gateway_run(make_run)
    r = analyze_run(run)
    ans = r["gateway"]["answer"]
    assert r["verdict"] == "valid", r["reasons"]
    assert ans["met"] is True, ans["reasons"]
    assert ans["objective"] == {"p99": 50_000} and 0 < ans["measured"]["p99"] <= 50_000
    assert ans["reasons"] == []
    json.dumps(r, allow_nan=False)
    write_reports([run], None)
    md = (run / "report" / "summary.md").read_text()
    assert "The testbed was valid." in md and "The gateway MET the objective (p99 " in md


def test_the_gateways_errors_go_to_its_answer_not_to_the_testbed(make_run):
    run = _gateway_run(make_run)
    n502 = _recode(run, 10, "5.02", "error")
    nto = _recode(run, 9, None, "timeout", first=1)
    r = analyze_run(run)
    assert r["verdict"] == "valid", r["reasons"]
    errors = _check(r, "errors")
    assert errors["ok"] and "0 errors the testbed made" in errors["reason"], errors["reason"]
    ans = r["gateway"]["answer"]
    assert ans["met"] is False
    assert ans["through_gateway"]["gateway"]["5.02"] == n502 and ans["through_gateway"]["gateway"]["timeouts"] >= nto
    assert r["through_gateway"]["gateway"] == ans["through_gateway"]["gateway"]
    assert any(x.startswith("gateway error rate ") and "> validity.max_error_rate 1.0%" in x
               for x in ans["reasons"]), ans["reasons"]
    write_reports([run], None)
    text = (run / "report" / "summary.md").read_text()
    assert "The testbed was valid." in text and "The gateway MISSED the objective: gateway error rate" in text


def test_the_testbed_still_fails_on_its_own_errors(make_run):
    run = _gateway_run(make_run)
    n = _recode(run, 5, "4.04", "error")        # the devices' answers, passed on by the gateway
    r = analyze_run(run)
    errors = _check(r, "errors")
    assert not errors["ok"] and f"{n} errors the testbed made" in errors["reason"], errors["reason"]
    assert r["verdict"] == "invalid"
    assert r["gateway"]["answer"]["met"] is True, r["gateway"]["answer"]["reasons"]   # not the gateway's


@pytest.mark.parametrize("end, reason", [
    ({**RUNNING, "state": "exited", "exit_code": 3}, "gateway exited mid-run (exit code 3)"),
    ({**RUNNING, "state": "exited", "exit_code": 137, "oom_killed": True},
     "gateway exited mid-run (exit code 137, killed for memory)"),
    ({**RUNNING, "restarts": 2}, "gateway restarted 2 time(s) mid-run"),
])
def test_a_gateway_that_did_not_run_to_the_end_missed(make_run, end, reason):
    r = analyze_run(_gateway_run(make_run, end=end))
    assert r["gateway"]["answer"]["met"] is False and r["gateway"]["answer"]["reasons"] == [reason]
    assert r["verdict"] == "valid", r["reasons"]


@pytest.mark.parametrize("parts, reason", [
    ({"garbage": {"unparseable": 30, "truncated": 4, "total": 34}},
     "gateway answered 34 datagrams the GE could not parse"),
    ({"garbage": {"unknown_token": 12, "total": 12}}, "gateway answered 12 responses with unknown tokens"),
    ({"garbage": {"unexpected_message": 900, "unmatched_rst": 100, "total": 1000}},
     "gateway sent 1000 unsolicited datagrams (flood)"),
    ({"http": {"pool_waits": 40, "pool_wait_max_us": 2_500_000, "queue_timeouts": 7, "closed_timeout": 3}},
     "gateway held connections: 40 requests waited for a connection, longest 2500 ms / 10 timeouts"),
    ({"http": {"closed_malformed": 5}}, "gateway answered 5 malformed HTTP responses"),
])
def test_what_the_gateway_sent_the_ges_is_named(make_run, parts, reason):
    run = _gateway_run(make_run)
    _summary(run, **parts)
    ans = analyze_run(run)["gateway"]["answer"]
    assert ans["met"] is False and ans["reasons"] == [reason]


def test_no_gateway_json_no_answer(make_run):
    r = analyze_run(_gateway_run(make_run, end=None))
    ans = r["gateway"]["answer"]
    assert ans["met"] is None and ans["reasons"] == ["no evidence: gateway.json missing"]


def test_a_missed_objective_names_its_value_and_limit(make_run):
    run = _gateway_run(make_run, SPEC.replace("{p99: 50ms}", "{p50: 10us, mean: 1s}"))
    ans = analyze_run(run)["gateway"]["answer"]
    assert ans["met"] is False and ans["objective"] == {"p50": 10, "mean": 1_000_000}
    assert len(ans["reasons"]) == 1 and ans["reasons"][0].startswith("p50 ")
    assert ans["reasons"][0].endswith(" > 0.01 ms (objective)")


def test_without_an_objective_only_errors_and_faults_are_judged(make_run):
    run = _gateway_run(make_run, SPEC.replace(", objective: {p99: 50ms}", ""))
    ans = analyze_run(run)["gateway"]["answer"]
    assert (ans["objective"], ans["met"], ans["measured"]) == (None, True, None)


def test_a_ge_whose_connections_the_gateway_held_is_not_judged_on_its_sends(make_run):
    """The GE waits for a free HTTP connection (wrk2's way: the wait is send
    lag): when the gateway held them to a timeout, the lag is the gateway's."""
    run = _gateway_run(make_run, ge_floor_us=60_000)
    lagging = analyze_run(run)
    assert not _check(lagging, "send_lag")["ok"] and not _check(lagging, "rate")["ok"]
    _summary(run, http={"pool_waits": 300, "pool_wait_max_us": 1_000_000, "queue_timeouts": 20, "closed_timeout": 4})
    r = analyze_run(run)
    for name in ("send_lag", "rate", "rit_integrity", "ge_counters"):
        c = _check(r, name)
        assert c["ok"], c
    lag = _check(r, "send_lag")["reason"]
    assert "not judged: GE 0 (the gateway held its connections: 24 requests timed out" in lag, lag
    assert "gateway held connections: 300 requests waited" in " ".join(r["gateway"]["answer"]["reasons"])
