"""One .clang-format (repo root) for both C programs: every .c/.h file
under gateway-emulator/ and device/ (fuzz/ and bench/ included) is exactly
as clang-format leaves it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from gehelpers import ROOT

C_DIRS = ("gateway-emulator", "device")


def c_files() -> list[Path]:
    return sorted(p for d in C_DIRS for p in (ROOT / d).rglob("*.[ch]"))


def clang_format() -> str:
    """The clang-format executable; missing fails under CI=true, skips otherwise."""
    exe = shutil.which("clang-format")
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail("clang-format is missing (CI=true: the style check must run; "
                        "apt-get install clang-format)")
        pytest.skip("clang-format is not installed (apt-get install clang-format)")
    return exe


def check(exe: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, "--dry-run", "--Werror", "--style=file", *map(str, files)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_one_style_file_for_the_tree():
    assert (ROOT / ".clang-format").is_file()
    extra = [p for d in C_DIRS for p in (ROOT / d).rglob(".clang-format")]
    assert not extra, extra
    files = c_files()
    for sub in ("gateway-emulator/fuzz/fuzz_trace.c", "device/fuzz/fuzz_request.c",
                "device/bench/devload.c", "gateway-emulator/ge.h", "device/counters.h"):
        assert ROOT / sub in files, sub


def test_every_c_file_is_formatted():
    p = check(clang_format(), c_files(), ROOT)
    assert p.returncode == 0, "run clang-format -i on:\n" + p.stderr[-4000:]


def test_a_misformatted_file_fails_the_check(tmp_path):
    exe = clang_format()
    shutil.copy(ROOT / ".clang-format", tmp_path / ".clang-format")
    good = tmp_path / "good.c"
    good.write_text("int main(void) { return 0; }\n")
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void)\n{\n\treturn 0;\n}\n")  # the device's old tabs
    assert check(exe, [good], tmp_path).returncode == 0
    p = check(exe, [good, bad], tmp_path)
    assert p.returncode != 0 and "bad.c" in p.stderr


def test_missing_clang_format_fails_in_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception):
        clang_format()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        clang_format()
