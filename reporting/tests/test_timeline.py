"""Timeline and drift (soak report): the drift verdict must flag a growing
series and pass a flat noisy one; per-window quantiles from the streamed
histogram must match NumPy's within a bin's width."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from wotbench.base.rundir import RunDir
from wotbench.reporting._timeline import REL, drift, timeline

T = np.arange(0.0, 3600.0, 2.0)      # an hour, every 2 s


def test_growing_memory_is_flagged() -> None:
    rng = np.random.default_rng(1)
    y = 100.0 + 10.0 * T / T[-1] + rng.normal(0, 1.0, T.size)      # +10 % over the hour, noisy
    d = drift(T, y, "ge", "MiB", floor=1.0)
    assert d is not None and d.flagged
    assert d.rise == pytest.approx(10.0, abs=0.5)


def test_flat_noisy_memory_is_not_flagged() -> None:
    rng = np.random.default_rng(2)
    y = 100.0 + rng.normal(0, 3.0, T.size)                           # 3 % noise, no trend
    d = drift(T, y, "ge", "MiB", floor=1.0)
    assert d is not None and not d.flagged
    assert abs(d.rise) < REL * 100.0


def test_growth_below_the_absolute_floor_is_flat() -> None:
    y = 1.0 + 0.5 * T / T[-1]                                        # +50 % but only 0.5 MiB
    flat, rising = drift(T, y, "cd", "MiB", floor=1.0), drift(T, y, "cd", "MiB", floor=0.1)
    assert flat is not None and not flat.flagged
    assert rising is not None and rising.flagged


def test_too_few_points_gives_no_verdict() -> None:
    assert drift(np.array([0.0, 1.0]), np.array([1.0, 2.0]), "x", "MiB", 1.0) is None


def _run(tmp_path: Path, leak_mib_per_s: float) -> tuple[Path, dict[str, Any], np.ndarray]:
    """A run folder with a GE output (100 requests/s for 120 s) and monitors."""
    rng = np.random.default_rng(3)
    run = RunDir(tmp_path)
    run.ge_dir.mkdir(parents=True)
    run.monitor_dir.mkdir()
    n = 12000
    intended = np.sort(rng.uniform(0, 120e6, n)).astype(np.int64)
    lag = rng.exponential(200.0, n).astype(np.int64)
    resp = rng.exponential(2000.0, n).astype(np.int64)
    pd.DataFrame({"device_id": 0, "intended_us": intended, "send_lag_us": lag, "response_us": resp,
                  "status": np.where(rng.random(n) < 0.99, "ok", "timeout")}).to_csv(run.ge_csv(0), index=False)
    ts = np.arange(0, 120_000_000, 1_000_000)
    rows = []
    for t in ts:
        rows += [(t, "wb-ge-0", "ge", 0, int(2**20 * (5 + leak_mib_per_s * t / 1e6)))]
        rows += [(t, f"wb-dev-{i}", "device", 0, 2 * 2**20 + i) for i in range(3)]
        rows += [(t, "wb-cd-node", "cd-node", 0, 2**20), (t, "wb-cd-ge", "cd-ge", 0, 2**20)]
    pd.DataFrame(rows, columns=["t_us", "container", "role", "cpu_usage_us", "mem_bytes"]).to_csv(
        run.containers_monitor, index=False)
    pd.DataFrame({"t_us": ts[::2], "rss_bytes": 80 * 2**20, "threads": 5, "cpu_user_s": 1.0,
                  "cpu_sys_s": 0.1}).to_csv(run.harness_monitor, index=False)
    pd.DataFrame({"t_us": ts, "cpu0_idle": 60, "cpu1_idle": 40, "mem_used_kb": 2_000_000}).to_csv(
        run.host_monitor, index=False)
    phases = {"t0_epoch_us": 1, "warmup": [0, 10_000_000], "measure": [10_000_000, 110_000_000],
              "cooldown": [110_000_000, 120_000_000]}
    return tmp_path, phases, lag


def test_timeline_windows_and_quantiles(tmp_path: Path) -> None:
    d, phases, lag = _run(tmp_path, 0.0)
    tl = timeline(d, phases, window_s=10.0)
    w = tl.windows
    assert len(w) == 12 and w["t_s"].iloc[0] == 0.0
    assert w["rate_per_s"].sum() * 10 == 12000
    assert w["rate_per_s"].between(80, 120).all()
    assert (w["ok_per_s"] < w["rate_per_s"]).any()
    # all windows together vs NumPy: within one 2 % bin
    assert np.nanmedian(w["lag_p99_ms"]) == pytest.approx(np.percentile(lag, 99) / 1e3, rel=0.15)
    assert w["host_cpu_pct"].eq(50.0).all()
    assert w["mem_devices_total"].iloc[0] == pytest.approx(6.0, abs=0.01)
    assert w["mem_devices_max"].iloc[0] == pytest.approx(2.0, abs=0.01)
    assert w["mem_cd"].iloc[0] == pytest.approx(2.0) and w["mem_harness"].iloc[0] == pytest.approx(80.0)
    verdicts = {x.series: x.flagged for x in tl.drifts}
    assert set(verdicts) == {"GE", "CD pair (node + CD-GE)", "devices, total", "devices, largest",
                             "harness (RSS)", "send lag p99 per window"}
    assert not any(verdicts.values())


def test_timeline_flags_a_leaking_ge(tmp_path: Path) -> None:
    d, phases, _ = _run(tmp_path, 0.05)              # +5 MiB over 100 s on 5 MiB
    tl = timeline(d, phases)
    flagged = {x.series for x in tl.drifts if x.flagged}
    assert flagged == {"GE"}
    (ge,) = [x for x in tl.drifts if x.series == "GE"]
    assert ge.rise == pytest.approx(5.0, rel=0.05)
    json.dumps([x.__dict__ for x in tl.drifts])      # plain numbers, serialisable


def test_anonymous_memory_is_judged_apart_from_the_working_set(tmp_path: Path) -> None:
    """A GE whose working set grows by page cache (its trace read twice)
    while its heap stays put: the working-set series drifts, the (anon)
    series is flat, and a container whose cgroup does not say (-1) gives
    no anon figure rather than a wrong one."""
    d, phases, _ = _run(tmp_path, 0.05)
    run = RunDir(d)
    df = pd.read_csv(run.containers_monitor)
    df["anon_bytes"] = np.where(df["role"] == "ge", 3 * 2**20, np.where(df["role"] == "cd-ge", -1, 2**20))
    df.to_csv(run.containers_monitor, index=False)
    tl = timeline(d, phases)
    v = {x.series: x for x in tl.drifts}
    assert v["GE"].flagged and not v["GE (anon)"].flagged
    assert v["GE (anon)"].end == pytest.approx(3.0)
    assert v["devices, total (anon)"].end == pytest.approx(3.0)
    assert "CD pair (anon)" not in v                   # the CD-GE's anon unknown: no sum pretending
    assert tl.windows["mem_ge_anon"].dropna().eq(3.0).all()


def test_what_fills_up_early_and_stays_is_not_a_drift() -> None:
    """The hour-long soak: the GE's exact histograms grew by 6 MiB in the
    first 20 minutes (reaching the largest response time) and then stayed;
    the whole-phase fit rises, the steady state (second half) does not. A
    leak of the same size spread over the hour is flagged."""
    rng = np.random.default_rng(4)
    fill = 8.0 + 6.0 * np.minimum(T / 1200.0, 1.0) + rng.normal(0, 0.05, T.size)
    d = drift(T, fill, "ge", "MiB", floor=1.0)
    assert d is not None and d.rise > 1.0 and abs(d.steady_rise) < 0.5 and not d.flagged
    leak = 8.0 + 6.0 * T / T[-1] + rng.normal(0, 0.05, T.size)
    d = drift(T, leak, "ge", "MiB", floor=1.0)
    assert d is not None and d.flagged and d.steady_rise == pytest.approx(6.0, rel=0.05)
