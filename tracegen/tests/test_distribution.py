"""Distribution parsing (units, parameters, errors) and sampling against the targets."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats
from scipy.stats.distributions import rv_frozen

from wotbench import UserError
from wotbench.base.units import parse_duration, parse_time_us
from wotbench.tracegen._distribution import (
    Distribution,
    Exp,
    Lognormal,
    Mmpp2,
    Pareto,
    Uniform,
    parse_distribution,
    resource_service_times,
)
from wotbench.tracegen._streams import arrivals

N = 20_000
ALPHA = 0.001  # a correct generator fails a test at this rate with this fixed seed: never here


@pytest.mark.parametrize("text,us", [
    ("300us", 300), ("1.5s", 1_500_000), ("2m", 120_000_000), ("1h", 3_600_000_000),
    ("250ns", 0), ("1500ns", 2), ("5ms", 5000), ("0s", 0), ("1e3us", 1000), ("7ms", 7000),
])
def test_parse_duration(text: str, us: int) -> None:
    assert parse_duration(text) == us


@pytest.mark.parametrize("value,needle", [
    ("60", "has no unit"), (60, "has no unit"), ("-5ms", "must not be negative"),
    ("5parsecs", "unknown unit"), ("7 ms", "with no space"), ("fast", "invalid"), (True, "expected a"),
    (None, "expected a"),
])
def test_bad_durations_name_the_field(value: object, needle: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_duration(value, "workload.duration")
    assert needle in ei.value.what and ei.value.field == "workload.duration"


def test_time_keeps_fractions() -> None:
    assert parse_time_us("300ns") == pytest.approx(0.3)


@pytest.mark.parametrize("text,mean", [
    ("det:1s", 1e6), ("exp:300us", 300), ("exponential:300us", 300), ("uniform:1ms,5ms", 3000),
    ("lognormal:mean=5ms,cv=2", 5000), ("pareto:mean=5ms,alpha=1.5", 5000),
    ("lognormal: cv=0.5, mean=2ms", 2000),
])
def test_parse_distribution_means(text: str, mean: float) -> None:
    assert parse_distribution(text, "rit").mean_us() == pytest.approx(mean)


@pytest.mark.parametrize("text,needle", [
    ("expo:300us", "unknown distribution 'expo'"),
    ("exp:300", "exp parameter 'mean'"),
    ("exp:300", "has no unit"),
    ("exp:-3ms", "must not be negative"),
    ("exp:0s", "mean must be > 0"),
    ("det:0s", "mean inter-arrival time must be > 0"),
    ("uniform:5ms,1ms", "low < high"),
    ("uniform:5ms", "two values"),
    ("lognormal:mean=5ms", "missing parameter 'cv'"),
    ("lognormal:mean=5ms,cv=abc", "parameter 'cv'"),
    ("lognormal:mean=5ms,cv=0", "'cv' must be > 0"),
    ("lognormal:mean=5,cv=2", "parameter 'mean'"),
    ("pareto:mean=5ms,alpha=1", "'alpha' must be > 1"),
    ("lognormal:mean=5ms,cv=2,shape=3", "unexpected 'shape=3'"),
    ("mmpp2:on=exp:1ms,off=exp:10ms,t_on=5ms", "missing parameter 't_off'"),
    ("mmpp2:on=exp:1ms,off=expo:10ms,t_on=5ms,t_off=1s", "mmpp2 parameter 'off'"),
    ("mmpp2:on=exp:1ms,off=exp:10ms,t_on=5,t_off=1s", "parameter 't_on'"),
    ("300us", "expected a distribution"),
    ("exp:", "parameters missing"),
])
def test_bad_distributions_name_field_and_parameter(text: str, needle: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_distribution(text, "devices[0].rit")
    assert needle in ei.value.what, ei.value.what
    assert ei.value.field == "devices[0].rit"


def test_mmpp2_is_rit_only() -> None:
    with pytest.raises(UserError, match="RITs only"):
        parse_distribution("mmpp2:on=exp:1ms,off=exp:1s,t_on=1s,t_off=1s", "service", role="service")


def test_service_may_be_zero() -> None:
    assert parse_distribution("det:0us", "service", role="service").mean_us() == 0


def test_mmpp2_nested_parameters_may_contain_commas() -> None:
    d = parse_distribution("mmpp2:on=uniform:1ms,3ms,off=lognormal:mean=10ms,cv=2,t_on=50ms,t_off=200ms")
    assert isinstance(d, Mmpp2) and not d.is_iid
    assert isinstance(d.on, Uniform) and d.on.kind == "uniform" and d.on.high == 3000
    assert isinstance(d.off, Lognormal) and d.off.kind == "lognormal" and d.off.cv == 2
    # long-run rate: (50/2 + 200/10) / 250 per ms
    assert d.mean_us() == pytest.approx(250 / (50 / 2 + 200 / 10) * 1000)


#: SciPy's version of each continuous kind: the reference the generator is tested against.
SCIPY: dict[type[Distribution], Callable[[Any], rv_frozen[Any, Any]]] = {
    Exp: lambda d: stats.expon(scale=d.mean),
    Uniform: lambda d: stats.uniform(d.low, d.high - d.low),
    Lognormal: lambda d: stats.lognorm(s=d.lognormal_params[1], scale=math.exp(d.lognormal_params[0])),
    Pareto: lambda d: stats.pareto(b=d.alpha, scale=d.pareto_scale),
}


def _scipy(text: str) -> rv_frozen[Any, Any]:
    d = parse_distribution(text)
    return SCIPY[type(d)](d)


CONTINUOUS = ["exp:300us", "uniform:1ms,5ms", "lognormal:mean=5ms,cv=2", "pareto:mean=5ms,alpha=1.5",
              "lognormal:mean=100ms,cv=0.3"]


@pytest.mark.parametrize("text", CONTINUOUS)
def test_samples_follow_the_distribution(text: str) -> None:
    d = parse_distribution(text)
    x = d.sample(np.random.default_rng(7), N)
    assert stats.kstest(x, _scipy(text).cdf).pvalue > ALPHA


@pytest.mark.parametrize("text", CONTINUOUS)
def test_ppf_and_partial_mean_match_scipy(text: str) -> None:
    d = parse_distribution(text)
    ref = _scipy(text)
    q = np.array([0.05, 0.5, 0.95, 0.99])
    np.testing.assert_allclose(d.ppf(q), ref.ppf(q), rtol=1e-9)
    assert d.partial_mean(np.array([1.0]))[0] == pytest.approx(ref.mean(), rel=1e-9)
    x = ref.ppf(0.7)
    assert d.partial_mean(np.array([0.7]))[0] == pytest.approx(ref.expect(lambda v: v, ub=x), rel=1e-6)


@pytest.mark.parametrize("text", CONTINUOUS)
def test_rits_of_a_generated_stream_follow_the_distribution(text: str) -> None:
    d = parse_distribution(text)
    horizon = d.mean_us() * N
    t, counts = arrivals(d, 3, horizon, np.random.default_rng(11))
    assert counts.sum() == t.size and (counts > 0.9 * N).all()
    rits = np.concatenate([np.diff(s) for s in np.split(t, np.cumsum(counts)[:-1])])
    assert (rits >= 0).all() and t.max() < horizon
    assert stats.kstest(rits, _scipy(text).cdf).pvalue > ALPHA


def test_det_stream_is_exact_and_phase_shifted() -> None:
    d = parse_distribution("det:1ms")
    t, counts = arrivals(d, 50, 1e6, np.random.default_rng(3))
    streams = np.split(t, np.cumsum(counts)[:-1])
    assert all(np.allclose(np.diff(s), 1000.0) for s in streams)
    firsts = np.array([s[0] for s in streams])
    assert len(np.unique(firsts)) == 50 and firsts.max() < 1000


def test_mmpp2_rate_and_burstiness() -> None:
    d = parse_distribution("mmpp2:on=exp:100us,off=exp:10ms,t_on=50ms,t_off=200ms")
    horizon = 200e6
    t, _ = arrivals(d, 1, horizon, np.random.default_rng(5))
    rate = t.size / horizon
    assert rate == pytest.approx(1 / d.mean_us(), rel=0.1)
    rits = np.diff(t)
    # A bursty stream: coefficient of variation of RITs well above 1 (exp has 1).
    assert rits.std() / rits.mean() > 2
    # In the on state RITs are exp(100us): the shortest half of the RITs are mostly that.
    short = rits[rits < np.quantile(rits, 0.5)]
    assert short.mean() < 200


def test_empirical_resamples_the_observed_values(tmp_path: Path) -> None:
    obs = np.random.default_rng(1).gamma(2.0, 150.0, 5000)
    f = tmp_path / "rits.csv"
    f.write_text("rit_us\n" + "\n".join(f"{v:.3f}" for v in obs) + "\n\n")
    d = parse_distribution("empirical:rits.csv", base_dir=tmp_path)
    assert d.mean_us() == pytest.approx(obs.mean())
    x = d.sample(np.random.default_rng(2), N)
    assert set(np.round(x, 3)) <= set(np.round(obs, 3))
    assert stats.ks_2samp(x, obs).pvalue > ALPHA


def test_empirical_errors_point_into_the_csv(tmp_path: Path) -> None:
    f = tmp_path / "bad.csv"
    f.write_text("rit_us\n100\n200\nabc\n")
    with pytest.raises(UserError) as ei:
        parse_distribution(f"empirical:{f}")
    assert (ei.value.file, ei.value.line) == (str(f), 4)
    f.write_text("100\n-3\n")
    with pytest.raises(UserError, match="must be a finite value >= 0"):
        parse_distribution(f"empirical:{f}")
    with pytest.raises(UserError, match="file not found"):
        parse_distribution("empirical:nope.csv", "rit", base_dir=tmp_path)
    f.write_text("1,2\n3,4\n")
    with pytest.raises(UserError, match="one column"):
        parse_distribution(f"empirical:{f}")


# -- resource selection --------------------------------------------------------


@pytest.mark.parametrize("text", ["exp:5ms", "lognormal:mean=5ms,cv=2", "uniform:1ms,9ms",
                                  "pareto:mean=5ms,alpha=2.5"])
def test_resources_keep_the_mean_and_stay_within_1_over_k(text: str) -> None:
    d = parse_distribution(text, role="service")
    ref = _scipy(text)
    for k in (16, 64, 256):
        table = resource_service_times(d, k)
        assert (np.diff(table) >= 0).all()
        assert table.mean() == pytest.approx(d.mean_us(), abs=0.5)
        # CDF distance of "uniform over the table" to the target is at most 1/k (+ rounding).
        xs = np.sort(table).astype(float)
        emp_hi = np.arange(1, k + 1) / k
        emp_lo = np.arange(0, k) / k
        cdf = ref.cdf(xs)
        assert max(np.abs(cdf - emp_hi).max(), np.abs(cdf - emp_lo).max()) <= 1 / k + 1e-3


def test_requests_over_resources_pass_ks_when_k_is_large_enough() -> None:
    # With k resources the discrete distribution is within 1/k of the target; a KS
    # test on n requests cannot tell them apart while 1/k << 1.36/sqrt(n).
    d = parse_distribution("exp:5ms", role="service")
    k, n = 1024, 20_000
    table = resource_service_times(d, k)
    picks = table[np.random.default_rng(9).integers(0, k, n)]
    assert stats.kstest(picks, stats.expon(scale=5000).cdf).pvalue > ALPHA


def test_det_service_has_one_value() -> None:
    d = parse_distribution("det:5ms", role="service")
    assert set(resource_service_times(d, 64)) == {5000}


def test_long_streams_are_drawn_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from wotbench.tracegen import _streams as streams

    monkeypatch.setattr(streams, "_BATCH_VALUES", 1000)  # force the block path
    d = parse_distribution("exp:1ms")
    t, counts = arrivals(d, 2, 20e6, np.random.default_rng(4))
    assert counts.sum() == t.size and (counts > 15_000).all()
    parts = np.split(t, np.cumsum(counts)[:-1])
    assert all((np.diff(p) >= 0).all() and p.max() < 20e6 for p in parts)
    rits = np.concatenate([np.diff(p) for p in parts])
    assert stats.kstest(rits, stats.expon(scale=1000).cdf).pvalue > ALPHA


def test_many_short_streams_cut_by_mask_or_by_row_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    from wotbench.tracegen import _streams as streams

    d = parse_distribution("exp:10ms")
    t, counts = arrivals(d, 20_000, 100e3, np.random.default_rng(6))  # about 10 per stream
    assert counts.sum() == t.size and counts.mean() == pytest.approx(10, rel=0.02)
    monkeypatch.setattr(streams, "_MASK_MAX_K", 0)
    t2, counts2 = arrivals(d, 20_000, 100e3, np.random.default_rng(6))
    np.testing.assert_array_equal(counts, counts2)
    np.testing.assert_array_equal(t, t2)


@pytest.mark.parametrize("text", ["exp:10ms", "det:10ms", "uniform:2ms,18ms", "lognormal:mean=10ms,cv=1.5",
                                  "pareto:mean=10ms,alpha=2.5"])
def test_streams_are_stationary_from_the_start(text: str) -> None:
    """A short test holds horizon / mean requests on average: no start-up bias."""
    d = parse_distribution(text)
    n = 40_000
    _, counts = arrivals(d, n, 30e3, np.random.default_rng(12))  # 3 means per stream
    se = counts.std() / np.sqrt(n)
    assert abs(counts.mean() - 3.0) < 5 * se + 1e-9, (counts.mean(), se)


@pytest.mark.parametrize("text", CONTINUOUS)
def test_length_biased_draws(text: str) -> None:
    d = parse_distribution(text)
    x = d.sample_length_biased(np.random.default_rng(3), N)
    ref = _scipy(text)
    # The length-biased CDF is F1(x) = E[X; X <= x] / mean = L(F(x)) / mean.

    def cdf(v: np.ndarray) -> np.ndarray:
        return d.partial_mean(ref.cdf(v)) / d.mean_us()

    # kstest calls the CDF once with the sorted sample, an array (scipy-stubs type it float -> float).
    assert stats.kstest(x, cdf).pvalue > ALPHA  # type: ignore[arg-type]
