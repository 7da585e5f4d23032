"""A device group's observable resources (``devices[*].observe``, RFC 7641):
how many per device, the notification process of each observation, its
message type, Max-Age and the service time of its registration answer
(docs/spec.md, "Observe"). The device runs the process itself; tracegen
writes the ``/o/<j>`` resource rows and one OBS and one UNOBS trace row per
(device, resource)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_SERVICE_US
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource
from wotbench.spec.distributions import DistributionSpec, Uniform, parse_distribution

__all__ = ["ObserveSpec", "read_observe", "OBSERVE_KEYS", "OBSERVE_KINDS", "MIN_OBSERVE_RIT_US"]

OBSERVE_KEYS = frozenset({"resources", "rit", "type", "max_age", "service"})
#: The notification processes the device draws itself (an iid renewal process each).
OBSERVE_KINDS = ("det", "exp", "uniform", "lognormal", "pareto")
#: The shortest mean (and uniform low) between events: RFC 7641 section 4.4 allows
#: 2^23 sequence numbers per 256 s per observation, the device one per message.
MIN_OBSERVE_RIT_US = 100
#: The device's bounds on a process cell (device/notify.c: ``int_us`` <= NOTIFY_MAX_US, 11.6 days;
#: ``decimal`` <= 1e6 and above its kind's minimum: lognormal CV > 0, pareto ALPHA > 1).
MAX_OBSERVE_RIT_US = 10**12
MAX_OBSERVE_SHAPE = 1e6
_SHAPE_ABOVE = {"cv": 0.0, "alpha": 1.0}
MAX_OBSERVE_RESOURCES = 65536
MAX_AGE_S = 2**32 - 1
DEFAULT_MAX_AGE_S = 60
_TYPE_RE = re.compile(r"non|con|non:([0-9]{1,4})")


@dataclass(frozen=True)
class ObserveSpec:
    """The observable resources of one device group."""

    resources: int
    rit: DistributionSpec
    """Time between two events (state changes) of one observation."""
    type: str = "non"
    """``non``, ``con`` or ``non:N`` (every N-th notification CON)."""
    max_age_s: int = DEFAULT_MAX_AGE_S
    service_us: int = 0
    """Service time of the ``/o/<j>`` resources (the registration's answer)."""

    def __post_init__(self) -> None:
        if not _int_in(self.resources, 1, MAX_OBSERVE_RESOURCES):
            raise UserError(f"must be an integer 1..{MAX_OBSERVE_RESOURCES}, got {self.resources!r}",
                            field="observe.resources")
        if self.rit.kind not in OBSERVE_KINDS:
            raise UserError(f"{self.rit.kind} is not a notification process the device draws "
                            f"(one of {', '.join(OBSERVE_KINDS)})", field="observe.rit")
        low = self.rit.low if isinstance(self.rit, Uniform) else self.rit.mean_us()
        if not low >= MIN_OBSERVE_RIT_US:
            raise UserError(f"{self.rit.text}: the time between events must be at least {MIN_OBSERVE_RIT_US} us "
                            "(the mean; uniform: its low) for RFC 7641's sequence numbers",
                            field="observe.rit")
        self._device_bounds()
        m = _TYPE_RE.fullmatch(self.type) if isinstance(self.type, str) else None  # type: ignore[redundant-expr]
        if m is None or (m.group(1) is not None and not 1 <= int(m.group(1)) <= 1000):
            raise UserError(f"expected non, con or non:N (N 1..1000), got {units.short(self.type)}",
                            field="observe.type")
        if not _int_in(self.max_age_s, 1, MAX_AGE_S):
            raise UserError(f"must be 1..{MAX_AGE_S} whole seconds, got {self.max_age_s!r}",
                            field="observe.max_age")
        if not _int_in(self.service_us, 0, MAX_SERVICE_US):
            raise UserError(f"must be 0..{MAX_SERVICE_US} us, got {self.service_us!r}", field="observe.service")

    def _device_bounds(self) -> None:
        """What the device's parser refuses, refused here, before anything starts:
        a mean (uniform: high) above MAX_OBSERVE_RIT_US, a shape above
        MAX_OBSERVE_SHAPE, or one that the resource file's 6 decimals round to
        the device's minimum or below (pareto:mean=1s,alpha=1.0000001 is written
        as alpha 1)."""
        r = self.rit
        top = ("high", r.high) if isinstance(r, Uniform) else ("mean", r.mean_us())
        if not round(top[1]) <= MAX_OBSERVE_RIT_US:
            raise UserError(f"{r.text}: the {top[0]} must be at most {MAX_OBSERVE_RIT_US} us (11.6 days), the "
                            "device's bound", field="observe.rit")
        for shape, above in _SHAPE_ABOVE.items():
            if not hasattr(r, shape):
                continue
            x = float(getattr(r, shape))
            written = _decimal(x)
            if not x <= MAX_OBSERVE_SHAPE:
                raise UserError(f"{r.text}: {shape} must be at most {MAX_OBSERVE_SHAPE:.0f}, the device's bound",
                                field="observe.rit")
            if not float(written) > above:
                raise UserError(f"{r.text}: {shape} {x!r} is written to the device with 6 decimals as {written}, "
                                f"which the device refuses ({shape} must be above {above:g} after rounding)",
                                field="observe.rit")

    @property
    def mean_us(self) -> float:
        return self.rit.mean_us()

    def device_rit(self) -> str:
        """The process in the resource file's syntax (``observe_rit``): integer us,
        ``:`` between the parameters (``exp:1000000``, ``pareto:5000:1.5``)."""
        r = self.rit
        if isinstance(r, Uniform):
            return f"uniform:{round(r.low)}:{round(r.high)}"
        text = f"{r.kind}:{round(r.mean_us())}"
        for shape in ("cv", "alpha"):
            if hasattr(r, shape):
                text += ":" + _decimal(float(getattr(r, shape)))
        return text


def _int_in(v: object, lo: int, hi: int) -> bool:
    """An int (not a bool) in lo..hi: the dataclass is built from code too."""
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def _decimal(x: float) -> str:
    """A positive number as a plain decimal (no exponent), up to 6 decimals."""
    return f"{x:.6f}".rstrip("0").rstrip(".")


def read_observe(v: Any, src: YamlSource, at: KeyPath) -> ObserveSpec:
    """The ``observe`` mapping of the device group at ``at[:-1]``."""
    m = read.mapping(v, src, at, OBSERVE_KEYS)
    for key in ("resources", "rit"):
        if key not in m:
            what = "observable resources per device" if key == "resources" else \
                "the time between events of one observation, e.g. exp:1s"
            raise src.error(f"missing ({what})", *at, key)
    kw: dict[str, Any] = {
        "resources": read.integer(m["resources"], src, at + ("resources",), 1, MAX_OBSERVE_RESOURCES),
        "rit": read.value(lambda x, f: parse_distribution(x, f, role="rit", base_dir=src.base_dir),
                          m["rit"], src, at + ("rit",)),
    }
    if "type" in m:
        kw["type"] = m["type"]
    if "max_age" in m:
        us = read.duration(m["max_age"], src, at + ("max_age",))
        if us % 1_000_000:
            raise src.error(f"Max-Age is whole seconds, got {units.short(m['max_age'])}", *at, "max_age")
        kw["max_age_s"] = us // 1_000_000
    if "service" in m:
        kw["service_us"] = read.duration(m["service"], src, at + ("service",))
    try:
        return ObserveSpec(**kw)
    except UserError as err:
        key = (err.field or "").removeprefix("observe.")
        raise src.error(err.what, *at, *((key,) if key in OBSERVE_KEYS else ())) from None
