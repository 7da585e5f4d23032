"""The trace kept in memory ahead of the loop (keep.h; README.md, "The
trace kept resident"). A host that pages cold file pages out (this VM's
DAMON pageout scheme: docs/soak.md, "Holes in the schedule") made the
loop wait on the disk inside a page fault. Here the page cache of the
trace is dropped every 20 ms while the GE runs (POSIX_FADV_DONTNEED, which
spares only mapped and locked pages): the keeper must read each chunk back
before the loop gets there and lock it, within its RLIMIT_MEMLOCK window,
so that the loop takes (almost) no major fault; without room to lock it
reads ahead only, and says so."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from gehelpers import write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

CHUNK = 64 << 10
PATH = "/" + "k" * 200          # ~240-byte lines: a 19 MB trace in 80,000 lines


def _trace(path: Path, uri: str, n: int, gap_us: int) -> Path:
    return write_trace(path, [(0, 1000 + i * gap_us, "GET", uri) for i in range(n)])


def _run_evicted(ge_bin: Path, trace: Path, memlock: int, *, user: tuple[str, ...] = (),
                 outdir: Path | None = None) -> dict[str, Any]:
    """The GE under `prlimit --memlock` (lowered only: raising it past the
    hard limit takes CAP_SYS_RESOURCE, which these hosts' root lacks), the
    trace's page cache dropped every 20 ms until it exits: its summary."""
    base = (outdir or trace.parent) / trace.stem
    out, summary = base.with_suffix(".out.csv"), base.with_suffix(".json")
    done = threading.Event()

    def evict() -> None:
        fd = os.open(trace, os.O_RDONLY)
        try:
            while not done.wait(0.02):
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)

    t = threading.Thread(target=evict)
    t.start()
    try:
        p = subprocess.run([*user, "prlimit", f"--memlock={memlock}:{memlock}", str(ge_bin), "--trace", str(trace),
                            "--out", str(out), "--summary", str(summary), "--quiet", "--type", "non",
                            "--timeout-ms", "200"], capture_output=True, text=True, timeout=120)
    finally:
        done.set()
        t.join()
    assert p.returncode == 0, p.stderr
    doc: dict[str, Any] = json.loads(summary.read_text())
    return doc


def test_the_trace_is_locked_ahead_of_the_loop_and_read_back_when_dropped(ge_bin, make_device, tmp_path):
    dev = make_device({PATH: 0})
    trace = _trace(tmp_path / "t.csv", dev.uri(PATH), 80_000, 25)
    size = trace.stat().st_size
    s = _run_evicted(ge_bin, trace, 4 << 20)
    _kept_ahead(s, size)


def _kept_ahead(s: dict[str, Any], size: int) -> None:
    k = s["trace_keep"]
    assert (k["mode"], k["probe"], k["lock_error"]) == ("locked", "nowait", None), k
    assert k["window_bytes"] == (4 << 20) - CHUNK, k            # RLIMIT_MEMLOCK less a chunk of room
    assert 0 < k["locked_peak_bytes"] <= k["window_bytes"], k
    assert k["behind"] == 0 and k["chunks"] == math.ceil(size / CHUNK), (k, size)
    assert k["misses"] >= 1, k                                  # dropped chunks were asked back
    # Without the keeper every readahead window of the 19 MB is a major
    # fault of the loop (~150); a chunk dropped between the keeper's check
    # and its lock (microseconds) is faulted in by mlock: rare.
    assert 0 <= s["sched"]["majflt"] <= 3, (s["sched"], k)
    assert s["requests"] == 80_000


def test_a_ge_that_does_not_own_its_trace_sees_what_is_paged_out(ge_bin, make_device, tmp_path):
    """As a GE under the harness: uid 65534, the trace root's. mincore
    reports every page of a file resident to a process that neither owns
    it nor may write it (Linux 5.0 on), so the keeper asks the page cache
    itself (a read with RWF_NOWAIT), and still finds the dropped chunks."""
    if os.geteuid() != 0:
        import pytest
        pytest.skip("needs root to run the GE as another user (the root tier runs it)")
    dev = make_device({PATH: 0})
    shared = Path(tempfile.mkdtemp(prefix="wb-keep-"))       # pytest's tmp folders are 0700
    try:
        shared.chmod(0o755)
        out = shared / "out"
        out.mkdir(mode=0o777)
        out.chmod(0o777)
        trace = _trace(shared / "t.csv", dev.uri(PATH), 80_000, 25)
        trace.chmod(0o644)
        ge = shared / "wotbench-ge"     # the build folder may not be open to uid 65534 (a mktemp clone: 0700)
        shutil.copy2(ge_bin, ge)
        ge.chmod(0o755)
        s = _run_evicted(ge, trace, 4 << 20, outdir=out,
                         user=("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"))
        _kept_ahead(s, trace.stat().st_size)
    finally:
        shutil.rmtree(shared)


def test_without_room_to_lock_it_reads_ahead_and_says_so(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = _trace(tmp_path / "t.csv", dev.uri("/a"), 2000, 100)
    s = _run_evicted(ge_bin, trace, 0)
    k = s["trace_keep"]
    assert (k["mode"], k["window_bytes"], k["locked_peak_bytes"], k["lock_error"]) == \
        ("prefetch", 256 << 10, 0, None), k
    assert s["ok"] == 2000


def test_the_sched_object_counts_holds_and_major_faults(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    trace = _trace(tmp_path / "t.csv", dev.uri("/a"), 500, 200)
    s = _run_evicted(ge_bin, trace, 1 << 20)["sched"]
    assert {"holds", "hold_max_us", "hold_total_us", "majflt"} <= s.keys(), s
    assert all(isinstance(s[f], int) and s[f] >= 0 for f in ("holds", "hold_max_us", "hold_total_us", "majflt")), s
    assert (s["hold_max_us"] == 0) == (s["holds"] == 0) and s["hold_total_us"] >= s["hold_max_us"], s
