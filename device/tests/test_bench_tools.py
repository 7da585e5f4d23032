"""The load tools of `make bench-device` (devrate: open loop at one rate;
devload: closed loop) against a real device and a scripted UDP peer, their
bad arguments, and the benchmark script end to end at a tiny scale."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[2]


def devrate(tool: Path, *args: str) -> dict[str, Any]:
    p = subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    return out


def test_devrate_counts_every_reply_of_a_device(bench_bins, make_device):
    dev = make_device([("/a", 0, None)])
    r = devrate(bench_bins["devrate"], "-p", str(dev.port), "-r", "2000", "-d", "300", "-c",
                "-b", "1000000")
    assert r["scheduled"] == r["sent"] == 600 and r["send_errors"] == 0
    assert r["answered"] == r["ok"] == r["within_bound"] == 600
    assert r["within_bound_fraction"] == 1.0 and r["garbage"] == r["duplicates"] == 0
    for h in ("response_us", "send_lag_us"):
        d = r[h]
        assert d["count"] == 600 and 0 <= d["p50"] <= d["p99"] <= d["p999"] <= d["max"]
    assert r["type"] == "con" and r["rate_target"] == 2000 and r["duration_s"] == 0.3
    assert dev.stop() == 0
    # Every request reached the device once, under its own token.
    assert dev.counts["requests"] == dev.counts["ok"] == dev.counts["inline_zero"] == 600
    assert dev.counts["duplicates"] == 0


def test_devrate_against_nobody_answers_nothing(bench_bins):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = devrate(bench_bins["devrate"], "-p", str(port), "-r", "1000", "-d", "100", "-t", "50")
    assert r["scheduled"] == 100 and r["answered"] == r["within_bound"] == 0
    assert r["within_bound_fraction"] == 0.0 and r["response_us"]["p50"] == -1
    # Loopback reports the closed port (ICMP): those sends are lost, not retried.
    assert r["refused"] > 0 and r["sent"] + r["send_errors"] == 100


def _scripted_peer(sock: socket.socket, stop: threading.Event) -> None:
    """Answers every request twice (2.05 or 4.04 by MID parity) and adds a
    datagram that is not CoAP."""
    sock.settimeout(0.05)
    while not stop.is_set():
        try:
            data, addr = sock.recvfrom(2048)
        except TimeoutError:
            continue
        mid = data[2:4]
        code = 0x45 if mid[1] % 2 == 0 else 0x84
        reply = bytes([0x64 if data[0] & 0x30 == 0 else 0x54, code]) + mid + data[4:8]
        sock.sendto(reply, addr)
        sock.sendto(reply, addr)
        sock.sendto(b"\xff", addr)


def test_devrate_matches_by_token_and_counts_duplicates_and_garbage(bench_bins):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    stop = threading.Event()
    th = threading.Thread(target=_scripted_peer, args=(sock, stop), daemon=True)
    th.start()
    try:
        r = devrate(bench_bins["devrate"], "-p", str(sock.getsockname()[1]), "-r", "500", "-d", "200",
                    "-t", "500", "-b", "1000000")
    finally:
        stop.set()
        th.join()
        sock.close()
    assert r["scheduled"] == r["answered"] == 100 and r["type"] == "non"
    assert r["ok"] == 50  # the 4.04s are answers, not successes
    assert r["duplicates"] == 100 and r["garbage"] == 100


@pytest.mark.parametrize("args, what", [
    ((), "-r is required"), (("-r", "0"), "-r:"), (("-r", "1x"), "-r:"), (("-r", "10", "-d", "5"), "-d:"),
    (("-r", "10", "-p", "70000"), "-p:"), (("-r", "10", "-b", "0"), "-b:"), (("-r", "10", "extra"), "unexpected"),
    (("-r", "10", "-P", "x" * 201), "-P:"), (("-r", "10000000", "-d", "600000"), "2^32"),
])
def test_devrate_bad_arguments_exit_2(bench_bins, args, what):
    p = subprocess.run([str(bench_bins["devrate"]), *args], capture_output=True, text=True, timeout=10)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("error: ") and what in p.stderr.splitlines()[0]


def test_devload_closed_loop_keeps_its_window(bench_bins, make_device):
    dev = make_device([("/a", 0, None)])
    p = subprocess.run([str(bench_bins["devload"]), "-p", str(dev.port), "-w", "8", "-s", "0.3", "-c"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert r["responses"] > 0 and r["lost"] == 0 and r["window"] == 8 and r["type"] == "con"
    assert r["sent"] - r["responses"] <= 8  # never more than the window in flight
    assert dev.stop() == 0
    assert dev.counts["requests"] == r["sent"]


@pytest.mark.slow
def test_bench_device_end_to_end_tiny(bench_bins, tmp_path):
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("bench-device needs two cores")
    ge = ROOT / "build" / "bin" / "wotbench-ge"
    subprocess.run(["make", "-C", str(ROOT), "--no-print-directory", "build/bin/wotbench-ge"],
                   capture_output=True, check=False)
    assert ge.exists()
    out = tmp_path / "device.json"
    p = subprocess.run([sys.executable, str(ROOT / "device" / "bench" / "bench_device.py"),
                        "--device-cpu", str(cores[0]), "--load-cpu", str(cores[1]), "--threads", "1,2",
                        "--repetitions", "1", "--closed-seconds", "0.3", "--step-ms", "200",
                        "--ge-rates", "5000", "--ge-seconds", "0.2", "--no-service-time", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert [r["threads"] for r in doc["medians"]["threads"]] == [1, 2]
    for r in doc["closed_loop"]:
        assert r["responses"] > 0 and r["device_net_cpu_s"] > 0
        # Zero service time is answered by the network thread: workers idle.
        assert r["device_counts"]["inline_zero"] == r["device_counts"]["requests"]
    assert doc["open_loop_steps"] and all(s["scheduled"] > 0 for s in doc["open_loop_steps"])
    assert len(doc["sustained"]) == 2
    pooled = doc["medians"]["pooled"]
    rates = [s["rate"] for s in doc["sustained"] if s["rate"] is not None]
    assert pooled["sweeps"] == 2 and pooled["first_step_failed"] == 2 - len(rates)
    if rates:
        assert min(rates) <= pooled["sustained_rps"] <= max(rates) and pooled["max_rps"] == max(rates)
        assert all(r in doc["open_loop_grid"] for r in rates)
    (g,) = doc["ge"]
    assert g["offered_rps"] == 5000 and g["lost_before_device"] == 0
    assert g["device_served"] == g["ok"] == g["requests"] == 1000
    assert "| worker threads |" in p.stdout and "written" in p.stdout
    # Bad input: exit 2, nothing written.
    bad = subprocess.run([sys.executable, str(ROOT / "device" / "bench" / "bench_device.py"),
                          "--threads", "0", "--out", str(tmp_path / "no.json")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and not (tmp_path / "no.json").exists()
