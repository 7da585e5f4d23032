"""Helpers shared by the wotbench-ge tests (imported by name: conftest.py
puts this folder on sys.path)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from wotbench.tests.building import build

ROOT = Path(__file__).resolve().parents[2]
GE = ROOT / "build" / "bin" / "wotbench-ge"
GE_ASAN = ROOT / "build" / "asan" / "wotbench-ge"
DEVICE = ROOT / "build" / "bin" / "wotbench-device"
FUZZERS = [ROOT / "build" / "fuzz" / f"fuzz-gateway-emulator-{n}" for n in ("trace", "datagram")] + [
    ROOT / "build" / "fuzz" / f"fuzz-ge-{n}" for n in ("http", "obs")]
SEEDS = ROOT / "gateway-emulator" / "fuzz" / "seeds"
SAN_ENV = {"ASAN_OPTIONS": "detect_leaks=1:abort_on_error=0",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}


def make(targets: Sequence[Path]) -> None:
    """Builds targets incrementally (wotbench.tests.building)."""
    build(ROOT, targets)


def free_port(host: str = "127.0.0.1") -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def write_trace(path: Path, rows: Sequence[tuple[object, ...]], header: bool = True) -> Path:
    lines = ["device_id,send_ts_us,method,uri"] if header else []
    lines += [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@dataclass
class GeRun:
    returncode: int
    stderr: str
    out: Path
    summary_path: Path
    table: pd.DataFrame | None = None  # the --out CSV, read when the GE exited 0
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> pd.DataFrame:
        """The --out CSV; a run that failed has none, and asking for it
        fails the test with the GE's exit code and stderr."""
        assert self.table is not None, f"the GE exited {self.returncode}: {self.stderr}"
        return self.table


def run_ge(binary: Path, trace: Path, *args: str, timeout: float = 120,
           env: dict[str, str] | None = None) -> GeRun:
    """Runs the GE to completion; `timeout` only guards against a hang."""
    out = trace.with_suffix(".out.csv")
    summary = trace.with_suffix(".summary.json")
    cmd = [str(binary), "--trace", str(trace), "--out", str(out),
           "--summary", str(summary), "--quiet", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))
    run = GeRun(proc.returncode, proc.stderr, out, summary)
    if proc.returncode == 0:
        run.table = pd.read_csv(out, dtype={"code": str, "status": str})
        run.summary = json.loads(summary.read_text())
    return run
