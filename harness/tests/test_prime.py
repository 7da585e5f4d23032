"""Priming ARP entries (harness/host/prime.py): CoAP pings from a socket made in
a process's network namespace, answered by a real wotbench-device on
loopback (RST), with a silent target and a deadline."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from wotbench.host import loopback
from wotbench.host import prime as _prime

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

DEVICE = Path(__file__).resolve().parents[2] / "build" / "bin" / "wotbench-device"


@pytest.fixture()
def device(tmp_path):
    if not DEVICE.exists():
        pytest.fail(f"{DEVICE} missing: make build")
    proc, port = loopback.start_device(DEVICE, tmp_path, cpu=0, threads=1, policy="other")
    yield port
    proc.terminate()
    proc.wait(timeout=10)


def test_socket_in_own_namespace_is_an_inet_udp_socket():
    if os.geteuid() != 0:
        pytest.skip("setns needs CAP_SYS_ADMIN")
    with _prime.socket_in_netns(os.getpid()) as s:
        assert s.family == socket.AF_INET and s.type == socket.SOCK_DGRAM


def test_socket_in_namespace_of_a_missing_process_is_an_oserror():
    with pytest.raises(OSError):
        _prime.socket_in_netns(2**22 + 12345)


def test_prime_counts_the_nodes_that_answered(device):
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)     # bound, never answers
    silent.bind(("127.0.0.1", 0))
    targets = [("127.0.0.1", device), silent.getsockname()]
    with silent, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        assert _prime.prime(s, targets, deadline=time.monotonic() + 30.0) == 1
        silent.setblocking(False)
        got = []
        while True:                       # the silent one got the ping and one retry, no more
            try:
                got.append(silent.recv(64))
            except BlockingIOError:
                break
        assert len(got) == 2 and all(d[:2] == b"\x40\x00" and len(d) == 4 for d in got)   # empty CONs: pings


def test_prime_stops_at_its_deadline(device):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        assert _prime.prime(s, [("127.0.0.1", device)], deadline=time.monotonic() - 1) == 0


def test_prime_from_without_a_pid_skips():
    done = _prime.prime_from(None, [("10.0.0.1", 5683)], time.monotonic() + 1)
    assert (done.answered, done.skipped) == (0, "the GE is not on this host")
    assert _prime.budget_s(0) == 0 and _prime.budget_s(1000) == pytest.approx(3.5)


def test_with_a_gateway_the_ges_prime_it_and_it_primes_the_devices():
    """The workload GEs send every request to the gateway under test: theirs
    is the gateway's entry; the gateway reaches the devices: it primes theirs."""
    from wotbench.base.formats import DEFAULT_COAP_PORT
    from wotbench.execution.phases._measure import prime_targets

    devices = ["10.0.0.2", "10.0.0.3"]
    direct = [(a, DEFAULT_COAP_PORT) for a in devices]
    assert prime_targets(devices, None) == (direct, [])
    assert prime_targets(devices, ("10.0.0.254", 1880)) == ([("10.0.0.254", 1880)], direct)
