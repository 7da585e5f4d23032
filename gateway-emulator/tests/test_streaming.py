"""Streaming: the GE keeps only the requests not yet written in memory
(chunks of 4096) and writes the CSV while the run goes on. The rows must
be the documented format, in trace order, across chunk boundaries, with
requests finishing out of order and timeouts at chunk ends; a bad last
line still stops everything before a send; memory does not grow with the
trace."""

from __future__ import annotations

import csv
import re
import socket
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gehelpers import SAN_ENV, free_port, run_ge

from wotbench.base.formats import GE_OUTPUT_COLUMNS

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

CHUNK = 4096
INT = re.compile(r"^\d+$")


def write_rows(path: Path, dev: np.ndarray, ts: np.ndarray, uris: np.ndarray) -> Path:
    pd.DataFrame({"device_id": dev, "send_ts_us": ts, "method": "GET",
                  "uri": uris}).to_csv(path, index=False)
    return path


def check_rows(out: Path, trace: Path) -> list[list[str]]:
    """Every row in the documented format, one per trace line, in trace
    order, self-consistent; returns the raw rows."""
    with out.open(newline="") as f:
        raw = list(csv.reader(f))
    assert tuple(raw[0]) == GE_OUTPUT_COLUMNS
    rows = raw[1:]
    tr = pd.read_csv(trace)
    assert len(rows) == len(tr)
    col = {c: i for i, c in enumerate(GE_OUTPUT_COLUMNS)}
    for r in rows:
        assert len(r) == len(GE_OUTPUT_COLUMNS)
        for c in ("device_id", "intended_us", "sent_us", "send_lag_us", "retransmissions"):
            assert INT.match(r[col[c]]), (c, r)
        answered = r[col["recv_us"]] != ""
        for c in ("recv_us", "response_us", "latency_intended_us", "code"):
            assert (r[col[c]] != "") == answered, r
        sent, intended = int(r[col["sent_us"]]), int(r[col["intended_us"]])
        assert int(r[col["send_lag_us"]]) == sent - intended
        if answered:
            recv = int(r[col["recv_us"]])
            assert int(r[col["response_us"]]) == recv - sent
            assert int(r[col["latency_intended_us"]]) == recv - intended
            assert re.match(r"^\d\.\d\d$", r[col["code"]])
        assert r[col["status"]] in ("ok", "timeout", "error")
    assert [int(r[col["device_id"]]) for r in rows] == tr.device_id.tolist()
    assert [int(r[col["intended_us"]]) for r in rows] == tr.send_ts_us.tolist()
    assert [r[col["uri"]] for r in rows] == tr.uri.tolist()
    return rows


@pytest.mark.parametrize("asan", [False, True])
def test_rows_across_chunks_out_of_order_completion(asan, ge_bin, ge_asan_bin, make_device, tmp_path):
    """Five chunks; slow and fast resources interleaved, so responses come
    back out of trace order; the summary's distributions are exactly the
    ones NumPy computes from the CSV."""
    dev = make_device({"/fast": 0, "/slow": 3000}, "--threads", "8")
    n = 5 * CHUNK + 123
    rng = np.random.default_rng(5)
    ts = np.cumsum(rng.exponential(100, n)).astype(np.int64)
    paths = np.where(rng.random(n) < 0.3, "/slow", "/fast")
    trace = write_rows(tmp_path / "t.csv", np.zeros(n, dtype=np.int64), ts,
                       np.array([dev.uri(p) for p in paths]))
    binary = ge_asan_bin if asan else ge_bin
    run = run_ge(binary, trace, "--type", "non", env=SAN_ENV if asan else None)
    assert run.returncode == 0, run.stderr
    check_rows(run.out, trace)
    rows, s = run.rows, run.summary
    assert (rows.status == "ok").all() and s["ok"] == n
    recv = rows.recv_us.to_numpy()
    assert (np.diff(recv) < 0).any(), "no request finished out of order"
    for key, x in [("send_lag_us", rows.send_lag_us), ("response_us", rows.response_us),
                   ("latency_intended_us", rows.latency_intended_us),
                   ("rit_submitted_us", np.diff(rows.sent_us)),
                   ("rit_expected_us", np.diff(rows.intended_us))]:
        x = np.asarray(x, dtype=np.int64)
        d = s[key]
        assert d["count"] == len(x) and d["max"] == x.max(), key
        assert d["mean"] == pytest.approx(x.mean(), abs=1e-3), key
        for q in (5, 50, 95, 99):
            assert d[f"p{q}"] == pytest.approx(np.percentile(x, q), abs=1e-3), (key, q)
    mem = s["memory"]
    assert s["peak_rss_bytes"] > 0
    assert mem["window_peak_requests"] < n  # chunks were freed behind the rows


