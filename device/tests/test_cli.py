"""Bad resource files and flags: one `error: FILE:LINE: FIELD: what` line,
exit status 2, and nothing bound or started."""

from __future__ import annotations

import re
import socket
import subprocess

import pytest

GOOD = "path,service_us\n/a,10\n"

BAD_FILES = [
    ("", 1, "header"),
    ("# only a comment\n", 1, "header"),
    ("url,service_us\n/a,1\n", 1, "header"),
    ("path,service_us\n/a,1\n/b,-5\n", 3, "service_us"),
    ("path,service_us\n/a,1000000001\n", 2, "service_us"),
    ("path,service_us\n/a,1.5\n", 2, "service_us"),
    ("path,service_us\na,1\n", 2, "path"),
    ("path,service_us\n/a b,1\n", 2, "path"),
    ("path,service_us\n/.well-known/core,1\n", 2, "path"),
    ("path,service_us\n/" + "x" * 255 + ",1\n", 2, "path"),
    ("path,service_us\n/a,1\n\n# c\n/a,2\n", 5, "path"),
    ("path,service_us,payload_bytes\n/a,1,1025\n", 2, "payload_bytes"),
    ("path,service_us\n/a,1,extra\n", 2, "row"),
    ("path,service_us\n", 1, "path"),
    ('path,service_us\n"/a",1\n', 2, "row"),
]


def run(binary, *args, timeout=10):
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("text,line,field", BAD_FILES)
def test_bad_resource_file(device_bins, tmp_path, text, line, field):
    f = tmp_path / "res.csv"
    f.write_text(text)
    # Port 1 would need privileges or be taken: an error naming the socket
    # would show that validation did not come first.
    proc = run(device_bins["release"], "--listen", "127.0.0.1:1", "--resources", str(f))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert re.fullmatch(rf"error: {re.escape(str(f))}:{line}: {field}: .+", lines[0]), lines[0]


def test_missing_file(device_bins, tmp_path):
    proc = run(device_bins["release"], "--resources", str(tmp_path / "nope.csv"))
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {tmp_path / 'nope.csv'}:0: resources: ")


def test_accepts_extra_columns_crlf_and_reordering(device_bins, tmp_path):
    f = tmp_path / "ok.csv"
    f.write_text("kind,service_us,path,payload_bytes\r\nx, 7 ,/p/q,\r\n")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(device_bins["release"]), "--listen", f"127.0.0.1:{port}",
                             "--resources", str(f)], stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        assert "1 resources on" in proc.stderr.readline()
        out = subprocess.run(["coap-client-notls", "-m", "get", f"coap://127.0.0.1:{port}/p/q"],
                             capture_output=True, text=True, timeout=10)
        assert out.stdout.strip() == "service_us=7"
    finally:
        proc.terminate()
        proc.communicate(timeout=5)
    assert proc.returncode == 0


BAD_FLAGS = [
    (["--threads", "0"], "--threads"),
    (["--threads", "x"], "--threads"),
    (["--mode", "fast"], "--mode"),
    (["--queue", "0"], "--queue"),
    (["--dedup-entries", "-1"], "--dedup-entries"),
    (["--exchange-lifetime", "0"], "--exchange-lifetime"),
    (["--exchange-lifetime", "2.5"], "--exchange-lifetime"),
    (["--listen", "localhost:5683"], "--listen"),
    (["--listen", "127.0.0.1"], "--listen"),
    (["--listen", "[::1]5683"], "--listen"),
    (["--listen", "127.0.0.1:70000"], "--listen"),
    (["--bogus"], "option"),
    (["extra"], "argument"),
]


@pytest.mark.parametrize("args,field", BAD_FLAGS)
def test_bad_flags(device_bins, tmp_path, args, field):
    f = tmp_path / "res.csv"
    f.write_text(GOOD)
    proc = run(device_bins["release"], "--resources", str(f), *args)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"error: {field}: "), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_resources_required_and_help(device_bins):
    proc = run(device_bins["release"])
    assert proc.returncode == 2 and proc.stderr.startswith("error: --resources: ")
    proc = run(device_bins["release"], "--help")
    assert proc.returncode == 0 and "--mode sleep|busy" in proc.stdout


def test_port_in_use_is_a_runtime_error(device_bins, tmp_path):
    f = tmp_path / "res.csv"
    f.write_text(GOOD)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        proc = run(device_bins["release"], "--listen", f"127.0.0.1:{port}", "--resources", str(f))
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: --listen: cannot bind")
