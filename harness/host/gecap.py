"""A GE's capacity on this host: how many requests per second one
``wotbench-ge`` submits with its p99 send lag within a limit, measured
once (a few short traces against one ``wotbench-device`` on loopback, the
GE pinned to the core it would get) and cached by the host's fingerprint.

The cache is one JSON file, ``$XDG_CACHE_HOME/wotbench/ge-capacity.json``
(default ``~/.cache/wotbench/``), one entry per fingerprint: CPU model,
core count, kernel release, the GE binary's sha256 and the scheduler
policy. Another fingerprint (a rebuilt GE, another kernel) is a miss and
measures again. An entry keeps every measured point (rate, p99 send lag),
so the capacity for any send-lag limit is read from it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.results import cpu_model, write_atomic
from wotbench.host import loopback

__all__ = ["Fingerprint", "GeCapacity", "CalibrationSetup", "cache_path", "fingerprint",
           "calibrate", "cached", "store", "capacity_for", "RATES", "MARGIN"]

CACHE_FORMAT = 1
#: Target rates of the calibration, in req/s, tried in order until one fails.
RATES = (5_000, 10_000, 20_000, 35_000, 50_000, 75_000, 100_000, 150_000, 200_000, 300_000)
#: A rate counts as kept up when its p99 send lag is at most this share of
#: the spec's limit (thresholds are for whole runs; the calibration is short).
MARGIN = 0.5
#: The sweep stops at the first rate whose p99 send lag exceeds this (the default limit).
LIMIT_US = 1000.0
_BIN = Path(__file__).resolve().parents[2] / "build" / "bin"


@dataclass(frozen=True)
class Fingerprint:
    cpu_model: str
    cores: int
    kernel: str
    ge_sha256: str
    sched: str

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class GeCapacity:
    """One calibration: the points measured, when and where."""

    fingerprint: Fingerprint
    points: tuple[tuple[float, float], ...]      # (achieved rate req/s, p99 send lag us)
    measured_at: str                             # ISO 8601, UTC
    ge_core: int
    device_core: int
    seconds: float                               # wall time of the calibration
    path: Path | None = None                     # the cache file it is stored in

    def capacity(self, lag_limit_us: float, margin: float = MARGIN) -> float:
        """The highest rate whose p99 send lag is within ``margin`` of the
        limit (0 when none was)."""
        ok = [r for r, p99 in self.points if p99 <= lag_limit_us * margin]
        return float(max(ok)) if ok else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": asdict(self.fingerprint), "points": [list(p) for p in self.points],
                "measured_at": self.measured_at, "ge_core": self.ge_core,
                "device_core": self.device_core, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, d: dict[str, Any], path: Path | None) -> GeCapacity:
        return cls(Fingerprint(**d["fingerprint"]), tuple((float(r), float(p)) for r, p in d["points"]),
                   str(d["measured_at"]), int(d["ge_core"]), int(d["device_core"]), float(d["seconds"]), path)


@dataclass(frozen=True)
class CalibrationSetup:
    """What a calibration runs: the binaries, the cores, the policy."""

    ge_core: int
    device_core: int
    sched: str = "normal"                        # or "fifo" (chrt -f 1)
    ge_bin: Path = _BIN / "wotbench-ge"
    device_bin: Path = _BIN / "wotbench-device"
    rates: Sequence[int] = RATES
    seconds_per_rate: float = 0.5
    repetitions: int = 2


def cache_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".cache")
    return Path(base) / "wotbench" / "ge-capacity.json"


def _sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as err:
        raise UserError(f"cannot read the GE binary ({err.strerror}): run make build", str(path)) from None


def fingerprint(ge_bin: Path, sched: str) -> Fingerprint:
    return Fingerprint(cpu_model() or "unknown", os.cpu_count() or 0, platform.release(), _sha256(ge_bin), sched)


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}                                # a damaged cache is measured again
    return data.get("entries", {}) if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else {}


def cached(fp: Fingerprint, path: Path) -> GeCapacity | None:
    """The entry of ``fp`` in the cache file, or None (a miss)."""
    entry = _read_cache(path).get(fp.key)
    if not isinstance(entry, dict):
        return None
    try:
        cap = GeCapacity.from_dict(entry, path)
    except (KeyError, TypeError, ValueError):
        return None
    return cap if cap.fingerprint == fp else None


def store(cap: GeCapacity, path: Path) -> GeCapacity:
    """Adds ``cap`` to the cache file (atomically); returns it with its path."""
    entries = _read_cache(path)
    entries[cap.fingerprint.key] = cap.to_dict()
    write_atomic(path, json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1))
    return GeCapacity(cap.fingerprint, cap.points, cap.measured_at, cap.ge_core, cap.device_core,
                      cap.seconds, path)


def capacity_for(setup: CalibrationSetup, *, force: bool = False, path: Path | None = None,
                 say: Callable[[str], None] = print) -> GeCapacity:
    """The cached capacity of this host, measured first on a miss (or ``force``)."""
    path = path or cache_path()
    fp = fingerprint(setup.ge_bin, setup.sched)
    hit = None if force else cached(fp, path)
    if hit is not None:
        return hit
    say(f"calibrating the GE on core {setup.ge_core} (device on core {setup.device_core}, "
        f"{setup.sched} scheduler; about {_estimate_s(setup):.0f} s, once per host) ...")
    return store(calibrate(setup), path)


def _estimate_s(s: CalibrationSetup) -> float:
    return len(s.rates) * s.repetitions * (s.seconds_per_rate + 0.3)


# --- the measurement --------------------------------------------------------


def _start_device(s: CalibrationSetup, work: Path) -> tuple[subprocess.Popen[str], int]:
    try:
        return loopback.start_device(s.device_bin, work, cpu=s.device_core, threads=2, policy=s.sched)
    except OSError as err:
        raise UserError(f"cannot start the device ({err.strerror}): run make build", str(s.device_bin)) from None
    except RuntimeError as err:
        raise RuntimeError(f"calibration: {err}") from None


def _one(s: CalibrationSetup, work: Path, rate: int, port: int, rep: int) -> tuple[float, float]:
    trace, out, summ = work / "t.csv", work / "o.csv", work / "s.json"
    loopback.poisson_trace(trace, rate, s.seconds_per_rate, f"coap://127.0.0.1:{port}/a", seed=rep * 7919 + rate)
    p = subprocess.run([*loopback.sched_prefix(s.sched), str(s.ge_bin), "--trace", str(trace), "--out", str(out),
                        "--summary", str(summ), "--cpu", str(s.ge_core), "--type", "con",
                        "--timeout-ms", "1000", "--quiet"],
                       capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"calibration: wotbench-ge exited {p.returncode}: {p.stderr.strip()[-300:]}")
    d = json.loads(summ.read_text())
    return float(d["achieved_rate_rps"]), float(d["send_lag_us"]["p99"])


def calibrate(s: CalibrationSetup) -> GeCapacity:
    """Measures the GE at each rate of ``s.rates`` (median p99 send lag over
    the repetitions) until one exceeds the send-lag limit the GE is held to
    by default (1 ms); every point measured is kept."""
    t0 = time.monotonic()
    points: list[tuple[float, float]] = []
    work = Path(tempfile.mkdtemp(prefix="wotbench-gecap-"))
    dev, port = _start_device(s, work)
    try:
        for rate in s.rates:
            runs = [_one(s, work, rate, port, rep) for rep in range(s.repetitions)]
            achieved = float(np.median([r for r, _ in runs]))
            p99 = float(np.median([p for _, p in runs]))
            points.append((round(achieved, 1), round(p99, 1)))
            if p99 > LIMIT_US:
                break
    finally:
        dev.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            dev.wait(timeout=5)
        if dev.poll() is None:
            dev.kill()
            dev.wait()
        shutil.rmtree(work, ignore_errors=True)
    return GeCapacity(fingerprint(s.ge_bin, s.sched), tuple(points),
                      time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), s.ge_core, s.device_core,
                      round(time.monotonic() - t0, 1))
