"""A packet capture (pcap or pcapng) read into compact per-message CoAP columns.

The records are read by dpkt (``dpkt.pcap.Reader``; pcapng by dpkt's block
classes, one interface's link type and clock per packet: the measured
winner of ``tracegen/bench/bench_pcap.py``), the link, IP and
UDP layers are decoded by dpkt and the CoAP message by aiocoap's
``Message.decode``. Nothing per packet is kept as a Python object: each
CoAP message becomes one row of fixed-width columns (:class:`Messages`,
45 bytes), gathered in ``array`` buffers and handed out in NumPy
chunks of :data:`CHUNK` rows; endpoints (address and port), request paths and
queries are interned into tables.

Link types: Ethernet (VLAN tags included), Linux cooked SLL and SLL2, raw
IP; IPv4 and IPv6; UDP on any port. What is not a CoAP message is counted
by reason (:data:`SKIPS`), never an error; a file that is not a capture,
an unsupported link type and a record longer than any packet are
:class:`UserError` (``error: FILE:packet N: FIELD: what``). A last record
cut short (a capture copied while it was written) is skipped and counted.
"""

from __future__ import annotations

import os
import socket
import stat
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import dpkt
import numpy as np
from aiocoap.error import UnparsableMessage
from aiocoap.message import Message

from wotbench.base.errors import UserError
from wotbench.base.inputfile import shown

__all__ = ["CHUNK", "MAX_RECORD", "SKIPS", "LINKTYPES", "Messages", "CaptureReader", "read_capture"]

#: Messages per chunk handed out.
CHUNK = 1 << 16
#: The longest record accepted (tcpdump's largest snap length, 262144, plus
#: block framing): a longer one can only be a corrupt length field, and
#: reading it would allocate that much.
MAX_RECORD = 262144 + 4096
#: Why a packet was not a CoAP message (capture.json's ``skipped``).
SKIPS = ("not_udp", "fragment", "truncated", "malformed", "not_coap", "malformed_coap", "cut_last_record")
#: Link types read (the pcap LINKTYPE_ numbers).
LINKTYPES = {1: "ethernet", 113: "linux-sll", 276: "linux-sll2", 101: "raw", 12: "raw", 14: "raw",
             228: "raw-ipv4", 229: "raw-ipv6"}
_MAX_T_US = 1 << 62                     # far beyond any capture's clock, within int64
_IP_FRAGMENT = 44                       # the IPv6 Fragment extension header
_OBSERVE_LIMIT = 1 << 24                # Observe values have 3 bytes (RFC 7641): a longer one is ignored


@dataclass
class Messages:
    """CoAP messages as columns (one row each), in capture order."""

    t_us: np.ndarray          # int64, capture time in microseconds (since the epoch)
    src: np.ndarray           # int32, endpoint id of the sender
    dst: np.ndarray           # int32, endpoint id of the receiver
    mtype: np.ndarray         # uint8, 0 CON, 1 NON, 2 ACK, 3 RST
    code: np.ndarray          # uint8, class * 32 + detail (1 GET .. 4 DELETE; 69 2.05)
    mid: np.ndarray           # uint16, message id
    token: np.ndarray         # uint64, the token's bytes big-endian
    tkl: np.ndarray           # uint8, token length
    payload: np.ndarray       # int32, payload bytes
    path: np.ndarray          # int32, path id of a request (-1: a response or empty message)
    query: np.ndarray         # int32, query id of a request with Uri-Query options (-1: none)
    observe: np.ndarray       # int32, the Observe option's value (-1: none)

    COLUMNS = ("t_us", "src", "dst", "mtype", "code", "mid", "token", "tkl", "payload", "path", "query",
               "observe")

    @property
    def size(self) -> int:
        return int(self.t_us.size)

    @classmethod
    def concat(cls, parts: list[Messages]) -> Messages:
        """The parts end to end; consumes them (each column is dropped from
        the parts once joined, so the peak is one column above the data)."""
        if not parts:
            return cls.empty()
        joined = []
        for c in cls.COLUMNS:
            joined.append(np.concatenate([getattr(p, c) for p in parts]))
            for p in parts:
                setattr(p, c, joined[-1][:0])
        return cls(*joined)

    @classmethod
    def empty(cls) -> Messages:
        return _Buffers().take()

    def take(self, rows: np.ndarray | slice) -> Messages:
        """The rows ``rows`` (indices or a mask) as new columns."""
        return Messages(*(getattr(self, c)[rows] for c in self.COLUMNS))


_TYPECODES = {"t_us": "q", "src": "i", "dst": "i", "mtype": "B", "code": "B", "mid": "H", "token": "Q",
              "tkl": "B", "payload": "i", "path": "i", "query": "i", "observe": "i"}


