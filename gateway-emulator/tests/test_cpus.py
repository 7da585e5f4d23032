"""--cpus LIST (and --cpu N, its one-core form): the GE runs on exactly LIST
during the run (as the kernel reports it in /proc/PID/task/*/status) and
writes the affinity in force, pinned or inherited, in its summary's config
as `cpus`; a bad LIST, both flags, or a CPU this process may not use is
one line, exit 2, nothing sent and no file created."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from gehelpers import SAN_ENV, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

AVAILABLE = os.sched_getaffinity(0)
#: A CPU number the list syntax allows but this process may not use.
ABSENT = max(c for c in range(1024) if c not in AVAILABLE)


def needs(*cpus: int) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not set(cpus) <= AVAILABLE,
                              reason=f"CPUs {cpus} are not all available to the tests")


def allowed_list(status: str) -> str:
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)$", status, re.M)
    assert m, status
    return m.group(1)


def thread_lists(pid: int) -> list[str]:
    out = []
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            out.append(allowed_list(status.read_text()))
        except FileNotFoundError:  # a thread that just ended
            pass
    return out


def own_list() -> str:
    return allowed_list(Path("/proc/self/status").read_text())


def one_second_trace(tmp_path: Path, dev) -> Path:
    """20 requests over 1 s to one device."""
    return write_trace(tmp_path / "t.csv",
                       [(0, i * 50_000, "GET", dev.uri("/r")) for i in range(20)])


@pytest.mark.parametrize("build", ["release", "asan"])
@pytest.mark.parametrize("flags,cpus,cpu", [
    pytest.param(("--cpus", "1"), "1", 1, marks=needs(1)),
    pytest.param(("--cpus", "0-1"), "0-1", -1, marks=needs(0, 1)),
    pytest.param(("--cpu", "1"), "1", 1, marks=needs(1)),
])
def test_the_run_holds_the_list_and_the_summary_records_it(
        make_device, request, tmp_path, build, flags, cpus, cpu):
    binary = request.getfixturevalue("ge_bin" if build == "release" else "ge_asan_bin")
    dev = make_device({"/r": 0})
    trace = one_second_trace(tmp_path, dev)
    summary = tmp_path / "s.json"
    # Start 1 s from now: the GE pins before it waits, and is mid-run at 1.5 s.
    start = time.time() + 1.0
    proc = subprocess.Popen([str(binary), "--trace", str(trace), "--out", str(tmp_path / "o.csv"),
                             "--summary", str(summary), "--quiet",
                             "--start-at", str(int(start * 1e6)), *flags],
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, **SAN_ENV))
    try:
        time.sleep(max(0.0, start + 0.5 - time.time()))
        assert proc.poll() is None, "the GE ended before the middle of its run"
        lists = thread_lists(proc.pid)
    finally:
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "ERROR: AddressSanitizer" not in err and "runtime error" not in err
    assert lists and set(lists) == {cpus}, lists
    doc = json.loads(summary.read_text())
    assert doc["config"]["cpus"] == cpus and doc["config"]["cpu"] == cpu
    assert doc["ok"] == 20


def test_unpinned_records_the_inherited_list(make_device, ge_bin, tmp_path):
    dev = make_device({"/r": 0})
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", dev.uri("/r"))])
    run = run_ge(ge_bin, trace)
    assert run.returncode == 0, run.stderr
    assert run.summary["config"]["cpus"] == own_list() and run.summary["config"]["cpu"] == -1


@needs(1)
def test_taskset_is_recorded_as_the_list_in_force(make_device, ge_bin, tmp_path):
    dev = make_device({"/r": 0})
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", dev.uri("/r"))])
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    p = subprocess.run(["taskset", "-c", "1", str(ge_bin), "--trace", str(trace), "--out",
                        str(out), "--summary", str(summary), "--quiet"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(summary.read_text())["config"]["cpus"] == "1"


def refused(ge_bin: Path, tmp_path: Path, *args: str) -> str:
    """Runs the GE on a valid trace; asserts exit 2, one line, no file;
    returns the line."""
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", "coap://127.0.0.1:5999/a")])
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(tmp_path / "o.csv"),
                        "--summary", str(tmp_path / "s.json"), "--quiet", *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert not list(tmp_path.glob("o.csv*")) and not list(tmp_path.glob("s.json*"))
    return lines[0]


@pytest.mark.parametrize("value", ["", "x", "1,", "1,,2", "-1", "3-1", "1 ", "0-3:2", "1024"])
def test_bad_list(ge_bin, tmp_path, value):
    line = refused(ge_bin, tmp_path, "--cpus", value)
    assert re.fullmatch(rf"error: --cpus: expected .+, got '{re.escape(value)}'", line), line


@pytest.mark.parametrize("args", [("--cpu", "0", "--cpus", "0"), ("--cpus", "0", "--cpu", "0")])
def test_cpu_and_cpus_together_are_refused(ge_bin, tmp_path, args):
    line = refused(ge_bin, tmp_path, *args)
    assert line == "error: --cpus: give --cpu N or --cpus LIST, not both"


@pytest.mark.parametrize("flag", ["--cpus", "--cpu"])
def test_a_cpu_the_process_may_not_use_is_refused(ge_bin, tmp_path, flag):
    line = refused(ge_bin, tmp_path, flag, str(ABSENT))
    assert line == f"error: {flag}: no CPU of '{ABSENT}' is available to this process"


def test_a_list_the_kernel_would_narrow_is_refused(ge_bin, tmp_path):
    value = f"{min(AVAILABLE)},{ABSENT}"
    line = refused(ge_bin, tmp_path, "--cpus", value)
    assert line == (f"error: --cpus: only {min(AVAILABLE)} of '{value}' "
                    "is available to this process")
