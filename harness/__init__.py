"""WoTbench: a containerized CoAP device-emulation testbed.

The spec types and loaders are those of :mod:`wotbench.spec` (imported on
first use, so that ``wotbench --help`` does not load NumPy)."""

from __future__ import annotations

import importlib
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wotbench.base.errors import UserError
from wotbench.base.version import __version__  # noqa: F401  (the package's version)

if TYPE_CHECKING:
    from wotbench.reporting import Run
    from wotbench.spec import RunSpec, Spec, load_saved
    from wotbench.spec import load as load_spec

__all__ = ["UserError", "run", "load_run", "Spec", "RunSpec", "load_spec", "load_saved"]

#: Public names of wotbench.spec, under the names they have here.
_SPEC = {"Spec": "Spec", "RunSpec": "RunSpec", "load_spec": "load", "load_saved": "load_saved"}


def __getattr__(name: str) -> Any:
    if name in _SPEC:
        return getattr(importlib.import_module("wotbench.spec"), _SPEC[name])
    raise AttributeError(f"module 'wotbench' has no attribute {name!r}")


def run(spec: str | PathLike[str], results: str | PathLike[str] = "results",
        progress: bool = True) -> list[Path]:
    """Runs an experiment spec on a Docker testbed; returns the results dirs
    (see :func:`wotbench.execution.runner.run`)."""
    from wotbench.execution.runner import run as _run

    return _run(spec, results, progress)


def load_run(path: str | PathLike[str]) -> Run:
    """A finished run's DataFrames (requests, cd, monitor) and summary, for
    notebooks (see :func:`wotbench.reporting.load_run`)."""
    from wotbench.reporting import load_run as _load_run

    return _load_run(path)
