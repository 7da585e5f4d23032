"""The one exception type for bad user input (spec, trace, resource file, CLI)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass
class UserError(Exception):
    """Bad input. Rendered as ``error: FILE:LINE: FIELD: what`` and exit status 2."""

    what: str
    file: str | Path | None = None
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        where = ""
        if self.file is not None:
            where = f"{_one_line(str(self.file))}:"
            if self.line is not None:
                where += f"{self.line}:"
            where += " "
        field = f"{self.field}: " if self.field else ""
        return f"{where}{field}{self.what}"


def _one_line(text: str) -> str:
    """A path as printable text on one line: a newline or other control
    character in a file name is shown escaped, never breaks the line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
