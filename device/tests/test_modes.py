"""busy mode burns the serving thread's CPU time, sleep mode only waits:
on a core shared with a CPU hog, busy-mode response times stretch (about
2x with one hog, by construction of CPU sharing) while sleep-mode ones do
not. Relations, not timings: both hold on a noisy machine."""

from __future__ import annotations

import os
import statistics
import subprocess
import time

import pytest

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

S_US = 20_000


def _median_response_s(dev, raw_client, wire, n: int = 15) -> float:
    c = raw_client(dev.addr)  # a new client port per round: no duplicates
    times = []
    for i in range(n + 1):
        t0 = time.perf_counter()
        c.send(wire.encode(wire.CON, wire.GET, i, b"m", ("s",)))
        m = c.recv(5)
        assert m is not None and wire.service_option(m) == S_US
        if i:  # the first one warms up
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


@pytest.fixture
def hog_core():
    """A busy process pinned to one core; yields that core's number."""
    core = max(os.sched_getaffinity(0))
    hog = subprocess.Popen(["taskset", "-c", str(core), "sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.2)
        yield core
    finally:
        hog.kill()
        hog.wait()


@pytest.mark.slow
def test_busy_stretches_under_hog_sleep_does_not(make_device, raw_client, wire, hog_core):
    rows = [("/s", S_US, None)]
    busy = make_device(rows, "--mode", "busy", "--threads", "1", cpu=hog_core)
    busy_median = _median_response_s(busy, raw_client, wire)
    assert busy.stop() == 0
    sleep = make_device(rows, "--mode", "sleep", "--threads", "1", cpu=hog_core)
    s = S_US / 1e6
    # Other load on the machine can only add delay (to the client too), so
    # the best of up to three medians estimates the device's own behaviour.
    sleep_median = _median_response_s(sleep, raw_client, wire)
    for _ in range(2):
        if sleep_median < 1.3 * s:
            break
        sleep_median = min(sleep_median, _median_response_s(sleep, raw_client, wire))
    assert sleep.stop() == 0
    assert busy_median >= 1.5 * s, f"busy+hog median {busy_median * 1e3:.1f} ms"
    assert sleep_median < 1.3 * s, f"sleep+hog median {sleep_median * 1e3:.1f} ms"
    # R >= S holds in both modes by construction.
    assert sleep_median >= s and busy_median >= s


def test_busy_mode_consumes_cpu_time(make_device, raw_client, wire):
    """The device process's CPU time grows by about the service time served."""
    rows = [("/s", 200_000, None)]
    dev = make_device(rows, "--mode", "busy", "--threads", "2")
    c = raw_client(dev.addr)
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu_s() -> float:
        fields = open(f"/proc/{dev.proc.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before = cpu_s()
    for i in range(3):
        c.send(wire.encode(wire.CON, wire.GET, i, b"c", ("s",)))
        assert c.recv(5) is not None
    used = cpu_s() - before
    assert used >= 0.5  # 3 x 0.2 s of thread CPU time, minus tick granularity
    assert dev.stop() == 0
