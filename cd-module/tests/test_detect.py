"""The contention verdict on synthetic CD-GE data with known properties.

The statistical-property tests use fixed seeds: they check the detector's
false-alarm and detection rates, not timings."""

from __future__ import annotations

import json

import numpy as np
import pytest

from wotbench.cd import cusum_design, detect_contention, hodges_lehmann, normalized_deviation

S_US = 5000.0
CAL = (-10e6, 0.0)
MEASURE = (2e6, 42e6)
RIT = 100e3
WINDOW = 5e6


def series(seeds: int, rng: np.random.Generator, *, step: bool, sigma: float = 0.3):
    """``seeds`` CD series (cd.rit 100 ms, calibration 10 s, measurement 40 s
    as at the ci scale), R_d lognormal around a 0.05 median; with ``step`` a
    contention episode of 20 s starting between 10 s and 20 s of the
    measurement phase, its median R_d 0.2..1.0 (issue 12), noisier."""
    t = np.arange(CAL[0], MEASURE[1] + 2e6, RIT)
    rd = 0.05 * rng.lognormal(0.0, sigma, (seeds, t.size))
    starts = MEASURE[0] + rng.uniform(10e6, 20e6, seeds)
    if step:
        med = rng.uniform(0.2, 1.0, seeds)
        hit = (t[None, :] >= starts[:, None]) & (t[None, :] < starts[:, None] + 20e6)
        rd = np.where(hit, med[:, None] * rng.lognormal(0.0, 0.5, rd.shape), rd)
    return t, rd, starts


def test_rd_is_relative_deviation_and_nan_without_response():
    rd = normalized_deviation([5500.0, np.nan, 10.0], [5000.0, 5000.0, 0.0])
    assert rd[0] == pytest.approx(0.1)
    assert np.isnan(rd[1]) and np.isnan(rd[2])


def test_quiet_series_raise_no_alarm_in_at_least_95_percent_of_200_seeds():
    t, rd, _ = series(200, np.random.default_rng(11), step=False)
    res = [detect_contention(t, r, calibration=CAL, measure=MEASURE, window_us=WINDOW) for r in rd]
    alarms = sum(r.status == "contention" for r in res)
    assert alarms <= 10, [r.reason for r in res if r.detected][:3]
    assert sum(r.status == "none" for r in res) >= 190
    quiet = res[0]
    assert quiet.onset_us is None and quiet.cusum is not None and quiet.cusum.alarm_us is None
    assert quiet.baseline.n == 100 and quiet.measure.n == 400
    assert "would have raised one" in quiet.reason


def test_step_of_issue_12_size_alarms_in_99_percent_with_onset_within_one_window():
    t, rd, starts = series(200, np.random.default_rng(12), step=True)
    res = [detect_contention(t, r, calibration=CAL, measure=MEASURE, window_us=WINDOW) for r in rd]
    detected = np.array([r.status == "contention" for r in res])
    assert detected.mean() >= 0.99
    onset = np.array([r.onset_us if r.onset_us is not None else np.nan for r in res])
    err = np.abs(onset - starts)[detected]
    assert np.mean(err <= WINDOW) >= 0.99, np.sort(err)[-5:]
    # The episode ends where it ended, so later windows are not flagged.
    r = res[0]
    flagged = [w for w in r.windows if w.flagged]
    assert flagged and all(w.start_us < starts[0] + 20e6 + WINDOW and w.end_us > starts[0] - WINDOW
                           for w in flagged)
    assert r.reason.startswith("contention: CD node R_d rose from t=")


def test_the_false_alarm_bound_holds_for_a_stricter_alpha_too():
    t, rd, _ = series(200, np.random.default_rng(13), step=False, sigma=0.6)
    alarms = sum(detect_contention(t, r, calibration=CAL, measure=MEASURE, alpha=0.05).detected for r in rd)
    assert alarms <= 0.05 * 200


def test_short_calibration_cannot_bound_the_baseline_and_is_inconclusive():
    rng = np.random.default_rng(5)
    t = np.arange(-0.4e6, 42e6, RIT)          # 4 calibration samples
    rd = 0.05 * rng.lognormal(0.0, 0.3, t.size)
    res = detect_contention(t, rd, calibration=(-0.4e6, 0.0), measure=MEASURE, alpha=0.001, min_samples=4)
    assert res.status == "inconclusive", res.reason
    assert "cd.calibration" in res.reason and "would decide" in res.reason
    assert res.cusum is not None and res.cusum.p0 >= res.cusum.p1


