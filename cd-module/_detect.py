"""The contention verdict: did the CD node's R_d rise above its calibration
baseline at some point of the measurement phase, by a margin that matters,
with a false-alarm probability we can state?

The calibration phase (CD pair alone on the host) gives the baseline sample
of R_d. A threshold ``tau = max(baseline q-quantile, baseline median +
min_effect)`` turns every measurement sample into an exceedance (R_d >
tau) or not. Under "no contention" the exceedance probability is at most
``p0`` (a one-sided Clopper-Pearson upper bound from the baseline); under
contention the design assumes at least ``p1`` (``design_exceed``). A
one-sided Bernoulli log-likelihood-ratio CUSUM over the measurement samples
(in time order) raises an alarm when it reaches ``h = log(2 n / alpha)``:
each start point's likelihood ratio is a martingale under the null, so
P(false alarm within n samples) <= n exp(-h) = alpha / 2, and the other
alpha / 2 is the chance that ``p0`` underestimates the null exceedance
probability. The onset is the first sample after the CUSUM's last zero
before the alarm.

Statuses: ``contention`` (an alarm), ``none`` (no alarm although a
contention episode of ``min_episode_us`` would have raised one),
``inconclusive`` (no alarm and the test lacked the power to see one: too
few baseline or measurement samples), ``unknown`` (too few samples to test).

Fixed windows (``window_us``, aligned to the measurement start) describe the
series: each window's median, the one-sided binomial p-value of its
exceedances against ``p0`` and its power (the probability that a window of
that size at the design exceedance ``p1`` would have been significant at
``alpha``), so a reader sees which windows could not have decided alone.
The whole-phase Mann-Whitney test and Hodges-Lehmann shift stay as a
description of the measurement phase against the baseline.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

__all__ = ["RdStats", "Window", "Cusum", "ContentionResult", "detect_contention", "hodges_lehmann",
           "cusum_design", "baseline_problem"]

#: (baseline quantile of tau, design exceedance p1) of the CUSUMs run side by
#: side, alpha split evenly: a sustained rise of most CD requests (issue 12)
#: and a widening of the upper tail (CFS neighbours on the devices' core).
DESIGNS: tuple[tuple[float, float], ...] = ((0.95, 0.8), (0.99, 0.3))

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
    """One-sided binomial p-value of the window's exceedances of tau against p0."""
    flagged: bool
    """The window overlaps a CUSUM episode that raised an alarm."""
    exceed: float = math.nan
    """Share of the window's samples above tau."""
    power: float = math.nan
    """P(the window alone is significant at alpha | exceedance p1): below
    ~0.8 the window could not have decided by itself."""


@dataclass(frozen=True)
class Cusum:
    """The sequential test's design and outcome."""

    quantile: float
    tau: float
    """Exceedance threshold on R_d."""
    p0: float
    """Upper bound of the baseline exceedance probability."""
    p1: float
    """Design exceedance probability under contention."""
    h: float
    """Alarm threshold on the log-likelihood-ratio CUSUM."""
    n: int
    """Measurement samples the false-alarm bound covers."""
    fa_bound: float
    """n exp(-h) + the p0 bound's miss probability (= alpha)."""
    max_stat: float
    alarm_us: float | None
    """Intended time of the sample that crossed h (first alarm)."""
    episodes: tuple[tuple[float, float], ...]
    """[onset, last positive sample] of every alarmed CUSUM excursion (us from t0)."""
    min_alarm_samples: int
    """Consecutive exceedances from zero that reach h."""
    min_episode_us: float
    """Expected detection delay at exceedance p1 (h / KL(p1||p0)) in time."""


