"""--sched fifo: the GE runs SCHED_FIFO inside an RT budget (rt.c), falls
back to SCHED_OTHER with the reason when FIFO is refused, yields instead of
being throttled, and reports all of it in the summary's "sched" object.
Needs root with SCHED_FIFO permitted (chrt); counts are asserted, never
timings."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from gehelpers import SAN_ENV, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

NO_SYS_NICE = ["setpriv", "--inh-caps", "-sys_nice", "--bounding-set", "-sys_nice"]


@pytest.fixture(scope="module", autouse=True)
def fifo_permitted() -> None:
    ok = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode == 0
    if not ok:
        msg = "SCHED_FIFO is not permitted here (run as root on a host with an RT budget)"
        if os.environ.get("CI") == "true":
            pytest.fail(msg)
        pytest.skip(msg)


def poisson_trace(path, uri: str, n: int, mean_us: float, seed: int = 1):
    import numpy as np
    ts = np.cumsum(np.random.default_rng(seed).exponential(mean_us, n)).astype(np.int64) + 1000
    return write_trace(path, [(0, int(t), "GET", uri) for t in ts])


@pytest.mark.parametrize("asan", [False, True])
def test_fifo_recorded_with_budget(asan, ge_bin, ge_asan_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 2000, 500)
    run = run_ge(ge_asan_bin if asan else ge_bin, trace, "--sched", "fifo", "--rt-prio", "20",
                 "--rt-budget", "200000/1000000", env=SAN_ENV if asan else None)
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "ok").all()
    s = run.summary["sched"]
    assert s["policy"] == "fifo" and s["requested"] == "fifo" and s["error"] is None and s["set_by"] == "self"
    assert (s["priority"], s["budget_us"], s["period_us"]) == (20, 200_000, 1_000_000)
    # the loop stayed inside its budget by construction (0.17 + margin/2)
    assert 0 < s["duty_max"] <= 0.2


def test_fallback_recorded_when_fifo_refused(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 200, 1000)
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    proc = subprocess.run([*NO_SYS_NICE, str(ge_bin), "--trace", str(trace), "--out", str(out),
                           "--summary", str(summary), "--quiet", "--sched", "fifo",
                           "--rt-budget", "50000/1000000"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(summary.read_text())
    assert s["ok"] == 200
    assert s["sched"]["policy"] == "other" and s["sched"]["requested"] == "fifo"
    assert "Operation not permitted" in s["sched"]["error"]
    assert s["sched"]["yields"] == 0


def _unprivileged_ge(ge_bin, trace, tmp_path, start_in_s: float) -> tuple[subprocess.Popen[str], Path]:
    summary = tmp_path / "s.json"
    start_at = int(time.time() * 1e6 + start_in_s * 1e6)
    proc = subprocess.Popen([*NO_SYS_NICE, str(ge_bin), "--trace", str(trace), "--out", str(tmp_path / "o.csv"),
                             "--summary", str(summary), "--quiet", "--sched", "fifo", "--rt-prio", "20",
                             "--rt-budget", "200000/1000000", "--start-at", str(start_at)],
                            stderr=subprocess.PIPE, text=True)
    return proc, summary


def test_fifo_given_from_outside_to_an_unprivileged_ge(ge_bin, make_device, tmp_path):
    """A GE without CAP_SYS_NICE (as in its unprivileged container) cannot
    take SCHED_FIFO; its supervisor (the harness, root on the host) sets
    it on the process before the start instant. The GE takes it, with the
    priority it was given, and says it came from outside."""
    dev = make_device({"/a": 0})
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 200, 1000)
    proc, summary = _unprivileged_ge(ge_bin, trace, tmp_path, 1.5)
    time.sleep(0.5)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    assert os.sched_getscheduler(proc.pid) != os.SCHED_FIFO     # setpriv exec'd the GE: this is its pid
    os.sched_setscheduler(proc.pid, os.SCHED_FIFO, os.sched_param(30))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    s = json.loads(summary.read_text())
    assert s["ok"] == 200
    sched = s["sched"]
    assert (sched["policy"], sched["set_by"], sched["priority"], sched["error"]) == ("fifo", "outside", 30, None)
    assert 0 < sched["duty_max"] <= 0.2


def test_fifo_not_given_in_time_falls_back_and_starts_on_time(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 100, 1000)
    proc, summary = _unprivileged_ge(ge_bin, trace, tmp_path, 0.5)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err                           # not "the start instant passed"
    s = json.loads(summary.read_text())
    assert s["ok"] == 100 and s["sched"]["policy"] == "other" and s["sched"]["set_by"] is None
    assert "not given from outside in time" in s["sched"]["error"]


def test_fifo_yields_inside_a_half_budget_at_high_rate(ge_bin, make_device, tmp_path):
    """100,000 requests/s for 2 s under a 50 % budget: the GE must give
    up the CPU (yields > 0) and is never preempted or throttled (the
    kernel would throttle a loop spinning past 500 ms per second)."""
    dev = make_device({"/a": 0}, "--threads", "1")
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 200_000, 10)
    run = run_ge(ge_bin, trace, "--cpu", str(max(os.sched_getaffinity(0))), "--sched", "fifo",
                 "--rt-budget", "500000/1000000")
    assert run.returncode == 0, run.stderr
    s = run.summary["sched"]
    assert s["policy"] == "fifo"
    assert s["yields"] > 0 and s["yield_us"] > 0
    assert s["stalls"] == 0, s
    assert run.summary["ok"] == 200_000


def test_other_is_the_default(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = poisson_trace(tmp_path / "t.csv", dev.uri("/a"), 50, 1000)
    run = run_ge(ge_bin, trace)
    assert run.returncode == 0, run.stderr
    s = run.summary["sched"]
    assert (s["policy"], s["requested"], s["priority"], s["budget_us"]) == ("other", "other", None, None)
    assert s["yields"] == 0


@pytest.mark.parametrize("args, field", [
    (["--sched", "fifo"], "--rt-budget"),
    (["--sched", "rr", "--rt-budget", "1000/2000"], "--sched"),
    (["--sched", "fifo", "--rt-budget", "20000/1000000"], "--rt-budget"),   # under the 3 % margin
    (["--sched", "fifo", "--rt-budget", "2000/1000"], "--rt-budget"),
    (["--sched", "fifo", "--rt-budget", "500000"], "--rt-budget"),
    (["--sched", "fifo", "--rt-budget", "1000/2000", "--rt-prio", "0"], "--rt-prio"),
    (["--sched", "fifo", "--rt-budget", "1000/2000", "--rt-prio", "100"], "--rt-prio"),
])
def test_bad_rt_options(args, field, ge_bin, tmp_path):
    trace = write_trace(tmp_path / "t.csv", [(0, 1000, "GET", "coap://127.0.0.1:5683/x")])
    run = run_ge(ge_bin, trace, *args)
    assert run.returncode == 2 and field in run.stderr, run.stderr
