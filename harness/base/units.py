"""Values with units: the one grammar of specs and command-line flags
(docs/spec.md). Every reader returns a number in a base unit, or raises
:class:`wotbench.UserError` naming ``field`` (a spec reader adds the file
and line, see ``wotbench.spec``).

- numbers: ASCII decimal digits, an optional decimal point and exponent
  (``1.5``, ``.5``, ``2e3``, ``1.5E-3``) and nothing else: no other digits
  (``１０``, ``١٠``), no ``_`` separators, no ``0x``, no ``inf``/``nan``, no
  ``+``; a ``-`` is read only to say that the value must not be negative.
- durations: a number and a unit right after it, ``ns``, ``us`` (or
  ``µs``), ``ms``, ``s``, ``m`` (minutes), ``h``: ``300us``, ``1.5s``,
  ``1e3us``. A bare number is an error (``60`` could mean anything), and so
  is a space (``10 s``) or anything around the value.
- sizes: bytes, ``B``, ``KB``/``k``, ``MB``/``m``, ``GB``/``g`` (powers of
  1024, as Docker's ``64m``); a bare integer is bytes.
- fractions: ``5%`` or ``0.05``, within 0..1.
- link rates: tc's units, ``bit``, ``kbit``, ``mbit``, ``gbit``, ``bps``
  (bytes/s), ``kbps``, ``mbps``, ``gbps``.
- counts: an integer (or a string of ASCII digits, no leading zero) within bounds.

Units are case-insensitive. This module imports nothing of the package but
the error type, so that every reader (the spec model, the distributions,
the CLIs) can use it without an import cycle.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from wotbench.base.errors import UserError

__all__ = ["TIME_UNITS_US", "NUMBER_RE", "short", "parse_number", "parse_time_us", "parse_duration", "parse_size",
           "parse_fraction", "parse_rate", "parse_count"]

TIME_UNITS_US: dict[str, float] = {
    "ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6,
}
_TIME_HELP = "use ns, us, ms, s, m or h"
# Docker's suffixes (k, m, g) and the spec's (KB, MB, GB) both mean powers of 1024.
_SIZE_BYTES: dict[str, float] = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20,
                                 "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30}
# tc's rate units: bit/s based, decimal.
_RATE_BPS: dict[str, float] = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9,
                               "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9}
#: The one grammar of a number (docs/spec.md), and of a number with a unit.
_NUMBER = r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
#: A number alone (an empirical file's values use it too).
NUMBER_RE = re.compile(_NUMBER, re.ASCII)
_NUMBER_UNIT = re.compile(rf"(?P<num>{_NUMBER})(?P<unit>[A-Za-z%µμ]*)", re.ASCII)
_COUNT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
#: Largest value held exactly (2^53): a larger one is a typo, not a benchmark.
_MAX = 2.0**53


def _split(value: object, field: str | None, what: str, example: str) -> tuple[float, str, str]:
    """(number, unit in lower case, the text as written)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"expected a {what} like {example}, got {short(value)}", field=field)
    text = str(value)
    m = _NUMBER_UNIT.fullmatch(text)
    if m is None:
        how = ("write the unit right after the number, with no space" if _SPACED.fullmatch(text)
               else "expected ASCII digits and a unit")
        raise UserError(f"invalid {what} {short(text)} ({how}, like {example})", field=field)
    return float(m.group("num")), m.group("unit").lower(), text


_SPACED = re.compile(rf"\s*{_NUMBER}\s*[A-Za-z%µμ]*\s*", re.ASCII)


def short(value: object) -> str:
    """``repr(value)``, cut to 40 characters (a value in an error stays short)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def parse_number(value: object, field: str | None = None, *, what: str = "number") -> float:
    """A finite number without a unit: a YAML/Python int or float, or a
    string in the grammar above."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise UserError(f"expected a {what}, got {short(value)}", field=field)
    if isinstance(value, str) and not NUMBER_RE.fullmatch(value):
        raise UserError(f"{short(value)} is not a {what} (ASCII digits, '.', an exponent)", field=field)
    out = float(value)
    if not math.isfinite(out) or abs(out) > _MAX:
        raise UserError(f"{short(value)} is not a finite {what} within ±2^53", field=field)
    return out


def _scaled(value: object, field: str | None, what: str, example: str,
            units: Mapping[str, float], help_: str) -> float:
    num, unit, text = _split(value, field, what, example)
    if unit not in units:
        if not unit:
            raise UserError(f"{what} {short(text)} has no unit ({help_})", field=field)
        raise UserError(f"{what} {short(text)} has unknown unit {short(unit)} ({help_})", field=field)
    if num < 0:
        raise UserError(f"{what} {short(text)} must not be negative", field=field)
    out = num * units[unit]
    if out > _MAX:
        raise UserError(f"{what} {short(text)} is too large", field=field)
    return out


def parse_time_us(value: object, field: str | None = None, *, what: str = "time") -> float:
    """``300us`` / ``1.5s`` / ``2m`` in (fractional) microseconds, >= 0."""
    return _scaled(value, field, what, "300us or 1.5s", TIME_UNITS_US, _TIME_HELP)


def parse_duration(value: object, field: str | None = None) -> int:
    """A duration in whole microseconds (``parse_duration("1.5s") == 1500000``)."""
    return int(round(parse_time_us(value, field, what="duration")))


def parse_size(value: object, field: str | None = None) -> int:
    """A size in bytes (``"64m"`` -> 67108864); a bare integer is bytes."""
    return int(round(_scaled(value, field, "size", "64m or 512B", _SIZE_BYTES, "use B, KB, MB or GB")))


def parse_fraction(value: object, field: str | None = None) -> float:
    """``'1%'`` -> 0.01; a bare number is already a fraction (0.01); 0..1."""
    num, unit, text = _split(value, field, "fraction", "5% or 0.05")
    if unit not in ("", "%"):
        raise UserError(f"expected a fraction like 5% or 0.05, got {short(text)}", field=field)
    out = num / (100.0 if unit else 1.0)
    if not 0.0 <= out <= 1.0:
        raise UserError(f"{short(text)} is outside 0%..100%", field=field)
    return out


def parse_rate(value: object, field: str | None = None) -> int:
    """A link rate in bits per second (``'1mbit'`` -> 1000000, tc's units); > 0."""
    bps = round(_scaled(value, field, "rate", "1mbit", _RATE_BPS, "use bit, kbit, mbit, gbit or bps"))
    if bps <= 0:
        raise UserError(f"rate {short(value)} must be positive", field=field)
    return bps


def parse_count(value: object, field: str | None = None, *, minimum: int = 0,
                maximum: int = 2**62) -> int:
    """An integer count (YAML int, or a string of digits) within [minimum, maximum]."""
    if isinstance(value, bool):
        raise UserError(f"expected an integer, got {value!r}", field=field)
    if isinstance(value, str) and _COUNT_RE.fullmatch(value):
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        raise UserError(f"expected an integer, got {short(value)}", field=field)
    if value < minimum:
        raise UserError(f"must be at least {minimum}, got {value}", field=field)
    if value > maximum:
        raise UserError(f"must be at most {maximum}, got {value}", field=field)
    return value
