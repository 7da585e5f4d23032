"""Fixtures for the wotbench-ge tests: the binaries (built incrementally)
and wotbench-device processes on free loopback ports, stopped after each
test. Plain helpers live in gehelpers.py."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gehelpers import DEVICE, FUZZERS, GE, GE_ASAN, free_port, make


@pytest.fixture(scope="session")
def ge_bin() -> Path:
    make([GE])
    return GE


@pytest.fixture(scope="session")
def ge_asan_bin() -> Path:
    make([GE_ASAN])
    return GE_ASAN


@pytest.fixture(scope="session")
def device_bin() -> Path:
    make([DEVICE])
    return DEVICE


@pytest.fixture(scope="session")
def ge_fuzzers() -> list[Path]:
    make(FUZZERS)
    return FUZZERS


@dataclass
class Device:
    """One wotbench-device on 127.0.0.1:port serving the given resources."""

    binary: Path
    resources: Path
    port: int = 0
    args: Sequence[str] = ()
    host: str = "127.0.0.1"
    proc: subprocess.Popen[str] | None = None

    def start(self) -> Device:
        self.port = self.port or free_port(self.host)
        listen = f"[{self.host}]" if ":" in self.host else self.host
        cmd = [str(self.binary), "--listen", f"{listen}:{self.port}",
               "--resources", str(self.resources), *self.args]
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        assert self.proc.stderr is not None
        first = self.proc.stderr.readline()  # printed once the socket is bound
        if " resources on " not in first:
            self.kill()
            raise AssertionError(f"device did not start: {first}")
        return self

    def uri(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"coap://{host}:{self.port}{path}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.communicate()


@pytest.fixture
def make_device(device_bin: Path, tmp_path: Path) -> Iterator[Callable[..., Device]]:
    """make_device({path: service_us}, *args, host=...) -> started Device."""
    started: list[Device] = []

    def factory(resources: dict[str, int], *args: str, host: str = "127.0.0.1") -> Device:
        res = tmp_path / f"res{len(started)}.csv"
        res.write_text("path,service_us\n"
                       + "".join(f"{p},{s}\n" for p, s in resources.items()))
        dev = Device(device_bin, res, args=args, host=host)
        started.append(dev)
        return dev.start()

    yield factory
    for dev in started:
        dev.kill()
