"""Bounded readers of a run folder's files: its JSON records (one reader
for all of them: a regular file of at most MAX_JSON_BYTES, nested at most
MAX_JSON_DEPTH deep; a FIFO or device is refused without blocking, a
damaged file is one UserError naming it, never its content) and a GE's
trace, counted in one streaming pass."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from wotbench.base.errors import UserError

__all__ = ["MAX_JSON_BYTES", "MAX_JSON_DEPTH", "TraceCounts", "read_json", "trace_counts"]

#: The largest JSON file of a run folder read (summary.json of a 1,000-device
#: run is about 1 MB): a bigger one is refused, not read into memory.
MAX_JSON_BYTES = 64 << 20
#: The deepest nesting of a run folder's JSON (summary.json nests about 8 deep).
MAX_JSON_DEPTH = 64


def _depth(doc: Any) -> int:
    """Nesting depth of a parsed JSON document (iterative: no recursion)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        x, d = stack.pop()
        if isinstance(x, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_JSON_DEPTH:
                return d
            stack.extend((v, d + 1) for v in (x.values() if isinstance(x, dict) else x))
    return deepest


def _read_bounded(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file (a FIFO or device is refused
    without blocking: opened non-blocking, checked before it is read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", path) from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UserError("not a regular file", path)
        if st.st_size > limit:          # refused before a byte is read
            raise UserError(f"larger than {limit:,} bytes: not a record of a run", path)
        try:
            data = fh.read(limit + 1)
        except OSError as exc:
            raise UserError(f"cannot read: {exc.strerror}", path) from None
    if len(data) > limit:
        raise UserError(f"larger than {limit:,} bytes: not a record of a run", path)
    return data


def read_json(path: Path) -> Any:
    """A JSON file of a run folder, bounded: a regular file of at most
    MAX_JSON_BYTES, nested at most MAX_JSON_DEPTH deep, valid UTF-8 and JSON.
    Anything else is a UserError naming the file (never its content)."""
    data = _read_bounded(Path(path), MAX_JSON_BYTES)
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(f"not UTF-8 (byte {exc.start})", path) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"invalid JSON: {exc.msg}", path, exc.lineno) from None
    except RecursionError:
        raise UserError(f"nested deeper than {MAX_JSON_DEPTH} levels", path) from None
    except ValueError as exc:       # e.g. an integer of more digits than Python converts
        raise UserError(f"invalid JSON: {str(exc).split(':')[0]}", path) from None
    if _depth(doc) > MAX_JSON_DEPTH:
        raise UserError(f"nested deeper than {MAX_JSON_DEPTH} levels", path)
    return doc


@dataclass(frozen=True)
class TraceCounts:
    """What a GE was asked to send: its trace's request lines, and those
    intended inside the measurement phase (the target of the rate check)."""

    lines: int
    in_window: int


def _trace_fast(path: Path, window: tuple[float, float]) -> TraceCounts:
    """tracegen's traces (a header, no comments): pyarrow, 16 MB blocks."""
    lines = inside = 0
    opts = pacsv.ConvertOptions(include_columns=["send_ts_us"], column_types={"send_ts_us": pa.int64()})
    with pacsv.open_csv(path, pacsv.ReadOptions(block_size=16 << 20), convert_options=opts) as reader:
        for b in reader:
            t = b.column(0).to_numpy(zero_copy_only=False)
            lines += t.size
            inside += int(np.count_nonzero((t >= window[0]) & (t < window[1])))
    return TraceCounts(lines, inside)


def _trace_slow(path: Path, window: tuple[float, float]) -> TraceCounts:
    """Any trace of docs/formats.md (comments, blank lines, spaces): line by line."""
    lines = inside = 0
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            fields = line.split(b",", 2)
            if fields[0].strip() == b"device_id" and lines == 0:
                continue
            try:
                t = int(fields[1])
            except (IndexError, ValueError):
                raise UserError("not a trace line", path, i, "send_ts_us") from None
            lines += 1
            inside += window[0] <= t < window[1]
    return TraceCounts(lines, inside)


def trace_counts(path: Path, window: tuple[float, float]) -> TraceCounts:
    """A GE's trace counted in one streaming pass (bounded memory); a
    UserError naming the file when it cannot be read."""
    try:
        return _trace_fast(path, window)
    except (pa.ArrowInvalid, KeyError):
        pass
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror or exc}", path) from None
    try:
        return _trace_slow(path, window)
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", path) from None
