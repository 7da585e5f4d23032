"""Where `wotbench report` writes, checked before it prints or writes
anything (wotbench.base.outpath): ``RUN_DIR/report/`` of each run and the sweep
report's folder. Light (no pandas, no matplotlib): a refusal is fast."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from wotbench.base import outpath
from wotbench.base import rundir as layout

__all__ = ["REPORT_CONTENTS", "check_outputs", "report_dir", "sweep_dir"]

#: What a report folder holds: all that `wotbench report` writes into one.
REPORT_CONTENTS = outpath.Contents("wotbench report", frozenset({layout.REPORT_HTML, layout.REPORT_MD}),
                                   {layout.FIGURES: r"[A-Za-z0-9_.-]+\.png"})


def report_dir(run_dir: Path) -> Path:
    """``RUN_DIR/report``, refused (UserError, nothing written) when it or
    its figures folder is a symlink (a write through it would leave the run
    folder), is not a folder, or holds files a report does not write."""
    out = outpath.inside(run_dir, layout.REPORT, field=layout.REPORT)
    outpath.inside(run_dir, Path(layout.REPORT, layout.FIGURES), field=layout.REPORT)
    outpath.check_reusable(out, REPORT_CONTENTS, field=layout.REPORT)
    return out


def sweep_dir(out: str | os.PathLike[str], field: str = "--out") -> Path:
    """The sweep report's folder as given, refused when it resolves to a
    file, a symlink loop, a system folder, or a folder holding files a
    report does not write."""
    real = outpath.resolve(out, field)
    outpath.check_reusable(real, REPORT_CONTENTS, field=field, text=os.fspath(out))
    return Path(out)


def check_outputs(run_dirs: Sequence[Path], sweep_out: str | os.PathLike[str] | None
                  ) -> tuple[list[Path], Path | None]:
    """Every folder a report of ``run_dirs`` writes (the sweep's with
    several runs), each checked; the first refusal is a UserError."""
    outs = [report_dir(Path(d)) for d in run_dirs]
    if len(run_dirs) < 2:
        return outs, None
    assert sweep_out is not None
    return outs, sweep_dir(sweep_out)
