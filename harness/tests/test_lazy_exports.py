"""The packages that export names lazily (:mod:`wotbench.base.lazy`): each
``__init__`` names its exports three times, in ``__all__``, in ``_WHERE``
(the private module each is imported from on first use) and in an ``if
TYPE_CHECKING:`` block (so that mypy and editors see the real definitions,
not ``Any``). The three must agree, each name must resolve at run time to
its module's object, and importing the packages must still load none of
NumPy, pandas or SciPy (``wotbench --help`` and ``wotbench plan`` stay
light)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

LAZY = ("wotbench.reporting", "wotbench.tracegen", "wotbench.execution.phases")
HEAVY = ("numpy", "pandas", "scipy")


@dataclass(frozen=True)
class Exports:
    """What a lazy ``__init__`` says, read from its source."""

    all_: list[str]
    where: dict[str, str]
    #: (module, name, asname) of each import under ``if TYPE_CHECKING:``
    typed: list[tuple[str, str, str | None]]


def _init_of(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin is not None, package
    return Path(spec.origin)


def _assigned(tree: ast.Module, name: str) -> object:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"no literal {name} = ... at the top level")


def _type_checking_imports(tree: ast.Module) -> list[tuple[str, str, str | None]]:
    blocks = [node for node in tree.body
              if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"]
    assert len(blocks) == 1, f"expected one `if TYPE_CHECKING:` block, found {len(blocks)}"
    found: list[tuple[str, str, str | None]] = []
    for stmt in blocks[0].body:
        assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None and stmt.level == 0, \
            f"line {stmt.lineno}: only `from wotbench.<package>.<module> import name` belongs here"
        found += [(stmt.module, alias.name, alias.asname) for alias in stmt.names]
    return found


def _exports(package: str) -> Exports:
    tree = ast.parse(_init_of(package).read_text(encoding="utf-8"))
    all_, where = _assigned(tree, "__all__"), _assigned(tree, "_WHERE")
    assert isinstance(all_, list) and isinstance(where, dict)
    return Exports(all_, where, _type_checking_imports(tree))


@pytest.mark.parametrize("package", LAZY)
def test_all_and_where_name_the_same_exports(package: str) -> None:
    ex = _exports(package)
    assert len(ex.all_) == len(set(ex.all_)), f"{package}.__all__ names some export twice"
    assert set(ex.all_) == set(ex.where), (f"{package}: only in __all__: {sorted(set(ex.all_) - set(ex.where))}; "
                                           f"only in _WHERE: {sorted(set(ex.where) - set(ex.all_))}")


@pytest.mark.parametrize("package", LAZY)
def test_type_checking_imports_each_export_from_its_module(package: str) -> None:
    ex = _exports(package)
    renamed = [(mod, name, asname) for mod, name, asname in ex.typed if asname not in (None, name)]
    assert not renamed, f"{package}: imported under another name: {renamed}"
    names = [name for _, name, _ in ex.typed]
    assert len(names) == len(set(names)), f"{package}: some name is imported twice under TYPE_CHECKING"
    typed = {name: mod for mod, name, _ in ex.typed}
    where = {name: f"{package}.{mod}" for name, mod in ex.where.items()}
    assert typed == where, (f"{package}: TYPE_CHECKING imports and _WHERE differ: "
                            f"{sorted(set(typed.items()) ^ set(where.items()))}")


@pytest.mark.parametrize("package", LAZY)
def test_each_export_resolves_to_its_modules_object(package: str) -> None:
    pkg = importlib.import_module(package)
    for name, mod in _exports(package).where.items():
        assert getattr(pkg, name) is getattr(importlib.import_module(f"{package}.{mod}"), name), name
    assert dir(pkg) == sorted(_exports(package).all_)


def test_importing_the_lazy_packages_loads_no_numpy_pandas_or_scipy() -> None:
    code = (f"import sys\nimport {', '.join(LAZY)}\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == [], f"importing {', '.join(LAZY)} loaded {proc.stdout.strip()}"
