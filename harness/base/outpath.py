"""The one guard for every path a command writes or deletes (issue 23).

A user-given output path is resolved once (:func:`resolve`): the empty
path, a symlink loop, the root, a system folder or a path in a kernel file
system (/proc, /sys, /dev) is refused in one line. An existing folder is
replaced only when this tool made it (:func:`check_replaceable`: the
:data:`MARKER` file written when it was made, and nothing in it but what
the tool writes), and written into only when it is empty or holds nothing
but the tool's own files (:func:`check_reusable`). A folder below a run
folder is written only when no part of the way down is a symlink
(:func:`inside`): a symlink never takes a write out of the run folder.
Every refusal is a :class:`UserError` (exit 2), raised before anything is
written.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from wotbench.base.errors import UserError

__all__ = ["MARKER", "Contents", "resolve", "inside", "check_replaceable", "check_reusable",
           "check_file_target", "write_marker", "make_parents", "remove_made"]

#: The file that says "wotbench made this folder"; it holds the maker's name.
MARKER = ".wotbench-made"
#: Kernel file systems: nothing is ever written below them.
_KERNEL = ("/proc", "/sys", "/dev")
#: The system's own trees: never written below either.
_SYSTEM = ("/etc", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr")


@dataclass(frozen=True)
class Contents:
    """What a tool writes into its output folder: top-level files, and
    folders that hold only regular files whose names match a pattern."""

    maker: str
    files: frozenset[str]
    folders: Mapping[str, str]          # folder name -> regex of its file names

    def allows(self, name: str) -> bool:
        return name in self.files or name in self.folders or name == MARKER


def resolve(raw: str | os.PathLike[str], field: str) -> Path:
    """The absolute real path of a user-given output path, or a UserError
    naming it: empty, a symlink loop, a part that is not a folder, the
    root, a system folder or a path in a kernel file system."""
    text = os.fspath(raw)
    if text == "":
        raise UserError("is empty (give a folder)", field=field)
    real = Path(os.path.realpath(text))
    try:
        real.stat()
    except FileNotFoundError:
        pass
    except OSError as err:
        raise UserError(_why(err), text, field=field) from None
    _refuse_system(real, text, field)
    return real


def _why(err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return "is a symlink loop (or goes through one)"
    if err.errno == errno.ENOTDIR:
        return "a part of the path is not a folder"
    return f"cannot be used: {err.strerror or err}"


def _under(path: Path, top: str) -> bool:
    return path == Path(top) or Path(top) in path.parents


def _refuse_system(real: Path, text: str, field: str) -> None:
    if real == Path(real.anchor):
        raise UserError("is the root folder: refusing to write or delete it", text, field=field)
    for top in (*_KERNEL, *_SYSTEM):
        if _under(real, top):
            raise UserError(f"is in the system folder {top}: refusing to write or delete there",
                            text, field=field)


def inside(root: Path, rel: str | os.PathLike[str], field: str) -> Path:
    """``root / rel``, refused when a part of it below ``root`` (the last one
    included) is a symlink or is not a folder where a folder is needed: a
    write there would leave the run folder. ``rel`` is relative and has no
    '..'."""
    parts = Path(rel).parts
    if Path(rel).is_absolute() or ".." in parts:
        raise UserError(f"{rel} is not a path inside the run folder", root, field=field)
    here = Path(root)
    for part in parts:
        here = here / part
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return Path(root).joinpath(*parts)
        except OSError as err:
            raise UserError(_why(err), here, field=field) from None
        if stat.S_ISLNK(st.st_mode):
            raise UserError("is a symlink: refusing to write through it (it may lead out of the run folder)",
                            here, field=field)
    return here


def _entries(folder: Path) -> Iterator[os.DirEntry[str]]:
    with os.scandir(folder) as it:
        yield from it


def _foreign(folder: Path, what: Contents) -> str | None:
    """The first entry of ``folder`` that ``what`` does not account for, else None."""
    for e in _entries(folder):
        if not what.allows(e.name):
            return e.name
        kind_ok = e.is_dir(follow_symlinks=False) if e.name in what.folders else e.is_file(follow_symlinks=False)
        if e.is_symlink() or not kind_ok:
            return e.name
        if e.name in what.folders:
            pattern = re.compile(what.folders[e.name])
            for sub in _entries(Path(e.path)):
                if sub.is_symlink() or not sub.is_file(follow_symlinks=False) or not pattern.fullmatch(sub.name):
                    return f"{e.name}/{sub.name}"
    return None


def _existing_folder(path: Path, text: str, field: str) -> bool:
    """True when ``path`` is an existing folder; False when nothing is there;
    a UserError when it is anything else."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise UserError(_why(err), text, field=field) from None
    if not stat.S_ISDIR(st.st_mode):
        raise UserError("exists and is not a folder", text, field=field)
    return True


