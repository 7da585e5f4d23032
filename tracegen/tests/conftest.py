"""Shared fixtures for tracegen tests: specs written to disk, the CLI run in-process."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench.spec import WorkloadSpec
from wotbench.spec import load as load_tests


@pytest.fixture
def spec_file(tmp_path: Path) -> Callable[[str], Path]:
    """Write a YAML spec (dedented) to tmp_path/exp.yaml and return its path."""

    def write(text: str, name: str = "exp.yaml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"))
        return p

    return write


@pytest.fixture
def load_spec(spec_file: Callable[[str], Path]) -> Callable[[str], WorkloadSpec]:
    """Parse a YAML spec text into a WorkloadSpec (through a real file, for line numbers)."""

    def load(text: str) -> WorkloadSpec:
        return load_tests(spec_file(text))[0].spec.workload

    return load


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """Run ``wotbench ARGS`` in-process; returns (status, stdout, stderr)."""
    from wotbench.commands.main import main

    def run(*args: str) -> tuple[int, str, str]:
        rc = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
