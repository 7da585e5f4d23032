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

The ``fmt_*`` functions go the other way, for a person: a number in a base
unit as a short text with its unit and no exponent (``fmt_duration_us(65e6)
== "1 min 05 s"``, ``fmt_rate(12345) == "12.3 k/s"``); a missing value
(None, NaN) is an en dash, "–". The report, ``plan`` and the budget's
messages all use them, so one value reads the same everywhere.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping

from wotbench.base.errors import UserError

__all__ = ["TIME_UNITS_US", "NUMBER_RE", "short", "parse_number", "parse_time_us", "parse_duration", "parse_size",
           "parse_fraction", "parse_rate", "parse_count", "MISSING", "fmt_num", "fmt_count", "fmt_duration_us",
           "fmt_rate", "fmt_size", "fmt_epoch_us", "plural"]

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


#: How a missing value (None, NaN) is shown.
MISSING = "–"


def _sig(x: float, digits: int) -> str:
    """``x`` with ``digits`` significant digits, fixed point (never an
    exponent), trailing zeros after the point dropped: 0.000123, 12.3, 1000."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else ("∞" if x > 0 else "-∞")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def fmt_num(value: float | None, digits: int = 3) -> str:
    """A plain number for a table: ``digits`` significant digits below
    1,000 (``0.0789``, ``12.3``), a whole number with thousands separators
    from 1,000 on (``3,980``); never an exponent; None or NaN is "–"."""
    if value is None or math.isnan(value):
        return MISSING
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞"
    if abs(value) >= 10 ** max(digits, 3) - 0.5:
        return f"{round(value):,}"
    return _sig(value, digits)


def fmt_count(value: float | None) -> str:
    """A count with thousands separators: ``1,234``; None or NaN is "–"."""
    if value is None or math.isnan(value):
        return MISSING
    return f"{round(value):,}"


def plural(n: float, word: str, many: str | None = None) -> str:
    """``n`` and ``word``, in the plural unless n is 1: ``plural(1, "GE") ==
    "1 GE"``, ``plural(2, "core") == "2 cores"``; ``many`` for an irregular
    plural (``plural(2, "is", "are")``)."""
    return f"{fmt_count(n)} {word if n == 1 else (many or word + 's')}"


def fmt_duration_us(us: float | None, digits: int = 3) -> str:
    """A duration in microseconds, in the unit that reads best: ``850 µs``,
    ``12.3 ms``, ``4.5 s``, ``1 min 05 s``, ``2 h 03 min``; negative values
    keep their sign; None or NaN is "–"."""
    if us is None or math.isnan(us):
        return MISSING
    if not math.isfinite(us):
        return "∞" if us > 0 else "-∞"
    sign, a = ("-" if us < 0 else ""), abs(us)
    if a < 999.5:
        return f"{sign}{_sig(a, digits)} µs"
    if a < 999.5e3:
        return f"{sign}{_sig(a / 1e3, digits)} ms"
    if a < 59.95e6:
        return f"{sign}{_sig(a / 1e6, digits)} s"
    s = round(a / 1e6)
    if s < 3600:
        return f"{sign}{s // 60} min {s % 60:02d} s"
    m = round(a / 60e6)
    return f"{sign}{m // 60} h {m % 60:02d} min"


def fmt_rate(per_s: float | None, unit: str = "/s", digits: int = 3) -> str:
    """A rate per second: ``99.4 /s``, ``12.3 k/s``, ``1.2 M/s`` (``unit``
    names what is counted, e.g. ``" req/s"``); None or NaN is "–"."""
    if per_s is None or math.isnan(per_s):
        return MISSING
    unit = unit.lstrip()
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(per_s) >= scale * 0.9995:
            return f"{_sig(per_s / scale, digits)} {prefix}{unit}"
    return f"{_sig(per_s, digits)} {unit}"


def fmt_size(n: float) -> str:
    """Bytes as the largest binary unit that keeps a number >= 1: ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{_sig(n, 3)} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{_sig(n, 3)} EiB"  # pragma: no cover - the loop returns at PiB


def fmt_epoch_us(us: float | None) -> str:
    """Microseconds since the Unix epoch as a UTC time of day:
    ``2026-11-26 18:20:41 UTC``; None or NaN is "–"."""
    if us is None or math.isnan(us):
        return MISSING
    t = _dt.datetime.fromtimestamp(us / 1e6, tz=_dt.UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")
