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
