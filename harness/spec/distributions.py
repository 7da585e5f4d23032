"""Distributions of request inter-arrival times (RIT) and service times, as a spec holds them.

Written as ``kind:parameters`` with units (docs/spec.md)::

    det:1s   exp:300us   uniform:1ms,5ms   lognormal:mean=5ms,cv=2
    pareto:mean=5ms,alpha=1.5   empirical:rits.csv
    mmpp2:on=exp:100us,off=exp:10ms,t_on=50ms,t_off=200ms   (RIT only)

All values are held in microseconds (float). Each kind is a small frozen
dataclass: its parameters (checked when built), how to parse them
(``parse``), its mean and, for iid kinds, its partial mean ``L(q) = E[X;
X <= F^-1(q)]``, in plain Python: what a spec needs of a distribution (a
stream's rate, the service time of each resource, see ``bin_means``).
Reading a spec does not load NumPy. Drawing from a distribution is
tracegen's: wotbench.tracegen builds its sampling objects from these values
(tracegen/_distribution.py), and adds its own kinds to the ones here
(:func:`add_kinds`). :func:`parse_distribution` finds a kind by name.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from statistics import NormalDist
from typing import ClassVar, TypeVar

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.base.units import parse_number, parse_time_us
from wotbench.spec.empirical import Observed, load_empirical

__all__ = ["DistributionSpec", "Params", "parse_distribution", "lookup", "kind_names", "add_kinds", "claim_names",
           "KINDS", "ROLES", "Det", "Exp", "Uniform", "Lognormal", "Pareto", "Mmpp2", "Empirical"]

ROLES: tuple[str, ...] = ("rit", "service")

#: The kinds defined here, in registration order: kind name -> its class.
KINDS: dict[str, type[DistributionSpec]] = {}
#: Their names and aliases (lower case) -> class.
_NAMES: dict[str, type[DistributionSpec]] = {}
#: Kinds a higher layer adds (tracegen's registry): live tables of names and aliases -> class.
_ADDED: list[Mapping[str, type[DistributionSpec]]] = []

K = TypeVar("K", bound="type[DistributionSpec]")
S = TypeVar("S", bound="DistributionSpec")


def lookup(name: str) -> type[DistributionSpec] | None:
    """The kind called ``name`` (or one of its aliases; any case): one of
    these, else one a higher layer added."""
    key = name.strip().lower()
    for table in (_NAMES, *_ADDED):
        if key in table:
            return table[key]
    return None


def kind_names() -> list[str]:
    """Every kind's name: these in registration order, then the added ones."""
    names = dict.fromkeys(KINDS)
    for table in _ADDED:
        names.update(dict.fromkeys(entry.kind for entry in table.values()))
    return list(names)


def add_kinds(table: Mapping[str, type[DistributionSpec]]) -> None:
    """Let a higher layer add kinds: ``table`` maps names and aliases (lower
    case) to kinds, and is read on every lookup (it may change), after the
    kinds here. wotbench.tracegen adds its registry (tracegen/_registry.py)."""
    if not any(t is table for t in _ADDED):
        _ADDED.append(table)


def claim_names(table: dict[str, type[S]], cls: type[S]) -> None:
    """Enter a kind under its name and aliases in ``table`` (a registry's
    name index), refusing a name already taken."""
    names = (cls.kind, *cls.aliases)
    taken = [n for n in names if n in table]
    if taken:
        raise TypeError(f"distribution name {taken[0]!r} is registered twice")
    table.update(dict.fromkeys(names, cls))


def _register(cls: K) -> K:
    """Add one of the kinds below to ``KINDS``."""
    claim_names(_NAMES, cls)
    KINDS[cls.kind] = cls
    return cls


