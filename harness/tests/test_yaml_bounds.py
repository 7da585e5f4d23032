"""What a spec may cost to load (issue W2 5/5): an alias bomb, a deeply
nested document and an oversized file are one-line errors (exit 2) before
anything expands, and ordinary aliases still work."""

from __future__ import annotations

import subprocess
import sys

import pytest

from wotbench.base.errors import UserError
from wotbench.spec import _yaml

BOMB = "\n".join(
    [f'a: &a [{",".join(["x"] * 9)}]']
    + [f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)]) + "\n"


def test_alias_bomb_is_refused_at_its_line():
    with pytest.raises(UserError, match=r"expands to more than 100000 YAML nodes") as err:
        _yaml.loads(BOMB, "bomb.yaml")
    assert err.value.file == "bomb.yaml" and err.value.line is not None and err.value.line <= 9


def test_ordinary_aliases_still_load():
    src = _yaml.loads("base: &g {count: 2, service: det:1ms}\ndevices: [*g, *g]\n", "ok.yaml")
    assert src.data["devices"] == [{"count": 2, "service": "det:1ms"}] * 2


def test_deep_nesting_is_an_error_not_a_traceback():
    with pytest.raises(UserError, match="nested too deeply"):
        _yaml.loads("x: " + "[" * 5000 + "]" * 5000 + "\n", "deep.yaml")


def test_oversized_file_is_refused_before_reading(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("# " + "x" * _yaml.MAX_BYTES + "\n")
    with pytest.raises(UserError, match="larger than the 1048576 bytes"):
        _yaml.load(big)


def test_plan_of_an_alias_bomb_exits_2_with_one_line_in_bounded_memory(tmp_path):
    spec = tmp_path / "bomb.yaml"
    spec.write_text(BOMB)
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run([sys.executable, '-m', 'wotbench.commands.main', 'plan', sys.argv[1]],\n"
            "                   capture_output=True, text=True)\n"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.stderr.write(p.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=120)
    rc, rss_kb = map(int, r.stdout.split())
    assert rc == 2 and len(r.stderr.strip().splitlines()) == 1 and "bomb.yaml:" in r.stderr
    assert rss_kb < 400 * 1024            # refused before expanding (it grew past 4 GB before)
