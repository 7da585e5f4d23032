"""Values with units as written in specs (docs/spec.md): durations, sizes,
percentages and link rates. Each parser returns an integer in a base unit
or raises ValueError with a message fit for a UserError."""

from __future__ import annotations

import re
from collections.abc import Mapping

_NUMBER = r"(\d+(?:\.\d*)?|\.\d+)"
_DURATION_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}
# Docker's suffixes (k, m, g) and the spec's (KB, MB, GB) both mean powers of 1024.
_SIZE_BYTES = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20,
               "g": 1 << 30, "gb": 1 << 30}
# tc's rate units: bit/s based, decimal.
_RATE_BPS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9,
             "bps": 8, "kbps": 8 * 10**3, "mbps": 8 * 10**6, "gbps": 8 * 10**9}


def _split(text: object, units: Mapping[str, float], what: str, example: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"expected a {what} such as {example!r}, got {text!r}")
    m = re.fullmatch(_NUMBER + r"\s*([A-Za-z]*)", str(text).strip())
    if not m or m.group(2).lower() not in units:
        raise ValueError(f"expected a {what} such as {example!r}, got {text!r}")
    return float(m.group(1)), m.group(2).lower()


def duration_us(text: object) -> int:
    """``'1.5s'`` -> 1500000. A bare number is an error: units are mandatory."""
    value, unit = _split(text, _DURATION_US, "duration with a unit (ns, us, ms, s, m, h)", "5s")
    return round(value * _DURATION_US[unit])


def size_bytes(text: object) -> int:
    """``'64m'`` -> 67108864. A bare integer is bytes."""
    value, unit = _split(text, _SIZE_BYTES, "size", "64m")
    return round(value * _SIZE_BYTES[unit])


def fraction(text: object) -> float:
    """``'1%'`` -> 0.01; a bare number is already a fraction (0.01)."""
    s = str(text).strip() if isinstance(text, (str, int, float)) and not isinstance(text, bool) else None
    if s is None:
        raise ValueError(f"expected a percentage such as '1%', got {text!r}")
    m = re.fullmatch(_NUMBER + r"\s*(%?)", s)
    if not m:
        raise ValueError(f"expected a percentage such as '1%', got {text!r}")
    value = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{text!r} is outside 0%..100%")
    return value


def rate_bps(text: object) -> int:
    """``'1mbit'`` -> 1000000 (bits per second, tc's units)."""
    value, unit = _split(text, _RATE_BPS, "rate with a unit (bit, kbit, mbit, gbit, bps)", "1mbit")
    bps = round(value * _RATE_BPS[unit])
    if bps <= 0:
        raise ValueError(f"rate {text!r} must be positive")
    return bps
