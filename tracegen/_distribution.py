"""Distributions of request inter-arrival times (RIT) and service times.

Written as ``kind:parameters`` with units (docs/spec.md)::

    det:1s   exp:300us   uniform:1ms,5ms   lognormal:mean=5ms,cv=2
    pareto:mean=5ms,alpha=1.5   empirical:rits.csv
    mmpp2:on=exp:100us,off=exp:10ms,t_on=50ms,t_off=200ms   (RIT only)

All values are held in microseconds (float). Each iid kind offers
``sample`` (NumPy Generator), ``ppf`` (quantile function) and
``partial_mean`` (``L(q) = E[X; X <= F^-1(q)]``, used to build resource sets
whose service times keep the mean exactly, see ``bin_means``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wotbench._errors import UserError
from wotbench.tracegen._units import parse_time_us

__all__ = ["Distribution", "parse_distribution", "KINDS", "load_empirical"]

KINDS: tuple[str, ...] = ("det", "exp", "uniform", "lognormal", "pareto", "mmpp2", "empirical")
_ALIASES = {"deterministic": "det", "exponential": "exp", "const": "det"}
#: Kinds that are a sequence of independent draws (everything but mmpp2).
IID_KINDS: tuple[str, ...] = tuple(k for k in KINDS if k != "mmpp2")


@dataclass(frozen=True)
class Distribution:
    """A validated distribution; values in microseconds. Build with :func:`parse_distribution`."""

    kind: str
    text: str
    mean: float = 0.0
    """det: the value; exp, lognormal, pareto: the mean."""
    low: float = 0.0
    high: float = 0.0
    """uniform bounds."""
    cv: float = 0.0
    """lognormal coefficient of variation."""
    alpha: float = 0.0
    """pareto shape (> 1)."""
    on: Distribution | None = None
    off: Distribution | None = None
    t_on: float = 0.0
    t_off: float = 0.0
    """mmpp2: RIT distributions in the on/off states and mean state sojourn times."""
    path: Path | None = None
    samples: np.ndarray | None = field(default=None, compare=False, repr=False)
    """empirical: the observed values (float64, us)."""

    def __post_init__(self) -> None:
        k = self.kind
        if k not in KINDS:
            raise UserError(f"unknown distribution {k!r} (one of {', '.join(KINDS)})")
        if k in ("exp", "lognormal", "pareto") and not self.mean > 0:
            raise UserError(f"{k}: mean must be > 0")
        if k == "det" and not self.mean >= 0:
            raise UserError("det: value must be >= 0")
        if k == "uniform" and not (0 <= self.low < self.high):
            raise UserError("uniform: need 0 <= low < high")
        if k == "lognormal" and not self.cv > 0:
            raise UserError("lognormal: parameter 'cv' must be > 0")
        if k == "pareto" and not self.alpha > 1:
            raise UserError("pareto: parameter 'alpha' must be > 1 (else the mean is infinite)")
        if k == "mmpp2":
            if self.on is None or self.off is None:
                raise UserError("mmpp2: parameters 'on' and 'off' are required")
            if self.on.kind == "mmpp2" or self.off.kind == "mmpp2":
                raise UserError("mmpp2: 'on'/'off' cannot themselves be mmpp2")
            if not (self.on.mean_us() > 0 and self.off.mean_us() > 0):
                raise UserError("mmpp2: 'on' and 'off' RITs must have a mean > 0")
            if not (self.t_on > 0 and self.t_off > 0):
                raise UserError("mmpp2: parameters 't_on' and 't_off' must be > 0")
        if k == "empirical":
            if self.samples is None or self.samples.size == 0:
                raise UserError("empirical: no values")

    # -- moments and quantiles ------------------------------------------------

    @property
    def is_iid(self) -> bool:
        return self.kind != "mmpp2"

    @property
    def lognormal_params(self) -> tuple[float, float]:
        """(mu, sigma) of the underlying normal."""
        sigma2 = math.log1p(self.cv**2)
        return math.log(self.mean) - sigma2 / 2, math.sqrt(sigma2)

    @property
    def pareto_scale(self) -> float:
        """x_m of the Pareto (type I) with this mean and alpha."""
        return self.mean * (self.alpha - 1) / self.alpha

    def mean_us(self) -> float:
        """Mean value; for mmpp2 the long-run mean RIT (1 / long-run rate)."""
        k = self.kind
        if k in ("det", "exp", "lognormal", "pareto"):
            return self.mean
        if k == "uniform":
            return (self.low + self.high) / 2
        if k == "empirical":
            assert self.samples is not None
            return float(self.samples.mean())
        assert self.on is not None and self.off is not None
        rate = (self.t_on / self.on.mean_us() + self.t_off / self.off.mean_us()) / (self.t_on + self.t_off)
        return 1.0 / rate

    def ppf(self, q: np.ndarray | float) -> np.ndarray:
        """Quantile function F^-1(q) (iid kinds only)."""
        q = np.asarray(q, dtype=np.float64)
        k = self.kind
        if k == "det":
            return np.full_like(q, self.mean)
        if k == "exp":
            return -self.mean * np.log1p(-q)
        if k == "uniform":
            return self.low + q * (self.high - self.low)
        if k == "lognormal":
            from scipy import special

            mu, sigma = self.lognormal_params
            return np.exp(mu + sigma * special.ndtri(q))
        if k == "pareto":
            with np.errstate(divide="ignore"):
                return self.pareto_scale * np.power(1.0 - q, -1.0 / self.alpha)
        if k == "empirical":
            assert self.samples is not None
            return np.quantile(self.samples, q)
        raise ValueError(f"{k} has no quantile function")

    def partial_mean(self, q: np.ndarray) -> np.ndarray:
        """L(q) = E[X * 1{X <= F^-1(q)}]; L(0) = 0, L(1) = mean. Closed forms (iid kinds)."""
        q = np.clip(np.asarray(q, dtype=np.float64), 0.0, 1.0)
        k = self.kind
        if k == "det":
            return q * self.mean
        if k == "uniform":
            return q * (self.low + self.ppf(q)) / 2
        if k == "exp":
            r = 1.0 - q
            with np.errstate(divide="ignore", invalid="ignore"):
                tail = np.where(r > 0, r * (1.0 - np.log(np.where(r > 0, r, 1.0))), 0.0)
            return self.mean * (1.0 - tail)
        if k == "lognormal":
            from scipy import special

            _, sigma = self.lognormal_params
            with np.errstate(over="ignore"):
                return self.mean * special.ndtr(special.ndtri(q) - sigma)
        if k == "pareto":
            return self.mean * (1.0 - np.power(1.0 - q, (self.alpha - 1) / self.alpha))
        if k == "empirical":
            assert self.samples is not None
            s = np.sort(self.samples)
            n = s.size
            cum = np.concatenate(([0.0], np.cumsum(s))) / n
            return np.interp(q * n, np.arange(n + 1), cum)
        raise ValueError(f"{k} has no partial mean")

    def bin_means(self, k: int) -> np.ndarray:
        """Conditional means of the k equal-probability bins, ascending.

        Choosing one of these values uniformly at random gives a discrete
        distribution with exactly the target mean whose CDF is within 1/k of
        the target's everywhere (each value lies inside its own bin).
        """
        edges = np.linspace(0.0, 1.0, k + 1)
        return np.diff(self.partial_mean(edges)) * k

    # -- sampling ---------------------------------------------------------------

    def sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` independent draws (float64 us); iid kinds only."""
        k = self.kind
        if k == "det":
            return np.full(size, self.mean, dtype=np.float64)
        if k == "exp":
            return rng.exponential(self.mean, size)
        if k == "uniform":
            return rng.uniform(self.low, self.high, size)
        if k == "lognormal":
            mu, sigma = self.lognormal_params
            return rng.lognormal(mu, sigma, size)
        if k == "pareto":
            out = rng.pareto(self.alpha, size)
            out += 1.0
            out *= self.pareto_scale
            return out
        if k == "empirical":
            assert self.samples is not None
            return self.samples[rng.integers(0, self.samples.size, size)]
        raise ValueError("mmpp2 is a process, not iid draws; use tracegen.streams")

    def sample_length_biased(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Draws with density x f(x) / mean: the length of the interval that a
        random instant falls in. U(0,1) times such a draw is the stationary
        time to the next arrival of a renewal process (iid kinds only)."""
        k = self.kind
        if k == "det":
            return np.full(size, self.mean, dtype=np.float64)
        if k == "exp":
            return rng.gamma(2.0, self.mean, size)
        if k == "uniform":
            lo2, hi2 = self.low**2, self.high**2
            return np.sqrt(lo2 + rng.random(size) * (hi2 - lo2))
        if k == "lognormal":
            mu, sigma = self.lognormal_params
            return rng.lognormal(mu + sigma**2, sigma, size)
        if k == "pareto":
            # Pareto(x_m, alpha) biased by length is Pareto(x_m, alpha - 1).
            out = rng.pareto(self.alpha - 1.0, size)
            out += 1.0
            out *= self.pareto_scale
            return out
        if k == "empirical":
            assert self.samples is not None
            cum = np.cumsum(self.samples)
            if cum[-1] <= 0:
                return np.zeros(size)
            return self.samples[np.searchsorted(cum, rng.random(size) * cum[-1], side="right")]
        raise ValueError("mmpp2 is a process, not iid draws")

    def describe(self, percentiles: tuple[int, ...] = (5, 25, 50, 75, 95, 99)) -> dict[str, object]:
        """JSON-friendly summary: text, mean and (iid kinds) percentiles, in us."""
        out: dict[str, object] = {"dist": self.text, "mean_us": round(self.mean_us(), 3)}
        if self.is_iid:
            p = self.ppf(np.asarray(percentiles, dtype=np.float64) / 100.0)
            out.update({f"p{n}_us": round(float(v), 3) for n, v in zip(percentiles, p)})
        return out


def _time_param(kind: str, name: str, text: str, field_: str | None) -> float:
    try:
        return parse_time_us(text, field_, what="value")
    except UserError as err:
        raise UserError(f"{kind} parameter {name!r}: {err.what}", field=field_) from None


def _number_param(kind: str, name: str, text: str, field_: str | None) -> float:
    try:
        v = float(text)
    except ValueError:
        raise UserError(f"{kind} parameter {name!r}: {text!r} is not a number", field=field_) from None
    if not math.isfinite(v):
        raise UserError(f"{kind} parameter {name!r}: {text!r} is not finite", field=field_)
    return v


def _keyed(kind: str, body: str, keys: tuple[str, ...], field_: str | None,
           nested: tuple[str, ...] = ()) -> dict[str, str]:
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
            raise UserError(f"{kind}: unexpected {piece.strip()!r} (parameters: {', '.join(keys)})",
                            field=field_)
    missing = [k for k in keys if k not in out]
    if missing:
        raise UserError(f"{kind}: missing parameter {missing[0]!r} (need {', '.join(f'{k}=' for k in keys)})",
                        field=field_)
    return out


def load_empirical(path: Path, field_: str | None = None) -> np.ndarray:
    """Observed values (us) from a one-column CSV; optional header; blank and ``#`` lines ignored."""
    import pandas as pd

    try:
        df = pd.read_csv(path, header=None, dtype=str, skip_blank_lines=False,
                         keep_default_na=False, sep=",", engine="c")
    except FileNotFoundError:
        raise UserError(f"empirical: file not found: {path}", field=field_) from None
    except pd.errors.EmptyDataError:
        raise UserError(f"empirical: {path} is empty", field=field_) from None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"empirical: cannot read {path}: {exc}", field=field_) from None
    if df.shape[1] != 1:
        raise UserError(f"empirical: {path} must have one column, has {df.shape[1]}", field=field_)
    col = df.iloc[:, 0].str.strip()
    keep = (col != "") & ~col.str.startswith("#")
    values = pd.to_numeric(col, errors="coerce")
    bad = keep & values.isna()
    first_kept = int(np.argmax(keep.to_numpy())) if keep.any() else -1
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())
        # A non-numeric first line is a header.
        if rows[0] == first_kept:
            keep.iloc[first_kept] = False
            rows = rows[1:]
        if rows.size:
            line = int(rows[0]) + 1
            raise UserError(f"{col.iloc[rows[0]]!r} is not a number (microseconds)",
                            str(path), line, "value")
    out = values[keep].to_numpy(dtype=np.float64)
    if out.size == 0:
        raise UserError(f"empirical: {path} has no values", field=field_)
    neg = np.flatnonzero(~(out >= 0) | ~np.isfinite(out))
    if neg.size:
        line = int(np.flatnonzero(keep.to_numpy())[neg[0]]) + 1
        raise UserError(f"{out[neg[0]]!r} must be a finite value >= 0", str(path), line, "value")
    return out


