"""wotbench-hog on this host: a short cpu and membw episode each (release
and ASan builds), the JSON line's fields and their consistency, SIGTERM
before the end, and bad arguments (exit 2, one line)."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from wotbench.tests.building import build

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

ROOT = Path(__file__).resolve().parents[2]
BINS = {"release": ROOT / "build" / "bin" / "wotbench-hog", "asan": ROOT / "build" / "asan" / "wotbench-hog"}


@pytest.fixture(scope="module")
def hog_bins() -> dict[str, Path]:
    build(ROOT, list(BINS.values()))
    return BINS


def _now_us() -> int:
    return time.time_ns() // 1000


def _run(binary: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout,
                          env={"ASAN_OPTIONS": "detect_leaks=1", "UBSAN_OPTIONS": "halt_on_error=1"})


def _episode(binary: Path, kind: str, threads: int, *extra: str) -> dict[str, Any]:
    start = _now_us() + 300_000
    end = start + 400_000
    proc = _run(binary, "--kind", kind, "--threads", str(threads), "--start-at", str(start),
                "--end-at", str(end), *extra)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout
    out: dict[str, Any] = json.loads(lines[0])
    assert out["kind"] == kind and out["threads"] == threads and out["interrupted"] is False
    # It slept until the planned start (an absolute sleep never wakes early)
    # and ran until the end; how late it woke is a timing figure, not a check.
    assert out["start_us"] >= start
    assert out["end_us"] >= end >= out["start_us"]
    return out


@pytest.mark.parametrize("build", ["release", "asan"])
def test_cpu_episode(hog_bins: dict[str, Path], build: str) -> None:
    out = _episode(hog_bins[build], "cpu", 2)
    assert out["loops"] > 0 and "bytes" not in out


@pytest.mark.parametrize("build", ["release", "asan"])
def test_membw_episode(hog_bins: dict[str, Path], build: str) -> None:
    buf = 8 << 20
    out = _episode(hog_bins[build], "membw", 1, "--buffer", str(buf + 7))
    assert out["buffer"] == buf                    # whole cache lines
    assert out["bytes"] > 0 and out["bytes"] % (1 << 20) == 0
    secs = (out["end_us"] - out["start_us"]) / 1e6
    assert out["gbps"] == pytest.approx(out["bytes"] / secs / 1e9, rel=0.01, abs=0.001)


def test_sigterm_before_the_end(hog_bins: dict[str, Path]) -> None:
    start = _now_us() + 100_000
    proc = subprocess.Popen([str(hog_bins["release"]), "--kind", "cpu", "--threads", "1",
                             "--start-at", str(start), "--end-at", str(start + 60_000_000)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["end_us"] < start + 60_000_000
    assert doc["end_us"] >= doc["start_us"]


def test_sigterm_before_the_start(hog_bins: dict[str, Path]) -> None:
    start = _now_us() + 60_000_000
    proc = subprocess.Popen([str(hog_bins["release"]), "--kind", "membw", "--threads", "1",
                             "--buffer", "65536", "--start-at", str(start), "--end-at", str(start + 1)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["start_us"] < start


NOW = "1700000000000000"
LATER = "1700000001000000"


@pytest.mark.parametrize("args, field", [
    ([], "--kind"),
    (["--kind", "gpu", "--threads", "1", "--start-at", NOW, "--end-at", LATER], "--kind"),
    (["--kind", "cpu", "--start-at", NOW, "--end-at", LATER], "--threads"),
    (["--kind", "cpu", "--threads", "0", "--start-at", NOW, "--end-at", LATER], "--threads"),
    (["--kind", "cpu", "--threads", "1025", "--start-at", NOW, "--end-at", LATER], "--threads"),
    (["--kind", "cpu", "--threads", "-1", "--start-at", NOW, "--end-at", LATER], "--threads"),
    (["--kind", "cpu", "--threads", "1x", "--start-at", NOW, "--end-at", LATER], "--threads"),
    (["--kind", "cpu", "--threads", "1", "--end-at", LATER], "--start-at"),
    (["--kind", "cpu", "--threads", "1", "--start-at", "soon", "--end-at", LATER], "--start-at"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW], "--end-at"),
    (["--kind", "cpu", "--threads", "1", "--start-at", LATER, "--end-at", NOW], "--end-at"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW, "--end-at", NOW], "--end-at"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW, "--end-at", "99999999999999999999999"], "--end-at"),
    (["--kind", "membw", "--threads", "1", "--start-at", NOW, "--end-at", LATER], "--buffer"),
    (["--kind", "membw", "--threads", "1", "--start-at", NOW, "--end-at", LATER, "--buffer", "64"], "--buffer"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW, "--end-at", LATER, "--buffer", "65536"], "--buffer"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW, "--end-at", LATER, "extra"], "argument"),
    (["--kind", "cpu", "--threads", "1", "--start-at", NOW, "--end-at", LATER, "--nope"], "argument"),
    (["--kind"], "argument"),
])
@pytest.mark.parametrize("build", ["release", "asan"])
def test_bad_arguments(hog_bins: dict[str, Path], build: str, args: list[str], field: str) -> None:
    proc = _run(hog_bins[build], *args)
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {field}: "), proc.stderr
