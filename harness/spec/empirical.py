"""The observed values of an ``empirical:FILE`` distribution: a one-column
CSV (microseconds; an optional header; blank and ``#`` lines ignored), read
through the one bounded reader of spec inputs (wotbench.base.inputfile) and
parsed in bounded memory (docs/spec.md), without NumPy:

- a file is a regular file of at most ``MAX_BYTES`` and ``MAX_LINES`` lines,
  its values in the number grammar of wotbench.base.units (ASCII digits, a
  decimal point, an exponent; finite, >= 0);
- a file whose bytes were parsed already is the :class:`Observed` parsed
  then (every test of a sweep builds its own spec; the bytes are read again,
  and compared by their BLAKE2b digest);
- at most ``MAX_LIVE_VALUES`` values are held from empirical files at once
  (a sweep over many files), counted over the values still in use.

An error names the file, the line and the spec field, and the kind of
problem, never the line's content: the file may be anything the spec points
at (``empirical:/etc/shadow``).
"""

from __future__ import annotations

import hashlib
import math
import os
import weakref
from array import array
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from pathlib import Path

from wotbench.base import inputfile
from wotbench.base.errors import UserError
from wotbench.base.units import NUMBER_RE
from wotbench.spec._sums import numpy_sum

__all__ = ["load_empirical", "Observed", "MAX_BYTES", "MAX_LINES", "MAX_LIVE_VALUES"]

MAX_BYTES = 16 << 20
MAX_LINES = 1_000_000
MAX_LIVE_VALUES = 4_000_000


@dataclass(frozen=True, eq=False)
class Observed:
    """The values of one empirical file (us, in file order) and their mean."""

    values: memoryview[float] = field(repr=False)
    """Read-only float64 values (a buffer: wotbench.tracegen draws from it without a copy)."""
    mean: float = field(init=False)
    """Their mean: NumPy's ``values.mean()``, to the last bit."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", numpy_sum(self.values) / len(self.values))

    def __len__(self) -> int:
        return len(self.values)

    @cached_property
    def cumulative(self) -> array[float]:
        """0 and the running sums of the values in ascending order (NumPy's
        ``cumsum`` of the sorted values): the partial means of the distribution."""
        return array("d", accumulate(sorted(self.values), initial=0.0))


#: (size, BLAKE2b of the bytes) -> the values parsed from them, while in use.
_LIVE: weakref.WeakValueDictionary[tuple[int, bytes], Observed] = weakref.WeakValueDictionary()


def load_empirical(path: Path, field: str | None = None) -> Observed:
    """The values of the empirical file at ``path``."""
    try:
        data = inputfile.read_bytes(path, MAX_BYTES, field, what="an empirical file")
    except UserError as err:
        err.what = f"empirical: {err.what}"
        raise
    key = (len(data), hashlib.blake2b(data, digest_size=16).digest())
    held = _LIVE.get(key)
    if held is not None:                    # the same bytes, parsed already
        return held
    values = _parse(inputfile.decode(data, path, field), os.fspath(path), field)
    del data
    live = sum(len(o) for o in _LIVE.values())
    if live + len(values) > MAX_LIVE_VALUES:
        raise UserError(f"empirical: {inputfile.shown(path)}: {len(values):,} values more than the "
                        f"{MAX_LIVE_VALUES:,} that empirical files may hold at once ({live:,} held already)",
                        field=field)
    observed = Observed(memoryview(values).cast("B").cast("d").toreadonly())
    _LIVE[key] = observed
    return observed
def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _parse(text: str, name: str, field: str | None) -> array[float]:
    """The values of the file's text; the first kept line may be a header."""
    text = text.removeprefix("\ufeff")    # a byte order mark is not part of the first value
    if (n := _lines(text)) > MAX_LINES:
        raise UserError(f"empirical: {inputfile.shown(name)}: {n:,} lines, more than the {MAX_LINES:,} an "
                        "empirical file may have", field=field)
    out = array("d")
    header_allowed = True
    pos, lineno, end_all = 0, 0, len(text)
    while pos < end_all:
        end = text.find("\n", pos)
        end = end_all if end < 0 else end
        line = text[pos:end].strip()
        pos, lineno = end + 1, lineno + 1
        if not line or line.startswith("#"):
            continue
        if "," in line:
            raise UserError(f"{line.count(',') + 1} columns: an empirical file has one column", name, lineno, field)
        if NUMBER_RE.fullmatch(line) is None:
            if header_allowed:              # a non-numeric first line is a header
                header_allowed = False
                continue
            raise UserError("not a number (one value in microseconds per line)", name, lineno, field)
        header_allowed = False
        v = float(line)
        if not (v >= 0 and math.isfinite(v)):
            raise UserError("must be a finite value >= 0 (microseconds)", name, lineno, field)
        out.append(v)
    if not out:
        raise UserError(f"empirical: {inputfile.shown(name)} has no values", field=field)
    return out
