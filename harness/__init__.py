"""WoTbench: a containerized CoAP device-emulation testbed."""

from os import PathLike
from pathlib import Path

from typing import TYPE_CHECKING

from wotbench._errors import UserError

if TYPE_CHECKING:
    from wotbench.reporting._load import Run

__all__ = ["UserError", "run", "load_run"]
__version__ = "0.1.0"


def run(spec: str | PathLike[str], results: str | PathLike[str] = "results",
        progress: bool = True) -> list[Path]:
    """Runs an experiment spec on a Docker testbed; returns the results dirs
    (see :func:`wotbench._runner.run`)."""
    from wotbench._runner import run as _run

    return _run(spec, results, progress)


def load_run(path: str | PathLike[str]) -> "Run":
    """A finished run's DataFrames (requests, cd, monitor) and summary, for
    notebooks (see :func:`wotbench.reporting.load_run`)."""
    from wotbench.reporting import load_run as _load_run

    return _load_run(path)
