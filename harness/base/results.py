"""The results directory of one run (docs/run-layout.md): its id, atomic
writes, the INCOMPLETE marker and the manifest's automatically collected
metadata."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import secrets
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from wotbench.base import outpath
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.version import __version__

REPO = Path(__file__).resolve().parents[2]
FORMAT = 1


def new_run_id(name: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now if now is not None else time.time()))
    return f"{stamp}-{name}-{secrets.token_hex(3)}"


def check_results_root(root: Path) -> None:
    """The results folder, or the nearest folder above it that exists (the
    run makes the rest), takes a new file; else a UserError naming it,
    before anything of a run starts: also for an empty path, a symlink
    loop or a system folder (wotbench.base.outpath). Leaves nothing behind."""
    where = outpath.resolve(root, "--results")
    if where.exists() and not where.is_dir():
        raise UserError("is not a folder", str(root), field="--results")
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        if not where.is_dir():
            raise NotADirectoryError(20, f"{where} is not a folder")
        with tempfile.NamedTemporaryFile(dir=where, prefix=".wotbench-probe-"):
            pass
    except OSError as err:
        raise UserError(f"cannot hold results: {err.strerror or err}", str(root), field="--results") from None


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """A file to write ``path`` through: readers see the old state or, once
    the block ends without an exception, the whole new one (temp file,
    fsync, rename); on an exception nothing is left behind. What is at
    ``path`` must be nothing, a regular file or a symlink (the rename
    replaces the link, never writes through it): a rename onto a device,
    FIFO or folder would replace it, so that is a UserError."""
    outpath.check_file_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: Path, data: str | bytes) -> None:
    """Writes a file so that readers see the old state or the whole new one."""
    with atomic_file(path) as fh:
        fh.write(data.encode() if isinstance(data, str) else data)


def write_json(path: Path, obj: Any) -> None:
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_csv(path: Path, df: pd.DataFrame) -> None:
    write_atomic(path, df.to_csv(index=False))


def mark_incomplete(run_dir: Path, reason: str) -> None:
    write_atomic(run_dir / layout.INCOMPLETE, reason.rstrip() + "\n")


def sha256_tree(root: Path) -> dict[str, str]:
    """sha256 of every file below ``root``, keyed by relative path."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h = hashlib.sha256()
            with p.open("rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    h.update(chunk)
            out[str(p.relative_to(root))] = h.hexdigest()
    return out


def _cmd(*args: str) -> str | None:
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return r.stdout.strip() if r.returncode == 0 else None


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def host_facts(docker_version: Mapping[str, Any]) -> dict[str, Any]:
    dirty = _cmd("git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no")
    return {
        "wotbench_version": __version__,
        "git_commit": _cmd("git", "-C", str(REPO), "rev-parse", "HEAD"),
        "git_dirty": bool(dirty) if dirty is not None else None,
        "libcoap": _cmd("dpkg-query", "-W", "-f=${Version}", "libcoap3-dev"),
        "docker": {"version": docker_version.get("Version"),
                   "api": docker_version.get("ApiVersion")},
        "kernel": platform.release(),
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cores_offered": sorted(os.sched_getaffinity(0)),
        "python": platform.python_version(),
    }
