"""wotbench-ge through real CoAP forward proxies to real wotbench-device
processes on loopback: `--gateway ADDR:PORT --north coap-uri|coap-scheme`
(RFC 7252 section 5.7.2: Proxy-Uri, or Proxy-Scheme with Uri-Host and
Uri-Port).

Two real proxies, each for what it does:
- libcoap 4.3.1's example server as a forward proxy (`coap-server-notls
  -P`, Debian's libcoap3-bin) takes both Proxy-Uri and Proxy-Scheme, but
  keeps one upstream session per client endpoint: every request from one
  GE socket goes to the first device that socket asked for (a second
  device's paths come back 4.04 from the first). Its several-device tests
  use `--north-sockets per-device` (each device its own GE socket, so its
  own client of the proxy), and show the misrouting without it.
- aiocoap's `aiocoap-proxy --forward` (PyPI, in the venv) routes every
  request by its own options, but takes Proxy-Scheme only (a Proxy-Uri is
  answered 5.01 "URI splitting not implemented"): the several-device
  tests, and a gateway's own error answer."""

from __future__ import annotations

import json
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from gehelpers import SAN_ENV, free_port, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

LIBCOAP = shutil.which("coap-server-notls")
AIOCOAP = Path(sys.executable).with_name("aiocoap-proxy")
needs_libcoap = pytest.mark.skipif(LIBCOAP is None,
                                   reason="coap-server-notls (Debian libcoap3-bin) not installed")
needs_aiocoap = pytest.mark.skipif(not AIOCOAP.exists(), reason="aiocoap-proxy not in the venv")

# Each device its own paths, so that a request a proxy delivered to the
# wrong device comes back 4.04 instead of passing unnoticed.
DEV_A = {"/a0": 0, "/a300": 300}
DEV_B = {"/b0": 0, "/b1000": 1000}
DEV_C = {"/c0": 0, "/c200": 200}
DEV_D = {"/d0": 0, "/d500": 500}
SERVICE = {**DEV_A, **DEV_B, **DEV_C, **DEV_D}
MODES = ["coap-uri", "coap-scheme"]


