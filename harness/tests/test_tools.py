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
import tomllib
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


#: mypy's incremental cache, kept between runs (gitignored): a fresh clone
#: checks everything (~10 s), the inner loop only what changed. One folder per
#: set of flags and per xdist worker: two runs never write one cache at once.
CACHE = REPO / ".mypy_cache"


def _cache(name: str) -> str:
    return str(CACHE / f"{name}-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}")


def test_mypy_finds_nothing() -> None:
    _tool("mypy", "--cache-dir", _cache("package"))


#: The Python outside the package, in folders whose names are not module
#: names. mypy takes each folder's files as top-level modules (conftest,
#: test_cli, ...), one folder a run: two of them hold a conftest.py.
OUTSIDE = ("gateway-emulator/tests", "device/tests", "experiments/tests", "gateway-emulator/bench", "device/bench")


def _as_the_package_tests() -> list[str]:
    """pyproject's override for the package's tests as mypy flags (an
    override cannot name top-level modules by pattern): each of its
    `disallow_X = false` is `--allow-X`."""
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    override = next(o for o in mypy["overrides"] if "wotbench.tests.*" in o["module"])
    relaxed = {k: v for k, v in override.items() if k != "module"}
    assert relaxed and all(k.startswith("disallow_") and v is False for k, v in relaxed.items()), relaxed
    return [f"--allow-{k.removeprefix('disallow_').replace('_', '-')}" for k in relaxed]


@pytest.mark.parametrize("folder", OUTSIDE)
def test_mypy_finds_nothing_outside_the_package(folder: str) -> None:
    """pyproject's [tool.mypy] holds for files named on the command line
    (its `packages` is used only when none are); the package's tests'
    strictness is added as flags."""
    files = sorted(str(f.relative_to(REPO)) for f in (REPO / folder).glob("*.py"))
    assert files, f"no Python in {folder}"
    _tool("mypy", "--cache-dir", _cache("outside"), *_as_the_package_tests(), *files)


@pytest.mark.parametrize(("module", "owner"), [
    ("wotbench.spec._yaml", "wotbench.spec"), ("wotbench.execution.phases._ge", "wotbench.execution.phases"),
    ("wotbench.engine", None), ("wotbench.base.__init__", None), ("wotbench._x.y", "wotbench"),
])
def test_a_private_module_belongs_to_the_package_that_holds_it(module: str, owner: str | None) -> None:
    assert owner_of_private(module) == owner
