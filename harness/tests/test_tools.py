"""The standard tools that hold the code, configured in pyproject.toml: ruff
(pyflakes, pycodestyle, import order, bugbear, complexity), import-linter
(the layers of docs/architecture.md, Docker only in the engine, no import of
another package's private module) and mypy (strict over the package as
Python sees it, .pyroot/wotbench). Each must report nothing; a finding fails
with the tool's own output. Run in every tier, so `make check` and CI
(`make test`) both hold them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from wotbench.tests.importcontracts import owner_of_private

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _tool(*argv: str) -> None:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=REPO, capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, f"{' '.join(argv)} found:\n{proc.stdout[-6000:]}{proc.stderr[-2000:]}"


def test_ruff_finds_nothing() -> None:
    _tool("ruff", "check", "--no-cache", "--output-format", "concise")


def test_the_import_contracts_are_kept() -> None:
    _tool("lint-imports", "--no-cache")


def test_mypy_finds_nothing(tmp_path: Path) -> None:
    _tool("mypy", "--cache-dir", str(tmp_path / "mypy-cache"))


@pytest.mark.parametrize(("module", "owner"), [
    ("wotbench.spec._yaml", "wotbench.spec"), ("wotbench.run.phases._ge", "wotbench.run.phases"),
    ("wotbench.engine", None), ("wotbench.base.__init__", None), ("wotbench._x.y", "wotbench"),
])
def test_a_private_module_belongs_to_the_package_that_holds_it(module: str, owner: str | None) -> None:
    assert owner_of_private(module) == owner
