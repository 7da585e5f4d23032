"""Unexpected datagrams at the GE's socket are counted by kind and
ignored. A scripted UDP peer plays two devices: around the genuine
response it sends every kind of garbage the GE must survive."""

from __future__ import annotations

import os
import select
import socket
import struct
import threading
from collections.abc import Callable

import pytest
from gehelpers import run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial


def parse(req: bytes) -> tuple[int, int, bytes]:
    tkl = req[0] & 0x0F
    return (req[0] >> 4) & 3, struct.unpack(">H", req[2:4])[0], req[4:4 + tkl]


def response(req: bytes, mid: int | None = None, token: bytes | None = None) -> bytes:
    rtype, rmid, tok = parse(req)
    tok = tok if token is None else token
    if rtype == 0:  # CON -> piggybacked ACK with the same MID
        return bytes([0x60 | len(tok), 0x45]) + struct.pack(">H", rmid if mid is None else mid) + tok
    return bytes([0x50 | len(tok), 0x45]) + struct.pack(">H", (rmid + 7) & 0xFFFF) + tok


class FakeDevices:
    """Sockets A and B are two devices; C is a stranger. `script(sock_name,
    request, send)` decides what to send back for each request."""

    def __init__(self, script: Callable[[str, bytes, Callable[..., None]], None]) -> None:
        self.socks = {}
        for name in "ABC":
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            self.socks[name] = s
        self.script = script
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def port(self, name: str) -> int:
        return int(self.socks[name].getsockname()[1])

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                ready, _, _ = select.select([self.socks["A"], self.socks["B"]], [], [], 0.05)
                for s in ready:
                    req, src = s.recvfrom(4096)
                    name = "A" if s is self.socks["A"] else "B"

                    def send(data: bytes, via: str = name, to=src) -> None:
                        self.socks[via].sendto(data, to)

                    self.script(name, req, send)
        except BaseException as exc:  # surfaced by the test
            self.errors.append(exc)

    def __enter__(self) -> FakeDevices:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(5)
        for s in self.socks.values():
            s.close()


def test_garbage_counted_by_kind_not_fatal(ge_bin, tmp_path):
    seen = {"A": 0}
    late: list[threading.Timer] = []

    def script(name: str, req: bytes, send) -> None:
        _, mid, tok = parse(req)
        if name == "B":  # answers after the GE gave up
            t = threading.Timer(0.4, send, args=(response(req),))
            late.append(t)
            t.start()
            return
        seen["A"] += 1
        if seen["A"] == 1:
            send(b"\x40")                                    # truncated: < 4 bytes
            send(b"\x50" + os.urandom(3000))                 # truncated: larger than the buffer
            send(b"\x00\x45\x00\x01")                        # unparseable: version 0
            send(bytes([0x58, 0x45, 0, 1]) + b"\x01\x02")    # unparseable: token cut short
            send(response(req, token=b"\x00" * 8))           # unknown token
            send(bytes([0x70, 0, *struct.pack(">H", (mid + 12345) & 0xFFFF)]))  # RST, unknown MID
            send(bytes([0x60, 0, *struct.pack(">H", (mid + 1) & 0xFFFF)]))      # empty ACK, unknown MID
            send(bytes([0x40, 0x01, 0, 9]))                  # a request (ping-like) to the GE
            send(response(req), via="C")                     # right token, stranger's address
            send(response(req), via="B")                     # right token, another device
            send(response(req))                              # the genuine response
            send(response(req))                              # duplicate
        else:
            send(response(req))

    with FakeDevices(script) as fake:
        a, b = fake.port("A"), fake.port("B")
        trace = write_trace(tmp_path / "t.csv", [
            (0, 0, "GET", f"coap://127.0.0.1:{a}/x"),
            (1, 100_000, "GET", f"coap://127.0.0.1:{b}/y"),
            (0, 900_000, "GET", f"coap://127.0.0.1:{a}/z"),
        ])
        run = run_ge(ge_bin, trace, "--type", "non", "--timeout-ms", "150", timeout=30)
    for t in late:
        t.cancel()
    assert not fake.errors, fake.errors
    assert run.returncode == 0, run.stderr
    assert list(run.rows.status) == ["ok", "timeout", "ok"]
    g = run.summary["garbage"]
    assert g == {"total": 12, "truncated": 2, "unparseable": 2, "unknown_source": 1,
                 "unknown_token": 1, "wrong_source": 1, "unmatched_empty_ack": 1,
                 "unmatched_rst": 1, "unexpected_message": 1, "late_response": 1,
                 "duplicate_response": 1}, g


def test_rst_ends_request_as_error_and_con_response_is_acked(ge_bin, tmp_path):
    acks: list[bytes] = []
    sent_sep = {"done": False}

    def script(name: str, req: bytes, send) -> None:
        rtype, mid, tok = parse(req)
        if len(req) == 4:  # our empty ACK for the separate response
            acks.append(req)
            return
        if req[1] == 0x01 and req.endswith(b"rst"):   # GET .../rst -> reset
            send(bytes([0x70, 0, *struct.pack(">H", mid)]))
        elif not sent_sep["done"]:  # empty ACK, then a CON separate response
            sent_sep["done"] = True
            send(bytes([0x60, 0, *struct.pack(">H", mid)]))
            send(bytes([0x40 | len(tok), 0x45, 0x77, 0x77]) + tok)

    with FakeDevices(script) as fake:
        a = fake.port("A")
        trace = write_trace(tmp_path / "t.csv", [
            (0, 0, "GET", f"coap://127.0.0.1:{a}/rst"),
            (0, 1000, "GET", f"coap://127.0.0.1:{a}/sep"),
        ])
        run = run_ge(ge_bin, trace, "--ack-timeout-ms", "300", "--timeout-ms", "2000", timeout=30)
        fake.stop.wait(0.3)
    assert not fake.errors, fake.errors
    assert run.returncode == 0, run.stderr
    assert list(run.rows.status) == ["error", "ok"]
    assert run.rows.code.isna()[0] and run.rows.code[1] == "2.05"
    s = run.summary
    assert s["rsts"] == 1 and s["empty_acks"] == 1 and s["acks_sent"] == 1
    assert acks == [bytes([0x60, 0, 0x77, 0x77])]
    assert s["garbage"]["total"] == 0
