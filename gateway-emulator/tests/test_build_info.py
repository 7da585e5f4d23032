"""--build-info of both programs (device/buildinfo.c): one JSON line with
the compiler, exactly the compile and link flags the Makefile built each
binary with, and the git commit and dirty state of the C sources when it
was built; the line the harness reads from the images' label
(harness/host/disclosure.py) parses."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gehelpers import ROOT, make

from wotbench.host import disclosure

DEVICE_ASAN = ROOT / "build" / "asan" / "wotbench-device"


def make_vars(*names: str) -> dict[str, str]:
    """Variables of the Makefile, expanded."""
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT),
                        "--eval", "print-var-%: ; @echo '$*=$($*)'", *[f"print-var-{n}" for n in names]],
                       capture_output=True, text=True, check=True)
    return dict(line.split("=", 1) for line in p.stdout.splitlines())


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def device_asan_bin() -> Path:
    make([DEVICE_ASAN])
    return DEVICE_ASAN


def test_both_programs_print_the_flags_the_makefile_used(ge_bin: Path, ge_asan_bin: Path, device_bin: Path,
                                                         device_asan_bin: Path) -> None:
    v = make_vars("ALL_CFLAGS", "CSTD", "CWARN", "SAN_FLAGS", "GE_LDFLAGS", "GE_ASAN_LDFLAGS", "DEV_LDFLAGS",
                  "DEV_ASAN_LDFLAGS", "CC")
    san = f"{v['CSTD']} {v['CWARN']} {v['SAN_FLAGS']}"
    want = {ge_bin: ("wotbench-ge", v["ALL_CFLAGS"], v["GE_LDFLAGS"]),
            ge_asan_bin: ("wotbench-ge", san, v["GE_ASAN_LDFLAGS"]),
            device_bin: ("wotbench-device", v["ALL_CFLAGS"], v["DEV_LDFLAGS"]),
            device_asan_bin: ("wotbench-device", san, v["DEV_ASAN_LDFLAGS"])}
    version = subprocess.run([v["CC"], "-dumpfullversion"], capture_output=True, text=True,
                             check=True).stdout.strip()
    head = git("rev-parse", "HEAD").strip()
    c_dirty = bool(git("status", "--porcelain", "--untracked-files=normal", "--", *disclosure.C_SOURCES).strip())
    for binary, (program, cflags, ldflags) in want.items():
        p = subprocess.run([str(binary), "--build-info"], capture_output=True, text=True, timeout=10)
        assert p.returncode == 0 and p.stderr == "" and len(p.stdout.splitlines()) == 1, p
        info = json.loads(p.stdout)
        assert disclosure.parse_build_info(p.stdout) == (info, None)
        assert (info["program"], info["cflags"], info["ldflags"]) == (program, cflags, ldflags), binary
        assert "-O2" in cflags or "-fsanitize=address,undefined" in cflags      # the variables were read
        assert info["compiler"].split()[0] in ("gcc", "clang") and version in info["compiler"]
        assert (info["git_commit"], info["git_dirty"]) == (head, c_dirty), binary
