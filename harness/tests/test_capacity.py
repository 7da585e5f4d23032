"""`wotbench capacity`: the spec section, the pure search with fake probes,
the probe documents, the plot; and one real search end to end."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wotbench import UserError, spec
from wotbench.spec import CapacitySpec, Objective
from wotbench.studies import capacity_search as capacity
from wotbench.studies.capacity_search import ProbeResult, search

REPO = Path(__file__).resolve().parents[2]

BASE = """\
name: t
workload: {seed: 1}
devices:
  - name: a
    count: 2
    rit: exp:100ms
    service: exp:5ms
phases: {warmup: 1s, measure: 10s, cooldown: 1s}
capacity:
  vary: devices[0].count
  start: 1
  max: 64
  objective: {p95: 50ms}
"""


def cap_of(text: str) -> CapacitySpec:
    experiment = spec.loads(text, "exp.yaml")[0].experiment
    assert experiment is not None and experiment.capacity is not None
    return experiment.capacity


# --- the pure search ------------------------------------------------------------

def threshold(limit: float):
    """A fake probe: passes at and below ``limit``; records what was asked."""
    asked: list[float] = []

    def passes(x: float) -> bool:
        asked.append(x)
        return x <= limit

    return passes, asked


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 16, 17, 33, 63])
def test_integer_search_finds_the_exact_capacity(limit):
    passes, asked = threshold(limit)
    r = search(passes, 1, 64, 1, integer=True, max_probes=30)
    assert r.answer == limit and r.first_fail == limit + 1
    assert not r.capped and not r.exhausted
    assert len(asked) == len(set(asked))                  # no value probed twice
    assert len(asked) <= 2 * 7                             # doubling + bisection, log2 each


def test_doubling_then_bisection_order():
    passes, asked = threshold(11)
    search(passes, 1, 64, 1, integer=True)
    assert asked == [1, 2, 4, 8, 16, 12, 10, 11]


def test_nothing_passes():
    passes, asked = threshold(0.5)
    r = search(passes, 1, 64, 1, integer=True)
    assert r.answer is None and r.first_fail == 1 and asked == [1]


def test_capped_at_max_which_is_probed_even_off_the_doubling_grid():
    passes, asked = threshold(1000)
    r = search(passes, 3, 20, 1, integer=True)
    assert asked == [3, 6, 12, 20] and r.answer == 20 and r.capped


def test_rate_search_to_resolution():
    passes, asked = threshold(47.3)
    r = search(passes, 5.0, 400.0, 1.0, integer=False)
    assert r.answer is not None and r.first_fail is not None
    assert r.answer <= 47.3 < r.first_fail and r.first_fail - r.answer <= 1.0


def test_max_probes_bounds_the_search_and_says_so():
    passes, asked = threshold(37)
    r = search(passes, 1, 1024, 1, integer=True, max_probes=8)
    assert len(asked) == 8 and r.exhausted and r.answer is not None and r.answer <= 37


def test_noisy_probe_keeps_a_consistent_bracket():
    # A flaky host: 6 fails once, everything <= 9 passes otherwise.
    def passes(x: float) -> bool:
        return x != 6 and x <= 9

    r = search(passes, 1, 64, 1, integer=True)
    assert r.answer is not None and r.first_fail is not None
    assert r.answer < r.first_fail
    assert dict(r.probes)[r.answer] and not dict(r.probes)[r.first_fail]


# --- the spec section ------------------------------------------------------------

def test_good_section():
    c = cap_of(BASE)
    assert (c.group, c.kind, c.start, c.maximum, c.resolution, c.max_probes) == (0, "count", 1, 64, 1, 12)
    assert c.objectives == (Objective("p95", 50_000),)


@pytest.mark.parametrize("edit,field,line", [
    (("vary: devices[0].count", "vary: devices[0].speed"), "capacity.vary", 10),
    (("vary: devices[0].count", "vary: devices[3].count"), "capacity.vary", 10),
    (("start: 1", "start: 0"), "capacity.start", 11),
    (("start: 1", "start: 2.5"), "capacity.start", 11),
    (("max: 64", "max: -1"), "capacity.max", 12),
    (("objective: {p95: 50ms}", "objective: {p97: 50ms}"), "capacity.objective.p97", 13),
    (("objective: {p95: 50ms}", "objective: {p95: fast}"), "capacity.objective.p95", 13),
    (("objective: {p95: 50ms}", "objective: {}"), "capacity.objective", 13),
    (("  max: 64\n", "  max: 64\n  goal: 3\n"), "capacity.goal", 13),
    (("  max: 64\n", ""), "capacity", 9),
])
def test_bad_section_names_key_and_line(spec_file, edit, field, line):
    with pytest.raises(UserError) as ei:
        spec.load(spec_file(BASE.replace(*edit)))
    assert ei.value.field == field and ei.value.line == line and str(ei.value.file).endswith("exp.yaml")


def test_rate_needs_exp_or_det_rit(spec_file):
    text = BASE.replace("devices[0].count", "devices[0].rate").replace("exp:100ms", "uniform:1ms,5ms")
    with pytest.raises(UserError, match="exp:<mean> or det:<mean>") as ei:
        spec.load(spec_file(text))
    assert ei.value.field == "capacity.vary"


def test_sweep_and_capacity_do_not_mix(spec_file):
    with pytest.raises(UserError, match="sweep") as ei:
        spec.load(spec_file(BASE + "sweep: {key: gateway.type, values: [con, non]}\n"))
    assert ei.value.field == "capacity.vary"


def test_run_and_plan_ignore_a_good_capacity_section(spec_file):
    runs = spec.load(spec_file(BASE))
    assert len(runs) == 1 and "capacity" not in runs[0].doc and runs[0].spec.capacity is None
    experiment = runs[0].experiment
    assert experiment is not None and experiment.capacity == cap_of(BASE)


def test_probe_runs_set_count_or_rate():
    runs = spec.loads(BASE + "repetitions: 2\n", "exp.yaml")
    c = cap_of(BASE)
    p = capacity.probe_runs(runs, c, 12)
    assert [r.repetition for r in p] == [1, 2] and [r.label for r in p] == [r.label for r in runs]
    assert p[0].doc["devices"][0]["count"] == 12 and "capacity" not in p[0].doc
    assert runs[0].doc["devices"][0]["count"] == 2                     # the original is untouched
    workload = p[0].spec.workload
    assert p[0].spec.device_count == 12 and workload is not None and workload.n_devices == 12
    text = BASE.replace("devices[0].count", "devices[0].rate")
    runs = spec.loads(text, "exp.yaml")
    p = capacity.probe_runs(runs, cap_of(text), 40.0)
    assert p[0].doc["devices"][0]["rit"] == "exp:25000us"
    rit = p[0].spec.groups[0].rit
    assert rit is not None and rit.mean_us() == 25_000


def test_bad_probe_value_points_at_vary():
    runs = spec.loads(BASE, "exp.yaml")
    with pytest.raises(UserError) as ei:
        capacity.probe_runs(runs, cap_of(BASE), 200_000)       # more devices than a group may have
    assert ei.value.field == "devices[0].count" and ei.value.line == 10


def test_objective_statistics():
    import numpy as np

    r = np.arange(1, 101, dtype=float)
    assert Objective("mean", 1).value_us(r) == pytest.approx(50.5)
    assert Objective("p95", 1).value_us(r) == pytest.approx(np.percentile(r, 95))
    assert Objective("p50", 1).value_us(np.array([])) is None


def test_plot_is_a_png():
    c = cap_of(BASE)
    probes = [ProbeResult(v, v <= 4, "valid" if v <= 4 else "invalid", [], {"p95": 1000.0 * v}, v <= 4,
                          0.05 * v, 0.04 * v, 0.03, "contention" if v > 4 else "none", 100)
              for v in (1, 2, 4, 8, 6, 5)]
    found = search(lambda x: x <= 4, 1, 64, 1, integer=True)
    png = capacity.plot(c, probes, found)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


# --- end to end -----------------------------------------------------------------------

FAST = REPO / "experiments" / "tests" / "capacity-fast.yaml"


@pytest.mark.docker
@pytest.mark.slow
def test_capacity_end_to_end(docker_client, tmp_path):
    """A sleep-mode device with one thread, deterministic 20 ms service and
    deterministic RITs saturates at 50 requests/s: above it the queue, and
    the p95 response time, grow without bound; below it R ~= S. The search
    (30 -> 60 -> 45, resolution 20) must bracket 50."""
    proc = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "capacity", str(FAST), "--results",
                           str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = Path(proc.stdout.strip().splitlines()[-1])
    doc = json.loads((out / "capacity.json").read_text())
    assert doc["complete"] and doc["scale"] == "full"
    assert doc["answer"] is not None and 30 <= doc["answer"] < 50.5, proc.stdout
    assert doc["first_fail"] is not None and 50 <= doc["first_fail"] <= 60, proc.stdout
    assert len(doc["probes"]) <= 4
    for p in doc["probes"]:
        run = Path(p["run_dirs"][0])
        assert (run / "summary.json").is_file() and run.parent == out / "probes"
    assert (out / "capacity.png").read_bytes()[:4] == b"\x89PNG"
    assert "capacity: devices[0].rate = " in proc.stdout


# --- the probe decision with a gateway under test (pure, synthetic summaries) --------------

P99 = BASE.replace("{p95: 50ms}", "{p99: 50ms}")


def summary_of(verdict: str = "valid", reasons: tuple[str, ...] = (),
               gateway: dict[str, Any] | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {"verdict": verdict, "reasons": list(reasons), "thresholds": {"max_error_rate": 0.01}}
    if gateway is not None:
        doc["gateway"] = {"requests": 1000, "ok": 1000, "timeouts": 0, "errors": 0,
                          "gateway_errors": {"5.02": 0, "5.04": 0, "502": 0, "504": 0},
                          "routing": {"devices": 20, "sent": 1000, "served": 1000, "served_more": 0,
                                      "served_fewer": 0, "busiest": {"device_id": 3, "served": 50, "sent": 50}},
                          "answer": "the testbed was valid. ...", **gateway}
    return doc


def test_without_a_gateway_the_probe_is_the_verdict_and_the_objective():
    c = cap_of(P99)
    j = capacity.judge(summary_of(), c, {"p99": 49_000.0})
    assert j.passed and j.gateway_met is None and j.gateway_reasons == ()
    j = capacity.judge(summary_of(), c, {"p99": 51_000.0})
    assert not j.passed and not j.objectives_ok and j.testbed_valid
    j = capacity.judge(summary_of("invalid", ("contention: ...",)), c, {"p99": 1_000.0})
    assert not j.passed and j.objectives_ok and j.testbed_reasons == ("contention: ...",)


@pytest.mark.parametrize("verdict, p99, answer, passed, testbed_valid, met", [
    ("valid", 30_000.0, {"met": True, "reasons": []}, True, True, True),
    ("valid", 60_000.0, {"met": True, "reasons": []}, False, True, False),        # the objective
    ("valid", 30_000.0, {"met": False, "reasons": ["gateway exited mid-run (exit code 137)"]}, False, True, False),
    ("valid", 30_000.0, {"met": None, "reasons": []}, False, True, False),         # no evidence is never met
    ("invalid", 30_000.0, {"met": True, "reasons": []}, False, False, True),       # the testbed alone
    ("invalid", 60_000.0, {"met": False, "reasons": ["x"]}, False, False, False),  # both
])
def test_with_a_gateway_both_answers_must_pass_and_stay_apart(verdict, p99, answer, passed, testbed_valid, met):
    j = capacity.judge(summary_of(verdict, ("rit_integrity: ...",) if verdict != "valid" else (),
                                  {"answer": {"objective": None, **answer}}), cap_of(P99), {"p99": p99})
    assert (j.passed, j.testbed_valid, j.gateway_met) == (passed, testbed_valid, met)
    assert j.objectives_ok == (p99 <= 50_000)
    assert ("p99 60.00 ms above the objective 50 ms" in j.gateway_reasons) == (p99 > 50_000)
    assert set(answer["reasons"]) <= set(j.gateway_reasons)
    assert (j.testbed_reasons == ()) == testbed_valid        # the testbed's reasons stay the testbed's
    if met is False and p99 <= 50_000 and not answer["reasons"]:
        assert j.gateway_reasons == ("no evidence: the gateway answer could not be given",)


def test_before_the_gateway_answer_the_section_decides_on_gateway_errors():
    c = cap_of(P99)
    errs = {"gateway_errors": {"5.02": 0, "5.04": 8, "502": 0, "504": 0}, "timeouts": 3}
    j = capacity.judge(summary_of(gateway=errs), c, {"p99": 10_000.0})
    assert not j.passed and j.testbed_valid and j.gateway_met is False
    assert j.gateway_reasons == ("gateway error rate 1.10 % above 1 % (5.04: 8, 3 timeouts of 1000 requests)",)
    few = {"gateway_errors": {"5.02": 0, "5.04": 5, "502": 0, "504": 0}, "timeouts": 5}     # 1.0 %: at the limit
    assert capacity.judge(summary_of(gateway=few), c, {"p99": 10_000.0}).passed
    none = capacity.judge(summary_of(gateway={"requests": 0}), c, {"p99": None})
    assert not none.passed and none.gateway_reasons == (
        "p99: no answered request", "no request through the gateway in the measurement phase")


def test_a_misrouting_gateway_never_meets_the_objective():
    routing = {"devices": 20, "sent": 1000, "served": 1000, "served_more": 1, "served_fewer": 19,
               "busiest": {"device_id": 0, "served": 1000, "sent": 50}}
    for answer in ("text", {"met": True, "reasons": []}):
        j = capacity.judge(summary_of(gateway={"routing": routing, "answer": answer}), cap_of(P99),
                           {"p99": 1_000.0})
        assert not j.passed and j.gateway_met is False
        assert j.gateway_reasons == ("MISROUTED: 1 of 20 devices served more requests than were sent to them "
                                     "(device 0: 1000 served, 50 sent)",)


def probe(verdict: str, met: bool | None, objectives_ok: bool = True) -> ProbeResult:
    return ProbeResult(10.0, False, verdict, ["contention: CUSUM alarm"] if verdict != "valid" else [],
                       {"p99": 60_000.0 if not objectives_ok else 20_000.0}, objectives_ok, 0.1, 0.1, 0.1,
                       "none", 100, ["/r"], met,
                       [] if met in (None, True) else ["p99 60.00 ms above the objective 50 ms"])


@pytest.mark.parametrize("verdict, met, ok, failed", [
    ("valid", True, True, ""), ("invalid", True, True, "testbed"), ("valid", False, False, "gateway"),
    ("invalid", False, False, "testbed and gateway"), ("valid", None, False, "objective"),
    ("invalid", None, True, "testbed"),
])
def test_the_table_says_which_answer_failed(verdict, met, ok, failed):
    p = probe(verdict, met, ok)
    assert capacity.failed_by(p) == failed
    text = capacity.evidence_text(cap_of(P99), p)
    assert text.startswith(f"failed: {failed}; " if failed else ("testbed valid" if met else "valid"))
    if met is not None:
        assert ("testbed valid;" in text) == (verdict == "valid")
        assert ("gateway met the objective" in text) == met
        assert ("gateway did NOT meet it (p99 60.00 ms above" in text) == (not met)


def test_repetitions_combine_both_answers():
    a, b = probe("valid", True), probe("valid", False, False)
    both = capacity._combine(10.0, [a, b])
    assert both.gateway_met is False and both.gateway_reasons == ["p99 60.00 ms above the objective 50 ms"]
    assert capacity._combine(10.0, [a, a]).gateway_met is True
    assert capacity._combine(10.0, [probe("valid", None)]).gateway_met is None


def test_capacity_json_probes_of_before_read_back():
    # capacity_cmd rebuilds ProbeResult(**probe) from capacity.json: a probe of before has no gateway keys
    old = {k: v for k, v in dataclasses.asdict(probe("valid", None)).items()
           if k not in ("gateway_met", "gateway_reasons")}
    assert ProbeResult(**old).gateway_met is None


def test_the_gateway_experiment_has_a_quick_ci_capacity():
    for scale, probes in (("ci", 2), ("small", 6), ("small-nodered", 6), ("small-libcoap", 6)):
        runs = spec.load(REPO / "experiments" / "gateway.yaml", scale)
        c = runs[0].experiment.capacity if runs[0].experiment else None
        assert c is not None and c.kind == "rate" and c.objectives == (Objective("p99", 50_000),)
        assert c.max_probes == probes and runs[0].spec.gateway_under_test is not None