class _Buffers:
    """The rows of the chunk being filled (typed arrays: no object per row)."""

    def __init__(self) -> None:
        self._new()

    def _new(self) -> None:
        self.cols = [array(_TYPECODES[c]) for c in Messages.COLUMNS]
        self.appends = [a.append for a in self.cols]

    def __len__(self) -> int:
        return len(self.cols[0])

    def add(self, *row: int) -> None:
        """One message: the values of Messages.COLUMNS in order."""
        for append, v in zip(self.appends, row, strict=True):
            append(v)

    def take(self) -> Messages:
        out = Messages(*(np.frombuffer(a, dtype=a.typecode).copy() for a in self.cols))
        self._new()
        return out


class _CaptureTooBig(Exception):
    """A record length beyond :data:`MAX_RECORD` (a corrupt length field)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.n = n


class _Guarded:
    """The capture file as dpkt reads it: every read bounded, short reads
    noted (a record cut at the end of the file)."""

    def __init__(self, fh: IO[bytes], name: str) -> None:
        self._fh = fh
        self.name = name
        self.last_short = False       # the last read returned less than asked
        self.partial = False          # some read returned part of what was asked (a cut header)

    def read(self, n: int = -1) -> bytes:
        if n < 0 or n > MAX_RECORD:
            raise _CaptureTooBig(n)
        data = self._fh.read(n)
        self.last_short = len(data) < n
        self.partial = self.partial or 0 < len(data) < n
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        self.last_short = self.partial = False
        return self._fh.seek(pos, whence)

    def tell(self) -> int:
        return self._fh.tell()

    def fileno(self) -> int:
        return self._fh.fileno()


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading, or a UserError when it is not a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as err:
        raise UserError(f"cannot read: {err.strerror}", shown(path), field="--from-pcap") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError("not a regular file", shown(path), field="--from-pcap")
    return os.fdopen(fd, "rb", buffering=1 << 20)


@dataclass
class CaptureReader:
    """Reads one capture: iterate :meth:`chunks`, then read the tables and counts."""

    path: Path
    max_packets: int | None = None
    """Stop after this many records (``--max-packets``); None: read them all."""
    stopped_early: bool = False
    format: str = ""
    linktype: int = -1
    linktypes: list[int] = field(default_factory=list)
    """The link type of each interface (pcapng: in the order described, across sections)."""
    packets: int = 0
    endpoints: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    queries: list[tuple[str, ...]] = field(default_factory=list)
    """The distinct Uri-Query option lists of the requests (query ids index it)."""
    messages: int = 0
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIPS, 0))
    with_query: int = 0
    _ep_ids: dict[bytes, int] = field(default_factory=dict)
    _path_ids: dict[str, int] = field(default_factory=dict)
    _query_ids: dict[tuple[str, ...], int] = field(default_factory=dict)

    def chunks(self) -> Iterator[Messages]:
        """The capture's CoAP messages, :data:`CHUNK` rows at a time."""
        with _open_regular(self.path) as fh:
            guard = _Guarded(fh, str(self.path))
            packets = self._reader(guard)
            links: dict[int, Callable[[bytes], Any]] = {}
            buf = _Buffers()
            for ts, pkt, iface in self._records(packets, guard):
                link = links.get(iface)
                if link is None:
                    link = links[iface] = _link_decoder(self.linktypes[iface], self.path)
                self._packet(buf, ts, pkt, link)
                if len(buf) >= CHUNK:
                    yield buf.take()
            if len(buf):
                yield buf.take()

    def _reader(self, guard: _Guarded) -> Iterator[tuple[float, bytes, int]]:
        """(time, bytes, interface) of each record: pcap's (one interface), or
        pcapng's, each interface with its own link type and clock."""
        for fmt, cls in (("pcap", dpkt.pcap.Reader), ("pcapng", dpkt.pcapng.Reader)):
            guard.seek(0)
            try:
                reader = cls(guard)
            except (ValueError, dpkt.UnpackError, struct.error, _CaptureTooBig):
                continue
            self.format, self.linktype = fmt, int(reader.datalink())
            if fmt == "pcap":
                self.linktypes.append(self.linktype)
                return ((ts, pkt, 0) for ts, pkt in reader)
            guard.seek(0)
            return _pcapng_packets(guard, self.linktypes)
        raise UserError("not a pcap or pcapng capture (no capture header)", shown(self.path), field="format")

    def _records(self, packets: Iterator[tuple[float, bytes, int]],
                 guard: _Guarded) -> Iterator[tuple[float, bytes, int]]:
        """(time, bytes, interface) of each record; the cut last one counted, not yielded."""
        it = packets
        while True:
            try:
                ts, pkt, iface = next(it)
            except StopIteration:
                break
            except (dpkt.UnpackError, struct.error, ValueError):
                if guard.last_short:
                    self.skipped["cut_last_record"] += 1
                    return
                raise UserError("a record that cannot be read (the file is corrupt)", self._at(),
                                field="record") from None
            except _CaptureTooBig as big:
                raise UserError(f"a record of {big.n} bytes, more than any packet (at most {MAX_RECORD}): "
                                "the file is corrupt", self._at(), field="record") from None
            self.packets += 1
            if guard.last_short:            # pcap: the body of the last record is cut
                self.skipped["cut_last_record"] += 1
                return
            yield ts, pkt, iface
            if self.packets == self.max_packets:
                self.stopped_early = True
                return
        if guard.partial:                   # a record header cut at the end
            self.skipped["cut_last_record"] += 1

    def _at(self) -> str:
        """Where the next record is, for an error: ``FILE:packet N``."""
        return f"{shown(self.path)}:packet {self.packets + 1}"

    def _packet(self, buf: _Buffers, ts: float, pkt: bytes, link: Callable[[bytes], Any]) -> None:
        """One record: a row of ``buf`` when it holds a CoAP message, else a skip counted."""
        try:
            ip = link(pkt)
        except (dpkt.UnpackError, struct.error, ValueError, IndexError):
            self.skipped["malformed"] += 1
            return
        udp, why = _udp_of(ip)
        if udp is None:
            self.skipped[why] += 1
            return
        msg, why = _coap_of(udp.data)
        if msg is None:
            self.skipped[why] += 1
            return
        t_us = round(ts * 1_000_000)
        if not 0 <= t_us < _MAX_T_US:       # a corrupt time stamp (or its resolution option)
            self.skipped["malformed"] += 1
            return
        self._row(buf, t_us, ip, udp, msg)

    def _row(self, buf: _Buffers, t_us: int, ip: Any, udp: Any, msg: Any) -> None:
        code = int(msg.code)
        path = query = -1
        if 0 < code < 32:
            path = self._path(tuple(msg.opt.uri_path))
            if msg.opt.uri_query:
                self.with_query += 1
                query = self._query(tuple(msg.opt.uri_query))
        obs = msg.opt.observe
        self.messages += 1
        buf.add(t_us, self._endpoint(ip.src, udp.sport), self._endpoint(ip.dst, udp.dport), int(msg.mtype),
                code, msg.mid, int.from_bytes(msg.token, "big"), len(msg.token), len(msg.payload), path, query,
                int(obs) if obs is not None and 0 <= obs < _OBSERVE_LIMIT else -1)

    def _query(self, segments: tuple[str, ...]) -> int:
        got = self._query_ids.get(segments)
        if got is None:
            got = self._query_ids[segments] = len(self.queries)
            self.queries.append(segments)
        return got

    def _endpoint(self, addr: bytes, port: int) -> int:
        key = addr + port.to_bytes(2, "big")
        got = self._ep_ids.get(key)
        if got is None:
            got = self._ep_ids[key] = len(self.endpoints)
            host = socket.inet_ntop(socket.AF_INET if len(addr) == 4 else socket.AF_INET6, addr)
            self.endpoints.append(f"{host}:{port}" if len(addr) == 4 else f"[{host}]:{port}")
        return got

    def _path(self, segments: tuple[str, ...]) -> int:
        # A segment holding '/' would read back as other segments: such a
        # path is kept apart (as its segments' repr), and mapped when written.
        key = "/" + "/".join(segments)
        if segments and key.count("/") != len(segments):
            key = repr(segments)
        got = self._path_ids.get(key)
        if got is None:
            got = self._path_ids[key] = len(self.paths)
            self.paths.append(key)
        return got


