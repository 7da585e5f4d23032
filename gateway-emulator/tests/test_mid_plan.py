"""The MID / socket plan: any number of requests outstanding per device,
and no message ID reused with the same peer from the same local socket
within EXCHANGE_LIFETIME (247 s)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gehelpers import run_ge

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

LIFETIME_US = 247_000_000


def write_numpy_trace(path: Path, dev: np.ndarray, ts: np.ndarray, uris: list[str]) -> Path:
    df = pd.DataFrame({"device_id": dev, "send_ts_us": ts, "method": "GET",
                       "uri": np.asarray(uris, dtype=object)[dev]})
    df.to_csv(path, index=False)
    return path


def dump_plan(ge: Path, trace: Path) -> pd.DataFrame:
    out = trace.with_suffix(".plan.csv")
    p = subprocess.run([str(ge), "--trace", str(trace), "--dump-plan", str(out), "--quiet"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return pd.read_csv(out)


def assert_no_reuse_within_lifetime(plan: pd.DataFrame, ts: np.ndarray) -> None:
    df = plan.assign(ts=ts).sort_values(["peer", "socket", "mid", "index"], kind="stable")
    same = ((df.peer.to_numpy()[1:] == df.peer.to_numpy()[:-1])
            & (df.socket.to_numpy()[1:] == df.socket.to_numpy()[:-1])
            & (df.mid.to_numpy()[1:] == df.mid.to_numpy()[:-1]))
    gaps = np.diff(df.ts.to_numpy())[same]
    assert (gaps > LIFETIME_US).all()


@pytest.mark.parametrize("n,spacing_us,k", [(160_000, 1000, 3), (200_000, 2000, 2), (60_000, 10, 1)])
def test_mids_distinct_per_socket_within_lifetime(n, spacing_us, k, ge_bin, tmp_path):
    ts = np.arange(n, dtype=np.int64) * spacing_us
    dev = np.zeros(n, dtype=np.int64)
    dev[1::7] = 1  # a second device with its own plan
    trace = write_numpy_trace(tmp_path / "t.csv", dev, ts,
                              ["coap://127.0.0.1:5990/a", "coap://127.0.0.1:5991/b"])
    plan = dump_plan(ge_bin, trace)
    assert len(plan) == n
    d0 = plan[plan.device_id == 0]
    assert d0.k.iloc[0] == k
    window = np.searchsorted(ts[dev == 0], ts[dev == 0] + LIFETIME_US, side="right") - np.arange(len(d0))
    assert d0.window_max.iloc[0] == window.max()
    assert set(d0.socket) == set(range(k))
    # consecutive requests of a peer take consecutive MIDs (mod 2^16)
    assert (np.diff(d0.mid.to_numpy()) % 65536 == 1).all()
    assert_no_reuse_within_lifetime(plan, ts)


def test_devices_sharing_an_endpoint_share_one_mid_sequence(ge_bin, tmp_path):
    n = 70_000
    ts = np.arange(n, dtype=np.int64) * 100
    dev = np.arange(n, dtype=np.int64) % 2
    trace = write_numpy_trace(tmp_path / "t.csv", dev, ts,
                              ["coap://127.0.0.1:5990/a", "coap://127.0.0.1:5990/b"])
    plan = dump_plan(ge_bin, trace)
    assert plan.peer.nunique() == 1 and plan.k.iloc[0] == 2
    assert_no_reuse_within_lifetime(plan, ts)


@pytest.mark.slow
def test_more_than_65536_requests_to_one_device_all_answered(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    n = 70_000
    ts = np.arange(n, dtype=np.int64) * 40
    trace = write_numpy_trace(tmp_path / "t.csv", np.zeros(n, dtype=np.int64), ts, [dev.uri("/a")])
    run = run_ge(ge_bin, trace, "--type", "non", "--timeout-ms", "2000")
    assert run.returncode == 0, run.stderr
    s = run.summary
    assert s["sockets"] == 2
    # A reused (socket, MID) would have been answered from the device's
    # duplicate cache or dropped: every request gets its own response.
    assert s["ok"] == n, s
    assert s["garbage"]["total"] == 0 and s["mid_reuse_early"] == 0
    # two sockets, read through epoll: each send carries its socket's kernel stamp
    assert s["tx_stamps_kernel"] == n and s["tx_stamps_fallback"] == 0, s
