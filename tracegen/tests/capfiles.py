"""Captures for the tests, built with dpkt's writers: CoAP messages (header,
token, Uri-Path options, payload) in UDP in IPv4 or IPv6 in Ethernet, Linux
cooked SLL or SLL2, or raw IP, written as pcap or pcapng."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

import dpkt

CON, NON, ACK, RST = 0, 1, 2, 3
GET, POST, PUT, DELETE = 1, 2, 3, 4
CONTENT, CHANGED = 69, 68
LINKTYPE = {"ethernet": 1, "sll": 113, "sll2": 276, "raw": 101}


def coap(mtype: int, code: int, mid: int, token: bytes = b"", path: tuple[str, ...] = (),
         payload: bytes = b"", options: tuple[tuple[int, bytes], ...] = ()) -> bytes:
    """A CoAP message (RFC 7252 section 3); options in ascending number, each shorter than 13 bytes."""
    out = bytes([0x40 | mtype << 4 | len(token), code]) + mid.to_bytes(2, "big") + token
    prev = 0
    for number, value in sorted([(11, s.encode()) for s in path] + list(options), key=lambda o: o[0]):
        assert number - prev < 13 and len(value) < 13
        out += bytes([(number - prev) << 4 | len(value)]) + value
        prev = number
    return out + (b"\xff" + payload if payload else b"")


@dataclass(frozen=True)
class Pkt:
    """One packet: a UDP datagram between two endpoints at a time (s)."""

    t: float
    src: str
    sport: int
    dst: str
    dport: int
    data: bytes
    proto: int = 17
    fragment: bool = False
    cut: int = 0                # bytes removed from the end (caplen < len)


def _ip(p: Pkt) -> bytes:
    udp = dpkt.udp.UDP(sport=p.sport, dport=p.dport, data=p.data)
    udp.ulen = 8 + len(p.data)
    body = bytes(udp) if p.proto == 17 else p.data
    if ":" in p.dst:
        nxt = p.proto
        if p.fragment:          # the first fragment: a Fragment header before the UDP header
            body = bytes(dpkt.ip6.IP6FragmentHeader(nxt=p.proto, frag_off_resv_m=1, id=5)) + body
            nxt = 44
        ip6 = dpkt.ip6.IP6(src=socket.inet_pton(socket.AF_INET6, p.src), dst=socket.inet_pton(socket.AF_INET6, p.dst),
                           nxt=nxt, hlim=64, plen=len(body), data=body)
        return bytes(ip6)
    ip = dpkt.ip.IP(src=socket.inet_aton(p.src), dst=socket.inet_aton(p.dst), p=p.proto, data=body)
    ip.len = 20 + len(body)
    if p.fragment:
        ip.mf = 1
    return bytes(ip)


def frame(p: Pkt, link: str) -> bytes:
    ip = _ip(p)
    ethtype = 0x86DD if ":" in p.dst else 0x0800
    if link == "ethernet":
        raw = bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=ethtype, data=ip))
    elif link == "sll":
        raw = bytes(dpkt.sll.SLL(type=0, hrd=1, hlen=6, hdr=b"\x02" * 8, ethtype=ethtype, data=ip))
    elif link == "sll2":
        raw = bytes(dpkt.sll2.SLL2(ethtype=ethtype, intindex=1, hrd=1, type=0, hlen=6, hdr=b"\x02" * 8, data=ip))
    else:
        raw = ip
    return raw[:len(raw) - p.cut]


def write(path: Path, pkts: list[Pkt], *, link: str = "ethernet", fmt: str = "pcap", linktype: int | None = None,
          extra: bytes = b"") -> Path:
    """Writes the capture; ``extra`` bytes are appended as they are (a cut record)."""
    lt = LINKTYPE[link] if linktype is None else linktype
    with open(path, "wb") as fh:
        w = dpkt.pcap.Writer(fh, linktype=lt) if fmt == "pcap" else dpkt.pcapng.Writer(fh, linktype=lt)
        for p in pkts:
            w.writepkt(frame(p, link), ts=p.t)
        fh.write(extra)
    return path


C, S1, S2 = "10.0.0.1", "10.0.0.2", "10.0.0.3"
T0 = 1_700_000_000.0


def mixed() -> list[Pkt]:
    """The test capture: CON with piggybacked ACK, NON with separate NON response
    on a non-default port, a retransmission, an unanswered request, an
    unmatched response, and five packets that are not CoAP."""
    return [
        Pkt(T0, C, 40000, S1, 5683, coap(CON, GET, 1, b"\x01", ("sensors", "temp"))),
        Pkt(T0 + 0.002, S1, 5683, C, 40000, coap(ACK, CONTENT, 1, b"\x01", payload=b"21.5")),
        Pkt(T0 + 0.010, C, 40001, S2, 7000, coap(NON, POST, 2, b"\x02", ("act",), payload=b"abc")),
        Pkt(T0 + 0.015, S2, 7000, C, 40001, coap(NON, CHANGED, 77, b"\x02")),
        Pkt(T0 + 0.020, C, 40000, S1, 5683, coap(CON, GET, 3, b"\x03", ("sensors", "temp"))),
        Pkt(T0 + 0.022, C, 40000, S1, 5683, coap(CON, GET, 3, b"\x03", ("sensors", "temp"))),
        Pkt(T0 + 0.028, S1, 5683, C, 40000, coap(ACK, CONTENT, 3, b"\x03", payload=b"21.6")),
        Pkt(T0 + 0.029, C, 5353, S1, 53, b"\x00\x01\x02\x03\x04\x05"),                   # not CoAP
        Pkt(T0 + 0.029, C, 40000, S1, 5683, bytes([0x49, 1, 0, 5]) + b"\x00" * 9),     # tkl 9: malformed
        Pkt(T0 + 0.029, C, 40000, S1, 5683, coap(CON, GET, 9, b"\x09", ("x",)), fragment=True),
        Pkt(T0 + 0.029, C, 40000, S1, 80, b"\x00" * 20, proto=6),                       # TCP
        Pkt(T0 + 0.029, C, 40000, S1, 5683, coap(CON, GET, 8, b"\x08", ("y",)) + b"\xff" + b"z" * 40, cut=30),
        Pkt(T0 + 0.030, C, 40000, S1, 5683, coap(CON, GET, 4, b"\x04", ("sensors", "hum"))),
        Pkt(T0 + 0.031, S1, 5683, C, 40000, coap(ACK, CONTENT, 99, b"\x63")),         # no request
    ]


def write_interfaces(path: Path, pkts: list[tuple[int, Pkt]], links: list[str], ns: tuple[int, ...] = ()) -> Path:
    """A pcapng capture of several interfaces (``links[i]`` the link of interface i;
    those in ``ns`` stamp in nanoseconds): each packet on its interface."""
    ng = dpkt.pcapng
    idbs = [ng.InterfaceDescriptionBlockLE(snaplen=65535, linktype=LINKTYPE[link],
                                           opts=[ng.PcapngOptionLE(code=ng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"),
                                                 ng.PcapngOptionLE(code=ng.PCAPNG_OPT_ENDOFOPT)] if i in ns else [])
            for i, link in enumerate(links)]
    with open(path, "wb") as fh:
        w = ng.Writer(fh, idb=idbs)
        for iface, p in pkts:
            data = frame(p, links[iface])
            ticks = round(p.t * (1e9 if iface in ns else 1e6))
            w.writepkt(ng.EnhancedPacketBlockLE(iface_id=iface, ts_high=ticks >> 32, ts_low=ticks & 0xFFFFFFFF,
                                                caplen=len(data), pkt_len=len(data), pkt_data=data))
    return path
