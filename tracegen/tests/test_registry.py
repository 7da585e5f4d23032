"""The distribution registry: every kind is one entry, and each entry is consistent
(its mean against Monte Carlo, a monotone quantile function, bin means inside
their bins); an unknown kind is the same one-line error as before the registry;
adding a kind is one class and one ``register`` line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from wotbench import UserError
from wotbench.spec import WorkloadSpec
from wotbench.tracegen import _registry, generate
from wotbench.tracegen._distribution import REGISTRY, Distribution, parse_distribution, resource_service_times
from wotbench.tracegen._registry import Params, register
from wotbench.tracegen._streams import arrivals

#: The kinds (in this order) that the unknown-kind error listed before the registry.
KINDS_BEFORE = ("det", "exp", "uniform", "lognormal", "pareto", "mmpp2", "empirical")

#: One example of each kind (pareto with alpha > 2, so that its sample mean has a variance).
EXAMPLES = {
    "det": "det:3ms",
    "exp": "exp:300us",
    "uniform": "uniform:1ms,5ms",
    "lognormal": "lognormal:mean=5ms,cv=2",
    "pareto": "pareto:mean=5ms,alpha=3",
    "mmpp2": "mmpp2:on=exp:100us,off=uniform:1ms,3ms,t_on=5ms,t_off=20ms",
    "empirical": "empirical:obs.csv",
}
#: Kinds whose bins hold observed values while ppf interpolates between them (np.quantile).
RESAMPLED = {"empirical"}
OBSERVED = np.array([120.0, 80.0, 400.0, 1000.0, 50.0, 75.0, 75.0, 3000.0])


@pytest.fixture
def example(tmp_path: Path) -> Callable[[str], Distribution]:
    (tmp_path / "obs.csv").write_text("rit_us\n" + "\n".join(f"{v:g}" for v in OBSERVED) + "\n")
    return lambda kind: parse_distribution(EXAMPLES[kind], "rit", base_dir=tmp_path)


def test_every_kind_is_registered_once_with_an_example() -> None:
    assert tuple(REGISTRY)[:len(KINDS_BEFORE)] == KINDS_BEFORE
    assert set(EXAMPLES) == set(REGISTRY), "a new kind needs an example here"
    for name, entry in REGISTRY.items():
        assert entry.kind == name and issubclass(entry, Distribution)
        for alias in (name, *entry.aliases):
            assert _registry.lookup(alias.upper()) is entry


@pytest.mark.parametrize("kind", list(REGISTRY))
def test_example_parses_to_its_entry(kind: str, example: Callable[[str], Distribution]) -> None:
    d = example(kind)
    assert type(d) is REGISTRY[kind] and d.kind == kind and d.text == EXAMPLES[kind]


@pytest.mark.parametrize("alias,kind", [("deterministic", "det"), ("const", "det"), ("exponential", "exp"),
                                        ("EXP", "exp")])
def test_aliases(alias: str, kind: str) -> None:
    d = parse_distribution(f"{alias}:2ms")
    assert d.kind == kind and d.mean_us() == 2000


@pytest.mark.parametrize("kind", [k for k in REGISTRY if REGISTRY[k].is_iid])
def test_mean_matches_monte_carlo_and_the_closed_forms(kind: str, example: Callable[[str], Distribution]) -> None:
    d = example(kind)
    x = d.sample(np.random.default_rng(21), 400_000)
    se = x.std() / np.sqrt(x.size)
    assert abs(x.mean() - d.mean_us()) <= 6 * se + 1e-9 * d.mean_us(), (x.mean(), d.mean_us(), se)
    assert d.partial_mean(np.array([0.0, 1.0])) == pytest.approx([0.0, d.mean_us()], rel=1e-9, abs=1e-9)
    for k in (1, 7, 64, 1000):
        assert d.bin_means(k).mean() == pytest.approx(d.mean_us(), rel=1e-9)


def test_process_mean_matches_monte_carlo(example: Callable[[str], Distribution]) -> None:
    d = example("mmpp2")
    assert not d.is_iid
    horizon = 20e6
    _, counts = arrivals(d, 40, horizon, np.random.default_rng(8))
    se = counts.std() / np.sqrt(counts.size)
    assert abs(counts.mean() - horizon / d.mean_us()) <= 6 * se, (counts.mean(), horizon / d.mean_us(), se)


@pytest.mark.parametrize("kind", [k for k in REGISTRY if REGISTRY[k].is_iid])
def test_ppf_is_monotone_and_bin_means_lie_in_their_bins(kind: str,
                                                         example: Callable[[str], Distribution]) -> None:
    d = example(kind)
    q = np.linspace(0.0, 0.999, 2001)
    x = d.ppf(q)
    assert np.isfinite(x).all() and (np.diff(x) >= 0).all() and x[0] >= 0
    assert (np.diff(d.partial_mean(q)) >= 0).all()
    k = 64
    means = d.bin_means(k)
    assert (np.diff(means) >= -1e-9 * d.mean_us()).all()
    edges = d.ppf(np.linspace(0.0, 1.0, k + 1))
    tol = 1e-9 * d.mean_us()
    lo, hi = edges[:-1], edges[1:]
    if kind in RESAMPLED:  # only within the observed range
        lo, hi = np.full(k, edges[0]), np.full(k, edges[-1])
    assert ((lo - tol <= means) & (means <= hi + tol)).all()


@pytest.mark.parametrize("kind", [k for k in REGISTRY if not REGISTRY[k].is_iid])
def test_a_process_has_no_draws_and_no_quantiles(kind: str, example: Callable[[str], Distribution]) -> None:
    d = example(kind)
    rng = np.random.default_rng(1)
    for call in (lambda: d.ppf(0.5), lambda: d.bin_means(4), lambda: d.sample(rng, 3),
                 lambda: d.sample_length_biased(rng, 3)):
        with pytest.raises(TypeError, match="is a process"):
            call()
    assert "p50_us" not in d.describe() and d.describe()["dist"] == d.text
    with pytest.raises(UserError, match=f"{kind} is an arrival process: allowed for RITs only"):
        parse_distribution(EXAMPLES[kind], "service", role="service")


def test_unknown_kind_is_the_same_one_line_error(run_cli: Callable[..., tuple[int, str, str]],
                                                 tmp_path: Path) -> None:
    listed = ", ".join(REGISTRY)
    with pytest.raises(UserError) as ei:
        parse_distribution("Expo:1ms", "devices[0].rit")
    assert str(ei.value) == f"devices[0].rit: unknown distribution 'Expo' (one of {listed})"
    rc, out, err = run_cli("tracegen", "--devices", "2", "--duration", "1s", "--rit", "expo:1ms",
                           "--service", "exp:1ms", "--out", tmp_path / "wl")
    assert (rc, out) == (2, "")
    assert err == f"error: --rit: unknown distribution 'expo' (one of {listed})\n"
    assert not (tmp_path / "wl").exists()


def test_a_process_cannot_be_nested() -> None:
    with pytest.raises(UserError) as ei:
        parse_distribution("mmpp2:on=MMPP2:x,off=exp:1ms,t_on=1ms,t_off=1ms", "rit")
    assert ei.value.what == "mmpp2 parameter 'on': cannot be mmpp2" and ei.value.field == "rit"


# -- adding a kind -------------------------------------------------------------------


@dataclass(frozen=True)
class Gamma(Distribution):
    """A kind these tests add: ``gamma:mean=MEAN,shape=K``."""

    kind = "gamma"
    mean: float
    shape: float

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Gamma:
        kv = at.keyed(body, ("mean", "shape"))
        return cls(text, at.time("mean", kv["mean"]), at.number("shape", kv["shape"]))

    def mean_us(self) -> float:
        return self.mean

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        return np.asarray(stats.gamma.ppf(q, self.shape, scale=self.mean / self.shape))

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        # x f(x) / mean is the gamma density with shape + 1.
        x = self.ppf(np.clip(q, 0.0, 1.0))
        return self.mean * np.asarray(stats.gamma.cdf(x, self.shape + 1, scale=self.mean / self.shape))

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return rng.gamma(self.shape, self.mean / self.shape, size)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.gamma(self.shape + 1, self.mean / self.shape, size)


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    """Kinds registered inside a test are gone after it."""
    saved = dict(_registry.REGISTRY), dict(_registry._NAMES)
    yield
    for table, before in zip((_registry.REGISTRY, _registry._NAMES), saved, strict=True):
        table.clear()
        table.update(before)


@pytest.mark.usefixtures("scratch_registry")
def test_a_new_kind_is_one_class_and_one_register_line(load_spec: Callable[[str], WorkloadSpec],
                                                      tmp_path: Path) -> None:
    register(Gamma)
    d = parse_distribution("gamma:mean=2ms,shape=3", "rit")
    assert isinstance(d, Gamma) and d.mean_us() == 2000
    table = resource_service_times(d, 64)
    assert table.mean() == pytest.approx(2000, abs=0.5)
    t, counts = arrivals(d, 2, 2000 * 20_000, np.random.default_rng(3))
    rits = np.concatenate([np.diff(s) for s in np.split(t, np.cumsum(counts)[:-1])])
    assert stats.kstest(rits, stats.gamma(3, scale=2000 / 3).cdf).pvalue > 0.001
    spec = load_spec("""
        workload: {seed: 2, duration: 2s}
        devices:
          - {count: 3, rit: "gamma:mean=10ms,shape=2", service: "gamma:mean=1ms,shape=4"}
    """)
    out = generate(spec, tmp_path / "wl")
    assert 400 < out.requests < 800
    with pytest.raises(UserError, match=r"\(one of det, .*, empirical, gamma\)"):
        parse_distribution("weibull:1ms", "rit")


@pytest.mark.usefixtures("scratch_registry")
def test_register_refuses_an_incomplete_or_clashing_entry() -> None:
    @dataclass(frozen=True)
    class NoDraws(Distribution):
        kind = "nodraws"

        @classmethod
        def parse(cls, text: str, body: str, at: Params) -> NoDraws:
            return cls(text)

        def mean_us(self) -> float:
            return 1.0

    with pytest.raises(TypeError, match="'nodraws' does not define ppf, partial_mean, sample, sample_length_biased"):
        register(NoDraws)

    @dataclass(frozen=True)
    class NoArrivals(NoDraws):
        kind = "noarrivals"
        is_iid = False

    with pytest.raises(TypeError, match="'noarrivals' does not define arrivals"):
        register(NoArrivals)

    @dataclass(frozen=True)
    class Clash(Gamma):
        kind = "clash"
        aliases = ("exponential",)

    with pytest.raises(TypeError, match="'exponential' is registered twice"):
        register(Clash)
    assert "nodraws" not in REGISTRY and "noarrivals" not in REGISTRY
