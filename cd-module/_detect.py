"""The contention verdict: is the CD node's R_d during the test above its
calibration baseline by a margin that is both statistically significant
and large enough to matter?

The paper compares mean response times by eye (Fig. 8). Here the
calibration phase (CD pair alone on the host) gives a baseline sample of
R_d, which already includes network time, and the measurement phase gives
a second sample. A one-sided Mann-Whitney U test says whether the
measurement sample is stochastically larger; the Hodges-Lehmann shift
(median of all pairwise differences) with its distribution-free confidence
interval says by how much. Three outcomes, so the user knows how sure we are:

- ``contention``: p < alpha and the shift is at least ``min_effect``, or
  some window of the measurement phase is (contention that starts midway
  moves only part of the sample, so the whole-phase test can miss it);
- ``none``: the whole confidence interval of the shift lies below
  ``min_effect`` (we can rule out a shift that matters);
- ``inconclusive``: neither (too few or too noisy samples);
- ``unknown``: not enough CD data to test at all.

A windowed series (windows aligned to the start of the measurement phase,
each tested against the baseline with a Bonferroni-corrected alpha) shows
when contention began: the onset is the first flagged window.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["RdStats", "Window", "ContentionResult", "detect_contention"]

#: Pairwise differences are computed on at most this many samples per side
#: (a fixed-seed subsample), which keeps the interval at most 4e6 differences.
_MAX_PAIR_SAMPLES = 2000


@dataclass(frozen=True)
class RdStats:
    n: int
    mean: float
    median: float
    p95: float

    @classmethod
    def of(cls, rd: np.ndarray) -> RdStats:
        if rd.size == 0:
            return cls(0, math.nan, math.nan, math.nan)
        p50, p95 = np.percentile(rd, [50, 95])
        return cls(int(rd.size), float(rd.mean()), float(p50), float(p95))


@dataclass(frozen=True)
class Window:
    start_us: float
    end_us: float
    n: int
    median_rd: float
    p_value: float
    flagged: bool


@dataclass(frozen=True)
class ContentionResult:
    status: str
    """``contention``, ``none``, ``inconclusive`` or ``unknown``."""
    reason: str
    baseline: RdStats
    measure: RdStats
    shift: float
    """Hodges-Lehmann estimate of R_d(measure) - R_d(baseline)."""
    shift_ci: tuple[float, float]
    confidence: float
    p_value: float
    """One-sided Mann-Whitney U p-value (measure > baseline)."""
    prob_superiority: float
    """P(a measurement R_d > a baseline R_d) = U / (n1 n2); 0.5 means no shift."""
    alpha: float
    min_effect: float
    window_us: float
    windows: tuple[Window, ...]
    onset_us: float | None
    """Start of the first flagged window (us from t0), None if none flagged."""

    @property
    def detected(self) -> bool:
        return self.status == "contention"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shift_ci"] = list(self.shift_ci)
        d["windows"] = [asdict(w) for w in self.windows]
        return _finite(d)


def _finite(obj: Any) -> Any:
    """JSON has no NaN: report undefined numbers as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _subsample(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return x if x.size <= _MAX_PAIR_SAMPLES else rng.choice(x, _MAX_PAIR_SAMPLES, replace=False)


def hodges_lehmann(x: np.ndarray, y: np.ndarray, confidence: float,
                   rng: np.random.Generator) -> tuple[float, tuple[float, float]]:
    """Shift estimate of x over y and its confidence interval from the
    order statistics of the pairwise differences (normal approximation of
    the U distribution, as in Hollander & Wolfe)."""
    d = np.sort((_subsample(x, rng)[:, None] - _subsample(y, rng)[None, :]).ravel())
    n1 = min(x.size, _MAX_PAIR_SAMPLES)
    n2 = min(y.size, _MAX_PAIR_SAMPLES)
    nm = d.size
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = int(math.floor(nm / 2 - z * math.sqrt(nm * (n1 + n2 + 1) / 12.0)))
    k = min(max(k, 0), nm - 1)
    return float(np.median(d)), (float(d[k]), float(d[nm - 1 - k]))


def _windows(t: np.ndarray, rd: np.ndarray, baseline: np.ndarray, start_us: float, end_us: float,
             window_us: float, alpha: float, min_effect: float) -> tuple[Window, ...]:
    """Windows of ``window_us`` aligned to ``start_us`` over [first sample, end_us)."""
    if t.size == 0 or baseline.size == 0:
        return ()
    first = start_us + math.floor((t.min() - start_us) / window_us) * window_us
    edges = np.arange(first, max(end_us, t.max() + 1) + window_us, window_us)
    idx = np.searchsorted(edges, t, side="right") - 1
    counts = np.bincount(idx, minlength=edges.size - 1)[: edges.size - 1]
    tested = int(np.count_nonzero(counts))
    base_median = float(np.median(baseline))
    order = np.argsort(idx, kind="stable")
    groups = np.split(rd[order], np.cumsum(counts)[:-1])
    out = []
    for i, w in enumerate(groups):
        if w.size == 0:
            continue
        p = float(stats.mannwhitneyu(w, baseline, alternative="greater").pvalue)
        med = float(np.median(w))
        flagged = p < alpha / max(tested, 1) and med - base_median >= min_effect
        # The first window may start before the first sample (alignment): clip it.
        out.append(Window(max(float(edges[i]), float(t.min())), float(edges[i + 1]), int(w.size), med, p, flagged))
    return tuple(out)


def detect_contention(
    intended_us: npt.ArrayLike,
    rd: npt.ArrayLike,
    *,
    calibration: tuple[float, float] | None,
    measure: tuple[float, float],
    alpha: float = 0.01,
    min_effect: float = 0.02,
    window_us: float = 10e6,
    min_samples: int = 10,
    confidence: float = 0.95,
    seed: int = 0,
) -> ContentionResult:
    """Test the CD node's R_d during ``measure`` against ``calibration``.

    ``intended_us`` and ``rd`` are per CD request (us relative to t0; R_d
    NaN for requests without a response, which are left out). Windows are
    ``[a, b)``. ``window_us`` grows to hold about ten CD requests when the
    CD inter-arrival time is long.
    """
    t = np.asarray(intended_us, dtype=np.float64)
    r = np.asarray(rd, dtype=np.float64)
    keep = np.isfinite(t) & np.isfinite(r)
    t, r = t[keep], r[keep]
    if calibration is not None:
        in_cal = (t >= calibration[0]) & (t < calibration[1])
    else:
        in_cal = np.zeros(t.shape, bool)
    in_meas = (t >= measure[0]) & (t < measure[1])
    base, meas = r[in_cal], r[in_meas]
    if t.size > 1:
        rit = float(np.median(np.diff(np.sort(t))))
        window_us = max(window_us, 10 * rit)
    b, m = RdStats.of(base), RdStats.of(meas)
    common: dict[str, Any] = dict(baseline=b, measure=m, confidence=confidence, alpha=alpha,
                                  min_effect=min_effect, window_us=float(window_us))
    if base.size < min_samples or meas.size < min_samples:
        what = []
        if base.size < min_samples:
            what.append(f"{base.size} calibration samples" if calibration is not None
                        else "no calibration phase")
        if meas.size < min_samples:
            what.append(f"{meas.size} measurement samples")
        return ContentionResult(
            "unknown", f"contention not tested: {' and '.join(what)} (need {min_samples} each)",
            shift=math.nan, shift_ci=(math.nan, math.nan), p_value=math.nan, prob_superiority=math.nan,
            windows=(), onset_us=None, **common)
    test = stats.mannwhitneyu(meas, base, alternative="greater")
    shift, ci = hodges_lehmann(meas, base, confidence, np.random.default_rng(seed))
    whole = _WholePhase(float(test.pvalue), float(test.statistic) / (meas.size * base.size), shift, ci,
                        confidence)
    after_cal = t >= (calibration[1] if calibration is not None else measure[0])
    windows = _windows(t[after_cal], r[after_cal], base, measure[0], measure[1], window_us, alpha, min_effect)
    status, reason = _verdict(whole, b, m, windows, measure, alpha, min_effect)
    return ContentionResult(status, reason, shift=shift, shift_ci=ci, p_value=whole.p,
                            prob_superiority=whole.ps, windows=windows, onset_us=_onset(windows), **common)


@dataclass(frozen=True)
class _WholePhase:
    """The measurement phase against the baseline, as a whole."""

    p: float
    """One-sided Mann-Whitney U p-value."""
    ps: float
    """Probability of superiority, U / (n1 n2)."""
    shift: float
    ci: tuple[float, float]
    confidence: float

    def text(self) -> str:
        return f"shift {self.shift:+.4f} ({self.confidence:.0%} CI {self.ci[0]:+.4f}..{self.ci[1]:+.4f})"


def _onset(windows: tuple[Window, ...]) -> float | None:
    return next((w.start_us for w in windows if w.flagged), None)


def _verdict(whole: _WholePhase, b: RdStats, m: RdStats, windows: tuple[Window, ...],
             measure: tuple[float, float], alpha: float, min_effect: float) -> tuple[str, str]:
    """Status and the one-line reason that explains it."""
    p, ci_txt = whole.p, whole.text()
    in_measure = [w for w in windows if measure[0] <= w.start_us < measure[1]]
    flagged_in_measure = [w for w in in_measure if w.flagged]
    if p < alpha and whole.shift >= min_effect:
        reason = (f"contention: CD node R_d median {m.median:.4f} vs baseline {b.median:.4f}, "
                  f"{ci_txt}, Mann-Whitney p={p:.2g} < {alpha:g}, P(R_d above baseline)={whole.ps:.2f}")
        onset = _onset(windows)
        if onset is not None:
            reason += f"; began at t={onset / 1e6:.1f}s"
        return "contention", reason
    if flagged_in_measure:
        w0 = flagged_in_measure[0]
        return "contention", (
            f"contention from t={w0.start_us / 1e6:.1f}s: {len(flagged_in_measure)} of {len(in_measure)} "
            f"measurement windows significantly above the baseline (first: R_d median {w0.median_rd:.4f} "
            f"vs {b.median:.4f}, p={w0.p_value:.2g} < {alpha:g}/{len(windows)}); over the whole phase "
            f"{ci_txt}, p={p:.2g}")
    if whole.ci[1] < min_effect:
        return "none", f"no contention: {ci_txt} lies below the minimum effect {min_effect:g} (p={p:.2g})"
    why = (f"significant (p={p:.2g}) but smaller than" if p < alpha
           else f"not significant (p={p:.2g}, alpha {alpha:g}) yet cannot rule out")
    return "inconclusive", (f"contention inconclusive: {ci_txt} is {why} the minimum effect {min_effect:g}; "
                            f"more CD samples (a longer measurement or a shorter cd.rit) would decide")
