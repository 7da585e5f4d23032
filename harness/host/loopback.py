"""One wotbench-ge against one wotbench-device, for measuring the GE: a
Poisson trace to one resource, a free UDP port, the device started on a
core, the scheduling prefix. Shared by the GE calibration
(:mod:`wotbench.host.gecap`) and the benchmarks (gateway-emulator/bench/)."""

from __future__ import annotations

import csv
import socket
import subprocess
from pathlib import Path

import numpy as np

__all__ = ["poisson_trace", "free_port", "sched_prefix", "start_device"]


def poisson_trace(path: Path, rate: float, seconds: float, uri: str, seed: int, offset_us: int = 0,
                  regular: bool = False) -> int:
    """A trace CSV of exponential RITs at ``rate`` req/s for ``seconds``
    (``regular``: every RIT 1/rate, the schedule with the fewest gaps),
    every request a GET of ``uri`` by device 0; returns the request count."""
    rng = np.random.default_rng(seed)
    n = max(2, int(rate * seconds))
    rits = np.full(n, 1e6 / rate) if regular else rng.exponential(1e6 / rate, n)
    ts = np.floor(np.cumsum(rits)).astype(np.int64) + offset_us
    with path.open("w", newline="") as fh:       # csv, not pandas: `wotbench plan` imports this module
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["device_id", "send_ts_us", "method", "uri"])
        w.writerows((0, t, "GET", uri) for t in ts.tolist())
    return n


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sched_prefix(policy: str) -> list[str]:
    """``chrt -f 1`` for ``fifo``, nothing for the normal scheduler."""
    return ["chrt", "-f", "1"] if policy == "fifo" else []


def start_device(device_bin: Path, work: Path, *, cpu: int, threads: int, policy: str
                 ) -> tuple[subprocess.Popen[str], int]:
    """A wotbench-device on 127.0.0.1 serving ``/a`` with zero service time,
    pinned to ``cpu``; returns it once it listens, and its port. Raises
    OSError when it cannot be started, RuntimeError when it did not listen."""
    res = work / "res.csv"
    res.write_text("path,service_us\n/a,0\n")
    port = free_port()
    proc = subprocess.Popen([*sched_prefix(policy), str(device_bin), "--listen", f"127.0.0.1:{port}",
                             "--resources", str(res), "--threads", str(threads), "--cpus", str(cpu)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if " resources on " not in line:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"wotbench-device did not start: {line.strip()}")
    return proc, port