def parse_distribution(text: object, field: str | None = None, *, role: str = "rit",
                       base_dir: Path | None = None) -> Distribution:
    """Parse ``kind:params`` into a :class:`Distribution`.

    ``role`` is ``"rit"`` (all kinds; mean must be > 0) or ``"service"``
    (no mmpp2; zero allowed). ``base_dir`` anchors relative empirical paths.
    Errors are UserError naming ``field`` and the parameter.
    """
    if not isinstance(text, str) or ":" not in text:
        raise UserError(f"expected a distribution like exp:300us, got {text!r}", field=field)
    raw_kind, _, body = text.strip().partition(":")
    kind = _ALIASES.get(raw_kind.strip().lower(), raw_kind.strip().lower())
    body = body.strip()
    if kind not in KINDS:
        raise UserError(f"unknown distribution {raw_kind.strip()!r} (one of {', '.join(KINDS)})", field=field)
    if not body:
        raise UserError(f"{kind}: parameters missing", field=field)
    try:
        dist = _build(kind, text.strip(), body, field, role, base_dir)
    except UserError as err:
        if err.field is None and err.file is None:
            err.field = field
        raise
    if role == "rit" and not dist.mean_us() > 0:
        raise UserError(f"{kind}: the mean inter-arrival time must be > 0", field=field)
    return dist