def coap_ping(port: int, timeout: float, host: str = "127.0.0.1") -> bool:
    """A CoAP ping (empty CON) to host:port answered by a RST."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout)
        s.sendto(bytes([0x40, 0x00, 0x12, 0x34]), (host, port))
        try:
            data = s.recv(64)
        except OSError:  # timeout, or ICMP port unreachable (not bound yet)
            return False
    return len(data) >= 4 and data[0] >> 4 & 3 == 3 and data[2:4] == b"\x12\x34"


@dataclass
class Proxy:
    """A forward proxy on host:port, ready once it answers a ping."""

    argv: Callable[[int], Sequence[str]]
    log: Path
    port: int = 0
    host: str = "127.0.0.1"
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self) -> Proxy:
        """Three tries on fresh ports: a port free_port found free can be
        taken by another process before the proxy binds it (seen once in
        ~30 runs: aiocoap-proxy exited 1)."""
        for _ in range(3):
            if self._start_once():
                return self
        raise AssertionError(f"{self.argv(0)[0]} did not start: "
                             f"{self.log.read_text(errors='replace')[-2000:]}")

    def _start_once(self) -> bool:
        self.port = free_port()
        with self.log.open("wb") as log:  # a file: a pipe nobody reads could fill
            self.proc = subprocess.Popen(list(self.argv(self.port)), stdout=subprocess.DEVNULL,
                                         stderr=log, start_new_session=True)
        deadline = time.monotonic() + 15
        while not coap_ping(self.port, 0.2, self.host):
            if self.proc.poll() is not None:
                return False
            assert time.monotonic() < deadline, "the proxy did not answer a ping in 15 s"
        return True

    @property
    def gateway(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


def libcoap_argv(port: int, host: str = "127.0.0.1") -> list[str]:
    """`-P ,NAME`: no upstream proxy before the comma (a direct connection
    to the Proxy-Uri's / Uri-Host's host), and a name this proxy is known
    by that no request uses, so that every request is forwarded."""
    assert LIBCOAP is not None
    return [LIBCOAP, "-A", host, "-p", str(port), "-P", ",wotbench-proxy", "-v", "0"]


def aiocoap_argv(port: int) -> list[str]:
    return [str(AIOCOAP), "--forward", "--bind", f"127.0.0.1:{port}"]


@pytest.fixture
def libcoap_proxy(tmp_path) -> Iterator[Proxy]:
    p = Proxy(libcoap_argv, tmp_path / "libcoap.log").start()
    yield p
    p.stop()


@pytest.fixture
def aiocoap_proxy(tmp_path) -> Iterator[Proxy]:
    p = Proxy(aiocoap_argv, tmp_path / "aiocoap.log").start()
    yield p
    p.stop()


def stop_device(dev) -> dict[str, object]:
    """SIGTERM: the device writes its --stats JSON and exits."""
    assert dev.proc is not None
    dev.proc.send_signal(signal.SIGTERM)
    dev.proc.communicate(timeout=30)
    stats = json.loads(Path(dev.args[dev.args.index("--stats") + 1]).read_text())
    assert isinstance(stats, dict)
    return stats


@pytest.fixture
def device(make_device, tmp_path) -> Callable[[dict[str, int], str], Any]:
    """A started device that writes its stats to tmp_path/NAME.json."""
    def start(resources: dict[str, int], name: str) -> Any:
        return make_device(resources, "--stats", str(tmp_path / f"{name}.json"))
    return start


def trace_for(tmp_path: Path, devs: Sequence[tuple[Any, dict[str, int]]],
              n: int = 200, gap_us: int = 1000) -> Path:
    """n GETs, round robin over the devices, each over its paths."""
    rows = []
    for i in range(n):
        dev, paths = devs[i % len(devs)]
        rows.append((i % len(devs), i * gap_us, "GET",
                     dev.uri(list(paths)[(i // len(devs)) % len(paths)])))
    return write_trace(tmp_path / "t.csv", rows)


def via(proxy: Proxy, mode: str, *extra: str) -> tuple[str, ...]:
    return ("--gateway", proxy.gateway, "--north", mode, *extra)


def assert_all_served(run, n: int, ndev: int, proxy: Proxy, mode: str,
                      sockets: str = "one") -> None:
    rows, s = run.rows, run.summary
    assert len(rows) == n and s["ok"] == n, rows.code.value_counts().to_dict()
    assert (rows.code == "2.05").all()
    expected = rows.uri.str.extract(r"(/[a-d]\d+)$")[0].map(SERVICE)
    assert (rows.service_us == expected).all()  # the device's option 65000, forwarded
    assert (rows.response_us >= rows.service_us).all()
    # every request to the gateway: one peer, or per device a peer of its own
    nsock = ndev if sockets == "per-device" else 1
    assert s["peers"] == nsock and s["devices"] == ndev and s["sockets"] == nsock
    assert s["north"] == {"protocol": "coap", "gateway": proxy.gateway, "mode": mode,
                          "sockets": sockets, "nsock": nsock}
    assert s["garbage"]["total"] == 0


def assert_device_served(dev, n: int) -> None:
    stats = stop_device(dev)
    assert stats["served"] == n and stats["ok"] == n and stats["not_found"] == 0, stats


@needs_libcoap
@pytest.mark.parametrize("ctype", ["con", "non"])
@pytest.mark.parametrize("mode", MODES)
def test_libcoap_proxy_every_request_comes_back_ok(mode, ctype, ge_bin, libcoap_proxy,
                                                   device, tmp_path):
    a = device(DEV_A, "a")
    trace = trace_for(tmp_path, [(a, DEV_A)])
    run = run_ge(ge_bin, trace, *via(libcoap_proxy, mode, "--type", ctype))
    assert run.returncode == 0, run.stderr
    assert_all_served(run, 200, 1, libcoap_proxy, mode)
    assert_device_served(a, 200)  # the device served every one of them


@needs_aiocoap
@pytest.mark.parametrize("ctype", ["con", "non"])
def test_aiocoap_proxy_several_devices_each_gets_its_own(ctype, ge_bin, aiocoap_proxy,
                                                         device, tmp_path):
    a, b = device(DEV_A, "a"), device(DEV_B, "b")
    trace = trace_for(tmp_path, [(a, DEV_A), (b, DEV_B)], gap_us=2000)
    run = run_ge(ge_bin, trace, *via(aiocoap_proxy, "coap-scheme", "--type", ctype))
    assert run.returncode == 0, run.stderr
    assert_all_served(run, 200, 2, aiocoap_proxy, "coap-scheme")
    assert_device_served(a, 100)
    assert_device_served(b, 100)


FOUR = [DEV_A, DEV_B, DEV_C, DEV_D]


@needs_libcoap
@pytest.mark.parametrize("mode", MODES)
def test_libcoap_proxy_per_device_sockets_route_each_device_right(mode, ge_bin, libcoap_proxy,
                                                                  device, tmp_path):
    """Four devices, requests interleaved a,b,c,d,a,...: with a GE socket
    per device each is its own client of the proxy, and each device serves
    exactly the requests sent to it."""
    devs = [(device(paths, f"d{i}"), paths) for i, paths in enumerate(FOUR)]
    trace = trace_for(tmp_path, devs, n=120)
    run = run_ge(ge_bin, trace, *via(libcoap_proxy, mode, "--north-sockets", "per-device"))
    assert run.returncode == 0, run.stderr
    assert_all_served(run, 120, 4, libcoap_proxy, mode, "per-device")
    for dev, _ in devs:
        assert_device_served(dev, 30)


@needs_libcoap
@pytest.mark.parametrize("mode", MODES)
def test_libcoap_proxy_one_socket_misroutes(mode, ge_bin, libcoap_proxy, device, tmp_path):
    """The same run from one GE socket: libcoap 4.3.1 sends every request
    to the device the socket asked for first, which answers the other
    devices' paths 4.04 (why the per-device mode exists)."""
    devs = [(device(paths, f"d{i}"), paths) for i, paths in enumerate(FOUR)]
    trace = trace_for(tmp_path, devs, n=120)
    run = run_ge(ge_bin, trace, *via(libcoap_proxy, mode, "--north-sockets", "one"))
    assert run.returncode == 0, run.stderr
    assert run.summary["ok"] == 30 and run.summary["errors"] == 90
    assert run.summary["north"]["sockets"] == "one" and run.summary["north"]["nsock"] == 1
    assert set(run.rows.code[run.rows.status == "error"]) == {"4.04"}
    first = stop_device(devs[0][0])
    assert first["served"] == 120 and first["ok"] == 30 and first["not_found"] == 90, first
    assert [stop_device(dev)["served"] for dev, _ in devs[1:]] == [0, 0, 0]


