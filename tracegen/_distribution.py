"""Distributions of request inter-arrival times (RIT) and service times.

Written as ``kind:parameters`` with units (docs/spec.md)::

    det:1s   exp:300us   uniform:1ms,5ms   lognormal:mean=5ms,cv=2
    pareto:mean=5ms,alpha=1.5   empirical:rits.csv
    mmpp2:on=exp:100us,off=exp:10ms,t_on=50ms,t_off=200ms   (RIT only)

All values are held in microseconds (float). Each kind below is one entry
of the registry (tracegen/_registry.py): a small frozen dataclass with its
parameters, how to parse them, its mean, its quantile function and partial
mean, and how to draw it. Adding a kind is one more such class, decorated
with ``@register``; :func:`parse_distribution` finds it by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.tracegen import _streams
from wotbench.tracegen._empirical import load_empirical
from wotbench.tracegen._registry import REGISTRY, ROLES, Distribution, Params, lookup, register

__all__ = ["Distribution", "parse_distribution", "load_empirical", "REGISTRY",
           "Det", "Exp", "Uniform", "Lognormal", "Pareto", "Mmpp2", "Empirical"]


def _probs(q: np.ndarray | float) -> np.ndarray:
    return np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)


@dataclass(frozen=True)
class _ByMean(Distribution):
    """A kind given by its mean (> 0): ``kind:MEAN``, or with a shape parameter,
    ``kind:mean=MEAN,<shape>=X`` (``shape`` names it: the subclass's own field,
    which must be above ``shape_above``, ``shape_why`` says why)."""

    mean: float
    shape: ClassVar[str | None] = None
    shape_above: ClassVar[float] = 0.0
    shape_why: ClassVar[str] = ""

    def __post_init__(self) -> None:
        if not self.mean > 0:
            raise UserError(f"{self.kind}: mean must be > 0")
        if self.shape is not None and not getattr(self, self.shape) > self.shape_above:
            raise UserError(f"{self.kind}: parameter {self.shape!r} must be > {self.shape_above:g}{self.shape_why}")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Distribution:
        if cls.shape is None:
            return cls(text, at.time("mean", body))
        kv = at.keyed(body, ("mean", cls.shape))
        return cls(text, at.time("mean", kv["mean"]), **{cls.shape: at.number(cls.shape, kv[cls.shape])})

    def mean_us(self) -> float:
        return self.mean


# -- the kinds ---------------------------------------------------------------------


@register
@dataclass(frozen=True)
class Det(Distribution):
    """``det:VALUE``: always the same value."""

    kind = "det"
    aliases = ("deterministic", "const")
    mean: float
    """The value."""

    def __post_init__(self) -> None:
        if not self.mean >= 0:
            raise UserError("det: value must be >= 0")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Det:
        return cls(text, at.time("value", body))

    def mean_us(self) -> float:
        return self.mean

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
class Exp(_ByMean):
    """``exp:MEAN``: exponential."""

    kind = "exp"
    aliases = ("exponential",)
    poisson = True

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
class Uniform(Distribution):
    """``uniform:LOW,HIGH``."""

    kind = "uniform"
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0 <= self.low < self.high):
            raise UserError("uniform: need 0 <= low < high")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Uniform:
        parts = [p.strip() for p in body.split(",")]
        if len(parts) != 2:
            raise UserError("uniform: expected two values LOW,HIGH (uniform:1ms,5ms)", field=at.field)
        return cls(text, at.time("low", parts[0]), at.time("high", parts[1]))

    def mean_us(self) -> float:
        return (self.low + self.high) / 2

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
class Lognormal(_ByMean):
    """``lognormal:mean=MEAN,cv=CV``: lognormal by mean and coefficient of variation."""

    kind = "lognormal"
    shape = "cv"
    cv: float

    @property
    def lognormal_params(self) -> tuple[float, float]:
        """(mu, sigma) of the underlying normal."""
        sigma2 = math.log1p(self.cv**2)
        return math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2)

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
class Pareto(_ByMean):
    """``pareto:mean=MEAN,alpha=ALPHA``: Pareto type I (heavy tail), alpha > 1."""

    kind = "pareto"
    shape = "alpha"
    shape_above = 1.0
    shape_why = " (else the mean is infinite)"
    alpha: float

    @property
    def pareto_scale(self) -> float:
        """x_m of the Pareto (type I) with this mean and alpha."""
        return self.mean * (self.alpha - 1) / self.alpha

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
class Mmpp2(Distribution):
    """``mmpp2:on=DIST,off=DIST,t_on=MEAN,t_off=MEAN``: bursty on/off arrivals (RIT only).

    A process, not iid draws: alternating exponential sojourns (means
    ``t_on``, ``t_off``), each state with its own RIT distribution; drawn
    by ``_streams.mmpp2``.
    """

    kind = "mmpp2"
    is_iid = False
    on: Distribution
    off: Distribution
    t_on: float
    t_off: float

    def __post_init__(self) -> None:
        bad = next((d for d in (self.on, self.off) if not d.is_iid), None)
        if bad is not None:
            raise UserError(f"mmpp2: 'on'/'off' cannot themselves be {bad.kind}")
        if not (self.on.mean_us() > 0 and self.off.mean_us() > 0):
            raise UserError("mmpp2: 'on' and 'off' RITs must have a mean > 0")
        if not (self.t_on > 0 and self.t_off > 0):
            raise UserError("mmpp2: parameters 't_on' and 't_off' must be > 0")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Mmpp2:
        kv = at.keyed(body, ("on", "off", "t_on", "t_off"), nested=("on", "off"))
        return cls(text, _iid_param(at, "on", kv["on"]), _iid_param(at, "off", kv["off"]),
                   at.time("t_on", kv["t_on"]), at.time("t_off", kv["t_off"]))

    def mean_us(self) -> float:
        rate = (self.t_on / self.on.mean_us() + self.t_off / self.off.mean_us()) / (self.t_on + self.t_off)
        return 1.0 / rate

    def arrivals(self, n_streams: int, horizon_us: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return _streams.mmpp2(self, n_streams, horizon_us, rng)


@register
@dataclass(frozen=True)
class Empirical(Distribution):
    """``empirical:FILE``: resampled from observed values (a one-column CSV, us;
    read and bounded by tracegen/_empirical.py)."""

    kind = "empirical"
    path: Path
    samples: np.ndarray = field(compare=False, repr=False)
    """The observed values (float64, us)."""

    def __post_init__(self) -> None:
        if self.samples.size == 0:
            raise UserError("empirical: no values")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Empirical:
        path = Path(body).expanduser()
        if not path.is_absolute() and at.base_dir is not None:
            path = at.base_dir / path
        return cls(text, path, load_empirical(path, at.field))

    def mean_us(self) -> float:
        return float(self.samples.mean())

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
        return self.samples[np.searchsorted(cum, rng.random(size) * cum[-1], side="right")]


# -- parsing -----------------------------------------------------------------------


def parse_distribution(text: object, field: str | None = None, *, role: str = "rit",
                       base_dir: Path | None = None) -> Distribution:
    """Parse ``kind:params`` into a :class:`Distribution` (an instance of the kind's entry).

    ``role`` is ``"rit"`` (all kinds; mean must be > 0) or ``"service"``
    (iid kinds only; zero allowed). ``base_dir`` anchors relative empirical
    paths. Errors are UserError naming ``field`` and the parameter.
    """
    if not isinstance(text, str) or ":" not in text:
        raise UserError(f"expected a distribution like exp:300us, got {units.short(text)}", field=field)
    raw_kind, _, body = text.strip().partition(":")
    entry = lookup(raw_kind)
    if entry is None:
        raise UserError(f"unknown distribution {units.short(raw_kind.strip())} (one of {', '.join(REGISTRY)})",
                        field=field)
    body = body.strip()
    if not body:
        raise UserError(f"{entry.kind}: parameters missing", field=field)
    if role not in ROLES:
        raise ValueError(role)
    try:
        if role == "service" and not entry.is_iid:
            raise UserError(f"{entry.kind} is an arrival process: allowed for RITs only")
        dist = entry.parse(text.strip(), body, Params(entry.kind, field, base_dir))
    except UserError as err:
        if err.field is None and err.file is None:
            err.field = field
        raise
    if role == "rit" and not dist.mean_us() > 0:
        raise UserError(f"{entry.kind}: the mean inter-arrival time must be > 0", field=field)
    return dist


def _iid_param(at: Params, name: str, text: str) -> Distribution:
    """A distribution given as a parameter (``on=exp:100us``): any iid kind."""
    head, colon, _ = text.partition(":")
    entry = lookup(head) if colon else None
    if entry is not None and not entry.is_iid:
        raise UserError(f"{at.kind} parameter {name!r}: cannot be {entry.kind}", field=at.field)
    try:
        return parse_distribution(text, at.field, role="rit", base_dir=at.base_dir)
    except UserError as err:
        if err.file is None:
            err.what = f"{at.kind} parameter {name!r}: {err.what}"
        raise