def _build(kind: str, text: str, body: str, field_: str | None, role: str,
           base_dir: Path | None) -> Distribution:
    if role not in ("rit", "service"):
        raise ValueError(role)
    if kind == "det":
        return Distribution(kind, text, mean=_time_param(kind, "value", body, field_))
    if kind == "exp":
        return Distribution(kind, text, mean=_time_param(kind, "mean", body, field_))
    if kind == "uniform":
        parts = [p.strip() for p in body.split(",")]
        if len(parts) != 2:
            raise UserError("uniform: expected two values LOW,HIGH (uniform:1ms,5ms)", field=field_)
        return Distribution(kind, text, low=_time_param(kind, "low", parts[0], field_),
                            high=_time_param(kind, "high", parts[1], field_))
    if kind == "lognormal":
        kv = _keyed(kind, body, ("mean", "cv"), field_)
        return Distribution(kind, text, mean=_time_param(kind, "mean", kv["mean"], field_),
                            cv=_number_param(kind, "cv", kv["cv"], field_))
    if kind == "pareto":
        kv = _keyed(kind, body, ("mean", "alpha"), field_)
        return Distribution(kind, text, mean=_time_param(kind, "mean", kv["mean"], field_),
                            alpha=_number_param(kind, "alpha", kv["alpha"], field_))
    if kind == "mmpp2":
        if role != "rit":
            raise UserError("mmpp2 is an arrival process: allowed for RITs only", field=field_)
        kv = _keyed(kind, body, ("on", "off", "t_on", "t_off"), field_, nested=("on", "off"))
        sub = {}
        for name in ("on", "off"):
            if re.match(r"\s*mmpp2\s*:", kv[name]):
                raise UserError(f"mmpp2 parameter {name!r}: cannot be mmpp2", field=field_)
            try:
                sub[name] = parse_distribution(kv[name], field_, role="rit", base_dir=base_dir)
            except UserError as err:
                if err.file is None:
                    err.what = f"mmpp2 parameter {name!r}: {err.what}"
                raise
        return Distribution(kind, text, on=sub["on"], off=sub["off"],
                            t_on=_time_param(kind, "t_on", kv["t_on"], field_),
                            t_off=_time_param(kind, "t_off", kv["t_off"], field_))
    assert kind == "empirical"
    path = Path(body).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return Distribution(kind, text, path=path, samples=load_empirical(path, field_))
