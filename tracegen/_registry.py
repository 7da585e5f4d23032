"""The registry of sampling kinds: the base class every kind extends, and the table of kinds.

A spec holds a distribution as its parsed values (wotbench.spec.distributions,
no NumPy). Here a kind (``exp``, ``mmpp2``, ...) is one frozen dataclass,
subclass of :class:`Distribution` (itself a
:class:`~wotbench.spec.distributions.DistributionSpec`): the spec's kind
with the same fields, plus, for iid kinds, its quantile function (``ppf``),
its partial mean ``L(q) = E[X; X <= F^-1(q)]`` (which gives the conditional
bin means that resource sets are built from, see ``bin_means``) and how to
draw it (``sample``, ``sample_length_biased``), in NumPy. A process (mmpp2)
is not iid: it says so (``is_iid = False``) and gives its ``arrivals``,
which are drawn in tracegen/_streams.py. ``@register`` adds a kind to
``REGISTRY``, after checking that it defines what it must; a kind new to
the spec (not one of its own) is then parsed in specs too, the spec holding
it as it is. :func:`sampler` is the sampling object of a spec's value. The
kinds themselves are in tracegen/_distribution.py, with ``parse_distribution``.
"""

from __future__ import annotations

import dataclasses
from abc import ABC
from dataclasses import dataclass
from typing import Any, Self, TypeVar

import numpy as np

from wotbench.spec.distributions import ROLES, DistributionSpec, Params, add_kinds, claim_names
from wotbench.tracegen import _streams

__all__ = ["Distribution", "Params", "register", "lookup", "sampler", "REGISTRY", "ROLES"]

_IID_METHODS: tuple[str, ...] = ("ppf", "partial_mean", "sample", "sample_length_biased")

#: Every kind, in registration order: kind name -> its class.
REGISTRY: dict[str, type[Distribution]] = {}
#: Kind names and their aliases (lower case) -> class.
_NAMES: dict[str, type[Distribution]] = {}
add_kinds(_NAMES)

D = TypeVar("D", bound="type[Distribution]")


def lookup(name: str) -> type[Distribution] | None:
    """The kind called ``name`` (or one of its aliases; any case), if registered."""
    return _NAMES.get(name.strip().lower())


def sampler(dist: DistributionSpec) -> Distribution:
    """The sampling object of a spec's distribution (the registered kind of
    its name, with its values); one already is its own."""
    if isinstance(dist, Distribution):
        return dist
    entry = REGISTRY.get(dist.kind)
    if entry is None:
        raise TypeError(f"distribution {dist.kind!r} has no sampling kind registered")
    return entry.of(dist)


@dataclass(frozen=True)
class Distribution(DistributionSpec, ABC):
    """A validated distribution that can be drawn; values in microseconds.
    Build with :func:`parse_distribution` or from a spec's value with :func:`sampler`.

    The base of the kind entries: each subclass sets ``kind`` (and maybe
    ``aliases``), holds its parameters as fields, checks them in
    ``__post_init__`` and implements ``parse`` and ``mean_us`` (the
    spec's kind does all this: an entry of one of those extends it); an iid
    kind also implements the methods in ``_IID_METHODS``, a process
    (``is_iid = False``) implements ``arrivals``. :func:`register` checks this.
    """

    @classmethod
    def of(cls, dist: DistributionSpec) -> Self:
        """This kind with the values of the spec's ``dist`` (a kind with the same fields)."""
        kw: dict[str, Any] = {f.name: getattr(dist, f.name) for f in dataclasses.fields(dist) if f.init}
        return cls(**kw)

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
            out.update({f"p{n}_us": round(float(v), 3) for n, v in zip(percentiles, p, strict=True)})
        return out


def register(cls: D) -> D:
    """Add a kind (a subclass of :class:`Distribution`) to ``REGISTRY``."""
    own = [c for c in cls.__mro__ if issubclass(c, DistributionSpec) and c not in (Distribution, DistributionSpec)]
    needed = ("parse", "mean_us", *(_IID_METHODS if cls.is_iid else ("arrivals",)))
    missing = [m for m in needed if not any(m in c.__dict__ for c in own)]
    if missing:
        raise TypeError(f"distribution {cls.kind!r} does not define {', '.join(missing)}")
    claim_names(_NAMES, cls)
    REGISTRY[cls.kind] = cls
    return cls
