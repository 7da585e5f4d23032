"""Host-wide claims on the cores of workload GEs: two runs started at the
same moment must not both put their GE on one core (each would measure
the other). A run holds an exclusive ``flock`` on one file per GE core
from before anything starts until it ends; the kernel releases it when the
harness exits, also when it is killed, so a dead run never blocks a core.
The container check (``_dockerenv.busy_ge_cores``) still covers GEs whose
harness is gone but whose container is not yet."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from wotbench._errors import UserError

#: One lock file per core, shared by every harness of this host.
CLAIM_DIR = Path(tempfile.gettempdir()) / "wotbench-ge-cores"


def _holder(fd: int) -> str:
    """Who holds the lock of ``fd``: its holder writes that right after
    taking the lock, so an empty file is read again for a moment."""
    for _ in range(50):
        with contextlib.suppress(OSError):
            text = os.pread(fd, 512, 0).decode(errors="replace").strip()
            if text:
                return text
        time.sleep(0.01)
    return "another wotbench run"


def _folder(folder: Path) -> bool:
    """The lock folder exists (made world-writable, sticky, if new)."""
    try:
        if not folder.is_dir():
            folder.mkdir()
            folder.chmod(0o1777)          # every user's harness claims here
    except OSError:
        return False
    return True


@contextlib.contextmanager
def claim_ge_cores(cores: Iterable[int], what: str, folder: Path = CLAIM_DIR) -> Iterator[None]:
    """Holds every core of ``cores`` for the caller's GEs while the block
    runs; a core another harness of this host holds is a UserError naming
    the core and that run (nothing is held then). ``what`` says who holds
    it (the spec's name). Without a writable lock folder nothing is
    claimed (the container check remains)."""
    with contextlib.ExitStack() as held:
        for core in sorted(set(cores)) if _folder(folder) else ():
            try:
                fd = os.open(folder / f"core-{core}.lock", os.O_RDWR | os.O_CREAT, 0o666)
            except OSError:
                continue
            held.callback(os.close, fd)           # closing releases the lock
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise UserError(f"core {core} is claimed by the GE of a run in progress on this host "
                                f"({_holder(fd)}): wait for it, or plan this run's GEs elsewhere",
                                field="placement") from None
            os.ftruncate(fd, 0)
            held.callback(os.ftruncate, fd, 0)     # before the close: no stale holder is read
            os.pwrite(fd, f"{what}, harness pid {os.getpid()}, since "
                          f"{time.strftime('%H:%M:%S', time.gmtime())} UTC\n".encode(), 0)
        yield
