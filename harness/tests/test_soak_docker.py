"""End-to-end soak at the ci scale (40 s measurement): the memory series
(monitor/harness.csv, monitor/containers.csv) and the report's timeline
and drift section exist and are sane."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from wotbench.base.rundir import RunDir

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]


def test_soak_ci_scale_has_memory_series_and_timeline(docker_client, wotbench_cli, tmp_path) -> None:
    r = wotbench_cli("run", str(REPO / "experiments" / "soak.yaml"), "--scale", "ci", "--results",
                     str(tmp_path / "res"), "--no-progress", timeout=300)
    assert r.returncode == 0, r.stderr
    run = RunDir(Path(r.stdout.strip().splitlines()[-1]))
    h = pd.read_csv(run.harness_monitor)
    assert len(h) >= 15                                  # every 2 s over >= 40 s
    assert h["t_us"].is_monotonic_increasing and h["t_us"].iloc[0] < 0 < h["t_us"].iloc[-1]
    assert h["rss_bytes"].between(20 * 2**20, 4 * 2**30).all()
    c = pd.read_csv(run.containers_monitor)
    assert {"ge", "device", "cd-node", "cd-ge"} <= set(c["role"])
    assert (c["mem_bytes"] > 0).all()
    rep = wotbench_cli("report", str(run.root), timeout=300)
    assert rep.returncode == 0, rep.stderr
    page = (run.report_dir / "index.html").read_text()
    assert 'id="drift"' in page and "harness (RSS)" in page and "send lag p99 per window" in page
    assert (run.report_dir / "figures" / "soak.png").stat().st_size > 10_000
