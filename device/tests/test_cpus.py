"""--cpus LIST: every thread of the device runs on exactly LIST (as the
kernel reports it in /proc/PID/task/*/status), because the affinity is set
before any thread starts; a bad LIST, or one naming a CPU this process may
not use, is one `error: --cpus: ...` line and exit 2 before the socket is
bound; the affinity in force, pinned or inherited, is on the start-up line
and in the --stats JSON as `cpus`."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

AVAILABLE = os.sched_getaffinity(0)
#: A CPU number the list syntax allows but this process may not use.
ABSENT = max(c for c in range(1024) if c not in AVAILABLE)
ROWS = [("/zero", 0, None), ("/ms", 1000, None)]


def needs(*cpus: int) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not set(cpus) <= AVAILABLE,
                              reason=f"CPUs {cpus} are not all available to the tests")


def allowed_list(status: str) -> str:
    m = re.search(r"^Cpus_allowed_list:\s*(\S+)$", status, re.M)
    assert m, status
    return m.group(1)


def thread_lists(pid: int, threads: int, timeout: float = 5.0) -> dict[str, str]:
    """Cpus_allowed_list of every thread, once all `threads` exist (the
    workers start just after the start-up line)."""
    deadline = time.monotonic() + timeout
    while True:
        lists = {}
        for status in Path(f"/proc/{pid}/task").glob("*/status"):
            try:
                lists[status.parent.name] = allowed_list(status.read_text())
            except FileNotFoundError:  # a thread that just ended
                pass
        if len(lists) >= threads or time.monotonic() > deadline:
            return lists
        time.sleep(0.02)


def own_list() -> str:
    return allowed_list(Path("/proc/self/status").read_text())


@pytest.mark.parametrize("binary", ["release", "asan"])
@pytest.mark.parametrize("cpus", [pytest.param("1", marks=needs(1)),
                                  pytest.param("0-1", marks=needs(0, 1))])
def test_every_thread_runs_on_exactly_the_list(make_device, raw_client, wire, tmp_path,
                                               binary, cpus):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--threads", "3", "--mode", "busy", "--cpus", cpus,
                      "--stats", str(stats), binary=binary)
    assert dev.started.endswith(f", 3 threads, cpus {cpus}"), dev.started
    assert dev.proc is not None
    lists = thread_lists(dev.proc.pid, 4)
    assert len(lists) == 4, lists  # the network thread and 3 workers
    assert set(lists.values()) == {cpus}, lists
    c = raw_client(dev.addr)
    c.send(wire.encode(wire.CON, wire.GET, 1, b"t", ("ms",)))
    assert c.recv() is not None
    assert set(thread_lists(dev.proc.pid, 4).values()) == {cpus}
    assert dev.stop() == 0, dev.stderr
    assert "ERROR: AddressSanitizer" not in dev.stderr and "runtime error" not in dev.stderr
    doc = json.loads(stats.read_text())
    assert doc["cpus"] == cpus and doc["ok"] == 1


@needs(1)
def test_the_inherited_affinity_is_recorded(make_device, tmp_path):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--threads", "2", "--stats", str(stats), cpu=1)  # taskset -c 1
    assert dev.started.endswith(", cpus 1"), dev.started
    assert dev.proc is not None
    assert dev.stop() == 0
    assert json.loads(stats.read_text())["cpus"] == "1"


def test_unpinned_records_the_kernels_list(make_device, tmp_path):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--stats", str(stats))
    assert dev.proc is not None
    assert set(thread_lists(dev.proc.pid, 5).values()) == {own_list()}
    assert dev.started.endswith(f", cpus {own_list()}"), dev.started
    assert dev.stop() == 0
    assert json.loads(stats.read_text())["cpus"] == own_list()


@needs(0, 1)
def test_the_list_is_a_set_written_back_in_the_kernels_form(make_device):
    dev = make_device(ROWS, "--cpus", "1,0,0-0,01")
    assert dev.started.endswith(", cpus 0-1"), dev.started


BAD_SYNTAX = ["", "x", "1,", ",1", "1,,2", "1-", "-1", "3-1", "1-2-3", "0x1", "+1", " 1",
              "1 ", "0 1", "1;2", "1:2", "0-3:2", "١", "1024", "0-1024", "99999999999999999999"]


def run_held(device_bins, tmp_path, *args: str) -> subprocess.CompletedProcess[str]:
    """The device with --listen on a port this test holds: exit 1 (`cannot
    bind`) would show that the socket came before the check."""
    res = tmp_path / "res.csv"
    res.write_text("path,service_us\n/a,1\n")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return subprocess.run([str(device_bins["release"]), "--resources", str(res),
                               "--listen", f"127.0.0.1:{s.getsockname()[1]}",
                               "--stats", str(tmp_path / "stats.json"), *args],
                              capture_output=True, text=True, timeout=10)


def assert_refused(proc: subprocess.CompletedProcess[str], tmp_path: Path, pattern: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.fullmatch(pattern, lines[0]), lines[0]
    assert not list(tmp_path.glob("stats.json*"))


@pytest.mark.parametrize("value", BAD_SYNTAX)
def test_bad_list_is_one_line_exit_2(device_bins, tmp_path, value):
    proc = run_held(device_bins, tmp_path, "--cpus", value)
    assert_refused(proc, tmp_path, rf"error: --cpus: expected .+, got '{re.escape(value)}'")


def test_a_cpu_the_process_may_not_use_is_refused(device_bins, tmp_path):
    proc = run_held(device_bins, tmp_path, "--cpus", str(ABSENT))
    assert_refused(proc, tmp_path,
                   rf"error: --cpus: no CPU of '{ABSENT}' is available to this process")


def test_a_list_the_kernel_would_narrow_is_refused(device_bins, tmp_path):
    """sched_setaffinity keeps the usable part of a list without an error;
    the device reads it back and refuses to run on fewer CPUs than asked."""
    value = f"{min(AVAILABLE)},{ABSENT}"
    proc = run_held(device_bins, tmp_path, "--cpus", value)
    assert_refused(proc, tmp_path, rf"error: --cpus: only {min(AVAILABLE)} of "
                   rf"'{re.escape(value)}' is available to this process")


def test_help_names_the_flag(device_bins):
    proc = subprocess.run([str(device_bins["release"]), "--help"], capture_output=True,
                          text=True, timeout=10)
    assert proc.returncode == 0 and "--cpus LIST" in proc.stdout
