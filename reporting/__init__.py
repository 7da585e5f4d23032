"""Reporting: workload integrity, run verdict, plots and reports.

Public API (imported lazily so that ``wotbench --help`` stays fast):

- ``analyze_run(run_dir) -> dict``: the analysis sections of summary.json,
  with ``verdict`` and ``reasons``; ``summarize_run(run_dir)`` is the same,
  or the verdict of the run's records alone when its data cannot be
  analysed (the harness calls it); ``late_send_us(run_dir)``: the GEs'
  --late-us.
- ``load_run(path) -> Run``: each GE's requests as a lazy handle (``run.ges``; for small
  runs ``run.requests`` the measurement phase's rows as one DataFrame, ``run.all_requests``
  every row), the CD and monitor DataFrames and the summary.
- ``Thresholds``: the validity limits the verdict applies (the spec's
  ``validity:``, see :mod:`wotbench.spec`), as ``analyze`` takes them.
- ``write_reports(run_dirs, out_dir)``: terminal text, Markdown and HTML.
- ``cd_series(cd_csv)``, ``cd_tests(t, rd, phases, thresholds)``: a CD-GE
  output's R_d and its contention tests (``CdTests``: the paper's, the
  change test and their verdict) as the report makes them, ``cd_change``
  the change test alone;
  ``read_interference(run_dir)``: interference.json; ``peak_rps(t_us)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wotbench.base.lazy import exports

# The same names for mypy and editors, which cannot follow __getattr__
# (harness/tests/test_lazy_exports.py holds them to _WHERE and __all__).
if TYPE_CHECKING:
    from wotbench.reporting._analyze import Analysis, analyze, analyze_run, late_send_us, summarize_run
    from wotbench.reporting._checks import Thresholds
    from wotbench.reporting._gesneeded import WINDOW_US, peak_rps
    from wotbench.reporting._host import CdTests, cd_change, cd_series, cd_tests
    from wotbench.reporting._injected import read_interference
    from wotbench.reporting._load import Phases, Run, RunSummary, load_run
    from wotbench.reporting._records import OBSERVED
    from wotbench.reporting._render import write_reports
    from wotbench.reporting._shape import read_record

__all__ = ["analyze_run", "analyze", "summarize_run", "late_send_us", "Analysis", "load_run", "Run",
           "RunSummary", "Phases", "Thresholds", "write_reports", "peak_rps", "cd_series", "cd_tests", "CdTests",
           "cd_change", "read_interference", "OBSERVED", "read_record", "WINDOW_US"]

_WHERE = {
    "analyze_run": "_analyze", "analyze": "_analyze", "Analysis": "_analyze",
    "summarize_run": "_analyze", "late_send_us": "_analyze",
    "load_run": "_load", "Run": "_load", "RunSummary": "_load", "Phases": "_load",
    "Thresholds": "_checks",          # wotbench.spec's, as the checks take it
    "write_reports": "_render",
    "cd_series": "_host", "cd_tests": "_host", "CdTests": "_host",   # one CD series and its tests (validate-cd too)
    "cd_change": "_host",
    "read_interference": "_injected",
    "OBSERVED": "_records", "read_record": "_shape",   # the run records the harness writes and reads
    # the trace's peak rate (and its window), also for gateway.instances: auto
    "peak_rps": "_gesneeded", "WINDOW_US": "_gesneeded",
}


__getattr__, __dir__ = exports(__name__, _WHERE, __all__)
