"""Shared fixtures for tracegen tests: specs written to disk (wotbench.tests.specfiles),
the CLI run in-process."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wotbench.tests.specfiles import load_spec, spec_file  # noqa: F401  (re-exported fixtures)


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``wotbench ARGS`` in-process; returns (status, stdout, stderr)."""
    from wotbench.commands.main import main

    def run(*args: str) -> tuple[int, str, str]:
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
