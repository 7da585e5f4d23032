"""The one reader of the files a spec is or points at (the spec itself, an
``empirical:`` CSV): regular files only, read with a size cap.

A path can name a FIFO (``open`` blocks until a writer comes), a character
device (``/dev/zero`` never ends) or a file that grows while it is read.
:func:`read_bytes` refuses what is not a regular file before it opens it,
opens with ``O_NONBLOCK`` (so that a FIFO swapped in after the check cannot
block) and checks again on the open descriptor, then reads at most
``limit`` bytes. Every refusal is a :class:`wotbench.UserError` whose text
names the path and the kind of problem, never the file's content; it
names no file of its own (``file`` is None), so that a spec reader places
it at the line of the key that named the path.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["read_bytes", "read_text", "decode", "shown"]

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
_ERRNO = {errno.ENOENT: "file not found", errno.EACCES: "permission denied", errno.ELOOP: "too many symlinks",
          errno.ENOTDIR: "a part of the path is not a folder", errno.ENAMETOOLONG: "name too long",
          errno.EAGAIN: "it would wait for data (a file that is never complete)"}


def _kind(mode: int) -> str | None:
    """What a file of this mode is, when it is not a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def shown(path: str | Path) -> str:
    """``path`` for a message: on one line, control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in os.fspath(path))


def _refuse(path: str, problem: str, field: str | None) -> UserError:
    return UserError(f"{shown(path)}: {problem}", field=field)


def _os_problem(exc: OSError) -> str:
    return "cannot read: " + _ERRNO.get(exc.errno or 0, exc.strerror or type(exc).__name__)


def read_bytes(path: str | Path, limit: int, field: str | None = None, *, what: str = "a file") -> bytes:
    """The content of the regular file at ``path`` (at most ``limit`` bytes,
    else a UserError naming the limit; ``what`` names the file's role, "a spec")."""
    name = os.fspath(path)
    try:
        kind = _kind(os.stat(name).st_mode)
        if kind is not None:
            raise _refuse(name, f"{kind}, not a regular file", field)
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (OSError, ValueError) as exc:
        problem = _os_problem(exc) if isinstance(exc, OSError) else "cannot read: invalid path"
        raise _refuse(name, problem, field) from None
    try:
        return _read_open(fd, name, limit, field, what)
    except OSError as exc:
        raise _refuse(name, _os_problem(exc), field) from None
    finally:
        os.close(fd)


def _read_open(fd: int, name: str, limit: int, field: str | None, what: str) -> bytes:
    st = os.fstat(fd)
    kind = _kind(st.st_mode)                # swapped between stat and open
    if kind is not None:
        raise _refuse(name, f"{kind}, not a regular file", field)
    if st.st_size > limit:
        raise _refuse(name, f"{st.st_size} bytes: larger than the {limit} bytes {what} may have", field)
    chunks: list[bytes] = []
    got = 0
    while got <= limit:                     # one byte past the limit tells a file that grew
        chunk = os.read(fd, min(1 << 20, limit + 1 - got))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
    raise _refuse(name, f"grew past the {limit} bytes {what} may have while it was read", field)


def read_text(path: str | Path, limit: int, field: str | None = None, *, what: str = "a file") -> str:
    """:func:`read_bytes` decoded as UTF-8 (:func:`decode`)."""
    return decode(read_bytes(path, limit, field, what=what), path, field)


def decode(data: bytes, path: str | Path, field: str | None = None) -> str:
    """``data`` (read from ``path``) as UTF-8 text; invalid UTF-8 is a
    UserError naming its line and column, not the bytes."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise UserError(f"not UTF-8 text (an invalid byte at column {col})", os.fspath(path), line, field) from None
