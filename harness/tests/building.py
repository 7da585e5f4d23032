"""Building what a native test runs, once for every test folder.

Outside ``make test`` a test's session fixture runs ``make`` of the
binaries it needs (incremental: a no-op when they are up to date; when make
itself cannot run, as with another part's build.mk mid-edit, binaries that
exist are used). ``make test`` builds them before pytest and runs part of
the native tier on 2 workers with :data:`PREBUILT_ENV` set: there a fixture
only checks that they exist, because a worker whose make relinked a binary
(the build-info stamp follows the tree's dirty state) while the other
worker ran it would fail with ETXTBSY.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["PREBUILT_ENV", "build"]

#: Set to 1 by the Makefile's test target on the pytest that runs on 2 workers.
PREBUILT_ENV = "WOTBENCH_PREBUILT"


def build(root: Path, targets: Sequence[Path]) -> None:
    """``make`` the ``targets`` (paths under ``root``) or, prebuilt, check that they exist."""
    rel = [str(t.relative_to(root)) for t in targets]
    if os.environ.get(PREBUILT_ENV) == "1":
        missing = [r for r, t in zip(rel, targets, strict=True) if not t.exists()]
        if missing:
            pytest.fail(f"{PREBUILT_ENV}=1 but not built: {' '.join(missing)} (make test builds them first)")
        return
    proc = subprocess.run(["make", "-C", str(root), "--no-print-directory", *rel], capture_output=True, text=True)
    if proc.returncode != 0 and not all(t.exists() for t in targets):
        pytest.fail(f"make {' '.join(rel)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
