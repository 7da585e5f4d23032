"""``gateway.instances: auto``: the trace's peak, the clamp, the GE capacity
cache and its calibration (wotbench.execution.instances, wotbench.host.gecap)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wotbench.execution.instances import HEADROOM, choose, effective_capacity, ge_cores_available
from wotbench.execution.placement import make_plan
from wotbench.host.gecap import CalibrationSetup, GeCapacity, cached, capacity_for, fingerprint, store
from wotbench.reporting import peak_rps
from wotbench.spec import loads

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

REPO = Path(__file__).resolve().parents[2]
GE_BIN = CalibrationSetup(0, 0).ge_bin
SPEC = """\
name: auto
workload: {seed: 3}
devices:
  - {name: s, count: 20, rit: det:1ms, service: det:1ms}
phases: {warmup: 1s, measure: 4s, cooldown: 0s}
"""


def _cap(fp_sched: str = "normal", points: tuple[tuple[float, float], ...] = ((5000.0, 40.0), (10_000.0, 90.0),
                                                                          (20_000.0, 4000.0))) -> GeCapacity:
    return GeCapacity(fingerprint(GE_BIN, fp_sched), points, "2026-01-01T00:00:00Z", 1, 0, 1.0)


def _plan_cli(spec: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wotbench.commands.main", "plan", str(spec), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)})


def test_peak_over_sliding_100ms_windows() -> None:
    rng = np.random.default_rng(1)
    steady = np.sort(rng.uniform(0, 10e6, 10_000))           # ~1,000 req/s
    burst = 4_321_000 + np.arange(2000) * 25.0                # 2,000 in 50 ms, across a 100 ms grid line
    assert peak_rps(np.concatenate([steady, burst])) >= 20_000.0
    assert 1000.0 <= peak_rps(steady) < 2000.0
    assert peak_rps(np.array([5.0])) == 10.0


def test_choose_clamps_to_the_tightest_limit() -> None:
    lim = {"cores": 6, "devices": 20, "max_ges": 7}
    assert choose(1000.0, 10_000.0, HEADROOM, lim) == (1, "peak")
    assert choose(20_000.0, 10_000.0, HEADROOM, lim) == (3, "peak")        # 20k / 7k
    assert choose(1e6, 10_000.0, HEADROOM, lim) == (6, "cores")
    assert choose(1e6, 10_000.0, HEADROOM, {**lim, "devices": 2}) == (2, "devices")
    assert choose(1e6, None, HEADROOM, {**lim, "cores": 1}) == (1, "cores")
    assert choose(0.0, 10_000.0, HEADROOM, lim) == (1, "peak")


def test_ge_cores_follow_the_plan_rules() -> None:
    def cores(avail: list[int]):
        return lambda k: len(set(make_plan(avail, reserve=[0], ge_instances=k, cd_enabled=True, devices=10,
                                           affinity=True).ge_cores))

    assert ge_cores_available(cores(list(range(8))), 7) == 6     # 7 non-reserved, one left to the devices
    assert ge_cores_available(cores([0, 1]), 7) == 1
    assert ge_cores_available(cores(list(range(64))), 7) == 7


def test_capacity_reads_the_points_for_a_limit() -> None:
    cap = _cap()
    assert cap.capacity(1000.0) == 10_000.0                   # p99 <= 500 us
    assert cap.capacity(100.0) == 5000.0
    noisy = _cap(points=((5000.0, 3000.0),))
    assert noisy.capacity(1000.0) == 0.0
    value, note = effective_capacity(noisy, 1000.0)
    assert value == 5000.0 and "noisy host" in note


def test_cache_is_keyed_by_the_fingerprint(tmp_path: Path) -> None:
    path = tmp_path / "wotbench" / "ge-capacity.json"
    stored = store(_cap("normal"), path)
    assert stored.path == path and cached(fingerprint(GE_BIN, "normal"), path) == stored
    assert cached(fingerprint(GE_BIN, "fifo"), path) is None                 # another policy: a miss
    other = fingerprint(GE_BIN, "normal")
    moved = type(other)(other.cpu_model, other.cores, "another-kernel", other.ge_sha256, other.sched)
    assert cached(moved, path) is None
    path.write_text("{not json")
    assert cached(fingerprint(GE_BIN, "normal"), path) is None               # damaged: measured again


def test_a_miss_calibrates_the_real_ge_once(tmp_path: Path) -> None:
    """The real GE and device on loopback, tiny: a fingerprint not in the
    cache (another entry is) measures, stores, and is then a hit."""
    path = tmp_path / "ge-capacity.json"
    store(_cap("fifo"), path)                                   # another fingerprint's entry
    own = sorted(os.sched_getaffinity(0))
    setup = CalibrationSetup(own[-1], own[0], "normal", rates=(1000, 2000), seconds_per_rate=0.2,
                             repetitions=1)
    said: list[str] = []
    cap = capacity_for(setup, path=path, say=said.append)
    assert len(said) == 1 and "calibrating" in said[0]
    assert cap.fingerprint == fingerprint(GE_BIN, "normal") and cap.path == path
    assert 1 <= len(cap.points) <= 2 and all(r > 0 and p >= 0 for r, p in cap.points)
    entries = json.loads(path.read_text())["entries"]
    assert len(entries) == 2
    again: list[str] = []
    assert capacity_for(setup, path=path, say=again.append) == cap and again == []


def test_plan_explains_auto_from_the_cached_capacity(tmp_path: Path) -> None:
    spec = tmp_path / "auto.yaml"
    spec.write_text(SPEC)
    store(_cap(), tmp_path / "cache" / "wotbench" / "ge-capacity.json")
    p = _plan_cli(spec, tmp_path / "cache", "--cores", "0-7")
    assert p.returncode == 0, p.stderr
    line = p.stdout.splitlines()[0]
    assert line.startswith("GEs: 3 (auto: trace peak 20,000 req/s in 100 ms windows; GE capacity 10,000 req/s")
    assert "6 cores for GEs" in line and "calibrating" not in p.stderr
    assert sum(1 for x in p.stdout.splitlines() if x.startswith("  GE ")) == 3


def test_an_integer_is_exactly_that_many(tmp_path: Path) -> None:
    spec = tmp_path / "two.yaml"
    spec.write_text(SPEC + "gateway: {instances: 2}\n")
    p = _plan_cli(spec, tmp_path / "empty-cache", "--cores", "0-7")
    assert p.returncode == 0, p.stderr
    assert "auto" not in p.stdout and sum(1 for x in p.stdout.splitlines() if x.startswith("  GE ")) == 2
    rs = loads(SPEC + "gateway: {instances: 2}\n")[0]
    assert rs.spec.gateway.instances == 2 and not rs.spec.gateway.auto
    assert loads(SPEC)[0].spec.gateway.auto


@pytest.mark.parametrize("value", ["banana", "0", "8", "[1]"])
def test_bad_instances_is_one_line_exit_2(tmp_path: Path, value: str) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text(SPEC + f"gateway: {{instances: {value}}}\n")
    p = _plan_cli(spec, tmp_path / "c")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{spec}:6: gateway.instances:" in lines[0]