def _marker_of(folder: Path) -> str | None:
    try:
        with open(folder / MARKER, "rb") as fh:
            return fh.read(256).decode(errors="replace").strip()
    except OSError:
        return None


def check_replaceable(path: Path, what: Contents, force: bool, field: str, text: str | None = None) -> bool:
    """May ``path`` (resolved) be replaced by a new output of ``what.maker``?
    False when nothing is there; True when it is an empty folder, or with
    ``force`` a folder that maker made holding only what it writes; else a
    UserError that names it (nothing is touched)."""
    text = text if text is not None else str(path)
    if not _existing_folder(path, text, field):
        return False
    try:
        empty = next(iter(_entries(path)), None) is None
        if empty:
            return True
        if not force:
            raise UserError("output folder exists and is not empty (use --force to replace a folder "
                            f"{what.maker} made)", text, field=field)
        if _marker_of(path) != what.maker:
            raise UserError(f"was not made by {what.maker} (no {MARKER} of it): refusing to replace it; "
                            "give a new folder", text, field=field)
        extra = _foreign(path, what)
    except OSError as err:
        raise UserError(_why(err), text, field=field) from None
    if extra is not None:
        raise UserError(f"holds {extra!r}, which {what.maker} did not write: refusing to replace it",
                        text, field=field)
    return True


def check_reusable(path: Path, what: Contents, field: str, text: str | None = None) -> None:
    """May ``what.maker`` write its files into ``path``? Yes when nothing is
    there, or a folder holding nothing but the files it writes (an older
    report); else a UserError naming the first foreign entry."""
    text = text if text is not None else str(path)
    if not _existing_folder(path, text, field):
        return
    try:
        extra = _foreign(path, what)
    except OSError as err:
        raise UserError(_why(err), text, field=field) from None
    if extra is not None:
        raise UserError(f"holds {extra!r}, which {what.maker} does not write: refusing to write into it "
                        "(give a new folder)", text, field=field)


def check_file_target(path: Path, field: str | None = None) -> None:
    """A file about to be renamed onto ``path``: refused (UserError) when a
    device, FIFO, socket or folder is there, which the rename would replace."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as err:
        raise UserError(_why(err), path, field=field) from None
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise UserError("is not a regular file (a device, FIFO or folder): refusing to replace it",
                        path, field=field)


def write_marker(folder: Path, maker: str) -> None:
    """Marks ``folder`` as made by ``maker``."""
    with open(folder / MARKER, "x") as fh:
        fh.write(maker + "\n")


def make_parents(path: Path) -> list[Path]:
    """Creates the missing folders above ``path``; returns them, the deepest
    first, for :func:`remove_made` to take back on failure."""
    made: list[Path] = []
    here = path.parent
    while not here.exists() and here != here.parent:
        made.append(here)
        here = here.parent
    for p in reversed(made):
        p.mkdir()
    return made


def remove_made(made: list[Path]) -> None:
    """Removes the folders :func:`make_parents` made (only while empty)."""
    for p in made:
        try:
            p.rmdir()
        except OSError:
            return
