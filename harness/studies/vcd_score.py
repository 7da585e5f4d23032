"""validate-cd's scoring against the truth (harness/studies/vcd_truth.py):
the detector's agreement with the devices' distortion per class, the
split of the trials into a training and a held-out set, and the choice of
the detector's thresholds on the training set alone. Pure functions over
per-trial records (docs/validate-cd.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["DETECT_MIN", "FA_MAX", "MIN_EFFECTS", "CHANGE_EXCEEDS", "GRID_ALPHAS", "SPLIT_RULE", "SELECTION_RULE",
           "Outcome", "Agreement", "Choice", "QuietCheck", "wilson", "n_needed", "split", "agreement", "agreements",
           "select", "selection_rule", "quiet_by_devices"]

#: The issue's targets: detection with onset within one window among the
#: distorted trials, and false alarms among the quiet ones.
DETECT_MIN = 0.95
FA_MAX = 0.05

#: The thresholds the training set chooses from: cd_min_effect x cd_alpha
#: (the alphas: the ROC sweep's up to 0.1).
MIN_EFFECTS = (0.02, 0.05, 0.1, 0.2, 0.3)
#: ... and for the change test alone: cd_change_exceed x cd_alpha.
CHANGE_EXCEEDS = (0.02, 0.03, 0.05, 0.1, 0.2)
GRID_ALPHAS = (1e-8, 1e-6, 1e-4, 1e-3, 0.01, 0.05, 0.1)

SPLIT_RULE = ("per class, in trial order, among the trials with CD data: the 1st, 3rd, 5th ... trial trains "
              "(chooses the thresholds), the 2nd, 4th, 6th ... is held out (scored)")
def selection_rule(name: str = "cd_min_effect") -> str:
    """SELECTION_RULE with the setting ``name`` the grid crosses with cd_alpha."""
    return (f"among the ({name}, cd_alpha) whose design sees an episode within one window of its start on "
            "every training trial (expected detection delay at the design exceedance <= the window; every "
            f"setting when none does), those that detect >= {DETECT_MIN:.0%} of the distorted training "
            "trials with onset within one window (a missed episode is a damaged run called valid; a false "
            "alarm only a run to repeat), and of them the one with the fewest false alarms on the training "
            "quiet trials; ties: the smaller cd_alpha (the stronger stated false-alarm bound), then the smaller "
            f"{name}; when none detects enough, the one that detects the most, then the fewest false alarms")


SELECTION_RULE = selection_rule()


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a proportion k / n; (0, 1) for n = 0."""
    if n == 0:
        return 0.0, 1.0
    ci = stats.binomtest(k, n).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def n_needed(target: float = DETECT_MIN, confidence: float = 0.95) -> int:
    """Trials without a single miss for the Wilson interval's lower bound to
    reach ``target`` (equally: without a single false alarm for the upper
    bound to reach 1 - target): n / (n + z^2) >= target."""
    z2 = stats.norm.ppf(0.5 + confidence / 2) ** 2
    return math.ceil(target * z2 / (1 - target))


@dataclass(frozen=True)
class Outcome:
    """One analysed trial at one detector setting."""

    index: int
    cls: str
    mode: str
    quiet: bool
    distorted: bool | None
    detected: bool
    onset_ok: bool
    distorted_p99: bool | None = None
    """Distorted by the p99 alone (the issue's rule)."""
    powered: bool | None = None
    """The test's design sees an episode within one window of its start on
    this trial (expected detection delay <= window); None: not known."""


def split(rows: Sequence[tuple[int, str]]) -> dict[int, str]:
    """``train`` or ``test`` per trial index from (index, class): per class in
    index order, alternately (SPLIT_RULE)."""
    seen: dict[str, int] = {}
    out = {}
    for i, cls in sorted(rows):
        k = seen.get(cls, 0)
        seen[cls] = k + 1
        out[i] = "train" if k % 2 == 0 else "test"
    return out


def _rate(k: int, n: int) -> dict[str, Any]:
    return {"k": k, "n": n, "rate": k / n if n else None, "ci": list(wilson(k, n))}


