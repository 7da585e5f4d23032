"""A run that captures itself (``capture:``, docs/spec.md, "capture"): the
snapshot length and the ring of files tcpdump keeps of each workload GE's
traffic (docs/capture.md). Absent: no capture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource

__all__ = ["RunCapture", "read_run_capture", "CAPTURE_KEYS", "MB", "MIN_SNAPLEN", "MAX_SNAPLEN", "MAX_FILES"]

CAPTURE_KEYS = frozenset({"snaplen", "max_size", "files"})
#: tcpdump's -C unit: millions of bytes (a file is cut past a whole number of them).
MB = 1_000_000
#: A CoAP header, its options and the IPv4/UDP and link headers fit in 96 bytes;
#: 65535 is tcpdump's whole packet.
MIN_SNAPLEN, MAX_SNAPLEN = 96, 65535
#: tcpdump's -W limit is far larger; more files than this is a mistake.
MAX_FILES = 1000
#: The largest file of the ring (tcpdump's -C in millions of bytes).
MAX_FILE_BYTES = 1 << 40


@dataclass(frozen=True)
class RunCapture:
    """tcpdump in each workload GE's network namespace: ``snaplen`` bytes of
    every packet, files of at most ``max_size_bytes`` (rounded down to whole
    millions of bytes, tcpdump's -C unit), a ring of ``files`` of them."""

    snaplen: int = 256
    max_size_bytes: int = 100 << 20
    files: int = 4

    @property
    def file_mb(self) -> int:
        """tcpdump's ``-C``: the file size in millions of bytes."""
        return self.max_size_bytes // MB

    @property
    def total_bytes(self) -> int:
        """The most the ring of one GE holds on disk (one packet past each cut)."""
        return self.file_mb * MB * self.files + self.files * self.snaplen

    def to_dict(self) -> dict[str, Any]:
        return {"snaplen": self.snaplen, "max_size_bytes": self.max_size_bytes, "files": self.files}


def read_run_capture(v: Any, src: YamlSource, at: KeyPath = ("capture",)) -> RunCapture:
    """The ``capture`` section, present (``capture:`` alone: the defaults)."""
    m = read.mapping(v, src, at, CAPTURE_KEYS)
    snaplen = read.integer(m.get("snaplen", RunCapture.snaplen), src, at + ("snaplen",), MIN_SNAPLEN, MAX_SNAPLEN)
    size = RunCapture.max_size_bytes
    if "max_size" in m:
        size = read.value(units.parse_size, m["max_size"], src, at + ("max_size",))
        if not MB <= size <= MAX_FILE_BYTES:
            raise src.error(f"must be from 1MB (tcpdump cuts files in millions of bytes) to 1024GB, "
                            f"got {units.short(m['max_size'])}", *at, "max_size")
    files = read.integer(m.get("files", RunCapture.files), src, at + ("files",), 1, MAX_FILES)
    return RunCapture(snaplen, size, files)

