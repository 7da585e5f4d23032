"""validate-cd against the truth (synthetic arrays): the devices' distortion
in an episode against the pre-episode and the quiet trials, the split into
training and held-out trials, the choice of thresholds on the training set
and the agreement scores."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from wotbench.studies import vcd_score as score
from wotbench.studies import vcd_truth as truth


def rs(values_by_second: dict[tuple[float, float], float], n_per_s: int = 100, seed: int = 0) -> truth.DeviceRS:
    """Requests every 1/n_per_s s over 25 s, R - S = the value of the span
    they fall in (default 100 us), plus a little noise."""
    rng = np.random.default_rng(seed)
    t = np.arange(0, 25e6, 1e6 / n_per_s)
    x = np.full(t.size, 100.0)
    for (a, b), v in values_by_second.items():
        x[(t >= a * 1e6) & (t < b * 1e6)] = v
    return truth.DeviceRS(t, x + rng.uniform(0, 1, t.size))


def test_shift_is_median_and_p99_of_episode_against_reference():
    s = truth.shift(np.arange(1.0, 101.0), np.arange(1.0, 101.0) * 3)
    assert (s.ref_n, s.ep_n) == (100, 100)
    assert s.ref_p50_us == pytest.approx(50.5) and s.ep_p50_us == pytest.approx(151.5)
    assert s.p50_ratio == pytest.approx(3.0) and s.p99_ratio == pytest.approx(3.0)
    assert s.p99_shift_us == pytest.approx(2 * np.percentile(np.arange(1.0, 101.0), 99))
    empty = truth.shift(np.zeros(0), np.arange(3.0))
    assert empty.ref_n == 0 and np.isnan(empty.p99_ratio) and empty.to_dict()["p99_ratio"] is None


def test_distortion_uses_the_window_the_pre_episode_and_the_pooled_quiet_trials():
    hit = rs({(3, 23): 300.0})                  # tripled inside the episode only
    quiet = [rs({}, seed=s) for s in (1, 2)]
    d = truth.distortion(hit, (3e6, 23e6), quiet)
    assert d.vs_pre.ref_n == 300 and d.vs_pre.ep_n == 2000 and d.vs_quiet.ref_n == 4000
    assert d.vs_quiet.p99_ratio == pytest.approx(3.0, rel=0.02) and d.vs_pre.p50_ratio == pytest.approx(3.0, rel=0.02)
    assert d.distorted is True and d.to_dict()["distorted"] is True
    # Just below twice the quiet p99: not distorted; no quiet reference: no verdict.
    assert truth.distortion(rs({(3, 23): 195.0}), (3e6, 23e6), quiet).distorted is False
    assert truth.distortion(hit, (3e6, 23e6), []).distorted is None
    # A rise outside the window does not count.
    assert truth.distortion(rs({(23, 25): 900.0}), (3e6, 23e6), quiet).distorted is False
    assert d.distorted_p99 is True and d.to_dict()["distorted_p99"] is True


def test_a_median_risen_twofold_under_an_unmoved_tail_is_distorted_but_not_by_the_p99():
    def tailed(body: float, seed: int) -> truth.DeviceRS:
        d = rs({(0, 25): body}, seed=seed)
        x = d.rs_us.copy()
        x[::25] = 5000.0                        # every 25th request: a 5 ms tail (4 %), as busy devices sharing a core
        return truth.DeviceRS(d.t_us, x)

    d = truth.distortion(tailed(300.0, 0), (3e6, 23e6), [tailed(100.0, 1), tailed(100.0, 2)])
    assert d.vs_quiet.p50_ratio == pytest.approx(3.0, rel=0.02) and d.vs_quiet.p99_ratio == pytest.approx(1.0)
    assert d.distorted is True and d.distorted_p99 is False


def test_distortions_pair_trials_with_quiet_trials_of_their_mode_leaving_a_quiet_one_out():
    data = {1: rs({(3, 23): 500.0}), 2: rs({}, seed=2), 3: rs({}, seed=3), 4: rs({(3, 23): 500.0}),
            5: rs({(0, 25): 400.0}), 6: rs({(3, 23): 150.0})}
    modes = {1: "busy", 2: "busy", 3: "busy", 4: "sleep", 5: "sleep", 6: "sleep"}
    quiet = {1: False, 2: True, 3: True, 4: False, 5: True, 6: True}
    d = truth.distortions(data, modes, quiet, {1: (3e6, 23e6), 4: (2e6, 22e6)}, {i: 25e6 for i in data})
    assert d[1].quiet_trials == 2 and d[1].distorted is True
    # Sleep's quiet trials are 5 (R - S 400 throughout) and 6: trial 4 (500) is not distorted against them.
    assert d[4].quiet_trials == 2 and d[4].distorted is False
    # A quiet trial: its mode's median episode, against the other quiet trials of its mode only.
    assert d[2].window_us == (3e6, 23e6) and d[2].quiet_trials == 1 and d[2].distorted is False
    assert d[5].window_us == (2e6, 22e6) and d[5].quiet_trials == 1 and d[5].distorted is True
    assert truth.quiet_window([], 25e6) == (0.0, 25e6)
    assert truth.quiet_window([(1.0, 5.0), (3.0, 9.0), (2.0, 6.0)], 25e6) == (2.0, 6.0)


def test_split_alternates_within_each_class_in_trial_order():
    rows = [(5, "a"), (1, "q"), (2, "a"), (3, "b"), (4, "q"), (6, "b"), (7, "a"), (8, "q")]
    s = score.split(rows)
    assert s == {1: "train", 2: "train", 3: "train", 4: "test", 5: "test", 6: "test", 7: "train", 8: "train"}
    assert score.split([]) == {}


def o(i: int, cls: str, *, quiet: bool = False, distorted: bool | None = True, detected: bool = False,
      onset_ok: bool | None = None, mode: str = "busy", by_p99: bool | None = None,
      powered: bool | None = None) -> score.Outcome:
    return score.Outcome(i, cls, mode, quiet, distorted, detected, detected if onset_ok is None else onset_ok,
                         distorted if by_p99 is None else by_p99, powered)


def test_agreement_counts_detection_onset_undistorted_alarms_and_false_alarms():
    outs = [o(1, "hog", detected=True), o(2, "hog", detected=True, onset_ok=False), o(3, "hog", by_p99=False),
            o(4, "hog", distorted=False, detected=True), o(5, "hog", distorted=False), o(6, "hog", distorted=None),
            o(7, "quiet-busy", quiet=True, distorted=False, detected=True), o(8, "quiet-busy", quiet=True)]
    hog, q = score.agreements(outs)
    assert (hog.cls, hog.n, hog.distorted, hog.undistorted, hog.unjudged, hog.distorted_p99) == ("hog", 6, 3, 2, 1, 2)
    assert hog.detected_distorted["k"] == 2 and hog.detected_distorted["n"] == 3
    assert hog.onset_ok_distorted["k"] == 1 and hog.onset_ok_distorted["ci"] == list(score.wilson(1, 3))
    assert hog.alarms_undistorted["k"] == 1 and hog.alarms_undistorted["n"] == 2 and hog.false_alarms is None
    assert q.quiet and q.false_alarms == {"k": 1, "n": 2, "rate": 0.5, "ci": list(score.wilson(1, 2))}
    assert score.agreement([], "none").n == 0


def test_n_needed_is_where_the_wilson_bound_of_a_perfect_score_reaches_the_target():
    n = score.n_needed()
    assert score.wilson(n, n)[0] >= 0.95 > score.wilson(n - 1, n - 1)[0]
    assert score.wilson(0, n)[1] <= 0.05 < score.wilson(0, n - 1)[1]


def test_select_chooses_on_training_trials_only_and_states_when_no_setting_meets_the_bound():
    train = {1, 2, 3, 4}
    # (0.02, 0.1): detects everything but alarms on the training quiet trial 3.
    # (0.1, 0.01): quiet on training, detects trial 1 of 2; (0.05, 0.01): detects both, quiet on training
    # but alarms on the held-out quiet trial 7, which must not matter.
    grid = {
        (0.02, 0.1): [o(1, "h", detected=True), o(2, "h", detected=True), o(3, "q", quiet=True, detected=True),
                      o(4, "q", quiet=True), o(5, "h", detected=True), o(7, "q", quiet=True, detected=True)],
        (0.05, 0.01): [o(1, "h", detected=True), o(2, "h", detected=True), o(3, "q", quiet=True),
                       o(4, "q", quiet=True), o(5, "h"), o(7, "q", quiet=True, detected=True)],
        (0.1, 0.01): [o(1, "h", detected=True), o(2, "h"), o(3, "q", quiet=True), o(4, "q", quiet=True),
                      o(5, "h", detected=True), o(7, "q", quiet=True)],
    }
    best, rows = score.select(grid, train)
    assert (best.min_effect, best.alpha, best.meets_fa) == (0.05, 0.01, True)
    assert best.hit == {"k": 2, "n": 2, "rate": 1.0, "ci": list(score.wilson(2, 2))}
    assert [(c.min_effect, c.fa["k"]) for c in rows] == [(0.02, 1), (0.05, 0), (0.1, 0)]
    # A tie in detection and false alarms goes to the smaller alpha (the
    # stronger stated bound), then the smaller cd_min_effect.
    tie = {(0.2, 0.001): grid[(0.05, 0.01)], (0.05, 0.01): grid[(0.05, 0.01)], (0.1, 0.001): grid[(0.05, 0.01)]}
    assert (score.select(tie, train)[0].alpha, score.select(tie, train)[0].min_effect) == (0.001, 0.1)
    # Every setting alarms on training quiet trials: the fewest false alarms, flagged.
    loud = {(0.02, 0.1): [o(3, "q", quiet=True, detected=True), o(4, "q", quiet=True, detected=True)],
            (0.3, 0.1): [o(3, "q", quiet=True, detected=True), o(4, "q", quiet=True)]}
    best, _ = score.select(loud, train)
    assert (best.min_effect, best.meets_fa) == (0.3, False)
    with pytest.raises(ValueError):
        score.select({}, train)


def test_select_skips_settings_without_power_and_puts_detection_before_false_alarms():
    train = {1, 2, 3, 4}

    def outs(hits: int, alarms: int, powered: bool = True) -> list[score.Outcome]:
        return [o(1, "h", detected=hits >= 1, powered=powered), o(2, "h", detected=hits >= 2, powered=powered),
                o(3, "q", quiet=True, detected=alarms >= 1, powered=powered),
                o(4, "q", quiet=True, detected=alarms >= 2, powered=powered)]

    # (0.02, 1e-4) detects both, quiet, but its design cannot see an episode
    # within a window (it alarmed on strong episodes only): never chosen.
    # (0.1, 0.01) is quiet but misses one of two: detection comes first.
    grid = {(0.02, 1e-4): outs(2, 0, powered=False), (0.03, 0.01): outs(2, 1), (0.1, 0.01): outs(1, 0)}
    best, rows = score.select(grid, train, "cd_change_exceed")
    assert (best.setting, best.alpha, best.meets_fa) == (0.03, 0.01, False)
    assert [c.power["k"] for c in rows] == [0, 4, 4]
    # Powered on only some training trials is not powered.
    partly = outs(2, 0)
    partly[0] = o(1, "h", detected=True, powered=False)
    assert score.select({(0.02, 1e-4): partly, (0.03, 0.01): outs(2, 1)}, train)[0].setting == 0.03
    # None detects enough: the most detected, then the fewest false alarms.
    weak = {(0.05, 0.01): outs(1, 1), (0.1, 0.01): outs(1, 0), (0.2, 0.01): outs(0, 0)}
    assert score.select(weak, train)[0].setting == 0.1
    # No setting powered (older records): every setting is a candidate.
    assert score.select({(0.02, 1e-4): outs(2, 0, powered=False)}, train)[0].setting == 0.02


def test_quiet_by_devices_splits_alarms_by_what_the_devices_own_data_show():
    rows = [score.QuietCheck("quiet-sleep", "sleep", alarm, changed, in_time) for alarm, changed, in_time in
            [(True, True, True), (True, True, False), (False, True, False), (False, True, False),
             (True, False, False)] + [(False, False, False)] * 19] + [
        score.QuietCheck("quiet-busy", "busy", True, False, False)]
    busy, sleep = score.quiet_by_devices(rows)
    assert (busy["cls"], busy["n"], busy["steady"]["k"], busy["changed"]["n"]) == ("quiet-busy", 1, 1, 0)
    assert busy["fisher_p"] == pytest.approx(1.0)
    assert (sleep["mode"], sleep["n"]) == ("sleep", 24)
    assert (sleep["steady"]["k"], sleep["steady"]["n"]) == (1, 20)
    assert (sleep["changed"]["k"], sleep["changed"]["n"], sleep["changed_in_time"]["k"]) == (2, 4, 1)
    # P(>= 2 of the 3 alarms among the 4 changed trials of 24) = hypergeometric tail.
    assert sleep["fisher_p"] == pytest.approx(float(stats.hypergeom.sf(1, 24, 3, 4)))
