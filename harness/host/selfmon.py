"""The harness's own memory over the run: its resident set (``VmRSS`` of
``/proc/self/status``), thread count and CPU time, sampled every few
seconds in a thread. Saved as ``monitor/harness.csv`` on the run's clock
(``t_us`` relative to t0), next to ``monitor/containers.csv`` (GE, devices,
CD pair, from their cgroups), so a soak shows whether any of them grows.

Bounded: at most ``max_rows`` samples are kept; when full, every other
sample is dropped and the interval doubles, so an hour-long (or day-long)
run stays a few hundred kB.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:      # pandas is imported where the frame is made: `wotbench plan` does without
    import pandas as pd


COLUMNS = ["t_us", "rss_bytes", "threads", "cpu_user_s", "cpu_sys_s"]


def read_self(status: Path = Path("/proc/self/status")) -> tuple[int, int]:
    """(resident bytes, threads) of this process now."""
    rss = threads = 0
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024          # kB
        elif line.startswith("Threads:"):
            threads = int(line.split()[1])
    return rss, threads


@dataclass
class HarnessSampler:
    """Samples this process every ``interval_s`` seconds until stopped."""

    interval_s: float = 2.0
    max_rows: int = 4096
    rows: list[tuple[int, int, int, float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="harness-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.interval_s)

    def sample_once(self) -> None:
        try:
            rss, threads = read_self()
        except (OSError, ValueError):
            return
        t = os.times()
        with self._lock:
            self.rows.append((time.time_ns() // 1000, rss, threads, t.user, t.system))
            if len(self.rows) >= self.max_rows:        # thin out: keep every other, sample half as often
                self.rows = self.rows[::2]
                self.interval_s *= 2

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def frame(self, t0_epoch_us: int) -> pd.DataFrame:
        import pandas as pd

        with self._lock:
            df = pd.DataFrame(self.rows, columns=COLUMNS)
        df["t_us"] = df["t_us"] - t0_epoch_us
        return df