@dataclass(frozen=True)
class ContentionResult:
    status: str
    """``contention``, ``none``, ``inconclusive``, ``unknown`` or
    ``disturbed`` (the baseline itself is not a quiet CD pair's)."""
    reason: str
    baseline: RdStats
    measure: RdStats
    shift: float
    """Hodges-Lehmann estimate of R_d(measure) - R_d(baseline)."""
    shift_ci: tuple[float, float]
    confidence: float
    p_value: float
    """One-sided Mann-Whitney U p-value (measure > baseline), descriptive."""
    prob_superiority: float
    """P(a measurement R_d > a baseline R_d) = U / (n1 n2); 0.5 means no shift."""
    alpha: float
    """False-alarm probability of the whole measurement phase."""
    min_effect: float
    window_us: float
    windows: tuple[Window, ...]
    onset_us: float | None
    """First sample of the first alarmed CUSUM episode (us from t0), None without alarm."""
    cusum: Cusum | None = None
    reference: str = "calibration"
    """The phase ``baseline`` (and tau) comes from: ``calibration`` (the CD
    pair alone) or ``warm-up`` (the change test: the run's own load)."""

    @property
    def detected(self) -> bool:
        return self.status == "contention"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shift_ci"] = list(self.shift_ci)
        d["windows"] = [asdict(w) for w in self.windows]
        if self.cusum is not None:
            d["cusum"]["episodes"] = [list(e) for e in self.cusum.episodes]
        return _finite_dict(d)


