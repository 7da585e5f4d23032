"""Kernel send stamps (README.md, "Kernel send stamps"): every request's
sent stamp is the kernel's software TX stamp, read from the socket's error
queue, also with retransmissions in between and after a failed send; a
send that has none keeps the GE's own stamp and is counted."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gehelpers import SAN_ENV, run_ge, write_trace

from wotbench.base.formats import GE_TX_STAMP_COUNTERS


def rows_at(uri_of, n: int, gap_us: int) -> list[tuple[int, int, str, str]]:
    return [(0, 1000 + i * gap_us, "GET", uri_of(i)) for i in range(n)]


def assert_stamps_in_order(rows) -> None:
    """Intended <= sent <= received for every row, all integers."""
    sent = rows.dropna(subset=["sent_us"])
    assert (sent.sent_us >= sent.intended_us).all()
    assert (sent.send_lag_us == sent.sent_us - sent.intended_us).all()
    got = sent.dropna(subset=["recv_us"])
    assert (got.recv_us >= got.sent_us).all()
    assert (got.response_us == got.recv_us - got.sent_us).all()


@pytest.mark.parametrize("build", ["release", "asan"])
@pytest.mark.parametrize("ctype", ["con", "non"])
def test_every_send_carries_the_kernel_stamp(build, ctype, ge_bin, ge_asan_bin, make_device, tmp_path):
    dev = make_device({"/a": 0, "/b": 200})
    trace = write_trace(tmp_path / "t.csv", rows_at(lambda i: dev.uri("/a" if i % 2 else "/b"), 2000, 50))
    binary, env = (ge_bin, None) if build == "release" else (ge_asan_bin, SAN_ENV)
    run = run_ge(binary, trace, "--type", ctype, env=env)
    assert run.returncode == 0, run.stderr
    s, rows = run.summary, run.rows
    assert [k for k in s if k.startswith("tx_stamps")] == list(GE_TX_STAMP_COUNTERS)
    assert s["ok"] == 2000 and s["tx_stamps_kernel"] == 2000 and s["tx_stamps_fallback"] == 0, s
    assert_stamps_in_order(rows)
    lag = rows.send_lag_us.to_numpy()
    assert s["send_lag_us"]["max"] == pytest.approx(lag.max(), abs=2e-3)
    assert s["send_lag_us"]["p99"] == pytest.approx(np.percentile(lag, 99), abs=2e-3)
    submitted = np.diff(rows.sent_us.to_numpy())
    assert (submitted >= 0).all()
    assert s["rit_submitted_us"]["max"] == pytest.approx(submitted.max(), abs=2e-3)
    assert s["late_sends"] == int((lag > s["config"]["late_us"]).sum())


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A UDP port that receives and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        yield int(s.getsockname()[1])


def test_retransmissions_take_keys_and_the_first_send_keeps_its_stamp(ge_bin, silent_peer, tmp_path):
    """Each request goes out three times (keys 3i, 3i+1, 3i+2 interleaved
    with other requests' copies): only first transmissions are matched."""
    uri = f"coap://127.0.0.1:{silent_peer}/a"
    trace = write_trace(tmp_path / "t.csv", rows_at(lambda i: uri, 300, 2000))
    run = run_ge(ge_bin, trace, "--ack-timeout-ms", "3", "--ack-random-factor", "1.0",
                 "--max-retransmit", "2")
    assert run.returncode == 0, run.stderr
    s, rows = run.summary, run.rows
    assert s["timeouts"] == 300 and s["retransmissions"] == 600, s
    assert s["tx_stamps_kernel"] == 300 and s["tx_stamps_fallback"] == 0, s
    assert_stamps_in_order(rows)


def test_a_failed_send_keeps_its_own_stamp_and_later_sends_the_kernels(ge_bin, make_device, tmp_path):
    """Sends to the broadcast address fail (EACCES: no SO_BROADCAST) on
    the same socket as the device's: each failure restarts the socket's
    keys, and the sends after it are matched again."""
    dev = make_device({"/a": 0})
    bad = "coap://255.255.255.255:5683/a"
    trace = write_trace(tmp_path / "t.csv",
                        [(int(i % 5 == 2), 1000 + i * 100, "GET", bad if i % 5 == 2 else dev.uri("/a"))
                         for i in range(500)])
    run = run_ge(ge_bin, trace, "--type", "non")
    assert run.returncode == 0, run.stderr
    s, rows = run.summary, run.rows
    assert s["send_errors"] == 100 and s["errors"] == 100 and s["ok"] == 400, s
    assert s["tx_stamps_kernel"] == 400 and s["tx_stamps_fallback"] == 100, s
    assert "tx_stamps_kernel=400 tx_stamps_fallback=100" in run_stderr(ge_bin, trace)
    assert_stamps_in_order(rows)


def run_stderr(ge_bin: Path, trace: Path) -> str:
    """The end-of-run stderr line of a run without --quiet."""
    out = trace.with_suffix(".again.csv")
    proc = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(out), "--summary",
                           str(trace.with_suffix(".again.json")), "--type", "non"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr
