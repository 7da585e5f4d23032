"""The distribution registry: the base class every kind extends, and the table of kinds.

A kind (``exp``, ``mmpp2``, ...) is one frozen dataclass, subclass of
:class:`Distribution`, holding its parameters as fields (checked in
``__post_init__``) and saying how to parse them (``parse``), its mean
(``mean_us``) and, for iid kinds, its quantile function (``ppf``), its
partial mean ``L(q) = E[X; X <= F^-1(q)]`` (which gives the conditional bin
means that resource sets are built from, see ``bin_means``) and how to draw
it (``sample``, ``sample_length_biased``). A process (mmpp2) is not iid:
it says so (``is_iid = False``) and gives its ``arrivals``, which are drawn
in tracegen/_streams.py. ``@register`` adds a kind to ``REGISTRY``, after
checking that it defines what it must. The kinds themselves are in
tracegen/_distribution.py, with ``parse_distribution``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, TypeVar

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.units import parse_number, parse_time_us
from wotbench.tracegen import _streams

__all__ = ["Distribution", "Params", "register", "lookup", "REGISTRY", "ROLES"]

ROLES: tuple[str, ...] = ("rit", "service")
_IID_METHODS: tuple[str, ...] = ("ppf", "partial_mean", "sample", "sample_length_biased")

#: Every kind, in registration order: kind name -> its class.
REGISTRY: dict[str, type[Distribution]] = {}
#: Kind names and their aliases (lower case) -> class.
_NAMES: dict[str, type[Distribution]] = {}

D = TypeVar("D", bound="type[Distribution]")


def lookup(name: str) -> type[Distribution] | None:
    """The kind called ``name`` (or one of its aliases; any case), if registered."""
    return _NAMES.get(name.strip().lower())


@dataclass(frozen=True)
class Params:
    """What an entry's ``parse`` gets: where the text came from, and checked converters."""

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
class Distribution(ABC):
    """A validated distribution; values in microseconds. Build with :func:`parse_distribution`.

    The base of the kind entries: each subclass sets ``kind`` (and maybe
    ``aliases``), holds its parameters as fields, checks them in
    ``__post_init__`` and implements ``parse`` and ``mean_us``; an iid kind
    also implements the methods in ``_IID_METHODS``, a process (``is_iid =
    False``) implements ``arrivals``. :func:`register` checks this.
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
    def parse(cls, text: str, body: str, at: Params) -> Distribution:
        """Build from the text after ``kind:`` (``body``, not empty)."""

    @abstractmethod
    def mean_us(self) -> float:
        """Mean value; for a process the long-run mean RIT (1 / long-run rate)."""

    def _process(self) -> TypeError:
        return TypeError(f"{self.kind} is a process, not iid draws: use arrivals() (tracegen/_streams.py)")

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        """Quantile function F^-1(q) (iid kinds only)."""
        raise self._process()

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        """L(q) = E[X * 1{X <= F^-1(q)}]; L(0) = 0, L(1) = mean. Closed forms (iid kinds)."""
        raise self._process()

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws (float64 us); iid kinds only."""
        raise self._process()

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draws with density x f(x) / mean: the length of the interval that a
        random instant falls in. U(0,1) times such a draw is the stationary
        time to the next arrival of a renewal process (iid kinds only)."""
        raise self._process()

    def arrivals(self, n_streams: int, horizon_us: float,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Arrival instants of ``n_streams`` independent streams (``_streams.arrivals``):
        a renewal stream of these draws, unless a process entry says otherwise."""
        return _streams.renewal(self, n_streams, horizon_us, rng)

    def bin_means(self, k: int) -> np.ndarray:
        """Conditional means of the k equal-probability bins, ascending.

        Choosing one of these values uniformly at random gives a discrete
        distribution with exactly the target mean whose CDF is within 1/k of
        the target's everywhere (each value lies inside its own bin).
        """
        edges = np.linspace(0.0, 1.0, k + 1)
        return np.diff(self.partial_mean(edges)) * k

    def describe(self, percentiles: tuple[int, ...] = (5, 25, 50, 75, 95, 99)) -> dict[str, object]:
        """JSON-friendly summary: text, mean and (iid kinds) percentiles, in us."""
        out: dict[str, object] = {"dist": self.text, "mean_us": round(self.mean_us(), 3)}
        if self.is_iid:
            p = self.ppf(np.asarray(percentiles, dtype=np.float64) / 100.0)
            out.update({f"p{n}_us": round(float(v), 3) for n, v in zip(percentiles, p)})
        return out


def register(cls: D) -> D:
    """Add a kind (a subclass of :class:`Distribution`) to ``REGISTRY``."""
    own = [c for c in cls.__mro__ if issubclass(c, Distribution) and c is not Distribution]
    needed = ("parse", "mean_us", *(_IID_METHODS if cls.is_iid else ("arrivals",)))
    missing = [m for m in needed if not any(m in c.__dict__ for c in own)]
    if missing:
        raise TypeError(f"distribution {cls.kind!r} does not define {', '.join(missing)}")
    names = (cls.kind, *cls.aliases)
    taken = [n for n in names if n in _NAMES]
    if taken:
        raise TypeError(f"distribution name {taken[0]!r} is registered twice")
    _NAMES.update(dict.fromkeys(names, cls))
    REGISTRY[cls.kind] = cls
    return cls