@dataclass(frozen=True)
class Params:
    """What a kind's ``parse`` gets: where the text came from, and checked converters."""

    kind: str
    field: str | None
    base_dir: Path | None

    def time(self, name: str, text: str) -> float:
        """A time with a unit, in microseconds; errors name the parameter."""
        try:
            return parse_time_us(text, self.field, what="value")
        except UserError as err:
            raise UserError(f"{self.kind} parameter {name!r}: {err.what}", field=self.field) from None

    def number(self, name: str, text: str) -> float:
        """A plain number (the grammar of wotbench.base.units); errors name the parameter."""
        try:
            return parse_number(text, self.field)
        except UserError as err:
            raise UserError(f"{self.kind} parameter {name!r}: {err.what}", field=self.field) from None

    def keyed(self, body: str, keys: tuple[str, ...], nested: tuple[str, ...] = ()) -> dict[str, str]:
        """Split ``a=1,b=2``. For the ``nested`` keys (distributions themselves), a piece
        that is not ``known_key=...`` continues the value (``on=uniform:1ms,2ms``)."""
        out: dict[str, str] = {}
        last: str | None = None
        for piece in body.split(","):
            key, sep, val = piece.partition("=")
            key = key.strip()
            if sep and key in keys and key not in out:
                out[key] = val.strip()
                last = key
            elif last in nested and (not sep or key not in keys):
                out[last] += "," + piece.strip()
            else:
                raise UserError(f"{self.kind}: unexpected {piece.strip()!r} (parameters: {', '.join(keys)})",
                                field=self.field)
        missing = [k for k in keys if k not in out]
        if missing:
            raise UserError(f"{self.kind}: missing parameter {missing[0]!r} "
                            f"(need {', '.join(f'{k}=' for k in keys)})", field=self.field)
        return out


@dataclass(frozen=True)
class DistributionSpec(ABC):
    """A validated distribution; values in microseconds. Build with :func:`parse_distribution`.

    The base of the kinds: each subclass sets ``kind`` (and maybe
    ``aliases``), holds its parameters as fields, checks them in
    ``__post_init__`` and implements ``parse`` and ``mean_us``; an iid kind
    also implements ``partial_means``.
    """

    text: str

    kind: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    is_iid: ClassVar[bool] = True
    """A sequence of independent draws (a renewal stream), as opposed to a process."""
    poisson: ClassVar[bool] = False
    """Its renewal stream is a Poisson process: so are its thinnings and superpositions."""

    @classmethod
    @abstractmethod
    def parse(cls, text: str, body: str, at: Params) -> DistributionSpec:
        """Build from the text after ``kind:`` (``body``, not empty)."""

    @abstractmethod
    def mean_us(self) -> float:
        """Mean value; for a process the long-run mean RIT (1 / long-run rate)."""

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        """L(q) = E[X * 1{X <= F^-1(q)}] of each q; L(0) = 0, L(1) = mean (iid kinds)."""
        raise TypeError(f"{self.kind} is a process, not iid draws: it has no partial means")

    def bin_means(self, k: int) -> Iterable[float]:
        """Conditional means of the k equal-probability bins, ascending.

        Choosing one of these values uniformly at random gives a discrete
        distribution with exactly the target mean whose CDF is within 1/k of
        the target's everywhere (each value lies inside its own bin). The
        floats NumPy computed (``np.diff(L(np.linspace(0, 1, k + 1))) * k``).
        """
        edges = [i * (1.0 / k) for i in range(k)] + [1.0]
        cum = self.partial_means(edges)
        return [(hi - lo) * k for lo, hi in pairwise(cum)]


def _prob(q: float) -> float:
    return min(max(q, 0.0), 1.0)


@dataclass(frozen=True)
class _ByMean(DistributionSpec):
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
    def parse(cls, text: str, body: str, at: Params) -> DistributionSpec:
        if cls.shape is None:
            return cls(text, at.time("mean", body))
        kv = at.keyed(body, ("mean", cls.shape))
        return cls(text, at.time("mean", kv["mean"]), **{cls.shape: at.number(cls.shape, kv[cls.shape])})

    def mean_us(self) -> float:
        return self.mean


# -- the kinds ---------------------------------------------------------------------


@_register
@dataclass(frozen=True)
class Det(DistributionSpec):
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

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        return [_prob(q) * self.mean for q in qs]


