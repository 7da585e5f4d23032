"""Typed readers of spec values. Each checks one value at a key path of the
document and raises through it, so that every error reads
``FILE:LINE: FIELD: what``; the units are those of :mod:`wotbench.base.units`."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from wotbench.base import units
from wotbench.spec._yaml import KeyPath, YamlSource, field_name

T = TypeVar("T")

#: Names of specs and device groups: they become container and file names.
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}")


def mapping(v: Any, src: YamlSource, at: KeyPath, allowed: Collection[str]) -> Mapping[str, Any]:
    """A mapping (``None`` reads as empty) whose keys are all ``allowed``;
    an unknown key's error suggests the allowed key closest to it."""
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise src.error(f"must be a mapping, got {type(v).__name__}", *at)
    for k in v:
        if k not in allowed:
            raise src.error(f"unknown key{did_you_mean(k, allowed)} (allowed: {', '.join(sorted(allowed))})",
                            *at, k)
    return v


def did_you_mean(key: object, allowed: Collection[str]) -> str:
    """``": did you mean 'rit'?"`` for a key close to one of ``allowed``
    (difflib's ratio >= 0.7, or one letter swapped, missing, extra or
    wrong: 'rti' for 'rit'), else ``""``."""
    k = str(key)
    close = difflib.get_close_matches(k, sorted(allowed), n=1, cutoff=0.7)
    close = close or [a for a in sorted(allowed) if _one_edit(k, a)][:1]
    return f": did you mean {close[0]!r}?" if close else ""


def _one_edit(a: str, b: str) -> bool:
    """``a`` and ``b`` differ by one adjacent swap, insertion, deletion or substitution."""
    if a == b or abs(len(a) - len(b)) > 1 or min(len(a), len(b)) < 2:
        return False
    i = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    if len(a) == len(b):
        return a[i + 1:] == b[i + 1:] or (a[i:i + 2] == b[i:i + 2][::-1] and a[i + 2:] == b[i + 2:])
    return a[i + 1:] == b[i:] if len(a) > len(b) else a[i:] == b[i + 1:]


def value(parse: Callable[[Any, str], T], v: Any, src: YamlSource, at: KeyPath) -> T:
    """``parse(v, field)`` (a reader of :mod:`wotbench.base.units`, a
    distribution) with its errors placed at ``at``."""
    with src.at(*at):
        return parse(v, field_name(at))


def duration(v: Any, src: YamlSource, at: KeyPath) -> int:
    return value(units.parse_duration, v, src, at)


def integer(v: Any, src: YamlSource, at: KeyPath, lo: int, hi: int = 2**62) -> int:
    with src.at(*at):
        return units.parse_count(v, field_name(at), minimum=lo, maximum=hi)


def number(v: Any, src: YamlSource, at: KeyPath, *, integer: bool = False, positive: bool = False) -> float:
    """A plain finite number (no unit): an integer only with ``integer``,
    above 0 with ``positive``."""
    if (isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int))
            or not math.isfinite(v) or (positive and v <= 0)):
        what = ("positive " if positive else "") + ("integer" if integer else "number")
        raise src.error(f"expected a {what}, got {units.short(v)}", *at)
    return v


def boolean(v: Any, src: YamlSource, at: KeyPath) -> bool:
    if not isinstance(v, bool):
        raise src.error(f"expected true or false, got {units.short(v)}", *at)
    return v


def choice(v: Any, src: YamlSource, at: KeyPath, choices: tuple[str, ...]) -> str:
    if not isinstance(v, str) or v not in choices:
        raise src.error(f"expected one of {', '.join(choices)}, got {units.short(v)}", *at)
    return v


def name(v: Any, src: YamlSource, at: KeyPath) -> str:
    if not isinstance(v, str) or not _NAME_RE.fullmatch(v):
        raise src.error(f"expected a short name of letters, digits, '_.-', got {units.short(v)}", *at)
    return v
