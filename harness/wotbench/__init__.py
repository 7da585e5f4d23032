"""WoTbench: a containerized CoAP device-emulation testbed."""

from os import PathLike
from pathlib import Path

from wotbench._errors import UserError

__all__ = ["UserError", "run"]
__version__ = "0.1.0"


def run(spec: str | PathLike[str], results: str | PathLike[str] = "results",
        progress: bool = True) -> list[Path]:
    """Runs an experiment spec on a Docker testbed; returns the results dirs
    (see :func:`wotbench.harness.runner.run`)."""
    from wotbench.harness.runner import run as _run

    return _run(spec, results, progress)
