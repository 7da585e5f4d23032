"""What a container on another node's engine needs that a bind mount gives
on this one: the run's files carried in, its outputs carried back, and that
engine's clock against ours.

A remote container gets one volume of the run at :data:`IO` (labelled with
the run id, removed by teardown); every :class:`~wotbench.engine.Mount`
target of such a container lies under it. Before the container starts its
inputs are put into the volume with the engine's archive API (``PUT
/containers/{id}/archive``, which works on a created container with a
read-only root filesystem, into a volume); writable folders go in empty,
owned by the container's user; after it stopped they come back
(``GET /containers/{id}/archive``) into the run folder on the manager.
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from wotbench.engine._api import Mount

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer
    from docker import DockerClient

__all__ = ["IO", "REMOTE_UID", "ClockOffset", "pack", "unpack", "relative", "clock_offset"]

#: The one volume of a remote container, and the user it runs as there
#: (the harness's uid means nothing on another host).
IO = "/io"
REMOTE_UID = 65534


def relative(target: str) -> str:
    """A mount target below :data:`IO`, relative to it; anything else is a
    programming error (a remote container has only that volume)."""
    p = PurePosixPath(target)
    if not p.is_relative_to(IO) or p == PurePosixPath(IO) or ".." in p.parts:
        raise ValueError(f"mount target {target} is not below {IO}: a remote container cannot have it")
    return str(p.relative_to(IO))


def _add_tree(tar: tarfile.TarFile, src: Path, arcname: str) -> None:
    for path in sorted([src, *src.rglob("*")]):
        info = tar.gettarinfo(str(path), arcname=str(PurePosixPath(arcname) / path.relative_to(src)))
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        if info.isdir():
            info.mode = 0o755
            tar.addfile(info)
        elif info.isfile():
            info.mode = 0o644
            with path.open("rb") as fh:
                tar.addfile(info, fh)


def pack(mounts: Sequence[Mount], uid: int = REMOTE_UID) -> bytes:
    """A tar of every mount, each at its path below :data:`IO`: read-only
    ones with their files (root-owned, world-readable), writable ones as an
    empty folder owned by ``uid``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        made: set[str] = set()
        for m in mounts:
            rel = relative(m.target)
            for parent in list(reversed(PurePosixPath(rel).parents))[1:]:
                if str(parent) not in made:          # intermediate folders, readable by anyone
                    d = tarfile.TarInfo(str(parent))
                    d.type, d.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(d)
                    made.add(str(parent))
            if m.writable:
                d = tarfile.TarInfo(rel)
                d.type, d.mode, d.uid, d.gid = tarfile.DIRTYPE, 0o755, uid, uid
                tar.addfile(d)
            elif m.source.is_dir():
                _add_tree(tar, m.source, rel)
            else:
                info = tar.gettarinfo(str(m.source), arcname=rel)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mode = 0o644
                with m.source.open("rb") as fh:
                    tar.addfile(info, fh)
            made.add(rel)
    return buf.getvalue()


class _Chunks(io.RawIOBase):
    """A file object over the engine's stream of archive chunks."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self._it: Iterator[bytes] = iter(chunks)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        view = memoryview(b).cast("B")
        n = min(len(view), len(self._buf))
        view[:n], self._buf = self._buf[:n], self._buf[n:]
        return n


def unpack(chunks: Iterable[bytes], dest: Path) -> int:
    """Extracts the engine's archive of one folder (its entries named
    ``<folder>/...``) into ``dest``; returns the files written. Only
    regular files and folders, nothing outside ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    n = 0
    with tarfile.open(fileobj=io.BufferedReader(_Chunks(chunks)), mode="r|") as tar:
        for info in tar:
            parts = PurePosixPath(info.name).parts[1:]      # drop the folder's own name
            if not parts or ".." in parts or not (info.isfile() or info.isdir()):
                continue
            target = dest.joinpath(*parts)
            if info.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            src = tar.extractfile(info)
            if src is None:
                continue
            tmp = target.with_name(f".{target.name}.fetch")
            with tmp.open("wb") as fh:
                while chunk := src.read(1 << 20):
                    fh.write(chunk)
            tmp.replace(target)
            n += 1
    return n


@dataclass(frozen=True)
class ClockOffset:
    """A node engine's clock minus ours, and its uncertainty (half the round
    trip of the best of a few API calls)."""

    offset_us: float
    uncertainty_us: float
    how: str = "engine API SystemTime against this host's clock at the call's midpoint, best of 5"

    def to_dict(self) -> dict[str, float | str]:
        return {"offset_us": round(self.offset_us, 1), "uncertainty_us": round(self.uncertainty_us, 1),
                "how": self.how}


def clock_offset(client: DockerClient, samples: int = 5) -> ClockOffset:
    """The engine's clock (``GET /info`` SystemTime) against ours."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        t1 = time.time_ns()
        system_time = client.info()["SystemTime"]
        t2 = time.time_ns()
        theirs = datetime.fromisoformat(system_time).timestamp() * 1e6
        rtt = (t2 - t1) / 1e3
        cand = (theirs - (t1 + t2) / 2e3, rtt / 2)
        if best is None or cand[1] < best[1]:
            best = cand
    assert best is not None
    return ClockOffset(*best)