IPV6_PROXIES = {
    "libcoap": (lambda port: libcoap_argv(port, "::1"), "coap-uri", LIBCOAP is not None),
    "aiocoap": (lambda port: [str(AIOCOAP), "--forward", "--bind", f"[::1]:{port}"], "coap-scheme",
                AIOCOAP.exists()),
}


@pytest.mark.parametrize("name", sorted(IPV6_PROXIES))
def test_a_proxy_over_ipv6_routes_each_device_right(name, ge_bin, make_device, tmp_path):
    """All on ::1: the GE reaches the proxy at [::1]:port and names each
    device by its literal IPv6 address, in brackets (Proxy-Uri
    coap://[::1]:p/path; or Proxy-Scheme with Uri-Host "[::1]", the form
    RFC 7252 6.5 and RFC 3986 3.2.2 give an IP-literal host). libcoap
    4.3.1 takes the Proxy-Uri but hands a bracketed Uri-Host to
    getaddrinfo, fails and answers nothing (hence coap-uri for it);
    aiocoap takes Proxy-Scheme only."""
    argv, mode, present = IPV6_PROXIES[name]
    if not present:
        pytest.skip(f"{name} proxy not installed")
    proxy = Proxy(argv, tmp_path / f"{name}6.log", host="::1").start()
    try:
        a = make_device(DEV_A, "--stats", str(tmp_path / "a.json"), host="::1")
        b = make_device(DEV_B, "--stats", str(tmp_path / "b.json"), host="::1")
        trace = trace_for(tmp_path, [(a, DEV_A), (b, DEV_B)], n=120)
        run = run_ge(ge_bin, trace, *via(proxy, mode, "--north-sockets", "per-device"))
        assert run.returncode == 0, run.stderr
        assert_all_served(run, 120, 2, proxy, mode, sockets="per-device")
        assert_device_served(a, 60)
        assert_device_served(b, 60)
    finally:
        proxy.stop()


@needs_libcoap
@pytest.mark.parametrize("mode", MODES)
def test_the_proxy_is_in_the_path(mode, ge_bin, libcoap_proxy, device, tmp_path):
    """The same run with the proxy stopped (the device still up) times out."""
    a = device(DEV_A, "a")
    trace = trace_for(tmp_path, [(a, DEV_A)], n=20)
    short = ("--ack-timeout-ms", "20", "--max-retransmit", "1", "--timeout-ms", "50")
    first = run_ge(ge_bin, trace, *via(libcoap_proxy, mode, *short))
    assert first.returncode == 0, first.stderr
    assert first.summary["ok"] == 20
    libcoap_proxy.stop()
    second = run_ge(ge_bin, trace, *via(libcoap_proxy, mode, *short))
    assert second.returncode == 0, second.stderr
    assert (second.rows.status == "timeout").all() and second.summary["timeouts"] == 20
    assert stop_device(a)["served"] == 20  # only the first run reached it