_SHB_LE = b"\x4d\x3c\x2b\x1a"            # the byte-order magic 0x1A2B3C4D written little-endian
#: dpkt's class of a packet block by (enhanced?, little-endian?).
_PACKET_BLOCKS = {(True, True): dpkt.pcapng.EnhancedPacketBlockLE, (True, False): dpkt.pcapng.EnhancedPacketBlock,
                  (False, True): dpkt.pcapng.PacketBlockLE, (False, False): dpkt.pcapng.PacketBlock}


def _pcapng_packets(guard: _Guarded, linktypes: list[int]) -> Iterator[tuple[float, bytes, int]]:
    """(time, bytes, interface) of each packet of a pcapng file. Every block is
    decoded by dpkt's block classes; the walk over them is here because
    ``dpkt.pcapng.Reader`` applies its first interface's link type and clock
    to every packet. ``linktypes`` gets each interface's link type as it is
    described (the interface numbers of later sections follow on)."""
    ng = dpkt.pcapng
    le, base = True, 0
    clocks: list[tuple[float, int]] = []        # (ticks per second, offset in s) per interface
    while True:
        head = guard.read(8)
        if len(head) < 8:
            return
        if head[:4] == b"\x0a\x0d\x0d\x0a":       # a section header: its byte order follows
            bom = guard.read(4)
            le, head = bom == _SHB_LE, head + bom
            base = len(linktypes)
        btype, blen = struct.unpack("<II" if le else ">II", head[:8])
        if blen < 12 or blen % 4:
            raise dpkt.UnpackError(f"block length {blen}")
        buf = head + guard.read(blen - len(head))
        if btype == ng.PCAPNG_BT_SHB:
            (ng.SectionHeaderBlockLE if le else ng.SectionHeaderBlock)(buf)
            clocks = []
        elif btype == ng.PCAPNG_BT_IDB:
            idb = (ng.InterfaceDescriptionBlockLE if le else ng.InterfaceDescriptionBlock)(buf)
            linktypes.append(int(idb.linktype))
            clocks.append(_clock(idb, le))
        elif btype in (ng.PCAPNG_BT_EPB, ng.PCAPNG_BT_PB):
            blk = _PACKET_BLOCKS[btype == ng.PCAPNG_BT_EPB, le](buf)
            if blk.iface_id >= len(clocks):
                raise dpkt.UnpackError(f"interface {blk.iface_id} not described")
            per_s, offset = clocks[blk.iface_id]
            yield offset + ((blk.ts_high << 32) | blk.ts_low) / per_s, blk.pkt_data, base + blk.iface_id


