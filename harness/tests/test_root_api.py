"""The package root's small API (harness/__init__.py) survives the import of
every layer: no subpackage may take the name of a function the root offers
(a subpackage `wotbench.run` once replaced `wotbench.run()` as soon as it was
imported)."""

from __future__ import annotations

import importlib
import pkgutil

import wotbench


def test_the_root_functions_stay_callable_after_every_module_is_imported() -> None:
    for mod in pkgutil.walk_packages(wotbench.__path__, "wotbench."):
        if ".tests" not in mod.name and not mod.name.startswith("wotbench.tests"):
            importlib.import_module(mod.name)
    for name in ("run", "load_run"):
        assert callable(getattr(wotbench, name)), f"wotbench.{name} is {getattr(wotbench, name)!r}"
    assert set(wotbench.__all__) >= {"run", "load_run", "Spec", "RunSpec", "load_spec", "load_saved", "UserError"}
    for name in wotbench.__all__:
        assert getattr(wotbench, name) is not None


def test_version_flag(capsys) -> None:
    from wotbench.commands.main import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"wotbench {wotbench.__version__}\n"
    assert wotbench.__version__ == "0.1.0"
    assert main([]) == 2                      # no command: still a usage error


def _undocumented_fields(cls: type) -> list[str]:
    """The dataclass fields of ``cls`` with no attribute docstring (a string
    statement right after the field, as in reporting/_load.py)."""
    import ast
    import dataclasses
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body                  # type: ignore[attr-defined]
    documented = {stmt.target.id for stmt, nxt in zip(body, body[1:], strict=False)
                  if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                  and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                  and isinstance(nxt.value.value, str) and nxt.value.value.strip()}
    return [f.name for f in dataclasses.fields(cls) if f.name not in documented]


def test_public_api_is_documented() -> None:
    """What `help()` shows a notebook user: every public name of the root,
    and of what load_run returns, says what it is."""
    import inspect

    from wotbench.reporting._load import GeData, Phases, Run, RunHost, RunSummary

    assert wotbench.__doc__ and "load_run" in wotbench.__doc__
    for name in wotbench.__all__:
        assert (getattr(wotbench, name).__doc__ or "").strip(), f"wotbench.{name} has no docstring"
    assert "wotbench.load_run(" in (wotbench.load_run.__doc__ or "")
    for cls in (Run, GeData, Phases, RunSummary, RunHost):
        assert (cls.__doc__ or "").strip(), cls
        assert _undocumented_fields(cls) == [], f"{cls.__name__}: fields without a docstring"
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name} has no docstring"
    # Run's docstring names each of its fields and its example's names exist.
    for f in ("path", "ges", "cd", "monitor", "containers", "phases", "summary", "manifest", "observed", "hosts",
              "requests", "measure"):
        assert f"``{f}``" in (Run.__doc__ or ""), f
