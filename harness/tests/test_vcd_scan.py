"""validate-cd's reference detector (harness/studies/vcd_scan.py) on
synthetic trials: a tail that widens in one segment is found there, a
stationary one is not, the p-value is a permutation test's (its false
alarms at ALPHA stay near ALPHA), and scant input is answered plainly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wotbench.studies import vcd_scan
from wotbench.studies import vcd_truth as truth


def trial(tail_share: dict[tuple[float, float], float], seed: int, span_s: float = 30.0,
          per_s: int = 40) -> truth.DeviceRS:
    """Poisson request times over ``span_s``; R - S ~ 200 us, except that a
    share of the requests (1 % by default, ``tail_share`` per span of
    seconds) get a 3 ms tail."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(per_s * span_s)
    t = np.sort(rng.uniform(0, span_s * 1e6, n))
    share = np.full(n, 0.01)
    for (a, b), p in tail_share.items():
        share[(t >= a * 1e6) & (t < b * 1e6)] = p
    x = rng.normal(200.0, 20.0, n) + np.where(rng.random(n) < share, 3000.0, 0.0)
    return truth.DeviceRS(t, x)


def test_a_tail_that_widens_in_one_segment_is_found_there():
    s = vcd_scan.scan(trial({(8.0, 22.0): 0.08}, seed=1))
    assert s.changed and s.p_value <= 0.01, s
    assert s.start_us is not None and s.end_us is not None
    assert abs(s.start_us - 8e6) <= 1e6 and abs(s.end_us - 22e6) <= 1e6, s
    assert s.exceed_in > 3 * s.exceed_out
    d = s.to_dict()
    assert d["changed"] is True and d["n"] == s.n


def test_a_stationary_tail_alarms_at_about_alpha():
    p = np.array([vcd_scan.scan(trial({}, seed=k), seed=k).p_value for k in range(20)])
    assert np.all((p > 0) & (p <= 1))
    # Under exchangeability the p-values are (at most) uniform: at most a few of 20
    # below 0.05 (P(>= 5 of 20 | 0.05) < 2 %), and not all of them large either
    # (P(< 4 of 20 below 0.5 | uniform) < 0.2 %).
    assert np.count_nonzero(p <= vcd_scan.ALPHA) <= 4, np.sort(p)[:8]
    assert np.count_nonzero(p <= 0.5) >= 4, np.sort(p)


def test_the_same_trial_gives_the_same_answer_and_order_does_not_matter():
    rs = trial({(5.0, 15.0): 0.05}, seed=3)
    shuffled = np.random.default_rng(0).permutation(rs.t_us.size)
    a = vcd_scan.scan(rs)
    b = vcd_scan.scan(truth.DeviceRS(rs.t_us[shuffled], rs.rs_us[shuffled]))
    assert a == b


@pytest.mark.parametrize(("tail", "seed"), [((28.5, 30.0), 5), ((0.0, 1.0), 6), ((10.0, 20.0), 7)])
def test_the_segment_and_the_rest_each_span_two_seconds(tail, seed):
    """Even where the tail widens at an edge of the phase, the segment found
    leaves at least MIN_SEGMENT_US of the phase outside it."""
    rs = trial({tail: 0.3}, seed=seed)
    s = vcd_scan.scan(rs)
    assert s.start_us is not None and s.end_us is not None
    first, last = float(rs.t_us.min()), float(rs.t_us.max())
    assert s.end_us - s.start_us >= vcd_scan.MIN_SEGMENT_US
    assert (s.start_us - first) + (last + 1 - s.end_us) >= vcd_scan.MIN_SEGMENT_US, s


def test_a_segment_needs_room_inside_and_outside():
    short = trial({}, seed=2, span_s=3.0)          # no segment of 2 s with 2 s outside it
    s = vcd_scan.scan(short)
    assert (s.p_value, s.start_us, s.end_us, s.changed) == (1.0, None, None, False)
    assert s.to_dict()["exceed_in"] is None


@pytest.mark.parametrize("n", [0, 1])
def test_too_few_requests_are_no_change(n):
    s = vcd_scan.scan(truth.DeviceRS(np.arange(float(n)), np.ones(n)))
    assert s.n == n and not s.changed and s.start_us is None and math.isnan(s.exceed_in)


def test_a_long_phase_gets_a_coarser_grid_and_bounded_work():
    s = vcd_scan.scan(trial({(1000.0, 1400.0): 0.08}, seed=4, span_s=3600.0, per_s=5))
    assert s.changed and s.start_us is not None and s.end_us is not None
    assert abs(s.start_us - 1000e6) <= 40e6 and abs(s.end_us - 1400e6) <= 40e6, s