def _clock(idb: Any, le: bool) -> tuple[float, int]:
    """An interface's time resolution (ticks per second) and offset (s), as dpkt reads them."""
    per_s, offset = 1e6, 0
    for opt in idb.opts:
        if opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL:
            v = struct.unpack("b", opt.data)[0]
            per_s = float((2 if v & 0x80 else 10) ** (v & 0x7F))
        elif opt.code == dpkt.pcapng.PCAPNG_OPT_IF_TSOFFSET:
            offset = struct.unpack("<q" if le else ">q", opt.data)[0]
    return per_s, offset


def _link_decoder(linktype: int, path: Path) -> Callable[[bytes], Any]:
    """The function that takes a record's bytes to its IP packet (dpkt)."""
    kind = LINKTYPES.get(linktype)
    if kind is None:
        raise UserError(f"link type {linktype} is not read (Ethernet 1, Linux cooked SLL 113 and SLL2 276, "
                        "raw IP 101/228/229)", shown(path), field="linktype")
    if kind == "ethernet":
        return lambda b: dpkt.ethernet.Ethernet(b).data
    if kind == "linux-sll":
        return lambda b: dpkt.sll.SLL(b).data
    if kind == "linux-sll2":
        return lambda b: dpkt.sll2.SLL2(b).data
    return lambda b: dpkt.ip6.IP6(b) if b[:1] and b[0] >> 4 == 6 else dpkt.ip.IP(b)


def _udp_of(ip: Any) -> tuple[Any, str]:
    """(the UDP datagram, "") or (None, why it is skipped)."""
    if isinstance(ip, dpkt.ip.IP):
        if ip.mf or ip.offset:
            return None, "fragment"
        if ip.p != 17:
            return None, "not_udp"
    elif isinstance(ip, dpkt.ip6.IP6):
        if _IP_FRAGMENT in ip.extension_hdrs:
            return None, "fragment"
        if ip.p != 17:
            return None, "not_udp"
    else:
        return None, "not_udp"
    udp = ip.data
    if not isinstance(udp, dpkt.udp.UDP) or udp.ulen < 8:
        return None, "malformed"
    have = len(udp.data) + 8
    if udp.ulen > have:
        return None, "truncated"    # snap length shorter than the packet
    if udp.ulen < have:
        udp.data = udp.data[:udp.ulen - 8]
    return udp, ""


def _coap_of(data: bytes) -> tuple[Any, str]:
    """(the decoded CoAP message, "") or (None, why it is skipped). Version
    other than 1 (or under 4 bytes) is not CoAP; a version-1 header whose
    rest does not decode (RFC 7252 section 3) is a malformed CoAP message."""
    if len(data) < 4 or data[0] >> 6 != 1:
        return None, "not_coap"
    tkl = data[0] & 0x0F
    if tkl > 8 or len(data) < 4 + tkl:      # reserved token lengths; aiocoap does not check them
        return None, "malformed_coap"
    try:
        return Message.decode(data), ""
    except (UnparsableMessage, ValueError, IndexError, struct.error):
        return None, "malformed_coap"


def read_capture(path: str | os.PathLike[str], max_packets: int | None = None) -> tuple[CaptureReader, Messages]:
    """Every CoAP message of the capture at ``path`` (of its first
    ``max_packets`` records), chunks concatenated, and its reader."""
    reader = CaptureReader(Path(path), max_packets)
    return reader, Messages.concat(list(reader.chunks()))
