"""Readiness and reachability probes: CoAP ``GET /.well-known/core`` sent
from the host straight to the containers' bridge addresses; and a gateway
under test's readiness check (a CoAP ping, a TCP connect or an HTTP answer).

One UDP socket serves every target, so 1,000 devices are probed in one
pass instead of 1,000 client processes. Only three facts of a reply are
read (RFC 7252 section 3): CoAP version 1 (byte 0), code 2.05 (byte 1) and
our message id (bytes 2-3); a reply counts only from the address its
message id was sent to (ids wrap after 65,536 probes).
"""

from __future__ import annotations

import itertools
import selectors
import socket
import struct
import time
from collections.abc import Callable, Iterable

_WELL_KNOWN_CORE = bytes([0xBB]) + b".well-known" + bytes([0x04]) + b"core"
_CONTENT = 0x45                        # 2.05
#: Receive buffer of the probe socket: room for a round of 1,000 replies.
_RCVBUF = 1 << 21


def _get(mid: int, token: int) -> bytes:
    # Version 1, CON, token length 2; code 0.01 GET.
    return struct.pack("!BBHH", 0x42, 0x01, mid, token) + _WELL_KNOWN_CORE


def _get_path(mid: int, token: int, path: str) -> bytes:
    """A CON GET of ``path`` (Uri-Path options, each segment under 13 bytes)."""
    out = bytearray(struct.pack("!BBHH", 0x42, 0x01, mid, token))
    delta = 11                                  # Uri-Path
    for seg in path.strip("/").split("/"):
        b = seg.encode()
        if len(b) >= 13:
            raise ValueError(f"path segment too long for this probe: {seg!r}")
        out += bytes([(delta << 4) | len(b)]) + b
        delta = 0
    return bytes(out)


#: Bytes of an answer's frame around its CoAP message: Ethernet 14, IPv4 20, UDP 8.
FRAME_OVERHEAD = 14 + 20 + 8


def delivered_rate(target: tuple[str, int], path: str, requests: int, interval_s: float,
                   linger_s: float = 2.0) -> tuple[int, float]:
    """Sends ``requests`` GETs of ``path`` to one target every
    ``interval_s`` and measures what comes back: (answers, bits per second
    of their Ethernet frames between the first answer and the last), the
    rate a shaped link achieved."""
    frames: list[tuple[float, int]] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
        sock.setblocking(False)
        start = time.monotonic()
        sent = 0
        end = None
        while True:
            now = time.monotonic()
            if sent < requests and now >= start + sent * interval_s:
                sock.sendto(_get_path(sent & 0xFFFF, sent & 0xFFFF, path), target)
                sent += 1
                if sent == requests:
                    end = now + linger_s
            if end is not None and now >= end:
                break
            try:
                data = sock.recv(2048)
            except (BlockingIOError, ConnectionRefusedError):
                time.sleep(0.0002)
                continue
            if _answer_mid(data) is not None:
                frames.append((time.monotonic(), len(data) + FRAME_OVERHEAD))
    if len(frames) < 2:
        return len(frames), 0.0
    span = frames[-1][0] - frames[0][0]
    return len(frames), sum(b for _, b in frames[1:]) * 8 / span if span > 0 else 0.0


def _answer_mid(data: bytes) -> int | None:
    if len(data) < 4 or data[0] >> 6 != 1 or data[1] != _CONTENT:
        return None
    mid: int = struct.unpack_from("!H", data, 2)[0]
    return mid


def _send_round(sock: socket.socket, pending: Iterable[tuple[str, int]], mids: Iterable[int],
                inflight: dict[int, tuple[str, int]]) -> None:
    """One GET to every pending target; one that does not fit the socket
    buffer (or drew an ICMP error) waits for the next round."""
    for t, mid in zip(pending, mids, strict=False):   # mids is endless
        inflight[mid] = t
        try:
            sock.sendto(_get(mid, mid), t)
        except (BlockingIOError, ConnectionRefusedError):
            pass


