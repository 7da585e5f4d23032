"""--spin-us: a GE sharing its core (the CD-GE on a 2-core host) blocks
between far-apart sends instead of spinning, and still sends every request."""

from __future__ import annotations

import resource

import pytest
from gehelpers import SAN_ENV, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial


def child_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


@pytest.mark.parametrize("asan", [False, True])
def test_spin_us_blocks_between_sends(asan, ge_bin, ge_asan_bin, make_device, tmp_path):
    dev = make_device({"/s0": 0})
    rows = [(0, 200_000 * (i + 1), "GET", dev.uri("/s0")) for i in range(6)]
    trace = write_trace(tmp_path / "t.csv", rows)
    before = child_cpu_s()
    run = run_ge(ge_asan_bin if asan else ge_bin, trace, "--spin-us", "2000",
                 env=SAN_ENV if asan else None)
    cpu = child_cpu_s() - before
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "ok").all() and len(run.rows) == 6
    assert (run.rows.response_us >= run.rows.service_us).all()
    assert run.summary["config"]["spin_us"] == 2000
    # 1.2 s of trace: a spinning loop burns about that much CPU; a blocking
    # one a few ms per send plus start-up (ASan's is larger).
    assert cpu < 0.5, f"{cpu:.3f} s of CPU in a 1.2 s run: the GE did not block"


def test_spin_us_is_checked(ge_bin, tmp_path):
    trace = write_trace(tmp_path / "t.csv", [(0, 1000, "GET", "coap://127.0.0.1:5683/x")])
    run = run_ge(ge_bin, trace, "--spin-us", "-5")
    assert run.returncode == 2 and "--spin-us" in run.stderr