def test_timeouts_at_chunk_ends(ge_bin, make_device, tmp_path):
    """Requests to a port nobody answers on, placed at the first and last
    index of chunks and at the end of the trace, time out; the rows around
    them are answered and every row stays in trace order."""
    dev = make_device({"/a": 0})
    dead = free_port()
    n = 3 * CHUNK + 10
    ts = np.arange(n, dtype=np.int64) * 50
    uris = np.array([dev.uri("/a")] * n, dtype=object)
    lost = [CHUNK - 1, CHUNK, 2 * CHUNK - 1, 2 * CHUNK, 3 * CHUNK - 1, n - 1]
    uris[lost] = f"coap://127.0.0.1:{dead}/a"
    devs = np.zeros(n, dtype=np.int64)
    devs[lost] = 1
    trace = write_rows(tmp_path / "t.csv", devs, ts, uris)
    run = run_ge(ge_bin, trace, "--type", "non", "--timeout-ms", "300")
    assert run.returncode == 0, run.stderr
    check_rows(run.out, trace)
    rows, s = run.rows, run.summary
    timed_out = np.flatnonzero(rows.status == "timeout")
    assert timed_out.tolist() == lost
    assert rows.recv_us.iloc[lost].isna().all()
    assert s["timeouts"] == len(lost) and s["ok"] == n - len(lost)


def test_bad_last_line_of_a_long_trace_sends_nothing(ge_bin, tmp_path):
    """The scan checks every line before the first send: a bad last line
    of 300,000 exits 2 with its line, sends nothing, creates nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))
        sink.settimeout(0.5)
        port = sink.getsockname()[1]
        n = 300_000
        trace = tmp_path / "t.csv"
        lines = ["device_id,send_ts_us,method,uri"]
        lines += [f"0,{i},GET,coap://127.0.0.1:{port}/a" for i in range(n)]
        lines.append(f"0,{n},GET,coap://127.0.0.1:{port}/a b")
        trace.write_text("\n".join(lines) + "\n")
        p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(tmp_path / "o.csv"),
                            "--summary", str(tmp_path / "s.json")],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        err = p.stderr.strip().splitlines()
        assert err == [err[0]] and err[0].startswith(f"error: {trace}:{n + 2}: uri: "), p.stderr
        with pytest.raises(TimeoutError):
            sink.recv(2048)
    assert not list(tmp_path.glob("o.csv*")) and not list(tmp_path.glob("s.json*"))


def test_peak_rss_does_not_grow_with_trace_length(ge_bin, make_device, tmp_path):
    """Peak RSS of 2,000,000 requests at 100,000/s against 200,000 at the
    same rate. Before streaming the GE held ~115 bytes per request: +207
    MB here. Now what grows is only what its bounded state (requests in
    flight or parsed ahead, the output buffer, timers, histograms, the
    MID-reuse FIFO: the summary's `memory`; the trace locked ahead of the
    loop, at most its RLIMIT_MEMLOCK window: `trace_keep`) grew, plus a few MiB of
    allocator slack; on a busy machine more requests wait for replies, so
    a plain ratio of the two peaks was noise there."""
    dev = make_device({"/a": 0})
    rss, bounded = {}, {}
    for n in (200_000, 2_000_000):
        ts = np.arange(n, dtype=np.int64) * 10
        trace = tmp_path / f"t{n}.csv"
        with trace.open("w") as f:
            f.write("device_id,send_ts_us,method,uri\n")
            uri = dev.uri("/a")
            f.writelines(f"0,{t},GET,{uri}\n" for t in ts.tolist())
        run = run_ge(ge_bin, trace, "--type", "non", "--timeout-ms", "500", timeout=300)
        assert run.returncode == 0, run.stderr
        assert run.summary["requests"] == n and len(run.rows) == n
        rss[n] = run.summary["peak_rss_bytes"]
        m = run.summary["memory"]
        bounded[n] = sum(m[k] for k in ("window_peak_bytes", "output_buffer_peak_bytes", "hist_bytes",
                                        "reuse_fifo_bytes")) + run.summary["trace_keep"]["locked_peak_bytes"]
        run.out.unlink()
    growth = rss[2_000_000] - rss[200_000]
    assert growth <= max(0, bounded[2_000_000] - bounded[200_000]) + (4 << 20), (rss, bounded)
