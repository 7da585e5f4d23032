"""Reporting: workload integrity, run verdict, plots and reports.

Public API (imported lazily so that ``wotbench --help`` stays fast):

- ``analyze_run(run_dir) -> dict``: the analysis sections of summary.json,
  with ``verdict`` and ``reasons`` (the harness calls it).
- ``load_run(path) -> Run``: DataFrames (requests, cd, monitor) and the summary.
- ``Thresholds`` / ``parse_validity(mapping, src=None)``: the validity limits
  and the reader of a spec's ``validity:`` mapping.
- ``write_reports(run_dirs, out_dir)``: terminal text, Markdown and HTML.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["analyze_run", "analyze", "Analysis", "load_run", "Run", "RunSummary", "Phases",
           "Thresholds", "parse_validity", "write_reports"]

_WHERE = {
    "analyze_run": "_analyze", "analyze": "_analyze", "Analysis": "_analyze",
    "load_run": "_load", "Run": "_load", "RunSummary": "_load", "Phases": "_load",
    "Thresholds": "_thresholds", "parse_validity": "_thresholds",
    "write_reports": "_render",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'wotbench.reporting' has no attribute {name!r}")
    return getattr(importlib.import_module(f"wotbench.reporting.{mod}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
