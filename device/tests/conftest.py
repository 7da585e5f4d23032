"""Fixtures for the wotbench-device tests: the binaries (built once), a
device on a free loopback port (stopped after the test), raw CoAP/UDP."""

from __future__ import annotations

import os
import re
import signal
import socket
import struct
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiocoap import Message

from wotbench.tests.building import build

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "bin" / "wotbench-device"
ASAN_BIN = ROOT / "build" / "asan" / "wotbench-device"
FUZZERS = [ROOT / "build" / "fuzz" / n
           for n in ("fuzz-device-resources", "fuzz-device-request", "fuzz-device-cpulist")]

SERVICE_TIME_OPTION = 65000


def _make(targets: Sequence[Path]) -> None:
    """Builds the device's own targets incrementally (wotbench.tests.building)."""
    build(ROOT, targets)


@pytest.fixture(scope="session")
def device_bins() -> dict[str, Path]:
    _make([BIN, ASAN_BIN])
    return {"release": BIN, "asan": ASAN_BIN}


@pytest.fixture(scope="session")
def bench_bins(device_bins: dict[str, Path]) -> dict[str, Path]:
    """The benchmark's load tools, built once: devload, devrate."""
    tools = {n: ROOT / "build" / "bin" / n for n in ("devload", "devrate")}
    _make(list(tools.values()))
    return tools


@pytest.fixture(scope="session")
def device_fuzzers() -> list[Path]:
    _make(FUZZERS)
    return FUZZERS


def free_port(family: int = socket.AF_INET) -> int:
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_resources(path: Path, rows: Sequence[tuple[object, ...]], payload_column: bool = True,
                    header: str | None = None) -> Path:
    lines = [header or ("path,service_us,payload_bytes" if payload_column else "path,service_us")]
    for row in rows:
        lines.append(",".join("" if v is None else str(v) for v in row))
    path.write_text("\n".join(lines) + "\n")
    return path


COUNTS = re.compile(r"^wotbench-device:((?: \w+=\d+)+)$", re.M)


@dataclass
class Device:
    binary: Path
    resources: Path
    host: str = "127.0.0.1"
    port: int = 0
    args: Sequence[str] = ()
    cpu: int | None = None
    proc: subprocess.Popen[str] | None = None
    started: str = ""  # the start-up line
    stderr: str = ""
    counts: dict[str, int] = field(default_factory=dict)

    def start(self) -> Device:
        if not self.port:
            self.port = free_port(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        listen = f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
        cmd = [str(self.binary), "--listen", listen, "--resources", str(self.resources), *self.args]
        if self.cpu is not None:
            cmd = ["taskset", "-c", str(self.cpu), *cmd]
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()  # printed once the socket is bound
        if " resources on " not in first:
            rest = self.proc.stderr.read()
            self.proc.wait(5)
            raise AssertionError(f"device did not start: {first}{rest}")
        self.started = first.rstrip("\n")
        return self

    @property
    def addr(self) -> tuple[str, int]:
        return (self.host, self.port)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5.0) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
            raise
        self.stderr = err
        m = COUNTS.search(err)
        if m:
            self.counts = {k: int(v) for k, v in (p.split("=") for p in m.group(1).split())}
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def make_device(device_bins: dict[str, Path], tmp_path: Path) -> Iterator[Callable[..., Device]]:
    """make_device(rows, *args, binary='release', host=..., cpu=..., header=...) -> started
    Device (header: the resource CSV's header line, default path,service_us,payload_bytes)."""
    started: list[Device] = []

    def factory(rows: Sequence[tuple[object, ...]], *args: str, binary: str = "release",
                host: str = "127.0.0.1", cpu: int | None = None, header: str | None = None) -> Device:
        res = write_resources(tmp_path / f"res{len(started)}.csv", rows, header=header)
        dev = Device(device_bins[binary], res, host=host, args=args, cpu=cpu)
        started.append(dev)
        return dev.start()

    yield factory
    for dev in started:
        dev.kill()


def _encode(mtype: int, code: int, mid: int, token: bytes = b"",
           path: Sequence[str] = (), options: Sequence[tuple[int, bytes]] = (),
           payload: bytes = b"") -> bytes:
    """A CoAP/UDP message, built by hand so tests control MID and type."""
    opts = sorted([(11, p.encode()) for p in path] + list(options), key=lambda o: o[0])
    out = bytearray([0x40 | mtype << 4 | len(token), code]) + struct.pack(">H", mid) + token
    last = 0

    def nibble(v: int) -> tuple[int, bytes]:
        if v < 13:
            return v, b""
        if v < 269:
            return 13, bytes([v - 13])
        return 14, struct.pack(">H", v - 269)

    for num, val in opts:
        dn, de = nibble(num - last)
        ln, le = nibble(len(val))
        out += bytes([dn << 4 | ln]) + de + le + val
        last = num
    if payload:
        out += b"\xff" + payload
    return bytes(out)


class RawClient:
    """A UDP socket speaking raw CoAP, decoding replies with aiocoap."""

    def __init__(self, addr: tuple[str, int]):
        fam = socket.AF_INET6 if ":" in addr[0] else socket.AF_INET
        self.addr = addr
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)

    def send(self, raw: bytes) -> None:
        self.sock.sendto(raw, self.addr)

    def recv_raw(self, timeout: float = 2.0) -> bytes | None:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(4096)
        except TimeoutError:
            return None

    def recv(self, timeout: float = 2.0) -> Message | None:
        raw = self.recv_raw(timeout)
        return None if raw is None else Message.decode(raw)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_client() -> Iterator[Callable[[tuple[str, int]], RawClient]]:
    clients: list[RawClient] = []

    def factory(addr: tuple[str, int]) -> RawClient:
        c = RawClient(addr)
        clients.append(c)
        return c

    yield factory
    for c in clients:
        c.close()


def _service_option(msg: Message) -> int | None:
    """Option 65000 as an integer (aiocoap keeps unknown options opaque)."""
    for opt in msg.opt.option_list():
        if int(opt.number) == SERVICE_TIME_OPTION:
            return int.from_bytes(opt.encode(), "big")
    return None


class CoapWire:
    """Raw CoAP helpers for tests (pytest's importlib mode cannot import
    conftest, so they travel as the `wire` fixture)."""

    CON, NON, ACK, RST = 0, 1, 2, 3
    GET, POST, PUT, DELETE, FETCH = 1, 2, 3, 4, 5
    encode = staticmethod(_encode)
    service_option = staticmethod(_service_option)


@pytest.fixture(scope="session")
def wire() -> type[CoapWire]:
    return CoapWire
