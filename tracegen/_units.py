"""Values with units, as written in specs and on the command line.

Times: ``ns``, ``us`` (or ``µs``), ``ms``, ``s``, ``m`` (minutes), ``h``.
A number without a unit is an error: ``60`` could mean anything.
"""

from __future__ import annotations

import re

from wotbench._errors import UserError

__all__ = ["parse_time_us", "parse_duration", "parse_count", "TIME_UNITS_US"]

TIME_UNITS_US: dict[str, float] = {
    "ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6,
}

_NUMBER_UNIT = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[a-zµ]*)\s*$"
)


def parse_time_us(value: object, field: str | None = None, *, what: str = "time") -> float:
    """Parse ``300us`` / ``1.5s`` / ``2m`` into (fractional) microseconds; >= 0."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"expected a {what} with a unit like 300us or 1.5s, got {value!r}", field=field)
    text = str(value)
    m = _NUMBER_UNIT.match(text)
    if m is None:
        raise UserError(f"invalid {what} {text!r} (expected a number and a unit, like 300us)", field=field)
    unit = m.group("unit")
    if not unit:
        raise UserError(
            f"{what} {text!r} has no unit (use ns, us, ms, s, m or h)", field=field)
    if unit not in TIME_UNITS_US:
        raise UserError(
            f"{what} {text!r} has unknown unit {unit!r} (use ns, us, ms, s, m or h)", field=field)
    num = float(m.group("num"))
    if num < 0:
        raise UserError(f"{what} {text!r} must not be negative", field=field)
    us = num * TIME_UNITS_US[unit]
    if us > 2.0**53:
        raise UserError(f"{what} {text!r} is too large", field=field)
    return us


def parse_duration(value: object, field: str | None = None) -> int:
    """Parse a duration with a unit into whole microseconds (``parse_duration("300us") == 300``)."""
    return int(round(parse_time_us(value, field, what="duration")))


def parse_count(value: object, field: str | None, *, minimum: int = 0, maximum: int = 2**62) -> int:
    """An integer count (YAML int, or a string of digits) within [minimum, maximum]."""
    if isinstance(value, bool):
        raise UserError(f"expected an integer, got {value!r}", field=field)
    if isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise UserError(f"expected an integer, got {value!r}", field=field)
    if value < minimum:
        raise UserError(f"must be at least {minimum}, got {value}", field=field)
    if value > maximum:
        raise UserError(f"must be at most {maximum}, got {value}", field=field)
    return value
