"""`make` is quiet: a line per step, every command only with V=1 (Makefile,
*/build.mk), and the static links admit no warning (--fatal-warnings,
with the numeric-only resolver device/noresolv.c linked into both static
programs so that glibc's getaddrinfo and its link warning stay out)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MAKEFILES = [REPO / "Makefile", *sorted(REPO.glob("*/build.mk"))]
QUIET = ("@", "$(Q)", "$(call say,")


def recipe_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) of every recipe line's first physical line
    (a line that continues the one before it with a backslash is not one)."""
    out, continued = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("\t") and not continued:
            out.append((n, line[1:]))
        continued = line.endswith("\\")
    return out


def test_every_recipe_line_is_quiet_unless_v_is_1() -> None:
    loud = [f"{p.relative_to(REPO)}:{n}: {line[:60]}" for p in MAKEFILES
            for n, line in recipe_lines(p.read_text()) if not line.startswith(QUIET)]
    assert loud == []
    assert sum(len(recipe_lines(p.read_text())) for p in MAKEFILES) > 60    # the parse found the recipes


def test_the_check_finds_a_loud_line() -> None:
    text = "a: b\n\t@mkdir -p x\n\tgcc -c a.c \\\n\t  -o a.o\nc:\n\t$(Q)cc x\n"
    assert [line for _, line in recipe_lines(text) if not line.startswith(QUIET)] == ["gcc -c a.c \\"]


def test_v_1_shows_every_command() -> None:
    top = (REPO / "Makefile").read_text()
    block = re.search(r"ifeq \(\$\(V\),1\)\n(.*?)\nelse\n(.*?)\nendif", top, re.S)
    assert block is not None
    loud, quiet = block.group(1), block.group(2)
    assert re.search(r"^\s*Q :=\s*$", loud, re.M) and re.search(r"^\s*say =\s*$", loud, re.M)
    assert re.search(r"^\s*Q := @$", quiet, re.M) and "printf" in quiet


def test_static_links_fail_on_a_warning_and_link_the_numeric_resolver() -> None:
    top = (REPO / "Makefile").read_text()
    assert re.search(r"^STATIC_LDFLAGS := .*-Wl,--fatal-warnings", top, re.M)
    ge = (REPO / "gateway-emulator" / "build.mk").read_text()
    dev = (REPO / "device" / "build.mk").read_text()
    assert re.search(r"^\$\(BIN\)/wotbench-ge: .*\$\(GE_OBJ\)/noresolv\.o", ge, re.M)
    assert re.search(r"^\$\(BIN\)/wotbench-device: .*noresolv\.o", dev, re.M)
    # Only the static programs: the ASan builds are dynamic and keep glibc's resolver.
    assert "noresolv" not in "".join(re.findall(r"^\$\(BUILD\)/asan/wotbench-\w+: .*$", ge + dev, re.M))
