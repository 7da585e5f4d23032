"""Spec-file fixtures shared by the test folders (their conftest.py files
import them): a YAML spec written to tmp_path, and a workload parsed from one."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench.spec import WorkloadSpec, load


@pytest.fixture
def spec_file(tmp_path: Path) -> Callable[..., Path]:
    """Writes a dedented YAML spec to tmp_path (exp.yaml unless named) and returns its path."""

    def write(text: str, name: str = "exp.yaml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"))
        return p

    return write


@pytest.fixture
def load_spec(spec_file: Callable[..., Path]) -> Callable[[str], WorkloadSpec]:
    """Parses a YAML spec text into a WorkloadSpec (through a real file, for line numbers)."""

    def parse(text: str) -> WorkloadSpec:
        workload = load(spec_file(text))[0].spec.workload
        assert workload is not None
        return workload

    return parse
