"""The ``capture`` spec section: defaults and forms, every bad value one
line naming the key (exit 2 through `wotbench plan`, nothing written), and
the pure parts of the capture sidecar: tcpdump's command line, its
hardening and its closing counts (no Docker)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wotbench.engine.netcapture import capture_args, check_image, parse_counts, ring_files, tcpdump_argv
from wotbench.spec import RunCapture, UserError, budget, loads

BASE = """\
name: t
devices:
  - {name: s, count: 2, rit: exp:100ms, service: exp:5ms}
phases: {warmup: 2s, measure: 20s, cooldown: 1s}
"""


def spec(extra: str):
    return loads(BASE + textwrap.dedent(extra), "exp.yaml")[0].spec


def test_defaults_and_forms() -> None:
    assert spec("").capture is None
    assert spec("capture:\n").capture == RunCapture(256, 100 << 20, 4)
    assert spec("capture: {}\n").capture == RunCapture()
    c = spec("capture: {snaplen: 128, max_size: 2MB, files: 3}\n").capture
    assert c == RunCapture(128, 2 << 20, 3)
    assert c.file_mb == 2 and c.total_bytes == 3 * 2_000_000 + 3 * 128
    assert spec("capture: {max_size: 5000000}\n").capture.file_mb == 5


@pytest.mark.parametrize("extra, field, what", [
    ("capture: 3", "capture", "must be a mapping"),
    ("capture: [1]", "capture", "must be a mapping"),
    ("capture: {snaplen: 64}", "capture.snaplen", "96"),
    ("capture: {snaplen: 70000}", "capture.snaplen", "65535"),
    ("capture: {snaplen: 1.5}", "capture.snaplen", ""),
    ("capture: {max_size: 10KB}", "capture.max_size", "from 1MB"),
    ("capture: {max_size: 2TB}", "capture.max_size", ""),
    ("capture: {max_size: -1MB}", "capture.max_size", ""),
    ("capture: {max_size: lots}", "capture.max_size", ""),
    ("capture: {files: 0}", "capture.files", ""),
    ("capture: {files: 1001}", "capture.files", "1000"),
    ("capture: {file: 2}", "capture.file", "did you mean 'files'?"),
])
def test_errors_name_the_key(extra: str, field: str, what: str) -> None:
    with pytest.raises(UserError) as exc:
        spec(extra + "\n")
    err = exc.value
    assert (err.file, err.line, err.field) == ("exp.yaml", 5, field)
    assert what in err.what and "\n" not in str(err)


def test_cli_plan_exit_2(spec_file, wotbench_cli, tmp_path: Path) -> None:
    bad = spec_file(BASE + "capture: {max_size: 10KB}\n")
    r = wotbench_cli("plan", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {bad}:5: capture.max_size: must be from 1MB (tcpdump cuts "
                                             "files in millions of bytes) to 1024GB, got '10KB'"]


def test_tcpdump_command_and_hardening(tmp_path: Path) -> None:
    argv = tcpdump_argv(RunCapture(128, 3 << 20, 5), "ge-0.pcap")
    assert argv == ["tcpdump", "-i", "any", "-n", "--immediate-mode", "-s", "128", "-C", "3", "-W", "5",
                    "-w", "/capture/ge-0.pcap", "udp"]
    args = capture_args({"l": "v"}, "abc", tmp_path, "0")
    assert args["cap_drop"] == ["ALL"] and "NET_ADMIN" not in args["cap_add"] and "NET_RAW" in args["cap_add"]
    assert args["security_opt"] == ["no-new-privileges"] and args["read_only"]
    assert args["network_mode"] == "container:abc" and args["cpuset_cpus"] == "0"
    assert args["volumes"] == {str(tmp_path.resolve()): {"bind": "/capture", "mode": "rw"}}
    assert args["mem_limit"] == args["memswap_limit"] > 0 and args["pids_limit"] > 0


def test_counts_and_ring(tmp_path: Path) -> None:
    log = ("tcpdump: listening on any, link-type LINUX_SLL2 (Linux cooked v2), snapshot length 256 bytes\n"
           "1234 packets captured\n1240 packets received by filter\n6 packets dropped by kernel\n")
    assert parse_counts(log) == {"packets_captured": 1234, "packets_received_by_filter": 1240,
                                 "packets_dropped_by_kernel": 6}
    assert parse_counts("tcpdump: listening on any\n") == {}
    for name, size in (("ge-0.pcap0", 10), ("ge-0.pcap1", 20), ("ge-0.pcapx", 1), ("ge-1.pcap0", 5)):
        (tmp_path / name).write_bytes(b"x" * size)
    assert sorted(f["file"] for f in ring_files(tmp_path, "ge-0.pcap")) == ["ge-0.pcap0", "ge-0.pcap1"]
    assert sum(f["bytes"] for f in ring_files(tmp_path, "ge-0.pcap")) == 30


def test_an_image_without_tcpdump_is_refused() -> None:
    check_image({"org.wotbench.role": "nettools", "org.wotbench.tcpdump": "yes"}, "wotbench/nettools:x")
    with pytest.raises(UserError) as exc:
        check_image({"org.wotbench.role": "nettools"}, "wotbench/nettools:x")
    assert exc.value.field == "capture" and "make images" in exc.value.what and "\n" not in str(exc.value)


def test_the_ring_must_fit_on_disk(tmp_path: Path) -> None:
    hs = spec("capture: {max_size: 1024GB, files: 1000}\n")
    with pytest.raises(UserError) as exc:
        budget.check(hs, tmp_path)
    assert exc.value.field == "capture.max_size" and "capture ring of 1000 x" in exc.value.what
    budget.check(spec("capture: {max_size: 1MB, files: 2}\n"), tmp_path)