@needs_aiocoap
def test_a_gateway_error_answer_is_an_error_with_its_code(ge_bin, aiocoap_proxy, device,
                                                          tmp_path):
    """aiocoap's forward proxy answers a Proxy-Uri 5.01 (it takes
    Proxy-Scheme only): the GE counts the gateway's answer as error."""
    a = device(DEV_A, "a")
    run = run_ge(ge_bin, trace_for(tmp_path, [(a, DEV_A)], n=10),
                 *via(aiocoap_proxy, "coap-uri"))
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "error").all() and (run.rows.code == "5.01").all()
    assert run.summary["errors"] == 10 and run.summary["ok"] == 0
    assert stop_device(a)["served"] == 0


def down_device_run(ge_bin, proxy: Proxy, mode: str, make_device, tmp_path, n: int,
                    *args: str):
    dev = make_device(DEV_A)
    dev.kill()
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/a0")) for i in range(n)])
    run = run_ge(ge_bin, trace, *via(proxy, mode, "--timeout-ms", "150000", *args), timeout=300)
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "error").all(), run.rows[["status", "code"]]
    assert run.summary["errors"] == n and run.summary["timeouts"] == 0
    return run


@needs_aiocoap
@pytest.mark.parametrize("ctype", ["con", "non"])
def test_a_device_that_is_down_aiocoap_answers_5_00(ctype, ge_bin, aiocoap_proxy, make_device,
                                                   tmp_path):
    """aiocoap 0.4.17 sees the ICMP port unreachable at once and answers
    5.00 Internal Server Error (not 5.02): an error with the gateway's
    code."""
    run = down_device_run(ge_bin, aiocoap_proxy, "coap-scheme", make_device, tmp_path, 3,
                          "--type", ctype)
    assert (run.rows.code == "5.00").all(), set(run.rows.code)


@needs_libcoap
@pytest.mark.slow
def test_a_device_that_is_down_libcoap_answers_5_02(ge_bin, libcoap_proxy, make_device, tmp_path):
    """libcoap 4.3.1's example proxy answers 5.02 Bad Gateway once its own
    CON to the device gave up (MAX_RETRANSMIT 4 at ACK_TIMEOUT 2 s: tens of
    seconds: 72 s and 93 s seen); the GE's CON got an empty ACK at once and waits for
    it. One request: the proxy sends its 5.02 once per failed upstream
    session, with the token of the request that opened it, so further
    requests in flight on it time out."""
    run = down_device_run(ge_bin, libcoap_proxy, "coap-uri", make_device, tmp_path, 1)
    assert (run.rows.code == "5.02").all(), set(run.rows.code)


@needs_libcoap
def test_asan_build_through_the_proxy(ge_asan_bin, libcoap_proxy, device, tmp_path):
    a = device(DEV_A, "a")
    trace = trace_for(tmp_path, [(a, DEV_A)])
    run = run_ge(ge_asan_bin, trace, *via(libcoap_proxy, "coap-uri"), env=SAN_ENV)
    assert run.returncode == 0, run.stderr
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    assert_all_served(run, 200, 1, libcoap_proxy, "coap-uri")
    assert_device_served(a, 200)


@needs_libcoap
def test_asan_build_per_device_sockets(ge_asan_bin, libcoap_proxy, device, tmp_path):
    """Two devices through the proxy, each from a socket of its own."""
    devs = [(device(paths, f"d{i}"), paths) for i, paths in enumerate(FOUR[:2])]
    run = run_ge(ge_asan_bin, trace_for(tmp_path, devs, n=60),
                 *via(libcoap_proxy, "coap-scheme", "--north-sockets", "per-device"), env=SAN_ENV)
    assert run.returncode == 0, run.stderr
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    assert_all_served(run, 60, 2, libcoap_proxy, "coap-scheme", "per-device")
    for dev, _ in devs:
        assert_device_served(dev, 30)


