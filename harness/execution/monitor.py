"""Resource monitor: collectl (per-CPU utilisation, memory, network, every
second) pinned to the reserved cores, plus a sampler of every run
container's CPU time and memory read straight from its cgroup (v1:
cpuacct/memory controllers; v2: the unified hierarchy).

Both end up as CSV on the run's clock: ``t_us`` relative to t0 (the common
start instant of the GEs), so they line up with the GE outputs.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from wotbench.base.results import atomic_file

if TYPE_CHECKING:      # pandas is imported where frames are made: `wotbench plan` does without
    import pandas as pd


CGROOT = Path(os.environ.get("WOTBENCH_CGROUP_ROOT", "/sys/fs/cgroup"))


# --- per-container cgroup figures -----------------------------------------

def cgroup_files(container_id: str, root: Path = CGROOT) -> tuple[Path, Path, str] | None:
    """(cpu file, memory file, kind) of a container under Docker's
    cgroupfs or systemd driver; None when neither layout has it."""
    v1_cpu = root / "cpuacct" / "docker" / container_id / "cpuacct.usage"
    if v1_cpu.exists():
        return v1_cpu, root / "memory" / "docker" / container_id / "memory.usage_in_bytes", "v1"
    for d in (root / "docker" / container_id, root / "system.slice" / f"docker-{container_id}.scope"):
        if (d / "cpu.stat").exists():
            return d / "cpu.stat", d / "memory.current", "v2"
    return None


def read_cgroup(files: tuple[Path, Path, str]) -> tuple[int, int, int]:
    """(cpu_usage_us, mem_bytes, anon_bytes) now. ``mem_bytes`` is the
    working set, as `docker stats` shows it: usage less the inactive file
    cache, so that the page cache of a GE writing its output (reclaimable,
    not the process's) does not read as growth in a long run.
    ``anon_bytes`` is the anonymous memory alone (v1 ``total_rss``, v2
    ``anon``): the heaps and stacks of the processes, what a leak grows;
    -1 when the cgroup does not say."""
    cpu_file, mem_file, kind = files
    if kind == "v1":
        cpu_us = int(cpu_file.read_text()) // 1000
    else:
        stat = dict(line.split() for line in cpu_file.read_text().splitlines())
        cpu_us = int(stat["usage_usec"])
    usage = int(mem_file.read_text())
    try:
        mstat = dict(line.split() for line in (mem_file.parent / "memory.stat").read_text().splitlines())
        inactive = int(mstat.get("total_inactive_file" if kind == "v1" else "inactive_file", 0))
        anon = int(mstat.get("total_rss" if kind == "v1" else "anon", -1))
    except (OSError, ValueError):
        inactive, anon = 0, -1
    return cpu_us, max(0, usage - inactive), anon


SAMPLE_COLUMNS = ["epoch_us", "container", "role", "cpu_usage_us", "mem_bytes", "anon_bytes"]


@dataclass
class ContainerSampler:
    """Samples every registered container once a second in a thread. With
    a ``spool`` file every sample is appended to it as it is taken, so
    that an hour with a thousand containers costs disk, not the harness's
    memory (a soak would otherwise read as the harness's own drift);
    without one (tests), the rows stay in memory."""

    interval_s: float = 1.0
    spool: Path | None = None
    rows: list[tuple[int, str, str, int, int, int]] = field(default_factory=list)
    _targets: dict[str, tuple[str, str, tuple[Path, Path, str] | None]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _fh: TextIO | None = None

    def add(self, container_id: str, name: str, role: str) -> None:
        with self._lock:
            self._targets[container_id] = (name, role, cgroup_files(container_id))

    def start(self) -> None:
        if self.spool is not None:
            self.spool.parent.mkdir(parents=True, exist_ok=True)
            self._fh = self.spool.open("w", buffering=1 << 16)
            self._fh.write(",".join(SAMPLE_COLUMNS) + "\n")
        self._thread = threading.Thread(target=self._loop, name="cgroup-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        next_t = time.monotonic()
        while not self._stop.is_set():
            self.sample_once()
            next_t += self.interval_s
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def sample_once(self) -> None:
        now_us = time.time_ns() // 1000
        with self._lock:
            targets = list(self._targets.items())
        rows = []
        for cid, (name, role, files) in targets:
            if files is None:
                files = cgroup_files(cid)
                if files is None:
                    continue
                with self._lock:
                    self._targets[cid] = (name, role, files)
            try:
                cpu_us, mem, anon = read_cgroup(files)
            except (OSError, ValueError, KeyError):
                continue              # the container is gone (killed or removed)
            rows.append((now_us, name, role, cpu_us, mem, anon))
        with self._lock:
            if self._fh is not None:
                self._fh.writelines(",".join(map(str, r)) + "\n" for r in rows)
                self._fh.flush()
            elif self.spool is None:
                self.rows.extend(rows)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None

    def write_csv(self, path: Path, t0_epoch_us: int, chunk_rows: int = 1 << 18) -> None:
        """The samples as ``path`` (``t_us`` on t0 in place of the epoch),
        written atomically and, from a spool, in chunks of bounded size;
        the spool is removed once the file is in place."""
        import pandas as pd

        self.stop()
        with atomic_file(path, "w") as fh:
            chunks = (pd.read_csv(self.spool, chunksize=chunk_rows) if self.spool is not None
                      and self.spool.exists() else [pd.DataFrame(self.rows, columns=SAMPLE_COLUMNS)])
            header = True
            for df in chunks:
                df.insert(0, "t_us", df.pop("epoch_us") - t0_epoch_us)
                df.to_csv(fh, index=False, header=header)
                header = False
            if header:
                fh.write(",".join(["t_us", *SAMPLE_COLUMNS[1:]]) + "\n")
        if self.spool is not None:
            self.spool.unlink(missing_ok=True)

    def frame(self, t0_epoch_us: int) -> pd.DataFrame:
        """The samples in memory (tests; a spooled sampler reads its spool)."""
        import pandas as pd

        df = (pd.read_csv(self.spool) if self.spool is not None and self.spool.exists()
              else pd.DataFrame(self.rows, columns=SAMPLE_COLUMNS))
        df.insert(0, "t_us", df.pop("epoch_us") - t0_epoch_us)
        return df


# --- collectl ---------------------------------------------------------------

@dataclass
class Collectl:
    """collectl writing plot files into ``workdir`` until stopped."""

    workdir: Path
    cores: Sequence[int]
    proc: subprocess.Popen[bytes] | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("collectl") is not None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # -oUmz: epoch-seconds time stamps with ms, uncompressed plot files.
        # A signal arriving inside Popen would leave a collectl nobody
        # knows about: hold SIGINT/SIGTERM until self.proc is set.
        held = {signal.SIGINT, signal.SIGTERM}
        signal.pthread_sigmask(signal.SIG_BLOCK, held)
        try:
            with open(self.workdir / "collectl.err", "wb") as err:
                self.proc = subprocess.Popen(
                    ["collectl", "-scmnC", "-i1", "-P", "-oUmz", "-F1", "-f", str(self.workdir)],
                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            # Pinned from outside: a preexec_fn in a process with threads can
            # deadlock the child between fork and exec.
            os.sched_setaffinity(self.proc.pid, set(self.cores))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, held)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM (collectl flushes its files in 1-3 s), SIGKILL after ``grace_s``."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def frame(self, t0_epoch_us: int) -> pd.DataFrame:
        """One row per second: t_us, per-CPU user/sys/idle %, memory, network."""
        import pandas as pd

        cpu = _read_plot(self.workdir, ".cpu")
        tab = _read_plot(self.workdir, ".tab")
        if cpu is None or tab is None:
            return pd.DataFrame(columns=["t_us"])
        keep_cpu = {c: c.replace("[CPU:", "cpu").replace("]", "_").replace("%", "").lower()
                    for c in cpu.columns
                    if c.startswith("[CPU:") and c.split("]")[1] in ("User%", "Sys%", "Idle%")}
        keep_tab = {"[MEM]Tot": "mem_total_kb", "[MEM]Used": "mem_used_kb",
                    "[MEM]Free": "mem_free_kb", "[MEM]Cached": "mem_cached_kb",
                    "[NET]RxKBTot": "net_rx_kb_s", "[NET]TxKBTot": "net_tx_kb_s",
                    "[NET]RxPktTot": "net_rx_pkt_s", "[NET]TxPktTot": "net_tx_pkt_s"}
        df = cpu[["#UTC", *keep_cpu]].rename(columns=keep_cpu).merge(
            tab[["#UTC", *[k for k in keep_tab if k in tab.columns]]].rename(columns=keep_tab),
            on="#UTC", how="outer").sort_values("#UTC")
        df.insert(0, "t_us", (df.pop("#UTC") * 1e6).round().astype("int64") - t0_epoch_us)
        return df


def _read_plot(workdir: Path, suffix: str) -> pd.DataFrame | None:
    import pandas as pd

    files = sorted(workdir.glob(f"*{suffix}"))
    if not files:
        return None
    frames = []
    for f in files:
        header = None
        with f.open() as fh:
            for line in fh:
                if line.startswith("#UTC"):
                    header = line.split()
                    break
        if header is None:
            continue
        frames.append(pd.read_csv(f, sep=" ", comment="#", header=None, names=header))
    return pd.concat(frames, ignore_index=True) if frames else None
