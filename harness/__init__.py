"""WoTbench: a containerized CoAP device-emulation testbed.

From Python: :func:`run` runs an experiment spec, :func:`load_run` loads a
finished run (``help(wotbench.load_run)``), :func:`load_spec` checks a spec
and returns its tests. The spec types and loaders are those of
:mod:`wotbench.spec` (imported on first use, so that ``wotbench --help``
does not load NumPy)."""

from __future__ import annotations

import importlib
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wotbench.base.errors import UserError
from wotbench.base.version import __version__ as __version__  # the package's version (re-exported)

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
    """A finished run's data for notebooks: its summary, its per-request rows
    and its monitor and contention-detector frames (a :class:`Run`)::

        import wotbench
        run = wotbench.load_run("results/<run-id>")
        print(run.summary.verdict)                   # "valid" or "invalid"; run.summary.reasons says why
        m = run.requests                             # the measurement phase's requests: what the report uses
        print(m[m.status == "ok"].response_us.quantile([.5, .99]))   # the report's p50 / p99

    ``run.all_requests`` has every row, the warm-up and cool-down too;
    ``run.ges[k]`` reads a GE's output lazily, for runs too big for one
    DataFrame; ``run.cd`` and ``run.monitor`` are the contention detector's
    requests and the host's monitor samples. The columns: docs/formats.md;
    the run folder: docs/run-layout.md (see :func:`wotbench.reporting.load_run`)."""
    from wotbench.reporting import load_run as _load_run

    return _load_run(path)
