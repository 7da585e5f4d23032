"""The harness's own RSS sampler (monitor/harness.csv)."""

from __future__ import annotations

import time

import numpy as np

from wotbench.host.selfmon import COLUMNS, HarnessSampler, read_self


def test_read_self_sees_this_process_grow() -> None:
    before, threads = read_self()
    blob = np.ones(64 * 2**20, np.uint8)            # 64 MiB touched
    after, _ = read_self()
    assert threads >= 1 and before > 1 << 20
    assert after - before > 48 * 2**20
    del blob


def test_sampler_is_bounded_and_thins_out() -> None:
    s = HarnessSampler(interval_s=1.0, max_rows=8)
    for _ in range(30):
        s.sample_once()
    assert len(s.rows) < 8 and s.interval_s > 1.0
    df = s.frame(t0_epoch_us=s.rows[0][0])
    assert list(df.columns) == COLUMNS and df["t_us"].iloc[0] == 0
    assert df["t_us"].is_monotonic_increasing and (df["rss_bytes"] > 0).all()


def test_sampler_thread_starts_and_stops() -> None:
    s = HarnessSampler(interval_s=0.05)
    s.start()
    time.sleep(0.3)
    s.stop()
    n = len(s.rows)
    assert n >= 2
    time.sleep(0.15)
    assert len(s.rows) == n                          # stopped
