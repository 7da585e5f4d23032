"""The observe check's judgement of a run's numbers (check_observe on a
synthetic analysis): notifications lost where only the GE can lose them, and
the devices' event counts against what their process and the dead time of
their observations allow (docs/observe.md, "Which validity checks apply")."""

from __future__ import annotations

import math
from typing import Any

import pytest

from wotbench.reporting._notify import check_observe
from wotbench.spec import Thresholds

N, LIVE_S = 1000, 100        # observations of a group, each asked to live 100 s
E = N * LIVE_S + N           # 1 s between events, plus each registration's event 0
TH = Thresholds()            # rate_tolerance 5 %, max_error_rate 1 %


def _group(name: str, got: float = E, rit: str = "exp:1000000", *, lost: int = 0, gave_up: int = 0,
           registered: int = N) -> dict[str, Any]:
    return {"group": name, "observations": N, "expected_events": float(E), "device_events": round(got),
            "device_rit": rit, "rit_mean_us": 1e6, "max_age_s": 60, "gave_up": gave_up, "reset": 0,
            "device_registered": registered, "device_reregistered": 0, "lost": lost, "received": E - lost,
            "refused": 0}


def _ge(groups: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
    return {"ge": 0, "groups": [g["group"] for g in groups], "received": sum(g["received"] for g in groups),
            "lost": sum(g["lost"] for g in groups), "observations": N * len(groups),
            "registered": N * len(groups), "refused": 0, "reregistrations": 0, "rereg_answered": 0,
            "rows_dropped": 0, **kw}


def _analysis(groups: list[dict[str, Any]], *, ge: dict[str, Any] | None = None, impaired: tuple[str, ...] = (),
              polling: int = 9000, measured: int = 5000) -> dict[str, Any]:
    def total(key: str) -> Any:
        return sum(g[key] for g in groups)

    section = {
        "observations": total("observations"), "expected_events": total("expected_events"),
        "expected_events_measure": 60.0 * total("observations"), "live_max_us": LIVE_S * 1e6,
        "polling_requests": polling, "groups": groups, "ges": [ge or _ge(groups)],
        "total": {"device_events": total("device_events"), "expected_events": total("expected_events"),
                  "refused": 0, "notify_lag_p99_us": 200.0, "received": total("received"), "lost": total("lost"),
                  "latency_us": {"n": measured}},
        "missing": {"notify_csv": [], "ge_summary_observe": [], "device_stats": []}}
    loss = {"loss": 0.2, "delay_us": 0, "jitter_us": 0, "rate_bps": None}
    return {"observe": section, "ges": [], "harness": {"impairment": {"groups": {n: loss for n in impaired}}}}


def _judge(a: dict[str, Any]) -> tuple[bool, str]:
    got = check_observe(a, TH)
    assert got is not None
    return got


def _old_band_fails(got: float) -> bool:
    """The event-count test before it knew the process or the dead time."""
    return abs(got - E) > max(TH.rate_tolerance * E, 4 * math.sqrt(E))


# 100 observations given up under loss, each dead until the GE re-registered
# (~62 s: Max-Age 60 s + 2 s grace), 20 of the re-registrations lost (63 s more each).
SHORT = E - 100 * 62 - 20 * 63


def test_honest_lossy_run_with_give_ups_passes() -> None:
    g = _group("lossy", SHORT, lost=20_000, gave_up=100, registered=N + 100)
    ok, why = _judge(_analysis([g], ge=_ge([g], reregistrations=120, rereg_answered=100), impaired=("lossy",)))
    assert ok, why
    assert _old_band_fails(SHORT)
    assert "dead until re-registered: 100 observations given up or reset, 0 registrations and 20 " \
           "re-registrations unanswered, x 63 s" in why
    assert "a result in lossy (configured impairment)" in why


def test_too_few_events_without_give_ups_fail() -> None:
    ok, why = _judge(_analysis([_group("lossy", SHORT, lost=20_000)], impaired=("lossy",)))
    assert not ok and f"group lossy: the devices drew {round(SHORT):,} events vs {E:,} expected" in why, why
    # re-registrations the GE saw unanswered only lengthen a dead episode; without one they excuse nothing
    g = _group("lossy", SHORT, lost=20_000)
    ok, why = _judge(_analysis([g], ge=_ge([g], reregistrations=120, rereg_answered=0), impaired=("lossy",)))
    assert not ok and "dead until" not in why, why


def test_give_ups_excuse_no_more_than_their_dead_time() -> None:
    """100 give-ups and 20 lost re-registrations explain at most 120 x 63 s of
    events (1 s apart): a device 30,000 events short is not explained by them."""
    g = _group("lossy", E - 30_000, lost=20_000, gave_up=100, registered=N + 100)
    ok, why = _judge(_analysis([g], ge=_ge([g], reregistrations=120, rereg_answered=100), impaired=("lossy",)))
    assert not ok and "the devices drew 71,000 events" in why, why


@pytest.mark.parametrize(("rit", "ratio"), [
    ("pareto:1000000:1.5", 1.07),     # simulated: 1,000 observations x 100 s draw 4.8..8.3 % more than t/mean
    ("pareto:1000000:1.2", 1.39),     # 35.6..42.7 % more
    ("lognormal:1000000:3", 1.057),   # 1.8..5.7 % more (the renewal excess (cv^2 - 1) / 2 per observation)
])
def test_heavy_tailed_processes_with_a_plausible_deviation_pass(rit: str, ratio: float) -> None:
    ok, why = _judge(_analysis([_group("heavy", E * ratio, rit)]))
    assert ok, why
    assert _old_band_fails(E * ratio)
    if "pareto" in rit:
        assert "has infinite variance (pareto alpha <= 2): judged only within the bounds" in why, why


@pytest.mark.parametrize("ratio", [4.0, 0.5])
def test_infinite_variance_still_bounds_the_count(ratio: float) -> None:
    """pareto alpha 1.5: at most live / x_m = 3 x live / mean events per
    observation, and Hoeffding's bound below (about 22 % here)."""
    ok, why = _judge(_analysis([_group("heavy", E * ratio, "pareto:1000000:1.5")]))
    assert not ok and "group heavy: the devices drew" in why and "infinite variance" in why, why


def test_det_off_by_ten_percent_fails_and_its_floor_passes() -> None:
    ok, why = _judge(_analysis([_group("clock", E * 0.9, "det:1000000")]))
    assert not ok and "group clock: the devices drew 90,900 events" in why and "det cv^2 0" in why, why
    # each observation draws floor(live / period) events after its event 0: up to one short each
    assert _judge(_analysis([_group("clock", E - N, "det:1000000")]))[0]


def test_a_group_without_its_process_is_missing_evidence() -> None:
    ok, why = _judge(_analysis([_group("x", rit="")]))
    assert not ok and "expected.json gives no notification process" in why and "missing evidence" in why


def test_loss_in_a_group_without_impairment_fails() -> None:
    plain, lossy = _group("plain", lost=2_000), _group("lossy", lost=20_000)
    ok, why = _judge(_analysis([plain, lossy], impaired=("lossy",)))
    assert not ok and why.startswith("group plain (no impairment): 2,000 of 101,000 notifications lost "
                                     "(1.98% > 1.0%): on a link without configured loss"), why
    assert "lossy" not in why
    ok, why = _judge(_analysis([_group("plain", lost=500), lossy], impaired=("lossy",)))
    assert ok and "within 1.0% in plain (no impairment); a result in lossy (configured impairment)" in why, why


def test_the_ges_own_loss_count_judges_the_tail() -> None:
    """The CSV's seq gaps cannot see a lost tail; the GE's own count, with the
    devices' last seq, can: judged when all its observed groups are unimpaired."""
    g = _group("plain")
    ok, why = _judge(_analysis([g], ge=_ge([g], lost=5_000)))
    assert not ok and "GE 0 (groups plain, no impairment): 5,000 of 106,000 notifications lost, its own " \
                      "count with the tail (4.72% > 1.0%)" in why, why
    both = [g, _group("lossy")]
    assert _judge(_analysis(both, ge=_ge(both, lost=5_000), impaired=("lossy",)))[0]


def test_polling_and_observe_must_receive_notifications_in_the_measurement_phase() -> None:
    ok, why = _judge(_analysis([_group("s")], measured=0))
    assert not ok and "no notification received in the measurement phase (60,000 events expected there)" in why
    # observe only: the measurement check counts them (validity.min_notifications)
    assert _judge(_analysis([_group("s")], measured=0, polling=0))[0]
