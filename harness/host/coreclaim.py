"""Host-wide claims on the cores of workload GEs and of a gateway under
test: two runs started at the same moment must not both put their GE (or
one's GE, the other's gateway) on one core (each would measure the
other). A run holds an exclusive ``flock`` on one file per such core
from before anything starts until it ends; the kernel releases it when the
harness exits, also when it is killed, so a dead run never blocks a core.
The container check (``wotbench.engine.dockerenv.busy_ge_cores``) still covers GEs whose
harness is gone but whose container is not yet.

The lock files live where only the harness's user can create or open them
(``/run/wotbench/cores``, mode 0700, for root): a world-writable folder
let any local user hold a core's lock and refuse every run (issue 23). A
folder there that is a symlink, not a folder, another user's or writable
by others is refused, never used; whoever holds a core's lock is named
(pid, user, command, from /proc/locks)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import pwd
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from wotbench.base.errors import UserError


def _default_dir() -> Path:
    """Root's claims in /run (only root writes there); another user's in
    its runtime folder, else in a folder of its own in the temp folder
    (those claims exclude only that user's runs: the container check
    covers the rest)."""
    if os.geteuid() == 0:
        return Path("/run/wotbench/cores")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = Path(runtime) / "wotbench" if runtime else Path(tempfile.gettempdir()) / f"wotbench-{os.geteuid()}"
    return base / "cores"


#: One lock file per core, shared by every harness of this user on this host.
CLAIM_DIR = _default_dir()
#: A holder that has not written its name within this long is not a wotbench run.
NAME_WAIT_S = 0.5
#: Modes of the claims' folder, its parent (made if absent) and the lock files.
DIR_MODE, PARENT_MODE, FILE_MODE = 0o700, 0o755, 0o600


def _refuse(path: Path, why: str, mode: int = DIR_MODE) -> UserError:
    return UserError(f"{path} {why}: refusing to keep the GE core claims there; remove it (the harness "
                     f"makes it again, owned by uid {os.geteuid()}, mode {mode:04o})", field="placement")


def _unsafe(fd: int, kind: int = stat.S_IFDIR) -> str | None:
    """Why what ``fd`` opens must not hold claims, None if it may: a folder
    (or file) of this user that nobody else can write."""
    st = os.fstat(fd)
    if stat.S_IFMT(st.st_mode) != kind:
        return "is not a folder" if kind == stat.S_IFDIR else "is not a regular file"
    if st.st_uid != os.geteuid():
        return f"belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()})"
    if st.st_mode & 0o022:
        return f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def _open_dir(path: Path, mode: int) -> int | None:
    """``path`` opened as a folder without following a symlink, made with
    ``mode`` if absent; None if it cannot be made (nothing is claimed
    then). One that is not safe (``_unsafe``) is a UserError naming it."""
    made = False
    try:
        os.mkdir(path, mode)
        made = True
    except FileExistsError:
        pass
    except OSError:
        return None                                 # a read-only /run, no parent: no claims
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(path, "is a symlink or not a folder", mode) from None
        return None
    why = _unsafe(fd)
    if why is not None:
        os.close(fd)
        raise _refuse(path, why, mode)
    if made:
        os.fchmod(fd, mode)                         # the umask narrowed it, or widened nothing
    return fd


def claim_folder(folder: Path = CLAIM_DIR) -> int | None:
    """The claims' folder (and its parent) made or checked, open; None
    when it cannot be made."""
    parent = _open_dir(folder.parent, PARENT_MODE)
    if parent is None:
        return None
    os.close(parent)
    return _open_dir(folder, DIR_MODE)


def _holders(fd: int) -> list[int]:
    """Pids holding a lock on the file of ``fd`` (/proc/locks; 0 where the
    holder is in another pid namespace)."""
    st = os.fstat(fd)
    want = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    pids: list[int] = []
    with contextlib.suppress(OSError), open("/proc/locks", encoding="ascii", errors="replace") as locks:
        for line in locks:
            f = line.split()
            if len(f) < 6 or f[1] == "->":              # a waiter, not a holder
                continue
            maj, mnr, ino = (f[5].split(":") + ["", "", ""])[:3]
            with contextlib.suppress(ValueError):
                if (int(maj, 16), int(mnr, 16), int(ino)) == want:
                    pids.append(int(f[4]))
    return pids


def describe_pid(pid: int) -> str:
    """``pid N, user U, command 'C'`` as far as /proc tells."""
    if pid <= 0:
        return "a process of another pid namespace"
    user = "?"
    with contextlib.suppress(OSError, ValueError, KeyError, IndexError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
                user = str(uid)
                user = pwd.getpwuid(uid).pw_name
    cmd = "?"
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:512]
        cmd = " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a) or cmd
    if len(cmd) > 120:
        cmd = cmd[:117] + "..."
    return f"pid {pid}, user {user}, command {cmd!r}"


def _holder_name(fd: int) -> str | None:
    """What a wotbench holder wrote right after taking the lock (read again
    for a moment while the file is empty); None if nothing came."""
    end = time.monotonic() + NAME_WAIT_S
    while True:
        with contextlib.suppress(OSError):
            text = os.pread(fd, 512, 0).decode(errors="replace").strip()
            if text:
                return text.splitlines()[0]
        if time.monotonic() >= end:
            return None
        time.sleep(0.01)


def _claimed(core: int, fd: int) -> UserError:
    """The refusal of a core whose lock another process holds, naming it."""
    who = "; ".join(describe_pid(p) for p in _holders(fd)) or "holder not in /proc/locks"
    name = _holder_name(fd)
    if name is not None:
        what = f"the GE or gateway under test of a run in progress on this host ({name}; {who})"
    else:
        what = f"a process that is not a wotbench run ({who})"
    return UserError(f"core {core} is claimed by {what}: wait for it, or plan this run's GEs elsewhere",
                     field="placement")


def _lock_file(folder_fd: int, folder: Path, core: int) -> int | None:
    """The lock file of ``core`` in the claims' folder, opened without
    following a symlink; one that is not this user's regular file is a
    UserError; None if it cannot be opened (that core is not claimed)."""
    name = f"core-{core}.lock"
    try:
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, FILE_MODE, dir_fd=folder_fd)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise _refuse(folder / name, "is a symlink", FILE_MODE) from None
        return None
    why = _unsafe(fd, stat.S_IFREG)
    if why is not None:
        os.close(fd)
        raise _refuse(folder / name, why, FILE_MODE)
    return fd


def _claim(held: contextlib.ExitStack, folder_fd: int, folder: Path, core: int, what: str) -> None:
    """Takes the lock of ``core`` into ``held`` and writes who holds it."""
    fd = _lock_file(folder_fd, folder, core)
    if fd is None:
        return
    held.callback(os.close, fd)               # closing releases the lock
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _claimed(core, fd) from None
    os.ftruncate(fd, 0)
    held.callback(os.ftruncate, fd, 0)         # before the close: no stale holder is read
    os.pwrite(fd, f"{what}, harness pid {os.getpid()}, since "
                  f"{time.strftime('%H:%M:%S', time.gmtime())} UTC\n".encode(), 0)


@contextlib.contextmanager
def claim_ge_cores(cores: Iterable[int], what: str, folder: Path = CLAIM_DIR) -> Iterator[None]:
    """Holds every core of ``cores`` for the caller's GEs while the block
    runs; a core another process holds is a UserError naming the core and
    that holder (nothing is held then). ``what`` says who holds it (the
    spec's name). Without a folder that can be made nothing is claimed
    (the container check remains); an unsafe one is a UserError."""
    wanted = sorted(set(cores))
    with contextlib.ExitStack() as held:
        folder_fd = claim_folder(folder) if wanted else None
        if folder_fd is not None:
            held.callback(os.close, folder_fd)
            for core in wanted:
                _claim(held, folder_fd, folder, core, what)
        yield
