"""Where the time of bringing a run up and down goes: the duration of each
engine call per phase (``create``, ``start``, ``remove``, ...) and each
phase's wall time, as recorded by the backend while it works."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar, TypeVarTuple

import numpy as np

__all__ = ["PhaseTimes"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")


@dataclass
class PhaseTimes:
    """Per phase: every call's seconds, and the phase's wall seconds."""

    calls: dict[str, list[float]] = field(default_factory=dict)
    walls: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def call(self, phase: str, seconds: float) -> None:
        with self._lock:
            self.calls.setdefault(phase, []).append(seconds)

    def timed(self, phase: str, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        """``fn(*args)``, its duration recorded as one call of ``phase``."""
        t = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.call(phase, time.monotonic() - t)

    @contextmanager
    def wall(self, phase: str) -> Iterator[None]:
        t = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self.walls[phase] = self.walls.get(phase, 0.0) + time.monotonic() - t

    def summary(self) -> dict[str, dict[str, float]]:
        """Per phase: ``wall_s``, and for phases of calls their count, median,
        p90 and max duration (ms) and calls per wall second."""
        with self._lock:
            calls = {k: np.asarray(v, dtype=float) for k, v in self.calls.items()}
            walls = dict(self.walls)
        out: dict[str, dict[str, float]] = {}
        for phase in [*walls, *(k for k in calls if k not in walls)]:
            row: dict[str, float] = {}
            if phase in walls:
                row["wall_s"] = round(walls[phase], 3)
            xs = calls.get(phase)
            if xs is not None and xs.size:
                med, p90 = np.percentile(xs, [50, 90]) * 1e3
                row.update(calls=int(xs.size), call_median_ms=round(float(med), 1),
                           call_p90_ms=round(float(p90), 1), call_max_ms=round(float(xs.max()) * 1e3, 1))
                if walls.get(phase):
                    row["per_s"] = round(xs.size / walls[phase], 2)
            out[phase] = row
        return out