def test_short_measurement_is_inconclusive_not_none():
    rng = np.random.default_rng(6)
    t = np.arange(-30e6, 12e6, 1e6)           # cd.rit 1 s: 10 measurement samples
    rd = 0.05 * rng.lognormal(0.0, 0.3, t.size)
    # min_effect 0.02: tau then sits inside the baseline's spread, where 10
    # samples cannot decide (at the default 0.1 they can).
    res = detect_contention(t, rd, calibration=(-30e6, 0.0), measure=(2e6, 12e6), min_effect=0.02)
    assert res.status == "inconclusive", res.reason
    assert "shorter cd.rit" in res.reason


def test_too_few_samples_is_unknown_not_a_guess():
    t, rd, _ = series(1, np.random.default_rng(4), step=False)
    res = detect_contention(t, rd[0], calibration=(-0.3e6, 0.0), measure=MEASURE)
    assert res.status == "unknown"
    assert "3 calibration samples" in res.reason
    res = detect_contention(t, rd[0], calibration=None, measure=MEASURE)
    assert res.status == "unknown" and "no calibration phase" in res.reason


def test_windows_report_their_power():
    t, rd, _ = series(1, np.random.default_rng(7), step=False)
    res = detect_contention(t, rd[0], calibration=CAL, measure=MEASURE, window_us=WINDOW)
    assert [w.n for w in res.windows] == [50] * 8
    assert all(w.power > 0.99 for w in res.windows)
    # One CD sample per second: a 5 s window grows to 10 s, and 10 samples decide less.
    t1 = t[::10]
    res = detect_contention(t1, rd[0][::10], calibration=CAL, measure=MEASURE, window_us=WINDOW)
    assert res.window_us == 10e6
    assert all(w.power < res.windows[0].power + 1e-12 for w in res.windows)
    assert res.windows[0].power < 0.99


def test_cusum_design_splits_alpha_and_uses_the_min_effect_floor():
    base = np.full(100, 0.05) + np.linspace(0, 0.001, 100)
    d = cusum_design(base, 400, alpha=0.01, min_effect=0.02, quantile=0.95, design_exceed=0.8)
    assert d.tau == pytest.approx(np.median(base) + 0.02)
    assert d.h == pytest.approx(np.log(2 * 400 / 0.01))
    assert 0 < d.p0 < 0.06        # no baseline sample above tau: the bound is ~ log(200)/100


def test_hodges_lehmann_recovers_a_known_shift():
    rng = np.random.default_rng(7)
    y = rng.normal(0, 1, 400)
    x = rng.normal(0.5, 1, 500)
    shift, (lo, hi) = hodges_lehmann(x, y, 0.95, rng)
    assert lo < 0.5 < hi
    assert shift == pytest.approx(0.5, abs=0.2)


def test_to_dict_is_json_safe():
    t, rd, _ = series(1, np.random.default_rng(8), step=True)
    res = detect_contention(t, rd[0], calibration=CAL, measure=MEASURE)
    d = json.loads(json.dumps(res.to_dict(), allow_nan=False))
    assert d["status"] == "contention" and d["cusum"]["episodes"][0][0] == d["onset_us"]
    assert {"start_us", "end_us", "median_rd", "p_value", "power", "flagged"} <= set(d["windows"][0])
    res = detect_contention(t, rd[0], calibration=(-0.3e6, 0.0), measure=MEASURE)
    assert '"status": "unknown"' in json.dumps(res.to_dict(), allow_nan=False)


def test_a_widened_upper_tail_with_a_lower_median_is_caught_by_the_tail_design():
    """CPU hogs at CFS priority on the CD node's core (this host): the median
    R_d falls, a third of the requests wait a timeslice."""
    rng = np.random.default_rng(14)
    t, rd, starts = series(100, rng, step=False)
    hit = (t[None, :] >= starts[:, None]) & (t[None, :] < starts[:, None] + 20e6)
    slow = rng.random(rd.shape) < 0.35
    rd = np.where(hit, np.where(slow, rd * rng.uniform(4, 20, rd.shape), rd * 0.6), rd)
    res = [detect_contention(t, r, calibration=CAL, measure=MEASURE, window_us=WINDOW) for r in rd]
    detected = np.array([r.detected for r in res])
    assert detected.mean() >= 0.95
    onset = np.array([r.onset_us for r in np.array(res)[detected]])
    assert np.mean(np.abs(onset - starts[detected]) <= WINDOW) >= 0.95
