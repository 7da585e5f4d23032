"""Several capture files read as one capture (``--from-pcap FILE [FILE ...]``
or a run's ``capture/`` folder).

The files are grouped into rings by name: tcpdump's ring ``ge-0.pcap0``,
``ge-0.pcap1``, ... is one ring (the name less its trailing digits); any
other file is a ring of its own. A ring's files are read one after the
other, ordered by their first packet's time (a ring wraps around, so its
numbers do not order it); a file whose CoAP messages start before the
previous file of its ring ended is out of place: a UserError naming it.
The rings are merged in time order, a k-way merge of their chunks (one
chunk per ring in memory, never a whole file): each ring's own order is
kept (its running maximum time is the merge key), ties go to the ring named
first. Every file's reader shares one table of endpoints, paths and
queries, so the same endpoint seen in several files is one device.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.inputfile import shown
from wotbench.tracegen._capture import SKIPS, CaptureReader, Messages, _Guarded, _open_regular

__all__ = ["CaptureSet", "capture_paths", "rings"]

_RING_NAME = re.compile(r"(.+\.pcap(?:ng)?)(\d+)")
_CAPTURE_NAME = re.compile(r".+\.(?:pcap|pcapng|cap)(?:\d+)?")


def capture_paths(given: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The files named; a folder (alone) stands for its capture files
    (``*.pcap``, ``*.pcapng``, ``*.cap``, each with tcpdump's ring number or not)."""
    paths = [Path(p) for p in given]
    if not paths:
        raise UserError("no capture file given", field="--from-pcap")
    if len(paths) == 1 and paths[0].is_dir():
        found = sorted(p for p in paths[0].iterdir() if _CAPTURE_NAME.fullmatch(p.name) and not p.is_dir())
        if not found:
            raise UserError("a folder without capture files (*.pcap, *.pcapng, *.pcap0, ...)", shown(paths[0]),
                            field="--from-pcap")
        return found
    for p in paths:
        if p.is_dir():
            raise UserError("a folder among several files: give the folder alone", shown(p), field="--from-pcap")
    if len(set(map(os.path.realpath, paths))) != len(paths):
        dup = next(p for i, p in enumerate(paths) if os.path.realpath(p) in map(os.path.realpath, paths[:i]))
        raise UserError("named twice", shown(dup), field="--from-pcap")
    return paths


def _first_time(path: Path) -> float:
    """The time of the file's first record (inf: none); a non-capture is refused here."""
    reader = CaptureReader(path, 1)
    with _open_regular(path) as fh:
        guard = _Guarded(fh, str(path))
        for ts, _pkt, _iface in reader._records(reader._reader(guard), guard):
            return ts
    return float("inf")


def rings(paths: Sequence[Path]) -> list[list[Path]]:
    """The files grouped into rings (in order of each ring's first name), each
    ring's files in order of their first record's time (then number)."""
    groups: dict[str, list[Path]] = {}
    for p in paths:
        m = _RING_NAME.fullmatch(p.name)
        key = str(p.parent / m.group(1)) if m else str(p)
        groups.setdefault(key, []).append(p)

    def order(p: Path) -> tuple[float, int, str]:
        m = _RING_NAME.fullmatch(p.name)
        return _first_time(p), int(m.group(2)) if m else 0, p.name

    return [sorted(g, key=order) if len(g) > 1 else g for g in groups.values()]


class _Stream:
    """One ring's chunks with their merge keys (the running maximum time)."""

    def __init__(self, chunks: Iterator[Messages]) -> None:
        self.chunks = chunks
        self.done = False
        self.top = np.iinfo(np.int64).min
        self.buf: Messages | None = None
        self.key = np.zeros(0, np.int64)

    def fill(self) -> None:
        while not self.done and (self.buf is None or not self.buf.size):
            chunk = next(self.chunks, None)
            if chunk is None:
                self.done = True
                return
            if chunk.size:
                self.key = np.maximum(np.maximum.accumulate(chunk.t_us), self.top)
                self.top = int(self.key[-1])
                self.buf = chunk

    def take(self, bound: int | None) -> tuple[Messages, np.ndarray]:
        """The rows with keys up to ``bound`` (None: all), and their keys."""
        assert self.buf is not None
        n = self.buf.size if bound is None else int(np.searchsorted(self.key, bound, side="right"))
        out, key = self.buf.take(slice(0, n)), self.key[:n]
        self.buf, self.key = self.buf.take(slice(n, None)), self.key[n:]
        return out, key


