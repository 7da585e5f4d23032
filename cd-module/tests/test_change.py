"""The change test (the CD node against the warm-up) and how the run's verdict
combines it with the paper's test, on synthetic series with known
properties (fixed seeds: rates, not timings)."""

from __future__ import annotations

import numpy as np

from wotbench.cd import combine, detect_change, detect_contention

RIT = 2e3                       # the study-cd2ms scale: a CD request every 2 ms
CAL = (-20e6, -10e6)            # calibration: the CD pair alone
WARM = (-10e6, 0.0)             # warm-up: the run's own load
MEASURE = (0.0, 30e6)
HOG = (3e6, 23e6)


def series(rng: np.random.Generator, *, share: float = 0.0, idle_median: float = 0.5,
           loaded_median: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """R_d every 2 ms: lognormal around ``idle_median`` in the calibration and
    ``loaded_median`` from the warm-up on; with ``share`` that share of the
    requests in HOG delayed by 2-5 ms (R_d + 8..20 at S 250 us), as a CPU
    neighbour delays sleep-bound wake-ups."""
    t = np.arange(CAL[0], MEASURE[1], RIT)
    med = np.where(t < WARM[0], idle_median, loaded_median)
    rd = med * rng.lognormal(0.0, 0.3, t.size)
    hit = (t >= HOG[0]) & (t < HOG[1]) & (rng.random(t.size) < share)
    return t, np.where(hit, rd + rng.uniform(8.0, 20.0, t.size), rd)


def change(t: np.ndarray, rd: np.ndarray):
    return detect_change(t, rd, reference=WARM, measure=MEASURE)


def test_a_quiet_loaded_host_raises_no_change_in_at_least_95_percent_of_100_seeds():
    rng = np.random.default_rng(21)
    res = [change(*series(rng)) for _ in range(100)]
    assert sum(r.status == "contention" for r in res) <= 5, [r.reason for r in res if r.detected][:2]
    assert all(r.status == "none" for r in res if not r.detected)
    assert res[0].baseline.n == 5000 and "against the warm-up" in res[0].reason


def test_three_percent_of_requests_delayed_is_a_change_with_onset_within_one_window():
    rng = np.random.default_rng(22)
    res = [change(*series(rng, share=0.03)) for _ in range(100)]
    onsets = np.array([np.nan if r.onset_us is None else r.onset_us for r in res])
    assert np.mean(np.abs(onsets - HOG[0]) <= 5e6) >= 0.95, onsets


def test_the_devices_own_load_alarms_the_paper_test_but_not_the_change_test():
    # Busy-mode devices beside the CD node: from the warm-up on its R_d is
    # three times the idle host's, steadily.
    t, rd = series(np.random.default_rng(23), loaded_median=1.5)
    paper = detect_contention(t, rd, calibration=CAL, measure=MEASURE, min_effect=0.1)
    assert paper.status == "contention"
    assert change(t, rd).status == "none"


def test_a_cd_too_slow_for_its_warm_up_is_inconclusive_and_no_warm_up_is_unknown():
    t, rd = series(np.random.default_rng(24))
    slow = t[::50], rd[::50]                         # 100 ms: 100 warm-up samples
    r = change(*slow)
    assert r.status == "inconclusive" and "phases.warmup" in r.reason and "warm-up samples" in r.reason
    none = detect_change(t, rd, reference=None, measure=MEASURE)
    assert none.status == "unknown" and "no warm-up phase" in none.reason


def test_the_verdict_is_the_earlier_alarm_of_the_two_tests():
    rng = np.random.default_rng(25)
    t, rd = series(rng, share=0.05)
    paper = detect_contention(t, rd, calibration=CAL, measure=MEASURE, min_effect=100.0)
    ch = change(t, rd)
    assert paper.status == "none" and ch.status == "contention"
    both = combine(paper, ch)
    assert both.status == "contention" and both.onset_us == ch.onset_us
    assert (both.reference, paper.reference) == ("warm-up", "calibration")    # the report labels its baseline so
    assert both.reason.startswith("contention against the warm-up") and "against the calibration: none" in both.reason
    # The paper's alarm first: it is the verdict.
    t2, rd2 = series(rng, share=0.05, loaded_median=1.5)
    early = detect_contention(t2, rd2, calibration=CAL, measure=MEASURE)
    assert early.status == "contention" and combine(early, change(t2, rd2)) is early
    # Without a change alarm, or with a disturbed calibration, the paper's stands.
    assert combine(paper, detect_change(t, rd, reference=None, measure=MEASURE)) is paper
    disturbed = detect_contention(t, rd, calibration=CAL, measure=MEASURE, service_us=250.0, baseline_rd_max=0.1)
    assert disturbed.status == "disturbed" and combine(disturbed, ch) is disturbed


def test_an_episode_shorter_than_the_minimum_duration_does_not_count():
    # A 40 ms blip of the host: 20 CD requests at 2 ms all delayed.
    rng = np.random.default_rng(26)
    t, rd = series(rng)
    blip = (t >= 15e6) & (t < 15.04e6)
    rd = np.where(blip, rd + 20.0, rd)
    paper = [detect_contention(t, rd, calibration=CAL, measure=MEASURE, min_duration_us=d) for d in (0.0, 1e6)]
    assert paper[0].status == "contention" and paper[0].onset_us == 15e6
    assert paper[1].status == "none" and "episodes >= 1 s" in paper[1].reason
    assert "reached h" in paper[1].reason and "only in episodes shorter than 1 s" in paper[1].reason
    # A neighbour of 20 s still counts, and its alarm comes once it has lasted the minimum.
    t, rd = series(rng, share=0.05)
    r = detect_change(t, rd, reference=WARM, measure=MEASURE, min_duration_us=1e6)
    assert r.status == "contention" and r.onset_us is not None and abs(r.onset_us - HOG[0]) <= 5e6
    assert r.cusum is not None and r.cusum.alarm_us is not None and r.cusum.alarm_us >= r.onset_us + 1e6


def test_without_the_description_the_status_and_onset_are_the_same_and_the_shift_is_left_out():
    rng = np.random.default_rng(27)
    for share in (0.0, 0.05):
        t, rd = series(rng, share=share)
        full, bare = (detect_contention(t, rd, calibration=WARM, measure=MEASURE, describe=d) for d in (True, False))
        assert (bare.status, bare.onset_us, bare.cusum) == (full.status, full.onset_us, full.cusum)
        assert np.isnan(bare.shift) and np.isnan(bare.p_value) and not np.isnan(full.shift)
