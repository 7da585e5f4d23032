"""One .clang-format and one .clang-tidy (repo root) for both C programs:
every .c/.h file under gateway-emulator/ and device/ (fuzz/ and bench/
included) is exactly as clang-format leaves it, and `make tidy` (clang-tidy:
bugprone-*, readability-function-size at 80 lines) finds nothing."""

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


def tool(name: str) -> str:
    """The executable; missing fails under CI=true, skips otherwise."""
    exe = shutil.which(name)
    if exe is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{name} is missing (CI=true: the style check must run; "
                        f"apt-get install {name})")
        pytest.skip(f"{name} is not installed (apt-get install {name})")
    return exe


def clang_format() -> str:
    return tool("clang-format")


def check(exe: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, "--dry-run", "--Werror", "--style=file", *map(str, files)],
                          cwd=cwd, capture_output=True, text=True, timeout=120)


def test_one_style_file_for_the_tree():
    assert (ROOT / ".clang-format").is_file()
    extra = [p for d in C_DIRS for p in (ROOT / d).rglob(".clang-format")]
    assert not extra, extra
    files = c_files()
    for sub in ("gateway-emulator/fuzz/fuzz_trace.c", "device/fuzz/fuzz_request.c",
                "device/bench/devload.c", "gateway-emulator/state.h", "device/counters.h"):
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


def tidy(exe: str, files: list[Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, "--quiet", *map(str, files), "--", "-std=c11", "-D_GNU_SOURCE"],
                          cwd=cwd, capture_output=True, text=True, timeout=300)


def test_clang_tidy_finds_nothing():
    tool("clang-tidy")
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "tidy"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, "make tidy:\n" + p.stdout[-4000:] + p.stderr[-2000:]
    assert "warning:" not in p.stdout and "error:" not in p.stdout, p.stdout[-4000:]


def test_tidy_covers_every_c_file():
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "--eval",
                        "print-var-%: ; @echo $($*)", "print-var-TIDY_SRCS"],
                       capture_output=True, text=True, check=True)
    assert sorted(p.stdout.split()) == sorted(str(f.relative_to(ROOT)) for f in c_files()
                                              if f.suffix == ".c")


def test_tidy_config_fails_a_long_function_and_a_bugprone_pattern(tmp_path):
    exe = tool("clang-tidy")
    shutil.copy(ROOT / ".clang-tidy", tmp_path / ".clang-tidy")
    good = tmp_path / "good.c"
    good.write_text("int f(int x) { return x + 1; }\n")
    long_body = "".join(f"  x += {i};\n" for i in range(85))
    long = tmp_path / "long.c"
    long.write_text(f"int g(int x) {{\n{long_body}  return x;\n}}\n")
    bug = tmp_path / "bug.c"  # a strcmp used as a truth value
    bug.write_text("#include <string.h>\nint h(const char *a) { return !strcmp(a, \"x\") "
                   "|| strcmp(a, \"y\"); }\n")
    assert tidy(exe, [good], tmp_path).returncode == 0
    p = tidy(exe, [long], tmp_path)
    assert p.returncode != 0 and "readability-function-size" in p.stdout
    p = tidy(exe, [bug], tmp_path)
    assert p.returncode != 0 and "bugprone-suspicious-string-compare" in p.stdout