def merge(streams: list[_Stream]) -> Iterator[Messages]:
    """The streams' rows in merge-key order, each stream's order kept."""
    while True:
        for s in streams:
            s.fill()
        live = [s for s in streams if s.buf is not None and s.buf.size]
        if not live:
            return
        if len(live) == 1 and len(streams) == 1:
            yield live[0].take(None)[0]
            continue
        waiting = [int(s.key[-1]) for s in live if not s.done]
        bound = min(waiting) if waiting else None
        parts = [s.take(bound) for s in live]
        keys = np.concatenate([k for _, k in parts])
        order = np.argsort(keys, kind="stable")
        yield Messages.concat([m for m, _ in parts]).take(order)


@dataclass
class CaptureSet(CaptureReader):
    """Several captures read as one (module docstring): :meth:`chunks` is
    their merged messages; the counts are the files' sums (known once read),
    ``linktypes`` all files' interfaces in turn; ``files`` what each held."""

    given: list[Path] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    _readers: dict[Path, tuple[CaptureReader, dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    def of(cls, given: Sequence[str | os.PathLike[str]], max_packets: int | None = None) -> CaptureSet:
        paths = capture_paths(given)
        shown_path = Path(given[0]) if len(paths) > 1 or Path(given[0]).is_dir() else paths[0]
        return cls(shown_path, max_packets, given=paths)

    def chunks(self) -> Iterator[Messages]:
        self._readers, self.files = {}, []
        order = rings(self.given)
        yield from merge([_Stream(self._ring(r)) for r in order])
        self._collect([p for r in order for p in r if p in self._readers])

    def _ring(self, files: list[Path]) -> Iterator[Messages]:
        prev: tuple[Path, int] | None = None
        for path in files:
            r = CaptureReader(path, self.max_packets, endpoints=self.endpoints, paths=self.paths,
                              queries=self.queries, _ep_ids=self._ep_ids, _path_ids=self._path_ids,
                              _query_ids=self._query_ids)
            first = last = None
            for chunk in r.chunks():
                if chunk.size:
                    first = int(chunk.t_us[0]) if first is None else first
                    last = max(int(chunk.t_us.max()), last or 0)
                    if prev is not None and first < prev[1]:
                        raise UserError(f"out of place: its first CoAP message is {(prev[1] - first) / 1e6:g} s "
                                        f"before the end of {prev[0].name}, the file before it in its ring",
                                        shown(path), field="--from-pcap")
                yield chunk
            self._readers[path] = r, {"file": path.name, "format": r.format, "linktypes": r.linktypes,
                                      "packets": r.packets, "coap_messages": r.messages, "first_us": first,
                                      "last_us": last, "stopped_early": r.stopped_early}
            if last is not None:
                prev = (path, last)

    def _collect(self, order: list[Path]) -> None:
        rs = [self._readers[p][0] for p in order]
        self.files = [self._readers[p][1] for p in order]
        self.format = "+".join(dict.fromkeys(r.format for r in rs))
        self.linktype = rs[0].linktype if rs else -1
        self.linktypes = [t for r in rs for t in r.linktypes]
        self.packets = sum(r.packets for r in rs)
        self.messages = sum(r.messages for r in rs)
        self.with_query = sum(r.with_query for r in rs)
        self.stopped_early = any(r.stopped_early for r in rs)
        self.skipped = {k: sum(r.skipped[k] for r in rs) for k in SKIPS}
