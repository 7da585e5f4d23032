"""The ``gateway`` section of a run with a gateway under test, on synthetic
runs: the gateway's 5.02/5.04 (and HTTP 502/504) counts in the measurement
phase from the GE rows' codes, its CPU and memory from the cgroup samples
(role ``gateway``), the GEs' response times, and the answer that keeps the
testbed's verdict apart from the gateway's numbers; no section without one."""

from __future__ import annotations

import json

import pandas as pd

from wotbench.base.rundir import RunDir
from wotbench.reporting import analyze_run, write_reports
from wotbench.reporting._gatewayanswer import answer_line

SPEC = ("name: spec\ndevices: [{count: 4, rit: exp:20ms, service: det:1ms}]\nphases: {measure: 40s}\n"
        "gateway_under_test: {image: libcoap, north: coap-uri}\n")


def _gateway_codes(run, every: int = 7) -> tuple[int, int]:
    """Every ``every``-th answered row of the GE output becomes a 5.02, the
    next one a 5.04 (errors); returns the counts of each in the measurement phase."""
    csv = run / "ge" / "ge-0.csv"
    df = pd.read_csv(csv, dtype={"code": str})
    answered = df.index[df["code"].notna()]
    df.loc[answered[::every], ["code", "status"]] = ["5.02", "error"]
    df.loc[answered[1::every], ["code", "status"]] = ["5.04", "error"]
    df.to_csv(csv, index=False, float_format="%.3f")
    phases = json.loads((run / "phases.json").read_text())
    a, b = phases["measure"]
    inside = df[(df["intended_us"] >= a) & (df["intended_us"] < b)]
    return int((inside["code"] == "5.02").sum()), int((inside["code"] == "5.04").sum())


def _gateway_samples(run, cpu_per_s_us: int = 250_000, mem: int = 10 << 20) -> None:
    """One cgroup sample per second of a gateway using a quarter of a core, and of a device."""
    rows = []
    for s in range(-5, 60):
        rows.append((s * 1_000_000, "wb-x-gateway", "gateway", (s + 5) * cpu_per_s_us, mem, mem // 2))
        rows.append((s * 1_000_000, "wb-x-dev-0", "device", (s + 5) * 10_000, 1 << 20, 1 << 19))
    RunDir(run).monitor_dir.mkdir(exist_ok=True)
    pd.DataFrame(rows, columns=["t_us", "container", "role", "cpu_usage_us", "mem_bytes", "anon_bytes"]).to_csv(
        RunDir(run).containers_monitor, index=False)


def test_a_run_without_a_gateway_has_no_section(make_run):
    run = make_run()
    (run / "spec.yaml").write_text(SPEC.split("gateway_under_test")[0])
    assert analyze_run(run)["gateway"] is None
    assert analyze_run(make_run("bare"))["gateway"] is None          # no spec.yaml at all


def test_the_gateway_section_counts_its_errors_and_its_resources(make_run, tmp_path):
    run = make_run()
    (run / "spec.yaml").write_text(SPEC)
    n502, n504 = _gateway_codes(run)
    _gateway_samples(run)
    r = analyze_run(run)
    gw = r["gateway"]
    assert (gw["image"], gw["north"], gw["cores"]) == ("libcoap", "coap-uri", 1)
    assert n502 > 0 and n504 > 0
    assert gw["gateway_errors"] == {"5.02": n502, "5.04": n504, "502": 0, "504": 0}
    assert gw["codes"]["5.02"] == n502 and sum(gw["codes"].values()) == gw["requests"]
    assert gw["requests"] == r["measure_counts"]["requests"] and gw["ok"] == r["measure_counts"]["ok"]
    assert gw["response_us"]["0"] == r["ges"][0]["response_us"]
    u = gw["usage"]
    assert abs(u["cpu_mean_pct"] - 25.0) < 1e-6 and abs(u["cpu_max_pct"] - 25.0) < 1e-6
    assert u["mem_max_bytes"] == 10 << 20 and u["anon_max_bytes"] == 5 << 20 and u["samples"] > 30
    # the two answers apart: the gateway's errors are not the testbed's (reporting/tests/test_gateway_answer.py)
    assert r["verdict"] == "valid", r["reasons"]
    assert gw["numbers"].startswith("The gateway (libcoap, coap-uri, 1 core(s)): ")
    assert f"5.02: {n502}, 5.04: {n504}" in gw["numbers"] and "25.0 % of a core" in gw["numbers"]
    json.dumps(r, allow_nan=False)
    write_reports([run], None)
    md = (run / "report" / "summary.md").read_text()
    assert "## Gateway under test" in md and gw["numbers"] in md


def test_a_clean_gateway_run_says_the_testbed_was_valid(make_run):
    run = make_run()
    (run / "spec.yaml").write_text(SPEC)
    _gateway_samples(run)
    r = analyze_run(run)
    assert r["verdict"] == "valid", r["reasons"]
    assert r["gateway"]["numbers"].startswith("The gateway (libcoap, coap-uri, 1 core(s)): ")
    assert answer_line(r["verdict"], r["gateway"]["answer"])[0] == "The testbed was valid."
    assert r["gateway"]["gateway_errors"] == {"5.02": 0, "5.04": 0, "502": 0, "504": 0}
