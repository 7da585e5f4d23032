"""`wotbench capacity`: the spec section, the pure search with fake probes,
the probe documents, the plot; and one real search end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