@dataclass(frozen=True)
class Agreement:
    """One class's agreement with the truth. Injected classes: among the
    distorted trials, detection and onset within one window; among the
    undistorted, alarms. Quiet classes: false alarms (and how many were
    distorted all the same, against the other quiet trials)."""

    cls: str
    mode: str
    quiet: bool
    n: int
    distorted: int
    undistorted: int
    unjudged: int
    """Trials without a truth (no quiet reference of their mode)."""
    distorted_p99: int
    """Of them distorted by the p99 alone (the issue's rule)."""
    detected_distorted: dict[str, Any]
    onset_ok_distorted: dict[str, Any]
    alarms_undistorted: dict[str, Any]
    false_alarms: dict[str, Any] | None
    """Quiet classes: alarms among all its trials."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def agreement(outcomes: Sequence[Outcome], cls: str) -> Agreement:
    mine = [o for o in outcomes if o.cls == cls]
    dist = [o for o in mine if o.distorted is True]
    und = [o for o in mine if o.distorted is False]
    quiet = bool(mine) and mine[0].quiet
    return Agreement(
        cls, mine[0].mode if mine else "", quiet, len(mine), len(dist), len(und),
        sum(o.distorted is None for o in mine), sum(o.distorted_p99 is True for o in mine),
        _rate(sum(o.detected for o in dist), len(dist)), _rate(sum(o.onset_ok for o in dist), len(dist)),
        _rate(sum(o.detected for o in und), len(und)),
        _rate(sum(o.detected for o in mine), len(mine)) if quiet else None)


def agreements(outcomes: Sequence[Outcome]) -> list[Agreement]:
    """Per class: injected classes first (in order of appearance), then quiet ones."""
    names = list(dict.fromkeys(o.cls for o in outcomes))
    quiet = {o.cls for o in outcomes if o.quiet}
    return [agreement(outcomes, c) for c in [c for c in names if c not in quiet] + sorted(quiet)]


@dataclass(frozen=True)
class Choice:
    setting: float
    """The value of the setting ``name`` (cd_min_effect or cd_change_exceed)."""
    alpha: float
    fa: dict[str, Any]
    """False alarms on the training quiet trials."""
    hit: dict[str, Any]
    """Distorted training trials detected with onset within one window."""
    meets_fa: bool
    power: dict[str, Any]
    """Training trials on which the design sees an episode within one window."""
    name: str = "cd_min_effect"

    @property
    def min_effect(self) -> float:
        """The setting as the run's verdict's cd_min_effect (the default grid's)."""
        return self.setting


def _score(outs: Sequence[Outcome]) -> tuple[dict[str, Any], dict[str, Any]]:
    q = [o for o in outs if o.quiet]
    d = [o for o in outs if not o.quiet and o.distorted is True]
    return _rate(sum(o.detected for o in q), len(q)), _rate(sum(o.onset_ok for o in d), len(d))


def select(grid: Mapping[tuple[float, float], Sequence[Outcome]], train: set[int], name: str = "cd_min_effect"
           ) -> tuple[Choice, list[Choice]]:
    """The setting :func:`selection_rule` picks from ``grid`` ((setting
    ``name``, alpha) -> every trial's outcome) using the ``train`` trials
    only, and every setting's training scores."""
    if not grid:
        raise ValueError("an empty grid")
    rows = []
    for (me, a), outs in grid.items():
        mine = [o for o in outs if o.index in train]
        fa, hit = _score(mine)
        ok = fa["n"] == 0 or fa["k"] <= FA_MAX * fa["n"]
        rows.append(Choice(me, a, fa, hit, ok, _rate(sum(o.powered is True for o in mine), len(mine)), name))

    def fewer_alarms(c: Choice) -> tuple[float, ...]:
        return (c.fa["rate"] or 0.0, c.alpha, c.setting)

    powered = [c for c in rows if c.power["n"] and c.power["k"] == c.power["n"]] or rows
    enough = [c for c in powered if (c.hit["rate"] or 0.0) >= DETECT_MIN]
    best = min(enough, key=fewer_alarms) if enough else min(
        powered, key=lambda c: (-(c.hit["rate"] or 0.0), *fewer_alarms(c)))
    return best, sorted(rows, key=lambda c: (c.setting, c.alpha))


@dataclass(frozen=True)
class QuietCheck:
    """A quiet trial as a test judged it, beside what its devices' own data
    (vcd_scan) show: a change of their R - S tail, or none."""

    cls: str
    mode: str
    alarm: bool
    devices_changed: bool
    in_time: bool
    """The alarm's onset is within one window of the devices' change."""


def quiet_by_devices(rows: Sequence[QuietCheck]) -> list[dict[str, Any]]:
    """Per quiet class: the test's alarms on the trials whose devices' own
    data show no change (false alarms where nothing happened that the
    devices felt) and on those whose devices changed (and with the onset
    in time), and the one-sided Fisher exact p-value of "the test alarms
    more often where the devices changed"."""
    out = []
    for cls in sorted({r.cls for r in rows}):
        mine = [r for r in rows if r.cls == cls]
        steady = [r for r in mine if not r.devices_changed]
        changed = [r for r in mine if r.devices_changed]
        a, b = sum(r.alarm for r in changed), sum(r.alarm for r in steady)
        table = np.array([[a, len(changed) - a], [b, len(steady) - b]])
        p = float(stats.fisher_exact(table, alternative="greater").pvalue)
        out.append({"cls": cls, "mode": mine[0].mode, "n": len(mine), "steady": _rate(b, len(steady)),
                    "changed": _rate(a, len(changed)),
                    "changed_in_time": _rate(sum(r.alarm and r.in_time for r in changed), len(changed)),
                    "fisher_p": p})
    return out
