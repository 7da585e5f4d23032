"""The marker blocks of a Markdown page that ``wotbench runs --write-doc``
fills from the results catalogue (wotbench.reporting.resultsdoc): found and
checked here, and the page put back together with new content between
them, every byte outside the blocks as it was.

A block is two lines, each starting in the first column::

    <!-- catalogue: spec=NAME scale=SCALE -->      (or: <!-- catalogue: host -->)
    ... replaced on every run ...
    <!-- /catalogue -->

A line starting with ``<!-- catalogue`` or ``<!-- /catalogue`` that is not
one of these, an unknown key, a block inside a block, a closing line
without an opening one, a block never closed, or a page without any
block is a UserError ``FILE:LINE: marker: what``."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["HOST", "SPEC", "Block", "split_lines", "parse", "splice"]

#: A block's kinds: the host's disclosure, or the runs of one spec at one scale.
HOST, SPEC = "host", "spec"

_ANY = re.compile(r"<!--\s*/?\s*catalogue\b")
_OPEN = re.compile(r"<!-- catalogue: (?P<body>[^<>]*?) -->[ \t]*")
_CLOSE = re.compile(r"<!-- /catalogue -->[ \t]*")
_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_KEYS = ("spec", "scale")
_FORMS = "`<!-- catalogue: spec=NAME scale=SCALE -->`, `<!-- catalogue: host -->` or `<!-- /catalogue -->`"


@dataclass(frozen=True)
class Block:
    """One marker block: its kind, spec and scale (None for ``host``), and
    the indexes in the page's lines of its opening and closing lines."""

    kind: str
    spec: str | None
    scale: str | None
    open_at: int
    close_at: int

    @property
    def line(self) -> int:
        """The opening line's number (1-based)."""
        return self.open_at + 1


def split_lines(text: str) -> list[str]:
    """The page's lines, each with its newline: ``"".join`` gives ``text`` back."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _opening(body: str, path: Path, n: int) -> tuple[str, str | None, str | None]:
    """The kind, spec and scale of an opening line's body, or a UserError."""
    words = body.split()
    if words == [HOST]:
        return HOST, None, None
    got: dict[str, str] = {}
    for w in words:
        key, eq, value = w.partition("=")
        if not eq or key not in _KEYS:
            raise UserError(f"unknown {w!r}: a block is `host` or spec=NAME scale=SCALE", path, n, "marker")
        if key in got:
            raise UserError(f"{key}= given twice", path, n, "marker")
        if not _VALUE.fullmatch(value):
            raise UserError(f"{key}={value!r} is not a name (letters, digits, . _ -)", path, n, "marker")
        got[key] = value
    missing = [k for k in _KEYS if k not in got]
    if missing:
        raise UserError(f"{missing[0]}= missing: a block is `host` or spec=NAME scale=SCALE", path, n, "marker")
    return SPEC, got["spec"], got["scale"]


def parse(text: str, path: Path) -> tuple[list[str], list[Block]]:
    """The page's lines and its blocks in order, or a UserError naming the
    first bad line (nothing is written)."""
    lines = split_lines(text)
    blocks: list[Block] = []
    opened: tuple[int, str, str | None, str | None] | None = None
    for i, raw in enumerate(lines):
        if not _ANY.match(raw):
            continue
        line, n = raw.rstrip("\r\n"), i + 1
        if _CLOSE.fullmatch(line):
            if opened is None:
                raise UserError("a closing marker without an opening one", path, n, "marker")
            blocks.append(Block(opened[1], opened[2], opened[3], opened[0], i))
            opened = None
            continue
        m = _OPEN.fullmatch(line)
        if m is None:
            raise UserError(f"not a catalogue marker: expected {_FORMS}", path, n, "marker")
        if opened is not None:
            raise UserError(f"a block opened inside the block of line {opened[0] + 1}", path, n, "marker")
        opened = (i, *_opening(m.group("body"), path, n))
    if opened is not None:
        raise UserError("a block never closed (`<!-- /catalogue -->` missing)", path, opened[0] + 1, "marker")
    if not blocks:
        raise UserError(f"no catalogue block: mark where the tables go with {_FORMS}", path, field="marker")
    return lines, blocks


def splice(lines: Sequence[str], blocks: Sequence[Block], contents: Sequence[str]) -> str:
    """The page with each block's lines between its markers replaced by a
    blank line, its content and a blank line; the markers and everything
    outside the blocks are kept as they were."""
    out: list[str] = []
    at = 0
    for b, body in zip(blocks, contents, strict=True):
        out += lines[at:b.open_at + 1]
        out.append("\n" + body.strip("\n") + "\n\n")
        at = b.close_at
    out += lines[at:]
    return "".join(out)
