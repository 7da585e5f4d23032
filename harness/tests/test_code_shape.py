"""Size limits of the Python code outside tests (issue W2 1/5): a function
longer than ~80 lines or a module longer than ~450 lines is a sign that it
does several jobs. Benchmarks and tests are exempt."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("harness", "tracegen", "reporting", "cd-module")
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 450


def _sources() -> list[Path]:
    out = []
    for folder in FOLDERS:
        for f in sorted((REPO / folder).rglob("*.py")):
            rel = f.relative_to(REPO).parts
            if "tests" in rel or "bench" in rel or f.stem == "bench":
                continue
            out.append(f)
    return out


def long_functions(path: Path, limit: int = MAX_FUNCTION_LINES) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    return [f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{n.lineno} "
            f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and n.end_lineno is not None and n.end_lineno - n.lineno + 1 > limit]


def test_the_limit_check_sees_a_long_function(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("def f():\n" + "    x = 1\n" * 90)
    assert long_functions(f) and not long_functions(f, limit=100)


def test_sources_are_found() -> None:
    names = {f.name for f in _sources()}
    assert {"__init__.py", "cli.py"} <= names and len(names) > 20


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(REPO)))
def test_module_and_function_sizes(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(REPO)}: {lines} lines"
    assert long_functions(path) == []