def _finite(obj: Any) -> Any:
    """JSON has no NaN: report undefined numbers as null."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return _finite_dict(obj)
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def _finite_dict(d: dict[str, Any]) -> dict[str, Any]:
    return {k: _finite(v) for k, v in d.items()}


def _subsample(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return x if x.size <= _MAX_PAIR_SAMPLES else rng.choice(x, _MAX_PAIR_SAMPLES, replace=False)


def hodges_lehmann(x: np.ndarray, y: np.ndarray, confidence: float,
                   rng: np.random.Generator) -> tuple[float, tuple[float, float]]:
    """Shift estimate of x over y and its confidence interval from the
    order statistics of the pairwise differences (normal approximation of
    the U distribution, as in Hollander & Wolfe). Only the order
    statistics it needs are put in place (a partition, not a sort of the
    up to 4e6 differences: the same values, several times faster). The
    samples must be finite (the detector drops the others first)."""
    d = (_subsample(x, rng)[:, None] - _subsample(y, rng)[None, :]).ravel()
    n1 = min(x.size, _MAX_PAIR_SAMPLES)
    n2 = min(y.size, _MAX_PAIR_SAMPLES)
    nm = d.size
    z = stats.norm.ppf(0.5 + confidence / 2)
    k = int(math.floor(nm / 2 - z * math.sqrt(nm * (n1 + n2 + 1) / 12.0)))
    k = min(max(k, 0), nm - 1)
    mid = ((nm - 1) // 2, nm // 2)
    d.partition(sorted({k, nm - 1 - k, *mid}))
    median = d[mid[0]] if nm % 2 else np.mean(d[list(mid)])
    return float(median), (float(d[k]), float(d[nm - 1 - k]))


@dataclass(frozen=True)
class Reference:
    """How the reasons name the phase the test compares against."""

    phase: str
    key: str
    """The spec key that lengthens it."""
    against: str
    """Said after "contention" ("" for the calibration: the paper's test)."""


#: The phases a test can compare against: the calibration (the CD pair
#: alone on the host) or the warm-up (the host carrying the run's own load).
REFERENCES = {"calibration": Reference("calibration", "cd.calibration", ""),
              "warm-up": Reference("warm-up", "phases.warmup", " against the warm-up")}


# --- the sequential test -------------------------------------------------------------

@dataclass(frozen=True)
class _Design:
    tau: float
    p0: float
    p1: float
    h: float
    up: float
    """CUSUM increment of an exceedance, log(p1 / p0)."""
    down: float
    """CUSUM increment of a non-exceedance, log((1 - p1) / (1 - p0)) < 0."""

    @property
    def kl(self) -> float:
        """KL(p1 || p0): the CUSUM's mean drift per sample at exceedance p1."""
        return self.p1 * self.up + (1 - self.p1) * self.down

    @property
    def powered(self) -> bool:
        return self.p1 > self.p0


def cusum_design(baseline: np.ndarray, n: int, *, alpha: float, min_effect: float, quantile: float,
                 design_exceed: float) -> _Design:
    """tau, p0, p1 and h for ``n`` measurement samples (alpha split evenly
    between the p0 bound and the CUSUM's n exp(-h))."""
    base = np.sort(baseline)
    q = float(np.quantile(base, quantile, method="inverted_cdf"))
    tau = max(q, float(np.median(base)) + min_effect)
    m = int(np.count_nonzero(base > tau))
    # One-sided Clopper-Pearson upper bound of P(R_d > tau) at 1 - alpha/2.
    p0 = float(stats.beta.ppf(1 - alpha / 2, m + 1, base.size - m)) if m < base.size else 1.0
    p1 = design_exceed
    h = math.log(2 * max(n, 1) / alpha)
    if p1 <= p0:
        return _Design(tau, p0, p1, h, math.nan, math.nan)
    return _Design(tau, p0, p1, h, math.log(p1 / p0), math.log((1 - p1) / (1 - p0)))


def _cusum(x: np.ndarray, d: _Design) -> np.ndarray:
    """S_k = max(0, S_{k-1} + s_k), vectorised as C_k - min(0, min_{j<=k} C_j)."""
    c = np.cumsum(np.where(x > d.tau, d.up, d.down))
    return c - np.minimum(np.minimum.accumulate(c), 0.0)


def _alarmed(s: np.ndarray, h: float) -> np.ndarray:
    """Samples in a positive excursion of the CUSUM ``s`` that reached h."""
    run = np.cumsum(s <= 0)                      # excursion id; a zero closes a run
    alarmed_runs = np.unique(run[s >= h])
    return (s > 0) & np.isin(run, alarmed_runs)


def _episodes(t: np.ndarray, x: np.ndarray, d: _Design, fwd: np.ndarray, shortest_us: float = 0.0
              ) -> tuple[float | None, tuple[tuple[float, float], ...]]:
    """First alarm time and the [first, last] sample times of every episode:
    samples inside an alarmed excursion of the CUSUM ``fwd`` (run forwards:
    it starts at the onset but decays slowly after the end) and of the same
    CUSUM run backwards from the end (which ends at the episode's end).
    Episodes shorter than ``shortest_us`` do not count; the alarm is then
    the first kept episode's crossing of h, or its start + ``shortest_us``
    if later (when it has lasted long enough to count)."""
    hit = np.flatnonzero(fwd >= d.h)
    if hit.size == 0:
        return None, ()
    inside = _alarmed(fwd, d.h) & _alarmed(_cusum(x[::-1], d)[::-1], d.h)
    edges = np.diff(np.concatenate(([0], inside.astype(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    keep = t[ends] - t[starts] >= shortest_us
    starts, ends = starts[keep], ends[keep]
    if starts.size == 0:
        return None, ()
    after = hit[hit >= starts[0]]
    cross = float(t[after[0]]) if after.size else float(t[starts[0]])
    alarm = max(cross, float(t[starts[0]]) + shortest_us)
    return alarm, tuple((float(t[a]), float(t[b])) for a, b in zip(starts, ends, strict=True))


def _windows(t: np.ndarray, rd: np.ndarray, d: _Design, start_us: float, end_us: float, window_us: float,
             alpha: float, episodes: tuple[tuple[float, float], ...]) -> tuple[Window, ...]:
    """Windows of ``window_us`` aligned to ``start_us`` over [start_us, end_us)."""
    if t.size == 0:
        return ()
    edges = np.append(np.arange(start_us, end_us, window_us), end_us)
    idx = np.searchsorted(edges, t, side="right") - 1
    nwin = edges.size - 1
    keep = (idx >= 0) & (idx < nwin)
    idx, r = idx[keep], rd[keep]
    counts = np.bincount(idx, minlength=nwin)
    exc = np.bincount(idx, weights=(r > d.tau).astype(np.float64), minlength=nwin)
    n = counts.astype(np.float64)
    p = np.where(counts > 0, stats.binom.sf(exc - 1, counts, min(d.p0, 1.0)), math.nan)
    # Smallest significant exceedance count per window, and its chance at p1.
    k = stats.binom.isf(alpha, counts, min(d.p0, 1.0)) + 1
    power = np.where(counts > 0, stats.binom.sf(k - 1, counts, d.p1), math.nan)
    order = np.argsort(idx, kind="stable")
    groups = np.split(r[order], np.cumsum(counts)[:-1])
    out = []
    for i, w in enumerate(groups):
        if w.size == 0:
            continue
        a, b = float(edges[i]), float(edges[i + 1])
        flagged = any(e0 < b and e1 >= a for e0, e1 in episodes)
        out.append(Window(a, b, int(w.size), float(np.median(w)), float(p[i]), flagged,
                          float(exc[i] / n[i]), float(power[i])))
    return tuple(out)


def _run_design(base: np.ndarray, tm: np.ndarray, meas: np.ndarray, rit: float, a: float, alpha: float,
                min_effect: float, quantile: float, p1: float, shortest_us: float) -> tuple[_Design, Cusum]:
    """One CUSUM design (its share ``a`` of the run's ``alpha``) over the measurement."""
    d = cusum_design(base, meas.size, alpha=a, min_effect=min_effect, quantile=quantile, design_exceed=p1)
    if d.powered:
        fwd = _cusum(meas, d)
        alarm, episodes = _episodes(tm, meas, d, fwd, shortest_us)
        max_stat = float(fwd.max())
        min_alarm = math.ceil(d.h / d.up)
        min_ep = math.ceil(d.h / d.kl) * rit if math.isfinite(rit) else math.nan
    else:
        alarm, episodes, max_stat, min_alarm, min_ep = None, (), math.nan, 0, math.inf
    return d, Cusum(quantile, d.tau, d.p0, d.p1, d.h, int(meas.size), alpha, max_stat, alarm, episodes,
                    min_alarm, float(min_ep))


def detect_contention(
    intended_us: npt.ArrayLike,
    rd: npt.ArrayLike,
    *,
    calibration: tuple[float, float] | None,
    measure: tuple[float, float],
    alpha: float = 0.01,
    min_effect: float = 0.1,
    window_us: float = 5e6,
    min_samples: int = 10,
    confidence: float = 0.95,
    designs: tuple[tuple[float, float], ...] = DESIGNS,
    seed: int = 0,
    service_us: float | None = None,
    baseline_rd_max: float = math.inf,
    baseline_excess_us: float = 0.0,
    baseline_max_lost: float = 1.0,
    reference: str = "calibration",
    min_duration_us: float = 0.0,
    describe: bool = True,
) -> ContentionResult:
    """Test the CD node's R_d during ``measure`` against ``calibration``.

    ``intended_us`` and ``rd`` are per CD request (us relative to t0; R_d
    NaN for requests without a response, which are left out). Phases are
    ``[a, b)``. ``window_us`` (description only) grows to hold about ten CD
    requests when the CD inter-arrival time is long.

    The baseline is checked first (:func:`baseline_problem`, with the CD
    node's S ``service_us``): if disturbed, the status says so and nothing is tested.
    ``reference`` names the phase ``calibration`` is in the reasons
    (``calibration`` or ``warm-up``, :data:`REFERENCES`). An alarmed
    episode shorter than ``min_duration_us`` does not count (a faster CD
    pair otherwise calls a blip of a few samples contention: 10-70 ms at
    2 ms, docs/validate-cd.md). ``describe=False`` leaves out the
    whole-phase Mann-Whitney test and Hodges-Lehmann shift (NaN): they do
    not change the status or onset, and a threshold sweep need not pay for
    them each time.
    """
    words = REFERENCES[reference]
    base, tm, meas, lost, asked = _phase_samples(intended_us, rd, calibration, measure)
    rit = float(np.median(np.diff(tm))) if tm.size > 1 else math.nan
    if math.isfinite(rit):
        window_us = max(window_us, 10 * rit)
    b, m = RdStats.of(base), RdStats.of(meas)
    common: dict[str, Any] = dict(baseline=b, measure=m, confidence=confidence, alpha=alpha,
                                  min_effect=min_effect, window_us=float(window_us), reference=reference)
    untested = dict(shift=math.nan, shift_ci=(math.nan, math.nan), p_value=math.nan, prob_superiority=math.nan,
                    windows=(), onset_us=None, **common)
    bad = baseline_problem(base, lost, asked, service_us, baseline_rd_max, baseline_excess_us, baseline_max_lost)
    if bad is not None:
        return ContentionResult("disturbed", bad, **untested)
    if base.size < min_samples or meas.size < min_samples:
        return ContentionResult("unknown", _too_few(base.size, meas.size, min_samples, calibration is not None,
                                                    words), **untested)
    p_mw, sup, shift, ci = _whole_phase(meas, base, confidence, seed) if describe else (
        math.nan, math.nan, math.nan, (math.nan, math.nan))
    a = alpha / len(designs)
    runs = [_run_design(base, tm, meas, rit, a, alpha, min_effect, q, p1, min_duration_us) for q, p1 in designs]
    d, cus = _first_alarm(runs)
    windows = _windows(tm, meas, d, measure[0], measure[1], window_us, a, cus.episodes)
    status, reason = _verdict(cus, b, m, measure, p_mw, shift, ci, confidence, min_effect, words,
                              min_duration_us)
    return ContentionResult(status, reason, shift=shift, shift_ci=ci, p_value=p_mw, prob_superiority=sup,
                            windows=windows, onset_us=cus.episodes[0][0] if cus.episodes else None, cusum=cus,
                            **common)


def _phase_samples(intended_us: npt.ArrayLike, rd: npt.ArrayLike, calibration: tuple[float, float] | None,
                   measure: tuple[float, float]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    """The answered reference samples' R_d, the measurement's send times and
    R_d (in time order), and the reference's unanswered and asked counts."""
    t = np.asarray(intended_us, dtype=np.float64)
    r = np.asarray(rd, dtype=np.float64)
    asked = (t >= calibration[0]) & (t < calibration[1]) if calibration is not None else np.zeros(t.shape, bool)
    lost = int(np.count_nonzero(asked & ~np.isfinite(r)))
    keep = np.isfinite(t) & np.isfinite(r)
    t, r = t[keep], r[keep]
    order = np.argsort(t, kind="stable")
    t, r = t[order], r[order]
    in_cal = ((t >= calibration[0]) & (t < calibration[1]) if calibration is not None
              else np.zeros(t.shape, bool))
    in_meas = (t >= measure[0]) & (t < measure[1])
    return r[in_cal], t[in_meas], r[in_meas], lost, int(np.count_nonzero(asked))


def _too_few(n_base: int, n_meas: int, min_samples: int, has_reference: bool, words: Reference) -> str:
    what = []
    if n_base < min_samples:
        what.append(f"{n_base} {words.phase} samples" if has_reference else f"no {words.phase} phase")
    if n_meas < min_samples:
        what.append(f"{n_meas} measurement samples")
    return f"contention not tested: {' and '.join(what)} (need {min_samples} each)"


def _whole_phase(meas: np.ndarray, base: np.ndarray, confidence: float,
                 seed: int) -> tuple[float, float, float, tuple[float, float]]:
    """The whole-phase description: Mann-Whitney's p-value and probability
    of superiority, the Hodges-Lehmann shift and its interval."""
    mw = stats.mannwhitneyu(meas, base, alternative="greater")
    shift, ci = hodges_lehmann(meas, base, confidence, np.random.default_rng(seed))
    return float(mw.pvalue), float(mw.statistic) / (meas.size * base.size), shift, ci


def _first_alarm(runs: list[tuple[_Design, Cusum]]) -> tuple[_Design, Cusum]:
    """The design whose alarm came first; without one, the powered design
    nearest to alarming (its shortest episode), else the first."""
    alarmed = [r for r in runs if r[1].alarm_us is not None]
    if alarmed:
        return min(alarmed, key=lambda r: r[1].episodes[0][0])
    powered = [r for r in runs if r[0].powered]
    return min(powered, key=lambda r: r[1].min_episode_us) if powered else runs[0]


def _ms(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if abs(us) < 1e6 else f"{us / 1e6:.3g} s"


def baseline_problem(base: np.ndarray, lost: int, asked: int, service_us: float | None, rd_max: float,
                     excess_us: float, max_lost: float) -> str | None:
    """Why the calibration's R_d cannot serve as the quiet baseline, or None.

    A quiet CD pair answers every request in S plus the path's few hundred
    microseconds, so R_d sits near 0 with a short tail. tau is the
    baseline's q95: a baseline whose q95 of R - S is beyond
    ``max(rd_max * S, excess_us)`` would set tau above the contention the
    test is for (R_d +0.8 to +1.2 in docs/validate-cd.md: the CD node's
    response time doubling), and unanswered calibration requests leave a
    baseline of the survivors. Either means the CD node or its host was
    disturbed while it calibrated (a frozen node gave q95 R_d 1,173)."""
    problems = []
    if asked and lost > max_lost * asked:
        problems.append(f"{lost} of {asked} calibration requests ({lost / asked:.0%}) got no answer "
                        f"(at most {max_lost:.0%})")
    if base.size and service_us is not None and service_us > 0:
        bound = max(rd_max, excess_us / service_us)
        p50, p95, top = np.percentile(base, [50, 95, 100])
        if p95 > bound:
            problems.append(
                f"calibration R_d median {p50:.4g}, q95 {p95:.4g}, max {top:.4g} over {base.size} samples: "
                f"q95 R - S {_ms(p95 * service_us)} is beyond what the CD node's S {_ms(service_us)} "
                f"predicts (at most max({rd_max:g} x S, {_ms(excess_us)}) = R_d {bound:.4g}), so tau would "
                f"hide the contention the test is for")
    if not problems:
        return None
    return ("contention cannot be judged: the CD baseline is disturbed: " + "; ".join(problems)
            + "; the CD node or its host was not quiet during the calibration (rerun the test)")


def _verdict(c: Cusum, b: RdStats, m: RdStats, measure: tuple[float, float], p: float, shift: float,
             ci: tuple[float, float], confidence: float, min_effect: float, words: Reference,
             shortest_us: float = 0.0) -> tuple[str, str]:
    """Status and the one-line reason that explains it."""
    whole = f"whole phase shift {shift:+.4f} ({confidence:.0%} CI {ci[0]:+.4f}..{ci[1]:+.4f}, Mann-Whitney p={p:.2g})"
    design = (f"tau {c.tau:.4f} = max(baseline q{c.quantile * 100:g}, median {b.median:.4f} + {min_effect:g}), "
              f"baseline exceedance <= {c.p0:.3f}, design {c.p1:.2f}"
              + (f", episodes >= {_ms(shortest_us)}" if shortest_us > 0 else ""))
    if c.alarm_us is not None:
        on = c.episodes[0][0]
        return "contention", (
            f"contention{words.against}: CD node R_d rose from t={on / 1e6:.1f}s "
            f"(CUSUM alarm at t={c.alarm_us / 1e6:.1f}s, "
            f"{len(c.episodes)} episode(s); phase median {m.median:.4f} vs baseline {b.median:.4f}); "
            f"{design}; false-alarm probability <= {c.fa_bound:g}; {whole}")
    if c.p1 <= c.p0:
        return "inconclusive", (
            f"contention{words.against} inconclusive: {b.n} {words.phase} samples bound the baseline exceedance "
            f"of tau "
            f"{c.tau:.4f} only to {c.p0:.3f} >= the design {c.p1:.2f}, so no alarm was possible; a longer "
            f"{words.key} or a shorter cd.rit would decide; {whole}")
    span = measure[1] - measure[0]
    shortest = max(c.min_episode_us, shortest_us)
    if not shortest <= span:
        return "inconclusive", (
            f"contention{words.against} inconclusive: no alarm, but a contention episode needs about "
            f"{shortest / 1e6:.1f}s of CD samples to be detected and the measurement has "
            f"{m.n} samples over {span / 1e6:.1f}s; a shorter cd.rit, a longer measurement or a longer "
            f"{words.key} would decide; {whole}")
    why = (f"the CUSUM reached h {c.h:.1f} (max {c.max_stat:.1f}) only in episodes shorter than "
           f"{_ms(shortest_us)}" if c.max_stat >= c.h else f"max {c.max_stat:.1f} < h {c.h:.1f}")
    return "none", (
        f"no contention{words.against}: no CUSUM alarm over {m.n} CD samples ({why}); an "
        f"episode of >= {shortest / 1e6:.1f}s with {c.p1:.0%} of R_d above tau would have raised one; "
        f"{design}; {whole}")
