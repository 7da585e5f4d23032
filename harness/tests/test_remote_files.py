"""The files of a container on another node's engine: packed into its one
volume before it starts, brought back after (wotbench.engine._remote), and
that engine's clock against ours. No engine needed: the archive stream the
engine returns is a tar, made here the way the engine makes it."""

from __future__ import annotations

import io
import tarfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from wotbench.engine import Mount
from wotbench.engine._remote import REMOTE_UID, clock_offset, pack, relative, unpack


def _members(data: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        return {m.name: m for m in tar.getmembers()}


def test_pack_puts_inputs_below_io_and_writable_folders_empty_and_owned_by_the_container_user(tmp_path: Path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "trace.csv").write_text("0,0,GET,coap://dev-0/r\n")
    (tmp_path / "w" / "sub").mkdir()
    (tmp_path / "w" / "sub" / "r.csv").write_text("path,service_us\n/r,5\n")
    (tmp_path / "res.csv").write_text("path,service_us\n")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.csv").write_text("never sent")
    data = pack([Mount(tmp_path / "w", "/io/in"), Mount(tmp_path / "res.csv", "/io/resources.csv"),
                 Mount(tmp_path / "out", "/io/deep/out", writable=True)])
    m = _members(data)
    assert set(m) == {"in", "in/trace.csv", "in/sub", "in/sub/r.csv", "resources.csv", "deep", "deep/out"}
    assert m["deep/out"].isdir() and (m["deep/out"].uid, m["deep/out"].gid) == (REMOTE_UID, REMOTE_UID)
    assert m["in/trace.csv"].uid == 0 and m["in/trace.csv"].mode == 0o644 and m["deep"].mode == 0o755
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.extractfile("in/sub/r.csv").read() == b"path,service_us\n/r,5\n"   # type: ignore[union-attr]


@pytest.mark.parametrize("target", ["/stats", "/io", "/iox/a", "/io/../etc"])
def test_a_target_outside_the_volume_is_refused(target: str):
    with pytest.raises(ValueError, match="not below /io"):
        relative(target)


def _engine_archive(files: dict[str, bytes], folder: str = "out") -> list[bytes]:
    """The engine's GET archive answer for ``/io/<folder>``, in chunks."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        d = tarfile.TarInfo(folder)
        d.type = tarfile.DIRTYPE
        tar.addfile(d)
        for name, body in files.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        link = tarfile.TarInfo(f"{folder}/evil")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        esc = tarfile.TarInfo(f"{folder}/../escape")
        esc.size = 1
        tar.addfile(esc, io.BytesIO(b"x"))
    raw = buf.getvalue()
    return [raw[i:i + 700] for i in range(0, len(raw), 700)]


def test_unpack_writes_the_folder_contents_and_nothing_else(tmp_path: Path):
    dest = tmp_path / "cd"
    n = unpack(_engine_archive({"cd-ge.raw.csv": b"a,b\n" * 500, "sub/x.json": b"{}"}), dest)
    assert n == 2
    assert (dest / "cd-ge.raw.csv").read_bytes() == b"a,b\n" * 500 and (dest / "sub" / "x.json").read_text() == "{}"
    assert not (dest / "evil").exists() and not (tmp_path / "escape").exists()
    assert sorted(p.name for p in dest.iterdir()) == ["cd-ge.raw.csv", "sub"]


class _Engine:
    """An engine whose clock is ``skew`` ahead of ours, answering ``info()``."""

    def __init__(self, skew: timedelta) -> None:
        self.skew = skew

    def info(self) -> dict[str, str]:
        now = datetime.now(UTC) + self.skew
        return {"SystemTime": now.strftime("%Y-%m-%dT%H:%M:%S.%f") + "123+00:00"}   # ns, as Go prints it


@pytest.mark.parametrize("skew_ms", [0, 250, -1500])
def test_clock_offset_reads_the_engines_system_time(skew_ms: int):
    off = clock_offset(_Engine(timedelta(milliseconds=skew_ms)))  # type: ignore[arg-type]  # a fake: only info()
    assert off.offset_us == pytest.approx(skew_ms * 1000, abs=5_000 + off.uncertainty_us)
    assert 0 <= off.uncertainty_us < 50_000 and "SystemTime" in off.how
    assert set(off.to_dict()) == {"offset_us", "uncertainty_us", "how"}
