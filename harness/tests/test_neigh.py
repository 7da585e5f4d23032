"""The host-wide ARP table against a run's size (harness/host/neigh.py), on a
fake /proc/sys/net/ipv4/neigh/default folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from wotbench.base.errors import UserError
from wotbench.host import neigh as _neigh


def neigh_dir(tmp_path: Path, thresh2: int = 512, thresh3: int = 1024) -> Path:
    d = tmp_path / "neigh"
    d.mkdir()
    (d / "gc_thresh2").write_text(f"{thresh2}\n")
    (d / "gc_thresh3").write_text(f"{thresh3}\n")
    return d


def test_small_run_leaves_the_defaults(tmp_path):
    d = neigh_dir(tmp_path)
    assert _neigh.needed(0) <= 512 and _neigh.ensure(0, d) is None
    assert (d / "gc_thresh2").read_text() == "512\n"


def test_thousand_devices_raise_both_thresholds(tmp_path):
    d = neigh_dir(tmp_path)
    change = _neigh.ensure(1003, d)
    want = 4 * 1003 + _neigh.MARGIN
    assert change is not None and change.before == (512, 1024) and change.after == (want, 2 * want)
    assert int((d / "gc_thresh2").read_text()) == want and int((d / "gc_thresh3").read_text()) == 2 * want
    assert change.as_dict()["before"] == [512, 1024]
    assert _neigh.ensure(1003, d) is None                 # now large enough: nothing more to do


def test_larger_cap_is_kept(tmp_path):
    d = neigh_dir(tmp_path, 512, 100_000)
    change = _neigh.ensure(1000, d)
    assert change is not None and change.after == (_neigh.needed(1000), 100_000)


def test_unwritable_thresholds_are_a_user_error_naming_the_sysctl(tmp_path):
    # A read-only sysctl (mode 0444: even root cannot write it) in place of
    # gc_thresh3, one whose value is fixed at boot (fs/file-nr, used before,
    # counts open files and changed between the read below and the message).
    ro = Path("/proc/sys/kernel/ngroups_max")
    d = neigh_dir(tmp_path)
    (d / "gc_thresh3").unlink()
    (d / "gc_thresh3").symlink_to(ro)
    cap = int(ro.read_text().split()[0])
    with pytest.raises(UserError, match=rf"gc_thresh2/3 are 512/{cap} and cannot be raised.*sysctl -w"):
        _neigh.ensure(1000, d)
    assert (d / "gc_thresh2").read_text() == "512\n"          # nothing half-set


def test_host_without_the_files_is_left_alone(tmp_path):
    assert _neigh.ensure(5000, tmp_path / "absent") is None
