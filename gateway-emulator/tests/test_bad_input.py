"""Bad traces, hosts files and command lines: one line
`error: FILE:LINE: FIELD: what`, exit 2, nothing sent, no file created."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

OK = "0,0,GET,coap://127.0.0.1:5999/a"

# (trace text, line, field)
BAD_TRACES = {
    "decreasing": (f"{OK}\n0,5,GET,coap://127.0.0.1:5999/a\n0,4,GET,coap://127.0.0.1:5999/a\n", 3, "send_ts_us"),
    "ts_not_int": ("0,1.5,GET,coap://127.0.0.1/a\n", 1, "send_ts_us"),
    "ts_too_big": ("0,9007199254740993,GET,coap://127.0.0.1/a\n", 1, "send_ts_us"),
    "negative_ts": ("0,-1,GET,coap://127.0.0.1/a\n", 1, "send_ts_us"),
    "method": ("device_id,send_ts_us,method,uri\n0,0,get,coap://127.0.0.1/a\n", 2, "method"),
    "method_fetch": ("0,0,FETCH,coap://127.0.0.1/a\n", 1, "method"),
    "device_id": ("x,0,GET,coap://127.0.0.1/a\n", 1, "device_id"),
    "device_id_big": ("2147483648,0,GET,coap://127.0.0.1/a\n", 1, "device_id"),
    "scheme": ("0,0,GET,http://127.0.0.1/a\n", 1, "uri"),
    "no_path": ("0,0,GET,coap://127.0.0.1\n", 1, "uri"),
    "bad_ipv4": ("0,0,GET,coap://127.0.0.300/a\n", 1, "uri"),
    "bad_ipv6": ("0,0,GET,coap://[::g]/a\n", 1, "uri"),
    "bad_port": ("0,0,GET,coap://127.0.0.1:70000/a\n", 1, "uri"),
    "unknown_host": ("# placeholder without --hosts\n0,0,GET,coap://dev-9/a\n", 2, "uri"),
    "percent": ("0,0,GET,coap://127.0.0.1/a%4\n", 1, "uri"),
    "space_in_uri": ("0,0,GET,coap://127.0.0.1/a b\n", 1, "uri"),
    "long_path": ("0,0,GET,coap://127.0.0.1/" + "a" * 300 + "\n", 1, "uri"),
    "device_moves": (f"{OK}\n\n0,1,GET,coap://127.0.0.1:6000/a\n", 3, "uri"),
    "missing_uri": ("0,0,GET\n", 1, "uri"),
    "payload_comma": ("0,0,PUT,coap://127.0.0.1/a,x,y\n", 1, "payload"),
    "payload_long": ("0,0,PUT,coap://127.0.0.1/a," + "x" * 1025 + "\n", 1, "payload"),
    "empty": ("device_id,send_ts_us,method,uri\n# nothing\n", 2, "device_id"),
}


def run(ge: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(ge), "--out", str(tmp / "o.csv"), "--summary", str(tmp / "s.json"),
                           *args], capture_output=True, text=True, timeout=60)


def assert_nothing_written(tmp: Path) -> None:
    assert not (tmp / "o.csv").exists() and not (tmp / "s.json").exists()
    assert not list(tmp.glob("*.tmp.*"))


@pytest.mark.parametrize("name", sorted(BAD_TRACES))
def test_bad_trace_rejected_with_file_line_field(name, ge_bin, tmp_path):
    text, line, field = BAD_TRACES[name]
    trace = tmp_path / "t.csv"
    trace.write_text(text)
    p = run(ge_bin, tmp_path, "--trace", str(trace))
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith(f"error: {trace}:{line}: {field}: "), lines[0]
    assert_nothing_written(tmp_path)


def test_header_comments_spaces_crlf_accepted(ge_bin, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"device_id, send_ts_us, method, uri\r\n# c\r\n\r\n0, 0, GET, coap://127.0.0.1:5999/a\r\n")
    plan = tmp_path / "plan.csv"
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--dump-plan", str(plan), "--quiet"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert len(plan.read_text().splitlines()) == 2


BAD_HOSTS = {
    "no_address": ("host,address\ndev-1\n", 2, "address"),
    "bad_address": ("dev-1,10.0.0.1:0\n", 1, "address"),
    "bad_name": ("host,address\nd v,10.0.0.1\n", 2, "host"),
    "duplicate": ("dev-1,10.0.0.1\ndev-1,10.0.0.2\n", 2, "host"),
}


@pytest.mark.parametrize("name", sorted(BAD_HOSTS))
def test_bad_hosts_file(name, ge_bin, tmp_path):
    text, line, field = BAD_HOSTS[name]
    hosts = tmp_path / "h.csv"
    hosts.write_text(text)
    trace = tmp_path / "t.csv"
    trace.write_text("0,0,GET,coap://dev-1/a\n")
    p = run(ge_bin, tmp_path, "--trace", str(trace), "--hosts", str(hosts))
    assert p.returncode == 2
    assert p.stderr.startswith(f"error: {hosts}:{line}: {field}: "), p.stderr
    assert_nothing_written(tmp_path)


@pytest.mark.parametrize("args,field", [
    (["--type", "foo"], "--type"),
    (["--timeout-ms", "0"], "--timeout-ms"),
    (["--cpu", "x"], "--cpu"),
    (["--max-retransmit", "99"], "--max-retransmit"),
    (["--bogus"], "--bogus"),
    (["--start-at"], "--start-at"),
])
def test_bad_cli(args, field, ge_bin, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(OK + "\n")
    p = run(ge_bin, tmp_path, "--trace", str(trace), *args)
    assert p.returncode == 2
    assert re.match(rf"error: {re.escape(field)}: ", p.stderr), p.stderr
    assert_nothing_written(tmp_path)


def test_missing_trace_file(ge_bin, tmp_path):
    p = run(ge_bin, tmp_path, "--trace", str(tmp_path / "nope.csv"))
    assert p.returncode == 2 and "cannot open" in p.stderr
    assert_nothing_written(tmp_path)


def test_unwritable_output_is_refused_before_sending(ge_bin, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(OK + "\n")
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(tmp_path / "no" / "o.csv"),
                        "--summary", str(tmp_path / "s.json"), "--quiet"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("error: --out: cannot create")
    assert not list(tmp_path.glob("s.json*"))
