"""Bad traces, hosts files and command lines: one line
`error: FILE:LINE: FIELD: what`, exit 2, nothing sent, no file created."""

from __future__ import annotations

import os
import re
import resource
import signal
import stat
import subprocess
from functools import partial
from pathlib import Path

import pytest
from gehelpers import SAN_ENV

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
    # Observe rows (RFC 7641): paired per (device, path?query), no payload
    "obs_never_closed": ("0,0,OBS,coap://127.0.0.1:5999/o\n", 1, "method"),
    "obs_first_open_named": ("0,0,OBS,coap://127.0.0.1:5999/a\n0,1,OBS,coap://127.0.0.1:5999/b\n"
                             "0,2,UNOBS,coap://127.0.0.1:5999/b\n", 1, "method"),
    "unobs_without_obs": (f"{OK}\n0,1,UNOBS,coap://127.0.0.1:5999/o\n", 2, "method"),
    "unobs_other_device": ("0,0,OBS,coap://127.0.0.1:5999/o\n1,1,UNOBS,coap://127.0.0.1:6000/o\n",
                           2, "method"),
    "unobs_other_query": ("0,0,OBS,coap://127.0.0.1:5999/o?a=1\n0,1,UNOBS,coap://127.0.0.1:5999/o\n",
                          2, "method"),
    "obs_twice": ("0,0,OBS,coap://127.0.0.1:5999/o\n0,1,OBS,coap://127.0.0.1:5999/o\n"
                  "0,2,UNOBS,coap://127.0.0.1:5999/o\n", 2, "method"),
    "unobs_twice": ("0,0,OBS,coap://127.0.0.1:5999/o\n0,1,UNOBS,coap://127.0.0.1:5999/o\n"
                    "0,2,UNOBS,coap://127.0.0.1:5999/o\n", 3, "method"),
    "obs_payload": ("0,0,OBS,coap://127.0.0.1:5999/o,x\n0,1,UNOBS,coap://127.0.0.1:5999/o\n",
                    1, "payload"),
    "unobs_payload": ("0,0,OBS,coap://127.0.0.1:5999/o\n0,1,UNOBS,coap://127.0.0.1:5999/o,x\n",
                      2, "payload"),
    "obs_lower_case": ("0,0,obs,coap://127.0.0.1:5999/o\n", 1, "method"),
}


