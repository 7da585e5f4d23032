"""A full disk is one line, not a traceback (issue W2 5/5: `wotbench report`
crashed twice with ENOSPC). The kernel's /dev/full gives a real ENOSPC."""

from __future__ import annotations

import argparse

import pytest

from wotbench import _run_cli as run_cli, cli


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
