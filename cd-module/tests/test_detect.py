"""The contention verdict on synthetic CD-GE data with known properties."""

from __future__ import annotations

import numpy as np
import pytest

from wotbench.cd import detect_contention, hodges_lehmann, normalized_deviation

S_US = 5000.0
CAL = (-30e6, 0.0)
MEASURE = (10e6, 130e6)


def cd_series(rng: np.random.Generator, shift_from_us: float | None = None, extra_us: float = 1500.0):
    """CD requests every second from -30 s to 140 s; R = S + network time
    (about 150 us, a few us of jitter); after ``shift_from_us`` contention adds ``extra_us``."""
    t = np.arange(-30e6, 140e6, 1e6)
    r = S_US + rng.normal(150.0, 15.0, t.size)
    if shift_from_us is not None:
        r[t >= shift_from_us] += rng.exponential(extra_us, np.count_nonzero(t >= shift_from_us)) + extra_us
    return t, normalized_deviation(r, np.full(t.size, S_US))


def test_rd_is_relative_deviation_and_nan_without_response():
    rd = normalized_deviation([5500.0, np.nan, 10.0], [5000.0, 5000.0, 0.0])
    assert rd[0] == pytest.approx(0.1)
    assert np.isnan(rd[1]) and np.isnan(rd[2])


def test_no_contention_is_confidently_none():
    t, rd = cd_series(np.random.default_rng(1))
    res = detect_contention(t, rd, calibration=CAL, measure=MEASURE)
    assert res.status == "none", res.reason
    assert res.shift_ci[1] < res.min_effect
    assert res.onset_us is None
    assert res.baseline.n == 30 and res.measure.n == 120
    # Network time keeps the baseline a little above 0, as the paper notes.
    assert 0.02 < res.baseline.median < 0.04


def test_injected_shift_is_contention_with_onset_window():
    t, rd = cd_series(np.random.default_rng(2), shift_from_us=70e6)
    res = detect_contention(t, rd, calibration=CAL, measure=MEASURE)
    assert res.status == "contention", res.reason
    assert res.p_value < 1e-4
    assert res.shift >= 0.1 and res.shift_ci[0] > 0
    # 10 s windows aligned to the measurement start (10 s): the shift at 70 s opens window [70, 80).
    assert res.onset_us == 70e6
    flagged = [w.start_us for w in res.windows if w.flagged]
    assert flagged[0] == 70e6 and all(s >= 70e6 for s in flagged)
    assert "began at t=70.0s" in res.reason


def test_statistically_significant_but_tiny_shift_is_not_contention():
    rng = np.random.default_rng(3)
    t, rd = cd_series(rng)
    rd = rd + np.where(t >= 0, 0.004, 0.0)  # +20 us: real but below the 0.02 minimum effect
    res = detect_contention(t, rd, calibration=CAL, measure=MEASURE)
    assert res.status in ("none", "inconclusive")
    assert res.status != "contention"


def test_too_few_samples_is_unknown_not_a_guess():
    t, rd = cd_series(np.random.default_rng(4))
    res = detect_contention(t, rd, calibration=(-3e6, 0.0), measure=MEASURE)
    assert res.status == "unknown"
    assert "3 calibration samples" in res.reason
    res = detect_contention(t, rd, calibration=None, measure=MEASURE)
    assert res.status == "unknown" and "no calibration phase" in res.reason


def test_noisy_small_sample_is_inconclusive():
    rng = np.random.default_rng(5)
    t = np.arange(-10e6, 20e6, 1e6)
    rd = rng.normal(0.05, 0.05, t.size) + np.where(t >= 0, 0.01, 0.0)
    res = detect_contention(t, rd, calibration=(-10e6, 0.0), measure=(0.0, 20e6))
    assert res.status == "inconclusive", res.reason


def test_window_grows_with_long_cd_interval():
    t = np.arange(-100e6, 400e6, 5e6)
    rd = np.full(t.size, 0.03) + np.random.default_rng(6).normal(0, 0.001, t.size)
    res = detect_contention(t, rd, calibration=(-100e6, 0.0), measure=(0.0, 400e6), window_us=10e6)
    assert res.window_us == 50e6


def test_hodges_lehmann_recovers_a_known_shift():
    rng = np.random.default_rng(7)
    y = rng.normal(0, 1, 400)
    x = rng.normal(0.5, 1, 500)
    shift, (lo, hi) = hodges_lehmann(x, y, 0.95, rng)
    assert lo < 0.5 < hi
    assert shift == pytest.approx(0.5, abs=0.2)


def test_to_dict_is_json_safe():
    import json
    t, rd = cd_series(np.random.default_rng(8))
    res = detect_contention(t, rd, calibration=(-3e6, 0.0), measure=MEASURE)
    text = json.dumps(res.to_dict(), allow_nan=False)
    assert '"status": "unknown"' in text
