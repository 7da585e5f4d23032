"""Lazy exports of a package: its ``__init__`` names what it offers and the
private module each comes from (``_WHERE``), and the module is imported on
first use, so that ``wotbench --help`` and ``wotbench plan`` do not load
NumPy, pandas or SciPy for what they do not use."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["exports"]


def exports(package: str, where: Mapping[str, str],
            names: Sequence[str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: ``where`` maps
    each exported name to its module inside the package."""

    def getattr_(name: str) -> Any:
        mod = where.get(name)
        if mod is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{mod}"), name)

    def dir_() -> list[str]:
        return sorted(names)

    return getattr_, dir_
