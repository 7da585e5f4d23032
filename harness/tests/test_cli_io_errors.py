"""A full disk is one line, not a traceback (issue W2 5/5: `wotbench report`
crashed twice with ENOSPC). The kernel's /dev/full gives a real ENOSPC, and
so does a small tmpfs filled to the last block."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from wotbench.commands import main as cli
from wotbench.commands import run_cmd as run_cli
from wotbench.reporting.bench.synth import SynthSpec, synth_run


def _write_to_full(args: argparse.Namespace) -> int:
    with open("/dev/full", "w") as f:
        f.write("x" * 8192)
        f.flush()
    return 0


def test_enospc_is_one_line_and_exit_1(monkeypatch, capsys):
    monkeypatch.setattr(run_cli, "cmd_clean", _write_to_full)      # a command that fills the disk
    assert cli.main(["clean", "--run", "none"]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["error: No space left on device"]


def test_other_os_errors_still_raise(monkeypatch):
    def missing(args: argparse.Namespace) -> int:
        open("/nonexistent/wotbench-file")
        return 0

    monkeypatch.setattr(run_cli, "cmd_clean", missing)
    with pytest.raises(FileNotFoundError):
        cli.main(["clean", "--run", "none"])


def test_report_on_a_really_full_disk(tmp_path):
    """The fault as found (issue W2 5/5): a run folder on a full file system
    (a 16 MiB tmpfs, filled to the last block). `wotbench report` says so in
    one line and exits 1, leaving no temporary file; with room again it
    renders the report."""
    if os.getuid() != 0:
        pytest.fail("mounting a tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "wotbench-full", str(disk)], check=True)
    try:
        run = synth_run(disk / "run", SynthSpec(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0,
                                                cooldown_s=1.0, calibration_s=15.0))
        before = {p.relative_to(run) for p in run.rglob("*")}
        with open(disk / "fill", "wb") as f:          # every free block taken
            with pytest.raises(OSError, match="No space left"):
                while True:
                    f.write(b"\0" * (1 << 16))
                    f.flush()
        r = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "report", str(run)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 1, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and "No space left on device" in lines[0], lines
        assert not [p for p in run.rglob("*") if ".tmp" in p.name], "a temporary file was left behind"
        assert {p.relative_to(run) for p in run.rglob("*") if p.is_file()} <= before
        (disk / "fill").unlink()
        r = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "report", str(run)], capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        assert (run / "report" / "index.html").exists()
    finally:
        subprocess.run(["umount", str(disk)], check=True)