@_register
@dataclass(frozen=True)
class Exp(_ByMean):
    """``exp:MEAN``: exponential."""

    kind = "exp"
    aliases = ("exponential",)
    poisson = True

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        out = []
        for q in qs:
            r = 1.0 - _prob(q)
            tail = r * (1.0 - math.log(r)) if r > 0 else 0.0
            out.append(self.mean * (1.0 - tail))
        return out


@_register
@dataclass(frozen=True)
class Uniform(DistributionSpec):
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

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        span = self.high - self.low
        return [p * (self.low + (self.low + p * span)) / 2 for p in map(_prob, qs)]


_NORMAL = NormalDist()
_SQRTH = math.sqrt(0.5)


def _ndtr(x: float) -> float:
    """The standard normal CDF, as SciPy's ``special.ndtr`` computes it (Cephes)."""
    y = x * _SQRTH
    z = abs(y)
    if z < _SQRTH:
        return 0.5 + 0.5 * math.erf(y)
    tail = 0.5 * math.erfc(z)
    return 1.0 - tail if y > 0 else tail


@_register
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

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        _, sigma = self.lognormal_params
        out = []
        for p in map(_prob, qs):
            share = 0.0 if p == 0 else 1.0 if p == 1 else _ndtr(_NORMAL.inv_cdf(p) - sigma)
            out.append(self.mean * share)
        return out


@_register
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

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        power = (self.alpha - 1) / self.alpha
        return [self.mean * (1.0 - (1.0 - _prob(q)) ** power) for q in qs]


@_register
@dataclass(frozen=True)
class Mmpp2(DistributionSpec):
    """``mmpp2:on=DIST,off=DIST,t_on=MEAN,t_off=MEAN``: bursty on/off arrivals (RIT only).

    A process, not iid draws: alternating exponential sojourns (means
    ``t_on``, ``t_off``), each state with its own RIT distribution.
    """

    kind = "mmpp2"
    is_iid = False
    on: DistributionSpec
    off: DistributionSpec
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


@_register
@dataclass(frozen=True)
class Empirical(DistributionSpec):
    """``empirical:FILE``: resampled from observed values (a one-column CSV, us;
    read and bounded by wotbench.spec.empirical)."""

    kind = "empirical"
    path: Path
    observed: Observed = field(compare=False, repr=False)
    """The values read from the file."""

    def __post_init__(self) -> None:
        if not len(self.observed):
            raise UserError("empirical: no values")

    @classmethod
    def parse(cls, text: str, body: str, at: Params) -> Empirical:
        path = Path(body).expanduser()
        if not path.is_absolute() and at.base_dir is not None:
            path = at.base_dir / path
        return cls(text, path, load_empirical(path, at.field))

    def mean_us(self) -> float:
        return self.observed.mean

    def partial_means(self, qs: Sequence[float]) -> list[float]:
        # NumPy's np.interp(q * n, arange(n + 1), cumsum / n), point by point.
        cum = self.observed.cumulative
        n = len(cum) - 1
        out = []
        for q in qs:
            x = _prob(q) * n
            j = int(x)
            if j >= n or x == j:
                out.append(cum[min(j, n)] / n)
            else:
                lo = cum[j] / n
                out.append((cum[j + 1] / n - lo) * (x - j) + lo)
        return out


# -- parsing -----------------------------------------------------------------------


def parse_distribution(text: object, field: str | None = None, *, role: str = "rit",
                       base_dir: Path | None = None) -> DistributionSpec:
    """Parse ``kind:params`` into a :class:`DistributionSpec` (an instance of the kind's class).

    ``role`` is ``"rit"`` (all kinds; mean must be > 0) or ``"service"``
    (iid kinds only; zero allowed). ``base_dir`` anchors relative empirical
    paths. Errors are UserError naming ``field`` and the parameter.
    """
    if not isinstance(text, str) or ":" not in text:
        raise UserError(f"expected a distribution like exp:300us, got {units.short(text)}", field=field)
    raw_kind, _, body = text.strip().partition(":")
    entry = lookup(raw_kind)
    if entry is None:
        raise UserError(f"unknown distribution {units.short(raw_kind.strip())} (one of {', '.join(kind_names())})",
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


def _iid_param(at: Params, name: str, text: str) -> DistributionSpec:
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