def run(ge: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
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


def test_observe_messages_name_the_open_obs(ge_bin, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("0,0,OBS,coap://127.0.0.1:5999/o\n0,1,OBS,coap://127.0.0.1:5999/o\n")
    p = run(ge_bin, tmp_path, "--trace", str(trace))
    assert p.stderr.strip() == (f"error: {trace}:2: method: OBS of a device and uri whose earlier "
                                "OBS is not closed by an UNOBS yet (on line 1)")
    trace.write_text("0,0,OBS,coap://127.0.0.1:5999/o\n")
    p = run(ge_bin, tmp_path, "--trace", str(trace))
    assert p.stderr.strip() == (f"error: {trace}:1: method: OBS without a later UNOBS of the same "
                                "device and uri")


def test_observe_over_http_north_is_refused(ge_bin, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text("0,0,OBS,coap://127.0.0.1:5999/o\n0,1,UNOBS,coap://127.0.0.1:5999/o\n")
    p = run(ge_bin, tmp_path, "--trace", str(trace), "--gateway", "127.0.0.1:8080", "--north", "http")
    assert p.returncode == 2
    assert p.stderr.strip() == f"error: {trace}:1: method: OBS: Observe needs CoAP (not --north http)"
    assert_nothing_written(tmp_path)


def test_observe_pairs_reopen_and_interleave(ge_bin, tmp_path):
    """A closed pair may open again; pairs of other devices, paths or queries
    are independent; the plan holds every row."""
    trace = tmp_path / "t.csv"
    rows = ["0,0,OBS,coap://127.0.0.1:5999/o", "1,0,OBS,coap://127.0.0.1:6000/o",
            "0,1,OBS,coap://127.0.0.1:5999/o?q=1", "0,2,GET,coap://127.0.0.1:5999/o",
            "0,3,UNOBS,coap://127.0.0.1:5999/o", "0,4,OBS,coap://127.0.0.1:5999/o",
            "1,5,UNOBS,coap://127.0.0.1:6000/o", "0,6,UNOBS,coap://127.0.0.1:5999/o?q=1",
            "0,7,UNOBS,coap://127.0.0.1:5999/o"]
    trace.write_text("\n".join(rows) + "\n")
    plan = tmp_path / "plan.csv"
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--dump-plan", str(plan), "--quiet"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert len(plan.read_text().splitlines()) == 1 + len(rows)


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
    (["--congestion", "reno"], "--congestion"),
    (["--congestion", "COCOA"], "--congestion"),
    (["--ack-random-factor", "0.5"], "--ack-random-factor"),
    (["--ack-random-factor", "1e0"], "--ack-random-factor"),
    (["--ack-random-factor", "nan"], "--ack-random-factor"),
    (["--ack-random-factor", "17"], "--ack-random-factor"),
    (["--ack-random-factor", ""], "--ack-random-factor"),
    (["--nstart", "0"], "--nstart"),
    (["--nstart", "-1"], "--nstart"),
    (["--nstart", "65536"], "--nstart"),
    (["--nstart", "x"], "--nstart"),
    (["--nstart", "Unlimited"], "--nstart"),
    (["--nstart", ""], "--nstart"),
    (["--probing-rate", "0"], "--probing-rate"),
    (["--probing-rate", "1.5"], "--probing-rate"),
    (["--probing-rate", "none"], "--probing-rate"),
    (["--nstart", "2", "--gateway", "127.0.0.1:8080", "--north", "http"], "--nstart"),
    (["--probing-rate", "1", "--gateway", "127.0.0.1:8080", "--north", "http"], "--probing-rate"),
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


# --- outputs that would destroy an input or be lost (issue 23) ------------------

@pytest.fixture(params=["release", "asan"])
def any_ge(request) -> Path:
    """The GE binary, and the same under ASan/UBSan."""
    binary: Path = request.getfixturevalue("ge_bin" if request.param == "release" else "ge_asan_bin")
    return binary


def _limit_file_size(limit_bytes: int) -> None:
    """In the child before exec: a write past the limit fails with EFBIG
    instead of killing the GE with SIGXFSZ."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))


def ge_quick(ge: Path, *args: str, limit_bytes: int | None = None) -> subprocess.CompletedProcess[str]:
    """The GE against a closed loopback port (NON, 50 ms timeout): done in well under a second."""
    return subprocess.run([str(ge), "--type", "non", "--timeout-ms", "50", "--quiet", *args],
                          capture_output=True, text=True, timeout=30, env={**os.environ, **SAN_ENV},
                          preexec_fn=None if limit_bytes is None else partial(_limit_file_size, limit_bytes))


def listing(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    """Each entry's file type and (for regular files) content."""
    out = {}
    for p in sorted(folder.iterdir()):
        st = p.lstat()
        out[p.name] = (stat.S_IFMT(st.st_mode), p.read_bytes() if stat.S_ISREG(st.st_mode) else None)
    return out


def one_line(p: subprocess.CompletedProcess[str], status: int, start: str) -> None:
    assert p.returncode == status, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), p.stderr


@pytest.mark.parametrize("flag", ["--out", "--summary", "--notify-out", "--dump-plan"])
def test_output_that_is_the_trace_is_refused_and_the_trace_kept(flag, any_ge, tmp_path):
    trace = tmp_path / "t.csv"
    trace.write_text(OK + "\n")
    others = {"--out": tmp_path / "o.csv", "--summary": tmp_path / "s.json"}
    others[flag] = trace
    args = [a for f, p in others.items() for a in (f, str(p))]
    if flag == "--dump-plan":
        args = ["--dump-plan", str(trace)]
    before = listing(tmp_path)
    p = ge_quick(any_ge, "--trace", str(trace), *args)
    one_line(p, 2, f"error: {trace}: {flag}: is the same file as --trace")
    assert listing(tmp_path) == before


def test_output_that_is_the_hosts_file_or_the_other_output_is_refused(any_ge, tmp_path):
    trace, hosts = tmp_path / "t.csv", tmp_path / "h.csv"
    trace.write_text("0,0,GET,coap://dev-1/a\n")
    hosts.write_text("dev-1,127.0.0.1:5999\n")
    before = listing(tmp_path)
    p = ge_quick(any_ge, "--trace", str(trace), "--hosts", str(hosts), "--out", str(hosts),
                 "--summary", str(tmp_path / "s.json"))
    one_line(p, 2, f"error: {hosts}: --out: is the same file as --hosts")
    o = tmp_path / "o.csv"
    p = ge_quick(any_ge, "--trace", str(trace), "--hosts", str(hosts), "--out", str(o), "--summary", str(o))
    one_line(p, 2, f"error: {o}: --summary: is the same file as --out")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("flag", ["--out", "--summary"])
@pytest.mark.parametrize("kind", ["fifo", "chardev", "symlink", "folder"])
def test_output_that_is_not_a_regular_file_is_refused_and_left_as_it_is(flag, kind, any_ge, tmp_path):
    """A rename onto /dev/full replaced the device with a regular file (a stand-in here)."""
    trace = tmp_path / "t.csv"
    trace.write_text(OK + "\n")
    node = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(node)
    elif kind == "chardev":
        try:
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))   # the numbers of /dev/full
        except PermissionError:
            pytest.skip("mknod needs CAP_MKNOD")
    elif kind == "symlink":
        node.symlink_to(trace)
    else:
        node.mkdir()
    files = {"--out": tmp_path / "o.csv", "--summary": tmp_path / "s.json", flag: node}
    before = listing(tmp_path)
    p = ge_quick(any_ge, "--trace", str(trace), *[a for f, q in files.items() for a in (f, str(q))])
    one_line(p, 2, f"error: {node}: {flag}: is not a regular file")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("flag", ["--trace", "--hosts"])
def test_input_that_is_a_fifo_is_refused_without_blocking(flag, any_ge, tmp_path):
    trace, fifo = tmp_path / "t.csv", tmp_path / "fifo"
    trace.write_text(OK + "\n")
    os.mkfifo(fifo)
    inputs = {"--trace": str(trace), flag: str(fifo)}
    before = listing(tmp_path)
    p = ge_quick(any_ge, *[a for f, q in inputs.items() for a in (f, q)],
                 "--out", str(tmp_path / "o.csv"), "--summary", str(tmp_path / "s.json"))
    one_line(p, 2, f"error: {fifo}: is not a regular file")
    assert listing(tmp_path) == before


@pytest.mark.parametrize("limit,lost", [(100, "o.csv"), (1000, "s.json")])
def test_failed_write_exits_nonzero_naming_the_file_and_leaves_nothing(limit, lost, any_ge, tmp_path):
    """A write the file system refuses (here RLIMIT_FSIZE: EFBIG) is a failed run, never exit 0."""
    trace = tmp_path / "t.csv"
    trace.write_text(OK + "\n")
    before = listing(tmp_path)
    p = ge_quick(any_ge, "--trace", str(trace), "--out", str(tmp_path / "o.csv"),
                 "--summary", str(tmp_path / "s.json"), limit_bytes=limit)
    one_line(p, 1, f"error: {tmp_path / lost}: write failed: ")
    assert listing(tmp_path) == before
