"""The change test: did the CD node's R_d tail widen during the measurement
against the warm-up, the same host already carrying the run's own load?

The paper's test (:func:`detect_contention` against the calibration, the
CD pair alone on the host) answers "is the emulation slowed down by
anything, its own load included". It cannot tell a neighbour that arrives
during the measurement from the devices' own load: busy-mode devices
sharing the CD node's core put a quarter of its samples above the idle
baseline's q99 from the first second on (docs/validate-cd.md). This test
answers the other question, "did something change the host during the
measurement", with the warm-up as its reference: tau at the warm-up's q99
(:data:`CHANGE_QUANTILE`), a design exceedance ``p1`` (a few percent: a
neighbour beside sleep-bound devices delays 2-5 % of the wake-ups by a
few ms and leaves the rest alone), no minimum effect (the q99 is the
effect). Its power grows with the CD samples: at a 10 ms CD interval and
a 10 s warm-up the warm-up's 1,000 samples bound p0 at q99 only to ~2 %,
at 2 ms (5,000 samples) to ~1.4 %; at the default 100 ms it is
``inconclusive`` and does not count.

:func:`combine` makes the run's contention verdict of both: an alarm of
either is contention, the earlier onset first.
"""

from __future__ import annotations

import dataclasses
import math

import numpy.typing as npt

from wotbench.cd._detect import ContentionResult, detect_contention

__all__ = ["CHANGE_QUANTILE", "detect_change", "combine"]

#: tau of the change test: this quantile of the warm-up's R_d.
CHANGE_QUANTILE = 0.99


def detect_change(intended_us: npt.ArrayLike, rd: npt.ArrayLike, *, reference: tuple[float, float] | None,
                  measure: tuple[float, float], alpha: float = 0.01, design_exceed: float = 0.03,
                  window_us: float = 5e6, min_samples: int = 10, min_duration_us: float = 0.0,
                  describe: bool = True) -> ContentionResult:
    """The CD node's R_d in ``measure`` against ``reference`` (the warm-up,
    ``[a, b)`` us on t0; None: no warm-up, ``unknown``): a one-sided
    Bernoulli CUSUM on exceedances of the reference's q99 at design
    exceedance ``design_exceed``, false-alarm probability ``alpha``."""
    return detect_contention(intended_us, rd, calibration=reference, measure=measure, alpha=alpha, min_effect=0.0,
                             window_us=window_us, min_samples=min_samples,
                             designs=((CHANGE_QUANTILE, design_exceed),), reference="warm-up",
                             min_duration_us=min_duration_us, describe=describe)


def combine(paper: ContentionResult, change: ContentionResult) -> ContentionResult:
    """The run's verdict of the paper's test and the change test: the paper's
    unless only the change test alarmed, or alarmed first (a disturbed
    calibration stays disturbed: the run is not judged)."""
    if change.status != "contention" or paper.status == "disturbed":
        return paper
    if paper.status == "contention" and _onset(paper) <= _onset(change):
        return paper
    also = f"; against the calibration: {paper.status}" + (
        f" from t={paper.onset_us / 1e6:.1f}s" if paper.onset_us is not None else "")
    return dataclasses.replace(change, reason=change.reason + also)


def _onset(r: ContentionResult) -> float:
    return r.onset_us if r.onset_us is not None else math.inf
