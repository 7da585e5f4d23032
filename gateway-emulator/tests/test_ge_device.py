"""wotbench-ge against real wotbench-device processes on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gehelpers import SAN_ENV, free_port, run_ge, write_trace

from wotbench.base.formats import GE_OUTPUT_COLUMNS

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

SERVICE = {"/s0": 0, "/s300": 300, "/s1000": 1000}


def poisson_rows(dev, n: int, mean_us: float, seed: int, device_id: int = 0) -> list[tuple[int, np.int64, str, str]]:
    rng = np.random.default_rng(seed)
    ts = np.cumsum(rng.exponential(mean_us, n)).astype(np.int64)
    paths = rng.choice(list(SERVICE), n)
    return [(device_id, t, "GET", dev.uri(p)) for t, p in zip(ts, paths, strict=True)]


def numpy_pct(x: np.ndarray) -> dict[str, float]:
    return {"mean": float(x.mean()), **{f"p{q}": float(np.percentile(x, q)) for q in (5, 50, 95, 99)}}


@pytest.mark.parametrize("ctype", ["con", "non"])
def test_every_request_answered_and_r_at_least_s(ctype, ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", poisson_rows(dev, 3000, 500, 1))
    run = run_ge(ge_bin, trace, "--type", ctype)
    assert run.returncode == 0, run.stderr
    rows, s = run.rows, run.summary
    assert tuple(rows.columns) == GE_OUTPUT_COLUMNS
    assert len(rows) == 3000 and s["requests"] == 3000
    assert (rows.status == "ok").all() and s["ok"] == 3000
    assert (rows.code == "2.05").all()
    expected_s = rows.uri.str.extract(r"(/s\d+)$")[0].map(SERVICE)
    assert (rows.service_us == expected_s).all()
    assert (rows.response_us >= rows.service_us).all()  # R >= S by construction
    assert (rows.latency_intended_us >= rows.response_us - 1e-3).all()
    assert np.allclose(rows.send_lag_us, rows.sent_us - rows.intended_us, atol=2e-3)
    assert s["garbage"]["total"] == 0 and s["timeouts"] == 0 and s["errors"] == 0
    assert s["type"] == ctype


def test_summary_rit_matches_numpy(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", poisson_rows(dev, 4000, 200, 2))
    run = run_ge(ge_bin, trace, "--type", "non")
    assert run.returncode == 0, run.stderr
    rows, s = run.rows, run.summary
    submitted = np.diff(rows.sent_us.to_numpy())
    expected = np.diff(rows.intended_us.to_numpy().astype(float))
    for key, ref in numpy_pct(submitted).items():
        assert s["rit_submitted_us"][key] == pytest.approx(ref, abs=2e-3), key
    for key, ref in numpy_pct(expected).items():
        assert s["rit_expected_us"][key] == pytest.approx(ref, abs=2e-3), key
    lag = rows.send_lag_us.to_numpy()
    assert s["send_lag_us"]["p50"] == pytest.approx(np.percentile(lag, 50), abs=2e-3)
    assert s["send_lag_us"]["p99"] == pytest.approx(np.percentile(lag, 99), abs=2e-3)
    assert s["send_lag_us"]["max"] == pytest.approx(lag.max(), abs=2e-3)
    resp = rows.response_us.to_numpy()
    assert s["response_us"]["p99"] == pytest.approx(np.percentile(resp, 99), abs=2e-3)
    lat = rows.latency_intended_us.to_numpy()
    assert s["latency_intended_us"]["p50"] == pytest.approx(np.percentile(lat, 50), abs=2e-3)
    span = rows.intended_us.iloc[-1] - rows.intended_us.iloc[0]
    assert s["target_rate_rps"] == pytest.approx(3999 * 1e6 / span, rel=1e-6)
    sent_span = rows.sent_us.iloc[-1] - rows.sent_us.iloc[0]
    assert s["achieved_rate_rps"] == pytest.approx(3999 * 1e6 / sent_span, rel=1e-5)
    assert s["late_sends"] == int((lag > s["config"]["late_us"]).sum())


def test_several_devices(ge_bin, make_device, tmp_path):
    devs = [make_device(SERVICE) for _ in range(3)]
    rows = []
    for i, dev in enumerate(devs):
        rows += poisson_rows(dev, 500, 900, 10 + i, device_id=100 + i)
    rows.sort(key=lambda r: r[1])
    trace = write_trace(tmp_path / "t.csv", rows)
    run = run_ge(ge_bin, trace)
    assert run.returncode == 0, run.stderr
    out, s = run.rows, run.summary
    assert s["devices"] == 3 and s["peers"] == 3 and s["ok"] == 1500
    for i, dev in enumerate(devs):
        mine = out[out.device_id == 100 + i]
        assert len(mine) == 500
        assert mine.uri.str.startswith(f"coap://127.0.0.1:{dev.port}/").all()


def test_ipv6_and_ipv4_devices_from_one_dual_stack_socket(ge_bin, make_device, tmp_path):
    v6, v4 = make_device(SERVICE, host="::1"), make_device(SERVICE)
    rows = [(i % 2, i * 500, "GET", (v6 if i % 2 else v4).uri("/s0")) for i in range(200)]
    run = run_ge(ge_bin, write_trace(tmp_path / "t.csv", rows))
    assert run.returncode == 0, run.stderr
    assert run.summary["ok"] == 200 and run.summary["sockets"] == 1
    assert run.rows.uri[1].startswith("coap://[::1]:")


def test_hosts_file_maps_placeholders(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    hosts = tmp_path / "hosts.csv"
    hosts.write_text(f"host,address\ndev-0,127.0.0.1:{dev.port}\n")
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", "coap://dev-0/s0") for i in range(50)])
    run = run_ge(ge_bin, trace, "--hosts", str(hosts))
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "ok").all()
    assert (run.rows.uri == "coap://dev-0/s0").all()


def test_methods_query_and_payload_accepted(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    rows = [(0, 0, "GET", dev.uri("/s0?a=1&b=%41")), (0, 10, "PUT", dev.uri("/s0") + ",hello"),
            (0, 20, "POST", dev.uri("/s300") + ",x y z"), (0, 30, "DELETE", dev.uri("/s0")),
            (0, 40, "GET", dev.uri("/missing"))]
    trace = write_trace(tmp_path / "t.csv", rows)
    run = run_ge(ge_bin, trace)
    assert run.returncode == 0, run.stderr
    assert list(run.rows.code) == ["2.05", "2.04", "2.04", "2.02", "4.04"]
    assert list(run.rows.status) == ["ok", "ok", "ok", "ok", "error"]
    assert run.summary["errors"] == 1


@pytest.mark.parametrize("ctype", ["con", "non"])
def test_killed_device_gives_timeouts_not_a_hang(ctype, ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    dev.kill()
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/s0")) for i in range(20)])
    run = run_ge(ge_bin, trace, "--type", ctype, "--ack-timeout-ms", "20",
                 "--max-retransmit", "2", "--timeout-ms", "50", timeout=30)
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "timeout").all() and run.summary["timeouts"] == 20
    assert run.rows.recv_us.isna().all() and run.rows.code.isna().all()
    want = 2 if ctype == "con" else 0
    assert (run.rows.retransmissions == want).all()
    assert run.summary["retransmissions"] == 20 * want


def test_device_killed_mid_run(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", [(0, i * 2000, "GET", dev.uri("/s0")) for i in range(1000)])
    t = threading.Timer(0.8, dev.kill)
    t.start()
    try:
        run = run_ge(ge_bin, trace, "--ack-timeout-ms", "20", "--max-retransmit", "1",
                     "--timeout-ms", "50", timeout=30)
    finally:
        t.cancel()
    assert run.returncode == 0, run.stderr
    counts = run.rows.status.value_counts()
    assert counts.get("ok", 0) > 0 and counts.get("timeout", 0) > 0
    assert counts.sum() == 1000


@pytest.mark.slow
def test_separate_response_is_acknowledged(ge_bin, make_device, tmp_path):
    # wotbench-device answers requests of 2 s or more with an empty ACK and
    # a separate CON response.
    dev = make_device({"/slow": 2_100_000})
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", dev.uri("/slow"))])
    run = run_ge(ge_bin, trace, "--timeout-ms", "5000", timeout=60)
    assert run.returncode == 0, run.stderr
    s = run.summary
    assert s["ok"] == 1 and s["empty_acks"] == 1 and s["acks_sent"] >= 1
    assert run.rows.retransmissions[0] == 0
    assert run.rows.response_us[0] >= 2_100_000


def test_start_at_aligns_t0(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", [(0, i * 100, "GET", dev.uri("/s0")) for i in range(10)])
    start = int(time.time() * 1e6) + 1_000_000
    run = run_ge(ge_bin, trace, "--start-at", str(start))
    assert run.returncode == 0, run.stderr
    assert run.summary["start_epoch_us"] == start
    assert run.summary["config"]["start_at_us"] == start
    assert time.time() * 1e6 >= start


def test_start_at_in_the_past_fails(ge_bin, tmp_path):
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", f"coap://127.0.0.1:{free_port()}/s0")])
    run = run_ge(ge_bin, trace, "--start-at", str(int(time.time() * 1e6) - 1_000_000))
    assert run.returncode == 1
    assert run.stderr.startswith("error: --start-at:")
    assert not run.out.exists() and not list(Path(tmp_path).glob("*.tmp.*"))


def test_asan_binary_against_device(ge_asan_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", poisson_rows(dev, 500, 1000, 3))
    run = run_ge(ge_asan_bin, trace, env=SAN_ENV)
    assert run.returncode == 0, run.stderr
    assert run.summary["ok"] == 500
    run = run_ge(ge_asan_bin, trace, "--type", "non", env=SAN_ENV)
    assert run.returncode == 0, run.stderr
    assert run.summary["ok"] == 500


def test_sigterm_abandons_the_run_and_writes_nothing(ge_bin, make_device, tmp_path):
    dev = make_device(SERVICE)
    trace = write_trace(tmp_path / "t.csv", [(0, i * 100_000, "GET", dev.uri("/s0")) for i in range(100)])
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    proc = subprocess.Popen([str(ge_bin), "--trace", str(trace), "--out", str(out),
                             "--summary", str(summary), "--quiet"], stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert err.startswith("error: signal: interrupted")
    assert not out.exists() and not summary.exists() and not list(tmp_path.glob("*.tmp.*"))


@pytest.mark.parametrize("binary", ["release", "asan"])
def test_replies_are_stamped_when_they_arrive_not_when_read(binary, ge_bin, ge_asan_bin, make_device, tmp_path):
    """The kernel's arrival stamp (SO_TIMESTAMPNS) times a reply, not the
    moment the loop reads it: the GE is stopped (SIGSTOP) for 400 ms while
    the replies of its first 40 requests (service 100 ms) arrive; read
    only after SIGCONT, they must still show about 100 ms, not 100 ms +
    the stop. Before, the read time stamped them (0.3-0.4 s)."""
    dev = make_device({"/s100ms": 100_000}, "--threads", "64")     # all 40 in service at once
    trace = write_trace(tmp_path / "t.csv", [(0, 1000 * i, "GET", dev.uri("/s100ms")) for i in range(40)]
                        + [(0, 1_000_000, "GET", dev.uri("/s100ms"))])
    out, summ = trace.with_suffix(".out.csv"), trace.with_suffix(".summary.json")
    binp = ge_bin if binary == "release" else ge_asan_bin
    proc = subprocess.Popen([str(binp), "--trace", str(trace), "--out", str(out), "--summary", str(summ),
                             "--quiet", "--start-at", str(int(time.time() * 1e6) + 500_000)],
                            env={**os.environ, **SAN_ENV} if binary == "asan" else None, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(0.5 + 0.06)              # t0 + 60 ms: the 40 requests are out, no reply yet
    proc.send_signal(signal.SIGSTOP)
    time.sleep(0.4)
    proc.send_signal(signal.SIGCONT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    rows = pd.read_csv(out)
    first = rows[rows.intended_us < 40_000]
    assert (first.status == "ok").all() and len(first) == 40
    assert first.send_lag_us.max() < 20_000, "the sends happened before the stop (else the test proves nothing)"
    # Every reply arrived during the stop (60 .. 460 ms) and was read after
    # it: stamped at its read, each would show >= 300 ms; at its arrival,
    # the 100 ms service time plus the path.
    assert first.response_us.between(100_000, 250_000).all(), first.response_us.describe()
