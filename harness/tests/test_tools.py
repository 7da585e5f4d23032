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


#: The Python outside the package, in folders whose names are not module
#: names: mypy takes their files as top-level modules (conftest, test_cli,
#: ...), which pyproject's [tool.mypy] names one by one. A folder with a
#: conftest.py is a run of its own (two would be one module twice).
OUTSIDE = ("gateway-emulator/tests", "device/tests", "experiments/tests", "gateway-emulator/bench", "device/bench")

#: mypy's incremental cache, kept between runs (gitignored): a fresh clone
#: checks everything (~10 s, mostly the stubs of NumPy, pandas and SciPy),
#: the inner loop only what changed. One test runs mypy, so one process at a
#: time writes it; the outside runs share the package's options, so its
#: stubs are checked once.
CACHE = REPO / ".mypy_cache" / "wotbench"


def _outside_runs() -> list[list[str]]:
    runs: list[list[str]] = []
    rest: list[str] = []
    for folder in OUTSIDE:
        files = sorted(str(f.relative_to(REPO)) for f in (REPO / folder).glob("*.py"))
        assert files, f"no Python in {folder}"
        if (REPO / folder / "conftest.py").exists():
            runs.append(files)
        else:
            rest += files
    return [*runs, rest] if rest else runs


def test_mypy_finds_nothing() -> None:
    """The package (pyproject's `packages`), then the Python outside it."""
    _tool("mypy", "--cache-dir", str(CACHE))
    for files in _outside_runs():
        _tool("mypy", "--cache-dir", str(CACHE), *files)


def test_mypy_names_every_module_outside_the_package() -> None:
    """pyproject's override for the outside modules lists exactly the files
    of OUTSIDE: a new file there is named, or mypy would hold it to the
    package's strictness with a message that does not say why."""
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    named = next(set(o["module"]) for o in mypy["overrides"] if "conftest" in o["module"])
    present = {f.stem for folder in OUTSIDE for f in (REPO / folder).glob("*.py")}
    assert named == present, (f"pyproject.toml [tool.mypy] override: add {sorted(present - named)}, "
                              f"remove {sorted(named - present)}")
    tests = next(o for o in mypy["overrides"] if "wotbench.tests.*" in o["module"])
    outside = next(o for o in mypy["overrides"] if "conftest" in o["module"])
    assert {k: v for k, v in outside.items() if k != "module"} == {k: v for k, v in tests.items() if k != "module"}


@pytest.mark.parametrize(("module", "owner"), [
    ("wotbench.spec._yaml", "wotbench.spec"), ("wotbench.execution.phases._ge", "wotbench.execution.phases"),
    ("wotbench.engine", None), ("wotbench.base.__init__", None), ("wotbench._x.y", "wotbench"),
])
def test_a_private_module_belongs_to_the_package_that_holds_it(module: str, owner: str | None) -> None:
    assert owner_of_private(module) == owner
