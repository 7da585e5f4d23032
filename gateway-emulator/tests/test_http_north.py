"""--north http: the GE drives a real HTTP/1.1 keep-alive server (Python's
ThreadingHTTPServer, protocol HTTP/1.1) on loopback as its gateway. Each
row's status and code follow the server's answer (200, 502, 504, 404,
chunked, Connection: close, a stall past --timeout-ms, a garbage status
line, a reset); the summary's `http` counters agree; connections are
reused; a server slower than the schedule makes requests wait for a
connection, and that wait is in send lag; the pool never has more than
--http-conns requests in flight. Plus the response parser through its
fuzz-free build, and bad --http-* options."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
from gehelpers import ROOT, SAN_ENV, GeRun, free_port, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

GE_DIR = ROOT / "gateway-emulator"
STALL_S = 1.0  # past the GE's --timeout-ms below
TIMEOUT_MS = "300"


class Handler(BaseHTTPRequestHandler):
    """Answers by the last path segment of the request target."""

    protocol_version = "HTTP/1.1"
    server: Gateway

    def setup(self) -> None:
        super().setup()
        with self.server.lock:
            self.server.accepted += 1

    def log_message(self, format: str, *args: object) -> None:
        pass

    def reply(self, status: int, body: bytes = b"hello", close: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_any(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.seen.append((self.command, self.path, self.headers.get("Host"), body))
        name = self.path.rsplit("/", 1)[-1].split("?")[0]
        if name == "slow":
            time.sleep(0.02)
        if name in ("ok", "slow", "fixed"):
            self.reply(200)
        elif name in ("e502", "e504", "e404"):
            self.reply(int(name[1:]), b"gateway says no")
        elif name == "chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.write(b"5\r\nhello\r\n0\r\n\r\n")
        elif name == "close":
            self.reply(200, close=True)
            self.close_connection = True
        elif name == "stall":
            time.sleep(STALL_S)
            self.close_connection = True
        elif name == "garbage":
            self.wfile.write(b"HTTP/1.1 2OO OK\r\n\r\n")
        elif name == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.close_connection = True
        else:
            self.reply(500)

    do_GET = do_PUT = do_POST = do_DELETE = do_any


class Gateway(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lock = threading.Lock()
        self.accepted = 0
        self.seen: list[tuple[str, str, str | None, bytes]] = []

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the GE closing a stalled connection, a reset: expected

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    srv = Gateway()
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def trace_of(tmp_path: Path, names: list[str], gap_us: int, method: str = "GET") -> Path:
    rows = [(i % 3, i * gap_us, method, f"coap://127.0.0.1:5683/{n}") for i, n in enumerate(names)]
    return write_trace(tmp_path / "t.csv", rows)


def http_run(ge: Path, trace: Path, gw: Gateway | str, *args: str,
             env: dict[str, str] | None = None) -> GeRun:
    addr = gw.address if isinstance(gw, Gateway) else gw
    return run_ge(ge, trace, "--gateway", addr, "--north", "http", "--timeout-ms", TIMEOUT_MS,
                  *args, env=env)


CASES = {  # name: (status, code)
    "ok": ("ok", "200"),
    "e502": ("error", "502"),
    "e504": ("error", "504"),
    "e404": ("error", "404"),
    "chunked": ("ok", "200"),
    "close": ("ok", "200"),
    "stall": ("timeout", None),
    "garbage": ("error", None),
    "reset": ("error", None),
}
MAIN = ["ok", "e502", "ok", "e504", "chunked", "ok", "close", "ok", "stall", "ok", "garbage",
        "ok", "reset", "ok", "e404", "ok"]


def check_main(r: GeRun, gw: Gateway, conns: int) -> None:
    rows = r.rows
    assert len(rows) == len(MAIN)
    for i, name in enumerate(MAIN):
        status, code = CASES[name]
        row = rows.iloc[i]
        assert row["uri"].endswith("/" + name)
        assert (row["status"], None if row["code"] != row["code"] else row["code"]) == \
            (status, code), name
    assert (rows["sent_us"] >= rows["intended_us"]).all()
    assert (rows["send_lag_us"] == rows["sent_us"] - rows["intended_us"]).all()
    answered = rows.dropna(subset=["recv_us"])
    assert (answered["latency_intended_us"]
            == answered["recv_us"] - answered["intended_us"]).all()
    s = r.summary
    assert s["north"] == {"protocol": "http", "gateway": gw.address, "mode": "http",
                          "sockets": "one", "nsock": 0}
    # TCP sends keep the GE's own stamp and are not fallbacks (no report warning)
    assert (s["tx_stamps_kernel"], s["tx_stamps_fallback"]) == (0, 0)
    h = s["http"]
    assert h["connections"] == conns
    assert h["requests_sent"] == len(MAIN)
    assert h["status_2xx"] == MAIN.count("ok") + 2  # chunked, close
    assert (h["status_502"], h["status_504"], h["status_4xx"]) == (1, 1, 1)
    assert h["status_5xx"] == 2 and h["status_3xx"] == 0
    assert (h["closed_malformed"], h["closed_timeout"]) == (1, 1)
    assert h["closed_by_peer"] >= 2  # Connection: close, the reset
    assert s["ok"] == MAIN.count("ok") + 2
    assert s["timeouts"] == 1 and s["errors"] == len(MAIN) - s["ok"] - 1
    # connections are reused: the server saw at most the pool plus one per
    # closed connection, far fewer than the requests
    reconnects = (h["closed_by_peer"] + h["closed_malformed"] + h["closed_timeout"]
                  + h["closed_unsolicited"] + h["connect_errors"])
    assert h["connects"] <= conns + reconnects
    # (a reconnect still in progress when the run ended is accepted by the
    # server but not counted in connects)
    assert gw.accepted <= conns + reconnects and gw.accepted < len(MAIN)


def test_statuses_codes_counters_and_reuse(ge_bin, gateway, tmp_path):
    r = http_run(ge_bin, trace_of(tmp_path, MAIN, 20000), gateway, "--http-conns", "3")
    check_main(r, gateway, 3)
    method, target, host, body = gateway.seen[0]
    assert (method, target, host, body) == \
        ("GET", "/proxy/coap://127.0.0.1:5683/ok", gateway.address, b"")


def test_asan_build_runs_the_main_case(ge_asan_bin, gateway, tmp_path):
    r = http_run(ge_asan_bin, trace_of(tmp_path, MAIN, 20000), gateway, "--http-conns", "3",
                 env=SAN_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    check_main(r, gateway, 3)


def test_template_payload_query_and_ipv6_device(ge_bin, gateway, tmp_path):
    rows = [(1, 0, "PUT", "coap://[::1]:5700/fixed?a=1&b=2,some payload"),
            (2, 1000, "POST", "coap://127.0.0.1:5701/fixed")]
    trace = tmp_path / "t.csv"
    trace.write_text("device_id,send_ts_us,method,uri,payload\n"
                     + "".join(",".join(map(str, r)) + "\n" for r in rows))
    r = http_run(ge_bin, trace, gateway, "--http-path", "/gw?u={coap_uri}&again={coap_uri}/fixed")
    assert list(r.rows["status"]) == ["ok", "ok"]
    seen = sorted(gateway.seen)
    assert seen == [
        ("POST", "/gw?u=coap://127.0.0.1:5701/fixed&again=coap://127.0.0.1:5701/fixed/fixed",
         gateway.address, b""),
        ("PUT", "/gw?u=coap://[::1]:5700/fixed?a=1&b=2&again=coap://[::1]:5700/fixed?a=1&b=2"
         "/fixed", gateway.address, b"some payload")]


def in_flight_max(rows: pd.DataFrame) -> int:
    """Most requests written and not yet answered at any send instant."""
    sent, recv = list(rows["sent_us"]), list(rows["recv_us"])
    return max(sum(1 for s, e in zip(sent, recv, strict=True) if s <= t < e) for t in sent)


def test_slow_server_makes_requests_wait_for_a_connection(ge_bin, gateway, tmp_path):
    names = ["slow"] * 40
    r = http_run(ge_bin, trace_of(tmp_path, names, 1000), gateway, "--http-conns", "2",
                 "--timeout-ms", "10000")  # the last waits ~400 ms: no queue timeout
    rows = r.rows
    assert (rows["status"] == "ok").all()
    h = r.summary["http"]
    # 40 requests 1 ms apart, each held 20 ms by the server, 2 connections
    assert h["pool_waits"] > 0 and h["pool_wait_max_us"] > 0
    assert h["connects"] == 2 and gateway.accepted == 2
    assert in_flight_max(rows) <= 2
    # the wait is in send lag and in the intended-send latency: the last
    # request went out after the first answers came back
    assert rows["sent_us"].iloc[-1] > rows["recv_us"].iloc[0]
    assert r.summary["send_lag_us"]["max"] == rows["send_lag_us"].max()
    assert (rows["latency_intended_us"] >= rows["response_us"]).all()


def test_no_server_queued_requests_time_out(ge_bin, tmp_path):
    addr = f"127.0.0.1:{free_port()}"  # nothing listens there (TCP)
    r = http_run(ge_bin, trace_of(tmp_path, ["ok"] * 5, 1000), addr, "--http-conns", "2")
    assert (r.rows["status"] == "timeout").all()
    h = r.summary["http"]
    assert h["queue_timeouts"] == 5 and h["requests_sent"] == 0
    assert h["connect_errors"] >= 2 and h["connects"] == 0


@pytest.mark.parametrize("args, field", [
    (["--http-conns", "0"], "--http-conns"),
    (["--http-conns", "4097"], "--http-conns"),
    (["--http-path", "proxy/{coap_uri}"], "--http-path"),
    (["--http-path", "/proxy/{coap-uri}"], "--http-path"),
    (["--http-path", "/a b"], "--http-path"),
    (["--http-path", "/{coap_uri}" * 5], "--http-path"),
])
def test_bad_http_options(args, field, ge_bin, tmp_path):
    trace = trace_of(tmp_path, ["ok"], 1000)
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(out), "--summary",
                        str(summary), "--gateway", "127.0.0.1:9", "--north", "http", *args],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"error: {field}")
    assert not out.exists() and not summary.exists()


@pytest.mark.parametrize("flag", [["--http-conns", "4"], ["--http-path", "/x"]])
def test_http_options_need_north_http(flag, ge_bin, tmp_path):
    trace = trace_of(tmp_path, ["ok"], 1000)
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(tmp_path / "o"),
                        "--summary", str(tmp_path / "s"), *flag],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "requires --north http" in p.stderr


@pytest.fixture(scope="module")
def parse_main(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fuzz harness built without libFuzzer: stdin in, events out."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    exe = tmp_path_factory.mktemp("hp") / "http-parse"
    subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror",
                    "-DGE_HTTP_PARSE_MAIN", f"-I{GE_DIR}", str(GE_DIR / "fuzz" / "fuzz_http.c"),
                    str(GE_DIR / "http_parse.c"), "-o", str(exe)], check=True)
    return exe


# Bytes of one connection -> events: D<status><c|k> a response done (close or
# keep), B malformed; at the end M nothing pending, E the close ended it.
PARSE_CASES = {
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc": "D200k M",
    b"HTTP/1.1 200 OK\r\ncontent-length:  0 \r\n\r\nHTTP/1.1 502 Bad Gateway\r\n"
    b"Content-Length: 1\r\nConnection: keep-alive, Close\r\n\r\nx": "D200k D502c M",
    b"HTTP/1.1 504 T\r\nTransfer-Encoding: chunked\r\n\r\n3;e=1\r\nabc\r\nA\r\n0123456789\r\n"
    b"0\r\nX-Trailer: 1\r\n\r\n": "D504k M",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n": "D204k M",
    b"\r\nHTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi": "D200c M",
    b"HTTP/1.1 200 OK\r\n\r\nuntil the close": "D200c E",
    b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort": "B E",  # cut short by the close
    b"HTTP/1.1 2OO OK\r\n\r\n": "B",
    b"HTTP/2 200\r\n\r\n": "B",
    b"HTTP/1.1 600 No\r\n\r\n": "B",
    b"HTTP/1.1 101 Switching\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc": "B",
    b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n": "B",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n": "B",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n": "B",
    b"HTTP/1.1 200 OK\r\nX: " + b"a" * 5000 + b"\r\n\r\n": "B",
    b"": "M",
}


@pytest.mark.parametrize("data", list(PARSE_CASES), ids=lambda d: d[:24].decode(errors="replace"))
@pytest.mark.parametrize("piece", [0, 1, 7])
def test_response_parser(data, piece, parse_main):
    p = subprocess.run([str(parse_main), str(piece or len(data) + 1)], input=data,
                       capture_output=True, timeout=30, check=True)
    assert p.stdout.decode().strip() == PARSE_CASES[data]