def test_dump_plan_shows_the_gateway_as_every_requests_peer(ge_bin, tmp_path):
    rows = [(i % 3, i * 10, "GET", f"coap://127.0.0.1:{6001 + i % 3}/a") for i in range(30)]
    trace = write_trace(tmp_path / "t.csv", rows)

    def plan(*args: str) -> list[list[str]]:
        out = tmp_path / "plan.csv"
        p = subprocess.run([str(ge_bin), "--trace", str(trace), "--dump-plan", str(out),
                            "--quiet", *args], capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        return [line.split(",") for line in out.read_text().splitlines()[1:]]

    direct = plan()
    assert {r[2] for r in direct} == {"0", "1", "2"}
    proxied = plan("--gateway", "127.0.0.1:5999", "--north", "coap-uri")
    assert {r[2] for r in proxied} == {"0"}
    # one MID sequence for the whole run: ranks 0..29 at the one peer
    mids = [int(r[4]) for r in proxied]
    assert [(m - mids[0]) % 65536 for m in mids] == list(range(30))
    assert {r[5] for r in proxied} == {"30"} and {r[6] for r in proxied} == {"1"}
    # per device: device d is peer d on socket d, its own MID sequence
    per = plan("--gateway", "127.0.0.1:5999", "--north", "coap-uri", "--north-sockets", "per-device")
    assert {(r[1], r[2], r[3]) for r in per} == {("0", "0", "0"), ("1", "1", "1"), ("2", "2", "2")}
    for d in "012":
        mids = [int(r[4]) for r in per if r[1] == d]
        assert [(m - mids[0]) % 65536 for m in mids] == list(range(10))
    assert {r[5] for r in per} == {"10"} and {r[6] for r in per} == {"1"}


def test_direct_run_summary_says_direct(ge_bin, make_device, tmp_path):
    dev = make_device(DEV_A)
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/a0")) for i in range(5)])
    run = run_ge(ge_bin, trace)
    assert run.returncode == 0, run.stderr
    assert run.summary["north"] == {"protocol": "coap", "gateway": None, "mode": "direct",
                                    "sockets": "one", "nsock": 1}


BAD_CLI = {
    "north_without_gateway": (["--north", "coap-uri"], "--north: requires --gateway"),
    "gateway_without_north": (["--gateway", "127.0.0.1:5683"], "--gateway: requires --north"),
    "bad_address": (["--gateway", "127.0.0.300:5683", "--north", "coap-uri"], "--gateway: "),
    "bad_port": (["--gateway", "127.0.0.1:0", "--north", "coap-uri"], "--gateway: "),
    "host_name": (["--gateway", "proxy:5683", "--north", "coap-uri"], "--gateway: "),
    "bad_mode": (["--gateway", "127.0.0.1", "--north", "coap"], "--north: 'coap' is not"),
    "sockets_without_gateway": (["--north-sockets", "per-device"], "--north-sockets: requires"),
    "sockets_with_http": (["--gateway", "127.0.0.1", "--north", "http", "--north-sockets", "one"],
                          "--north-sockets: requires --north coap-uri or coap-scheme (not http)"),
    "bad_sockets": (["--gateway", "127.0.0.1", "--north", "coap-uri", "--north-sockets", "two"],
                    "--north-sockets: 'two' is not one or per-device"),
}


@pytest.mark.parametrize("name", sorted(BAD_CLI))
def test_bad_gateway_options_exit_2_with_one_line(name, ge_bin, tmp_path):
    args, want = BAD_CLI[name]
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", "coap://127.0.0.1:5999/a")])
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(out),
                        "--summary", str(summary), *args],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {want}"), p.stderr
    assert not out.exists() and not summary.exists() and not list(tmp_path.glob("*.tmp.*"))


def test_per_device_sockets_beyond_the_open_file_limit_exit_2(ge_bin, tmp_path):
    """100 devices need 100 sockets and the other files: under a hard
    limit of 128 open files, one line and exit 2 before anything starts."""
    rows = [(i, i * 10, "GET", f"coap://127.0.0.1:{6000 + i}/a") for i in range(100)]
    trace = write_trace(tmp_path / "t.csv", rows)
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))

    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(out), "--summary",
                        str(summary), "--quiet", "--gateway", "127.0.0.1:9", "--north", "coap-uri",
                        "--north-sockets", "per-device"],
                       capture_output=True, text=True, timeout=60, preexec_fn=limit)
    assert p.returncode == 2, p.stderr
    assert p.stderr.splitlines() == [
        "error: --north-sockets: 100 sockets and 64 other files need an open-file limit of 164, "
        "the hard limit (ulimit -Hn) is 128"]
    assert not out.exists() and not summary.exists() and not list(tmp_path.glob("*.tmp.*"))
