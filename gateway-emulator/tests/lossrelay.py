"""A UDP relay with scripted, deterministic loss between one CoAP client and
one device, and the wire record both sides are measured by (test_cc_loss.py,
bench/crosscheck_cc.py). Any client: a request is known by its Message ID,
numbered in the order its first transmission arrives (the index in a trace
sent in order; the GE's token is not needed, so Californium's random tokens
do as well). The script drops the first `requests[i]` transmissions of
request i before the device, and the first `responses[i]` answers the device
sends to it (piggybacked, same MID) before the client; of the answers it
lets through, the first `delays[i]` are held back until the client sends
request i again, and then passed on just before that copy (a late answer:
the client retransmits, then gets both). `Ledger` is the
script and the record without sockets or a clock; `Relay` runs it on a
thread between two loopback sockets."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

CODE_EMPTY = 0
TYPE_ACK = 2


@dataclass(frozen=True)
class LossScript:
    """request index -> how many of its first transmissions (requests) or
    first answers (responses) are dropped."""

    requests: Mapping[int, int]
    responses: Mapping[int, int] = field(default_factory=dict)
    delays: Mapping[int, int] = field(default_factory=dict)


def header(data: bytes) -> tuple[int, int, int] | None:
    """(type, code, MID) of a CoAP datagram (RFC 7252 §3), None when it is
    too short or not version 1."""
    if len(data) < 4 or data[0] >> 6 != 1:
        return None
    return (data[0] >> 4) & 3, data[1], int.from_bytes(data[2:4], "big")


@dataclass
class Ledger:
    """What the relay decides and records, datagram by datagram."""

    script: LossScript
    order: dict[int, int] = field(default_factory=dict)        # MID -> request index
    seen: dict[int, list[int]] = field(default_factory=dict)   # index -> each transmission's arrival (ns)
    answers: dict[int, list[int]] = field(default_factory=dict)  # index -> each answer's arrival (ns)
    delivered: dict[int, int] = field(default_factory=dict)    # index -> transmissions passed to the device
    held: dict[int, list[bytes]] = field(default_factory=dict)  # index -> answers held back (delays)

    def from_client(self, data: bytes, now: int) -> bool:
        """Records a client datagram; True when it goes on to the device.
        Only requests (code class 0, not empty) are counted and dropped."""
        h = header(data)
        if h is None or h[1] == CODE_EMPTY or h[1] >> 5 != 0:
            return True
        idx = self.order.setdefault(h[2], len(self.order))
        times = self.seen.setdefault(idx, [])
        times.append(now)
        if len(times) <= self.script.requests.get(idx, 0):
            return False
        self.delivered[idx] = self.delivered.get(idx, 0) + 1
        return True

    def from_device(self, data: bytes, now: int) -> bool:
        """Records a device datagram; True when it goes on to the client.
        Only ACKs carrying a known request's MID are counted and dropped."""
        h = header(data)
        if h is None or h[0] != TYPE_ACK or h[2] not in self.order:
            return True
        idx = self.order[h[2]]
        times = self.answers.setdefault(idx, [])
        times.append(now)
        dropped = self.script.responses.get(idx, 0)
        if dropped < len(times) <= dropped + self.script.delays.get(idx, 0):
            self.held.setdefault(idx, []).append(data)
            return False
        return len(times) > dropped

    def release(self, data: bytes) -> list[bytes]:
        """The answers held back for the request a client datagram sends
        again (to go to the client before it), else []."""
        h = header(data)
        if h is None or h[1] == CODE_EMPTY or h[1] >> 5 != 0 or h[2] not in self.order:
            return []
        return self.held.pop(self.order[h[2]], [])


class UdpRelay:
    """client -> 127.0.0.1:port -> device at 127.0.0.1:device_port, and back,
    on a thread; what crosses is decided by a subclass's `from_client` and
    `from_device` (stamps: time.monotonic_ns() at the relay's receipt).
    A subclass sets its own state before calling this constructor, which
    starts the thread."""

    def __init__(self, device_port: int) -> None:
        self.device_port = device_port
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        self.port: int = self.front.getsockname()[1]
        self.client: tuple[str, int] | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def to_device(self, data: bytes) -> None:
        self.back.sendto(data, ("127.0.0.1", self.device_port))

    def from_client(self, data: bytes, addr: tuple[str, int], now: int) -> None:
        raise NotImplementedError

    def from_device(self, data: bytes, now: int) -> None:
        raise NotImplementedError

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.front, selectors.EVENT_READ)
        sel.register(self.back, selectors.EVENT_READ)
        while not self.stop.is_set():
            for key, _ in sel.select(0.05):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                data, addr = sock.recvfrom(4096)
                now = time.monotonic_ns()
                if sock is self.front:
                    self.client = addr
                    self.from_client(data, addr, now)
                elif self.client:
                    self.from_device(data, now)
        sel.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)
        self.front.close()
        self.back.close()


class Relay(UdpRelay):
    """The scripted-loss relay: the Ledger decides, under `script` (a
    LossScript, or a plain {index: drops} of requests)."""

    def __init__(self, device_port: int, script: LossScript | Mapping[int, int]) -> None:
        if not isinstance(script, LossScript):
            script = LossScript(dict(script))
        self.ledger = Ledger(script)
        super().__init__(device_port)

    @property
    def seen(self) -> dict[int, list[int]]:
        return self.ledger.seen

    def from_client(self, data: bytes, addr: tuple[str, int], now: int) -> None:
        for late in self.ledger.release(data):
            self.front.sendto(late, addr)
        if self.ledger.from_client(data, now):
            self.to_device(data)

    def from_device(self, data: bytes, now: int) -> None:
        if self.client and self.ledger.from_device(data, now):
            self.front.sendto(data, self.client)
