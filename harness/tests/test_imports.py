"""The package's import structure: every module imports alone in a fresh
interpreter, and no module imports (at any depth, inside functions too) a
module that imports it back. README.md's layout table is the map: a folder
is one import name (pyproject.toml's package-dir)."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _package_dirs() -> dict[str, Path]:
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = {pkg: REPO / d for pkg, d in conf["package-dir"].items()}
    for pkg in conf["packages"]:          # subpackages inside a mapped folder
        if pkg not in dirs:
            parent, _, leaf = pkg.rpartition(".")
            dirs[pkg] = dirs[parent] / leaf
    return dirs


def _modules() -> dict[str, Path]:
    """Every importable module of the distribution (tests and scripts excluded)."""
    out: dict[str, Path] = {}
    for pkg, d in _package_dirs().items():
        out[pkg] = d / "__init__.py"
        for f in sorted(d.glob("*.py")):
            if f.name != "__init__.py":
                out[f"{pkg}.{f.stem}"] = f
    return out


MODULES = _modules()


def _lazy_targets(tree: ast.Module, pkg: str) -> set[str]:
    """A package __init__ that exports names lazily (``_WHERE = {name: module}``)."""
    out: set[str] = set()
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_WHERE"
                                                 for t in node.targets)
                and isinstance(node.value, ast.Dict)):
            out |= {f"{pkg}.{v.value}" for v in node.value.values if isinstance(v, ast.Constant)}
    return out


def _imports(name: str, path: Path) -> set[str]:
    """Modules of ours that ``name`` imports anywhere in its text, except under
    ``if TYPE_CHECKING:`` (never executed)."""
    tree = ast.parse(path.read_text(), str(path))
    is_pkg = path.name == "__init__.py"
    pkg = name if is_pkg else name.rpartition(".")[0]
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for b in node.body for n in ast.walk(b)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = pkg.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.add(sub if sub in MODULES else base)
    if is_pkg:
        found |= _lazy_targets(tree, pkg)
    return {m for m in found if m in MODULES and m != name}


def import_graph() -> dict[str, set[str]]:
    return {name: _imports(name, path) for name, path in MODULES.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path (first node repeated last), else None."""
    state: dict[str, int] = {}          # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                cyc = visit(m)
                if cyc:
                    return cyc
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            cyc = visit(n)
            if cyc:
                return cyc
    return None


def test_the_cycle_finder_finds_a_cycle_and_accepts_a_dag() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_imports_inside_functions_and_lazy_tables_are_edges(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text("def f():\n    from wotbench import _errors\n"
                   "if TYPE_CHECKING:\n    from wotbench import formats\n")
    assert _imports("wotbench.tracegen.m", mod) == {"wotbench._errors"}
    init = tmp_path / "__init__.py"
    init.write_text('_WHERE = {"x": "_errors"}\n')
    assert _imports("wotbench", init) == {"wotbench._errors"}


def test_every_folder_is_one_import_name() -> None:
    dirs = _package_dirs()
    assert dirs["wotbench"] == REPO / "harness"
    for pkg, d in dirs.items():
        assert (d / "__init__.py").is_file(), f"{pkg} ({d}) has no __init__.py"
    assert len(set(dirs.values())) == len(dirs)


def test_no_import_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_packages_declare_their_public_api() -> None:
    for pkg, d in _package_dirs().items():
        tree = ast.parse((d / "__init__.py").read_text())
        names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                 if isinstance(t, ast.Name)}
        assert "__all__" in names, f"{pkg} has no __all__"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_alone(module: str) -> None:
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True,
                       timeout=120, cwd="/")
    assert r.returncode == 0, r.stderr[-2000:]