def wait_ready(targets: Iterable[tuple[str, int]], timeout_s: float,
               retry_s: float = 0.25) -> dict[tuple[str, int], float]:
    """Probes every target until each has answered once or ``timeout_s``
    passed; returns the targets that answered, each with the monotonic
    time its first answer arrived."""
    pending = dict.fromkeys(targets, 0)
    ready: dict[tuple[str, int], float] = {}
    mids = (m & 0xFFFF for m in itertools.count(1))
    inflight: dict[int, tuple[str, int]] = {}
    deadline = time.monotonic() + timeout_s
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock, \
            selectors.DefaultSelector() as sel:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _RCVBUF)
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ)
        next_round = 0.0
        while pending and time.monotonic() < deadline:
            now = time.monotonic()
            if now >= next_round:
                _send_round(sock, list(pending), mids, inflight)
                next_round = now + retry_s
            for _ in sel.select(max(0.0, min(next_round, deadline) - time.monotonic())):
                while True:
                    try:
                        data, addr = sock.recvfrom(2048)
                    except (BlockingIOError, ConnectionRefusedError):
                        break
                    mid = _answer_mid(data)
                    who = inflight.get(mid) if mid is not None else None
                    if who is not None and who == (addr[0], addr[1]) and who in pending:
                        del pending[who]
                        ready[who] = time.monotonic()
    return ready


def answered_fraction(target: tuple[str, int], requests: int, interval_s: float = 0.002,
                      linger_s: float = 1.0) -> float:
    """Sends ``requests`` GETs to one target, each once, and returns the
    fraction answered: the achieved end-to-end delivery under impairment."""
    got: set[int] = set()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(interval_s)
        for mid in range(1, requests + 1):
            sock.sendto(_get(mid, mid), target)
            _drain(sock, got)
        end = time.monotonic() + linger_s
        while time.monotonic() < end and len(got) < requests:
            _drain(sock, got)
    return len(got & set(range(1, requests + 1))) / requests


def _drain(sock: socket.socket, got: set[int]) -> None:
    while True:
        try:
            data = sock.recv(2048)
        except (TimeoutError, BlockingIOError, ConnectionRefusedError):
            return
        mid = _answer_mid(data)
        if mid is not None:
            got.add(mid)


# --- a gateway under test: a CoAP ping, a TCP connect or an HTTP answer ------

#: An empty CON message (a CoAP ping, RFC 7252 4.3): a CoAP endpoint answers RST.
_RST = 3


def coap_ping(target: tuple[str, int], timeout_s: float, mid: int = 0x5742) -> bool:
    """Whether ``target`` answers an empty CON with a RST (or an empty ACK) of its message id."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(target)
            sock.send(struct.pack("!BBH", 0x40, 0x00, mid))
            data = sock.recv(2048)
        except OSError:                 # refused (ICMP), timed out, unreachable
            return False
    return (len(data) >= 4 and data[0] >> 6 == 1 and (data[0] >> 4) & 3 in (2, _RST)
            and struct.unpack_from("!H", data, 2)[0] == mid)


def tcp_open(target: tuple[str, int], timeout_s: float) -> bool:
    """Whether ``target`` accepts a TCP connection."""
    try:
        with socket.create_connection(target, timeout=timeout_s):
            return True
    except OSError:
        return False


def http_answers(target: tuple[str, int], path: str, timeout_s: float) -> bool:
    """Whether ``target`` answers ``GET path`` with an HTTP status line (any status)."""
    request = f"GET {path} HTTP/1.1\r\nHost: {target[0]}:{target[1]}\r\nConnection: close\r\n\r\n".encode()
    try:
        with socket.create_connection(target, timeout=timeout_s) as sock:
            sock.sendall(request)
            head = sock.recv(16)
    except OSError:
        return False
    return head.startswith(b"HTTP/1.")


def probe_once(target: tuple[str, int], how: str, timeout_s: float) -> bool:
    """One readiness check: ``coap`` (a ping), ``tcp`` or ``http:/PATH``."""
    if how == "coap":
        return coap_ping(target, timeout_s)
    if how == "tcp":
        return tcp_open(target, timeout_s)
    if how.startswith("http:/"):
        return http_answers(target, how[len("http:"):], timeout_s)
    raise ValueError(f"unknown readiness check {how!r}")


def wait_service(target: tuple[str, int], how: str, timeout_s: float, alive: Callable[[], bool],
                 retry_s: float = 0.25) -> str | None:
    """Checks ``target`` until it is ready (None), its container is no longer
    ``alive``, or ``timeout_s`` passed (then why, in words)."""
    deadline = time.monotonic() + timeout_s
    tries = 0
    while True:
        tries += 1
        if probe_once(target, how, min(1.0, max(0.05, deadline - time.monotonic()))):
            return None
        if not alive():
            return f"its container stopped before it was ready ({tries} check(s) of {how})"
        if time.monotonic() + retry_s >= deadline:
            return f"no answer to {tries} check(s) of {how} on {target[0]}:{target[1]} in {timeout_s:g} s"
        time.sleep(retry_s)
