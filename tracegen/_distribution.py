"""Distributions of request inter-arrival times (RIT) and service times, drawn.

A spec holds each distribution as its parsed values (wotbench.spec.distributions:
the grammar, the checks, the mean; no NumPy). Each kind here is that kind
with its draws: one entry of the registry (tracegen/_registry.py), a frozen
dataclass extending the spec's kind (same fields, same parsing) with its
quantile function and partial mean and how to draw it, in NumPy. Adding a
kind is one more such class, decorated with ``@register``.
:func:`parse_distribution` parses like the spec and gives the drawing kind;
:func:`~wotbench.tracegen._registry.sampler` turns a spec's value into one.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

import numpy as np
import numpy.typing as npt

from wotbench.spec import distributions as spec
from wotbench.spec import resource_service_times as _resource_service_times
from wotbench.spec.distributions import DistributionSpec
from wotbench.spec.empirical import Observed
from wotbench.tracegen import _streams
from wotbench.tracegen._registry import REGISTRY, Distribution, register, sampler

__all__ = ["Distribution", "parse_distribution", "resource_service_times", "REGISTRY",
           "Det", "Exp", "Uniform", "Lognormal", "Pareto", "Mmpp2", "Empirical"]


def _probs(q: np.ndarray | float) -> npt.NDArray[np.float64]:
    return np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)


# -- the kinds ---------------------------------------------------------------------


@register
@dataclass(frozen=True)
class Det(spec.Det, Distribution):
    """``det:VALUE``: always the same value."""

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        return np.full_like(np.asarray(q, dtype=np.float64), self.mean)

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        return _probs(q) * self.mean

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return np.full(size, self.mean, dtype=np.float64)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return np.full(size, self.mean, dtype=np.float64)


@register
@dataclass(frozen=True)
class Exp(spec.Exp, Distribution):
    """``exp:MEAN``: exponential."""

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return -self.mean * np.log1p(-np.asarray(q, dtype=np.float64))

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        r = 1.0 - _probs(q)
        with np.errstate(divide="ignore", invalid="ignore"):
            tail = np.where(r > 0, r * (1.0 - np.log(np.where(r > 0, r, 1.0))), 0.0)
        return self.mean * (1.0 - tail)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return rng.exponential(self.mean, size)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.gamma(2.0, self.mean, size)


@register
@dataclass(frozen=True)
class Uniform(spec.Uniform, Distribution):
    """``uniform:LOW,HIGH``."""

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        return self.low + np.asarray(q, dtype=np.float64) * (self.high - self.low)

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        q = _probs(q)
        return q * (self.low + self.ppf(q)) / 2

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return rng.uniform(self.low, self.high, size)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        lo2, hi2 = self.low**2, self.high**2
        return np.sqrt(lo2 + rng.random(size) * (hi2 - lo2))


@register
@dataclass(frozen=True)
class Lognormal(spec.Lognormal, Distribution):
    """``lognormal:mean=MEAN,cv=CV``: lognormal by mean and coefficient of variation."""

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        from scipy import special

        mu, sigma = self.lognormal_params
        return np.exp(mu + sigma * special.ndtri(np.asarray(q, dtype=np.float64)))

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        from scipy import special

        _, sigma = self.lognormal_params
        with np.errstate(over="ignore"):
            return self.mean * special.ndtr(special.ndtri(_probs(q)) - sigma)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        mu, sigma = self.lognormal_params
        return rng.lognormal(mu, sigma, size)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        mu, sigma = self.lognormal_params
        return rng.lognormal(mu + sigma**2, sigma, size)


@register
@dataclass(frozen=True)
class Pareto(spec.Pareto, Distribution):
    """``pareto:mean=MEAN,alpha=ALPHA``: Pareto type I (heavy tail), alpha > 1."""

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return self.pareto_scale * np.power(1.0 - np.asarray(q, dtype=np.float64), -1.0 / self.alpha)

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        return self.mean * (1.0 - np.power(1.0 - _probs(q), (self.alpha - 1) / self.alpha))

    def _draws(self, rng: np.random.Generator, shape: float, size: int | tuple[int, ...]) -> np.ndarray:
        out = rng.pareto(shape, size)
        out += 1.0
        out *= self.pareto_scale
        return out

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return self._draws(rng, self.alpha, size)

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        # Pareto(x_m, alpha) biased by length is Pareto(x_m, alpha - 1).
        return self._draws(rng, self.alpha - 1.0, size)


@register
@dataclass(frozen=True)
class Mmpp2(spec.Mmpp2, Distribution):
    """``mmpp2:on=DIST,off=DIST,t_on=MEAN,t_off=MEAN``: bursty on/off arrivals (RIT only),
    drawn by ``_streams.mmpp2``; ``on`` and ``off`` are drawing kinds too."""

    @classmethod
    def of(cls, dist: DistributionSpec) -> Self:
        assert isinstance(dist, spec.Mmpp2), dist
        return cls(dist.text, sampler(dist.on), sampler(dist.off), dist.t_on, dist.t_off)

    def arrivals(self, n_streams: int, horizon_us: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return _streams.mmpp2(sampler(self.on), sampler(self.off), self.t_on, self.t_off, n_streams,
                              horizon_us, rng)


#: The values of each file read (wotbench.spec.empirical), as an array: one per file, no copy.
_SAMPLES: weakref.WeakKeyDictionary[Observed, npt.NDArray[np.float64]] = weakref.WeakKeyDictionary()


@register
@dataclass(frozen=True)
class Empirical(spec.Empirical, Distribution):
    """``empirical:FILE``: resampled from observed values."""

    samples: npt.NDArray[np.float64] = field(init=False, compare=False, repr=False)
    """The observed values (float64, us, read-only; the file's values, not a copy)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        samples = _SAMPLES.get(self.observed)
        if samples is None:
            samples = _SAMPLES[self.observed] = np.frombuffer(self.observed.values.cast("B"), dtype=np.float64)
        object.__setattr__(self, "samples", samples)

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        return np.quantile(self.samples, np.asarray(q, dtype=np.float64))

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        s = np.sort(self.samples)
        n = s.size
        cum = np.concatenate(([0.0], np.cumsum(s))) / n
        return np.interp(_probs(q) * n, np.arange(n + 1), cum)

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        return self.samples[rng.integers(0, self.samples.size, size)]

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        cum = np.cumsum(self.samples)
        if cum[-1] <= 0:
            return np.zeros(size)
        picked: npt.NDArray[np.float64] = self.samples[np.searchsorted(cum, rng.random(size) * cum[-1], side="right")]
        return picked


# -- parsing -----------------------------------------------------------------------


def parse_distribution(text: object, field: str | None = None, *, role: str = "rit",
                       base_dir: Path | None = None) -> Distribution:
    """Parse ``kind:params`` as a spec does (:func:`wotbench.spec.distributions.parse_distribution`:
    same grammar, checks and errors) into the kind's drawing :class:`Distribution`."""
    return sampler(spec.parse_distribution(text, field, role=role, base_dir=base_dir))


def resource_service_times(service: DistributionSpec, k: int) -> np.ndarray:
    """:func:`wotbench.spec.resource_service_times` as an int64 array."""
    return np.array(_resource_service_times(service, k), dtype=np.int64)
