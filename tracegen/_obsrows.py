"""Observe (RFC 7641) in a workload: the OBS and UNOBS trace rows, the
``/o/<j>`` rows of the resource files and the ``observe`` entry of
expected.json, for the groups with ``observe`` (docs/spec.md).

Every device of such a group has ``observe.resources`` observable resources
``/o/0 .. /o/<n-1>`` and the GE observes each once: one OBS row (GET with
Observe 0) and, later, one UNOBS row (GET with Observe 1) of the same device
and uri. Registrations are uniform over the first half of the warmup and
deregistrations over the first half of the cooldown, so that every
observation is live for the whole measurement phase; without phases (or
with an empty warmup or cooldown) the first and last 1 % of the duration
are used. Deterministic for a given spec: the draws come from their own
child of the workload's ``SeedSequence`` (index 3 + number of groups), so
the polling rows are drawn exactly as without ``observe``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wotbench.base.formats import METHODS, OBSERVE_METHODS

if TYPE_CHECKING:
    from wotbench.spec import WorkloadSpec

__all__ = ["ObserveRows", "build_observe_rows", "OBS", "UNOBS", "observe_expected", "device_seeds",
           "merge_rows"]

#: Method codes of the OBS and UNOBS rows, after formats.METHODS (the encoder's table order).
OBS = len(METHODS) + OBSERVE_METHODS.index("OBS")
UNOBS = len(METHODS) + OBSERVE_METHODS.index("UNOBS")
_MASK64 = np.uint64(2**64 - 1)


@dataclass(frozen=True)
class ObserveRows:
    """Every observation of the workload, grouped by device (device then resource j)."""

    dev: np.ndarray
    res: np.ndarray
    """Observable resource j (URI path /o/<j>)."""
    reg_us: np.ndarray
    dereg_us: np.ndarray
    group: np.ndarray
    """Group index of each observation."""

    @property
    def count(self) -> int:
        return int(self.dev.size)

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(t_us, dev, method, res) of the OBS rows then the UNOBS rows (not sorted)."""
        n = self.count
        method = np.concatenate((np.full(n, OBS, dtype=np.uint8), np.full(n, UNOBS, dtype=np.uint8)))
        return (np.concatenate((self.reg_us, self.dereg_us)), np.concatenate((self.dev, self.dev)),
                method, np.concatenate((self.res, self.res)))


def windows(spec: WorkloadSpec, duration_us: int) -> tuple[int, int, int, int]:
    """[lo, hi) of the registrations and of the deregistrations (us)."""
    edge = max(1, duration_us // 100)
    reg = (0, edge)
    dereg = (max(0, duration_us - edge), max(1, duration_us))
    if spec.phase_us is not None:
        warm, meas, cool = spec.phase_us
        if warm >= 2:
            reg = (0, warm // 2)
        if cool >= 2:
            dereg = (warm + meas, warm + meas + cool // 2)
    return reg[0], reg[1], dereg[0], dereg[1]


def build_observe_rows(spec: WorkloadSpec, duration_us: int) -> ObserveRows | None:
    """The observations of ``spec`` (None when no group has ``observe``)."""
    if not spec.observed:
        return None
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed).spawn(4 + len(spec.groups))[-1])
    devs, ress, groups = [], [], []
    first = 0
    for g, grp in enumerate(spec.groups):
        if grp.observe is not None:
            k = grp.observe.resources
            devs.append(np.repeat(np.arange(first, first + grp.count, dtype=np.int32), k))
            ress.append(np.tile(np.arange(k, dtype=np.int32), grp.count))
            groups.append(np.full(grp.count * k, g, dtype=np.int32))
        first += grp.count
    dev = np.concatenate(devs)
    r_lo, r_hi, d_lo, d_hi = windows(spec, duration_us)
    reg = rng.integers(r_lo, r_hi, dev.size, dtype=np.int64)
    dereg = rng.integers(d_lo, d_hi, dev.size, dtype=np.int64)
    return ObserveRows(dev, np.concatenate(ress), reg, np.maximum(dereg, reg + 1), np.concatenate(groups))


def merge_rows(polling: tuple[np.ndarray, ...], obs: ObserveRows | None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The trace's rows (t_us, dev, method, res) sorted by (time, device), polling
    rows first among equals; without observations the polling arrays as they are."""
    t, dev, method, res = polling
    if obs is None:
        return t, dev, method, res
    ot, od, om, orr = obs.rows()
    t = np.concatenate((t, ot))
    dev = np.concatenate((dev, od))
    order = np.lexsort((dev, t))
    return t[order], dev[order], np.concatenate((method, om))[order], np.concatenate((res, orr))[order]


def device_seeds(seed: int, n_dev: int) -> np.ndarray:
    """The ``observe_seed`` of each device: splitmix64 of (workload seed, device id)."""
    with np.errstate(over="ignore"):
        z = (np.uint64(seed % 2**64) * np.uint64(0x9E3779B97F4A7C15)
             + np.arange(1, n_dev + 1, dtype=np.uint64) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _measure_window(spec: WorkloadSpec, duration_us: int) -> tuple[int, int]:
    if spec.phase_us is not None:
        warm, meas, _ = spec.phase_us
        return warm, warm + meas
    return 0, duration_us


def observe_expected(spec: WorkloadSpec, obs: ObserveRows, duration_us: int) -> dict[str, object]:
    """expected.json's ``observe``: per group and in total, the observations, the
    process, and the events a device should draw (each observation: its live
    time over the mean time between events, plus the registration's event 0)."""
    live = (obs.dereg_us - obs.reg_us).astype(np.float64)
    m_lo, m_hi = _measure_window(spec, duration_us)
    per_group = []
    total_events = 0.0
    total_rate = 0.0
    for g, grp in enumerate(spec.groups):
        if grp.observe is None:
            continue
        o = grp.observe
        sel = obs.group == g
        n = int(np.count_nonzero(sel))
        events = float(live[sel].sum()) / o.mean_us + n
        rate = n * 1e6 / o.mean_us
        total_events += events
        total_rate += rate
        per_group.append({
            "group": grp.name, "observations": n, "resources_per_device": o.resources,
            "rit": o.rit.text, "rit_mean_us": _r(o.mean_us), "device_rit": o.device_rit(), "type": o.type,
            "max_age_s": o.max_age_s, "service_us": o.service_us,
            "expected_events": _r(events), "rate_per_s": _r(rate),
            "expected_events_measure": _r(rate * (m_hi - m_lo) / 1e6),
        })
    return {
        "observations": obs.count,
        "expected_events": _r(total_events),
        "rate_per_s": _r(total_rate),
        "measure_us": [m_lo, m_hi],
        "expected_events_measure": _r(total_rate * (m_hi - m_lo) / 1e6),
        "registration_us": [int(obs.reg_us.min()), int(obs.reg_us.max())],
        "deregistration_us": [int(obs.dereg_us.min()), int(obs.dereg_us.max())],
        "groups": per_group,
    }


def _r(x: float) -> float | None:
    return round(float(x), 3) if math.isfinite(x) else None
