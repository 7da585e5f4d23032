"""validate-cd's truth: the devices' own distortion in a trial's episode.

A detector answers to what contention does to the measurements it
guards: the devices' R - S (response time less the service time the
device echoed). Per trial the episode is the hogs' interval (observed,
else planned) in us from the measurement start; for a quiet trial it is
the median episode of the injected trials of its devices' mode (the whole
measurement phase when there are none). Against the episode's R - S:

- the trial's own pre-episode (the measurement phase before the episode:
  few requests at small scales, so its p99 is close to a maximum);
- the quiet trials of the same devices' mode pooled, over the same window
  from their measurement start (a quiet trial is compared with the others,
  leaving itself out).

A trial is *distorted* when the episode's p99 or median of R - S is at
least ``DISTORTED`` times the pooled quiet trials' (docs/validate-cd.md:
the issue's rule is the p99 alone, kept as ``distorted_p99``; busy-mode
devices sharing a core already have a p99 of 12-29 ms R - S when quiet,
and 2 CPU hogs multiply their median ~20x but their p99 1.7-1.9x).
Everything here but :func:`device_rs` is pure and vectorised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from wotbench.reporting import Run

__all__ = ["DISTORTED", "DeviceRS", "Shift", "Distortion", "device_rs", "shift", "distortion",
           "quiet_window", "distortions"]

#: The episode's p99 (or median) of the devices' R - S over the quiet
#: trials' at which a trial counts as distorted (issue 28: the p99).
DISTORTED = 2.0


@dataclass(frozen=True)
class DeviceRS:
    """One trial's answered device requests of the measurement phase."""

    t_us: np.ndarray
    """Intended time, us from the measurement start."""
    rs_us: np.ndarray
    """R - S, us."""

    def within(self, window: tuple[float, float]) -> np.ndarray:
        return self.rs_us[(self.t_us >= window[0]) & (self.t_us < window[1])]

    def before(self, t_us: float) -> np.ndarray:
        return self.rs_us[self.t_us < t_us]


def device_rs(run: Run) -> DeviceRS:
    """The devices' R - S of a loaded run (``Run.requests``: its GE outputs'
    measurement phase), times from the measurement start."""
    a = float(run.phases.measure[0])
    r = run.requests
    ok = (r["status"] == "ok").to_numpy()
    t = r["intended_us"].to_numpy(dtype=np.float64)[ok] - a
    rs = (r["response_us"].to_numpy(dtype=np.float64) - r["service_us"].to_numpy(dtype=np.float64))[ok]
    keep = np.isfinite(t) & np.isfinite(rs)
    return DeviceRS(t[keep], rs[keep])


def _q(x: np.ndarray) -> tuple[float, float]:
    if x.size == 0:
        return math.nan, math.nan
    p50, p99 = np.percentile(x, [50, 99])
    return float(p50), float(p99)


def _ratio(a: float, b: float) -> float:
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


@dataclass(frozen=True)
class Shift:
    """The episode's R - S median and p99 against a reference's."""

    ref_n: int
    ep_n: int
    ref_p50_us: float
    ref_p99_us: float
    ep_p50_us: float
    ep_p99_us: float

    @property
    def p50_shift_us(self) -> float:
        return self.ep_p50_us - self.ref_p50_us

    @property
    def p99_shift_us(self) -> float:
        return self.ep_p99_us - self.ref_p99_us

    @property
    def p50_ratio(self) -> float:
        return _ratio(self.ep_p50_us, self.ref_p50_us)

    @property
    def p99_ratio(self) -> float:
        return _ratio(self.ep_p99_us, self.ref_p99_us)

    def to_dict(self) -> dict[str, Any]:
        d = {**asdict(self), "p50_shift_us": self.p50_shift_us, "p99_shift_us": self.p99_shift_us,
             "p50_ratio": self.p50_ratio, "p99_ratio": self.p99_ratio}
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def shift(ref: np.ndarray, ep: np.ndarray) -> Shift:
    (r50, r99), (e50, e99) = _q(ref), _q(ep)
    return Shift(int(ref.size), int(ep.size), r50, r99, e50, e99)


@dataclass(frozen=True)
class Distortion:
    window_us: tuple[float, float]
    """The episode, us from the measurement start."""
    vs_pre: Shift
    vs_quiet: Shift
    quiet_trials: int
    """Quiet trials pooled as the reference (0: none, so no verdict)."""

    @property
    def distorted_p99(self) -> bool | None:
        """The episode's p99 >= DISTORTED x the quiet trials' (None: no reference)."""
        r = self.vs_quiet.p99_ratio
        return None if self.quiet_trials == 0 or not math.isfinite(r) else bool(r >= DISTORTED)

    @property
    def distorted(self) -> bool | None:
        """The episode's p99 or median >= DISTORTED x the quiet trials' (None: no reference)."""
        r = self.vs_quiet.p50_ratio
        by_p99 = self.distorted_p99
        return by_p99 if by_p99 is None else bool(by_p99 or (math.isfinite(r) and r >= DISTORTED))

    def to_dict(self) -> dict[str, Any]:
        return {"window_us": list(self.window_us), "vs_pre": self.vs_pre.to_dict(),
                "vs_quiet": self.vs_quiet.to_dict(), "quiet_trials": self.quiet_trials,
                "distorted": self.distorted, "distorted_p99": self.distorted_p99}


def distortion(trial: DeviceRS, window: tuple[float, float], quiet: Sequence[DeviceRS]) -> Distortion:
    """One trial's episode ``window`` against its pre-episode and the ``quiet`` trials pooled."""
    ep = trial.within(window)
    pooled = np.concatenate([q.within(window) for q in quiet]) if quiet else np.zeros(0)
    return Distortion((float(window[0]), float(window[1])), shift(trial.before(window[0]), ep),
                      shift(pooled, ep), len(quiet))


def quiet_window(episodes: Sequence[tuple[float, float]], measure_us: float) -> tuple[float, float]:
    """A quiet trial's window: the median of the injected episodes' starts
    and ends (us from the measurement start), or the whole measurement."""
    if not episodes:
        return 0.0, float(measure_us)
    e = np.asarray(episodes, dtype=np.float64)
    return float(np.median(e[:, 0])), float(np.median(e[:, 1]))


def distortions(data: Mapping[int, DeviceRS], modes: Mapping[int, str], quiet: Mapping[int, bool],
                episodes: Mapping[int, tuple[float, float]], measure_us: Mapping[int, float]
                ) -> dict[int, Distortion]:
    """Every trial's distortion (by trial index): injected trials over their
    ``episodes``, quiet ones over :func:`quiet_window` of their mode's
    injected trials, each against the quiet trials of its mode (not itself)."""
    out = {}
    for i, d in data.items():
        mode = modes[i]
        if quiet[i]:
            window = quiet_window([w for j, w in episodes.items() if modes.get(j) == mode and not quiet[j]],
                                  measure_us[i])
        elif i in episodes:
            window = episodes[i]
        else:
            continue
        ref = [data[j] for j in data if j != i and quiet[j] and modes[j] == mode]
        out[i] = distortion(d, window, ref)
    return out
