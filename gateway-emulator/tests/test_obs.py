"""obs.c, the GE's Observe classifier (RFC 7641 section 3.4 with a window
of 64 below the highest seq), loss per observation and the payload's
stamps, through the replay driver tests/obs_vectors.c (release and
ASan/UBSan). Expected values are worked out by hand in each test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from gehelpers import ROOT, SAN_ENV

VEC = ROOT / "build" / "test" / "ge-obs-vectors"
VEC_ASAN = ROOT / "build" / "asan" / "ge-obs-vectors"
WRAP = 1 << 24
HALF = 1 << 23


@pytest.fixture(params=["release", "asan"])
def drv(request) -> Path:
    b = VEC if request.param == "release" else VEC_ASAN
    if not b.exists():
        pytest.fail(f"{b} is missing: make build build-asan")
    return b


def replay(binary: Path, lines: list[str]) -> list[str]:
    env = SAN_ENV if binary.parent.name == "asan" else None
    p = subprocess.run([str(binary)], input="".join(x + "\n" for x in lines), capture_output=True,
                       text=True, timeout=60, env=env)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert len(out) == len(lines), (lines, out)
    return out


def statuses(out: list[str]) -> list[tuple[str, int]]:
    """(status, gap) of each `seq` answer."""
    return [(w[0], int(w[2])) for w in (x.split() for x in out) if w[0] not in ("ok", "lost")]


def test_in_order_gap_reorder_duplicate(drv):
    # 5 6 8 7 7: 8 skips one (gap 1), 7 fills it late, the second 7 is a duplicate
    out = replay(drv, ["seq 5 0", "seq 6 10", "seq 8 20", "seq 7 30", "seq 7 40", "seq 8 50",
                       "lost", "lost 10"])
    assert statuses(out[:6]) == [("registered", 0), ("fresh", 0), ("fresh", 1), ("reordered", 0),
                                 ("duplicate", 0), ("duplicate", 0)]
    assert out[5].endswith("distinct 4")
    assert out[6] == "lost 0"          # 5..8 all seen
    assert out[7] == "lost 2"          # the device says it sent 9 and 10 too


def test_wrap_around_is_newer(drv):
    out = replay(drv, [f"seq {WRAP - 2} 0", f"seq {WRAP - 1} 1", "seq 0 2", "seq 2 3",
                       f"seq {WRAP - 1} 4", "seq 1 5", "lost", "lost 4"])
    assert statuses(out[:6]) == [("registered", 0), ("fresh", 0), ("fresh", 0), ("fresh", 1),
                                 ("duplicate", 0), ("reordered", 0)]
    assert out[6] == "lost 0"
    assert out[7] == "lost 2"          # 3 and 4 never arrived


def test_the_2_23_rule(drv):
    # from 100: +2^23-1 is newer; +2^23 exactly is older (RFC 7641 3.4), by
    # 2^23: far beyond the window, so stale and not counted distinct
    out = replay(drv, ["seq 100 0", f"seq {100 + HALF - 1} 1", "new", "seq 100 0",
                       f"seq {100 + HALF} 1", "lost"])
    assert out[0].startswith("registered")
    assert out[1] == f"fresh gap {HALF - 2} stale 0 reset 0 distinct 2"
    assert out[4] == "reordered gap 0 stale 1 reset 0 distinct 1"
    assert out[5] == "lost 0"
    # older by 2^23 + 1 from the wrapped side: V1 > V2, V1 - V2 > 2^23 is newer
    out = replay(drv, [f"seq {HALF + 10} 0", "seq 9 1"])
    assert out[1].startswith(f"fresh gap {HALF - 2} ")


def test_window_edges(drv):
    # 64 below the highest is still told apart; 65 below is stale
    out = replay(drv, ["seq 1000 0", "seq 1064 1", "seq 1000 2", "seq 1001 3", "seq 1001 4",
                       "seq 1065 5", "seq 1000 6", "lost"])
    assert out[1] == "fresh gap 63 stale 0 reset 0 distinct 2"
    assert out[2].startswith("duplicate ")          # 1000 is at bit 63 after the shift
    assert out[3].startswith("reordered gap 0 stale 0")
    assert out[4].startswith("duplicate ")
    assert out[5].startswith("fresh gap 0 ")
    assert out[6] == "reordered gap 0 stale 1 reset 0 distinct 4"  # 65 below: stale
    assert out[7] == f"lost {1065 - 1000 + 1 - 4}"


def test_reordered_below_the_first(drv):
    # the first one to arrive was not the first sent: an older one extends the span
    out = replay(drv, ["seq 50 0", "seq 48 1", "lost"])
    assert out[1].startswith("reordered ")
    assert out[2] == "lost 1"          # 49


def test_128_s_rule(drv):
    # after more than 128 s without a fresh one, any seq is fresh: a reset, no gap
    out = replay(drv, ["seq 500 0", "seq 501 1000", "seq 10 129000"])
    assert out[2] == "reordered gap 0 stale 1 reset 0 distinct 2"  # 128 s exactly: older
    out = replay(drv, ["seq 500 0", "seq 501 1000", "seq 10 129001", "seq 11 129002", "lost"])
    assert out[2] == "fresh gap 0 stale 0 reset 1 distinct 3"
    assert out[3].startswith("fresh gap 0 ")
    assert out[4] == "lost 0"          # two epochs: 500..501 and 10..11


def test_reregistered_and_after_cancel(drv):
    # the answer to a re-registration (payload n=0) starts a new epoch: 2 was
    # never seen, but it is the old epoch's tail, not counted
    out = replay(drv, ["seq 1 0", "seq 3 1 rereg first", "seq 4 2 ended", "seq 4 3 ended", "lost 4"])
    assert statuses(out) == [("registered", 0), ("reregistered", 0), ("after_cancel", 0),
                             ("after_cancel", 0)]
    assert out[1] == "reregistered gap 0 stale 0 reset 1 distinct 2"
    assert out[3].endswith("distinct 3")  # the duplicate after cancel is not distinct
    assert out[4] == "lost 0"


@pytest.mark.parametrize("restart", [5_000_000, 10_000_000, 100, 107])
def test_a_restarted_seq_after_a_re_registration_is_a_new_epoch(drv, restart):
    # a device that dropped the observation (a CON give-up) answers the
    # re-registration with a new one, at any seq: far newer (without the new
    # epoch: a gap of ~5M lost), far older (stale, and every later one too),
    # or the old epoch's own seqs (a fixed start: duplicates)
    old = [f"seq {v} {v}" for v in range(100, 111)]
    out = replay(drv, [*old, f"seq {restart} 500 rereg first", f"seq {restart + 1} 520",
                       f"seq {restart + 3} 540", "lost", f"lost {restart + 4}"])
    assert out[11] == "reregistered gap 0 stale 0 reset 1 distinct 12"
    assert out[12] == "fresh gap 0 stale 0 reset 0 distinct 13"
    assert out[13] == "fresh gap 1 stale 0 reset 0 distinct 14"   # loss in the new epoch counts
    assert out[14] == "lost 1" and out[15] == "lost 2"


def test_which_first_ones_start_an_epoch(drv):
    base = ["seq 100 0", "seq 101 10", "seq 103 20"]
    # n=0 without a re-registration: a fresh observation at the device, unless
    # it is a duplicate or a late one within the window (then as any other)
    out = replay(drv, [*base, "seq 9000000 30 first", "seq 9000001 40", "lost"])
    assert out[3] == "fresh gap 0 stale 0 reset 1 distinct 4" and out[4].startswith("fresh gap 0 ")
    assert out[5] == "lost 1"   # 102, the one gap of the first epoch
    out = replay(drv, [*base, "seq 103 30 first", "seq 102 40 first", "seq 104 50 first", "lost"])
    assert out[3].startswith("duplicate ") and out[4] == "reordered gap 0 stale 0 reset 0 distinct 4"
    assert out[5] == "fresh gap 0 stale 0 reset 1 distinct 5" and out[6] == "lost 0"
    # a re-registration pending: a stamped notification with n > 0 is not its answer
    out = replay(drv, [*base, "seq 105 30 rereg", "seq 106 40 rereg first", "lost"])
    assert out[3] == "fresh gap 1 stale 0 reset 0 distinct 4"
    assert out[4] == "reregistered gap 0 stale 0 reset 1 distinct 5" and out[5] == "lost 2"
    # no n in the payload (another server): the first one after the
    # re-registration that is neither a duplicate nor late within the window
    out = replay(drv, [*base, "seq 103 30 rereg non", "seq 102 40 rereg non", "seq 30 50 rereg non",
                       "seq 31 60", "lost"])
    assert out[3].startswith("duplicate ") and out[4].startswith("reordered gap 0 stale 0 reset 0 ")
    assert out[5] == "reregistered gap 0 stale 0 reset 1 distinct 5" and out[6].startswith("fresh gap 0 ")
    assert out[7] == "lost 0"


@pytest.mark.parametrize("text, want", [
    ("t=1700000000000000;e=1699999999999000;n=0", "t 1700000000000000 e 1699999999999000 n 0"),
    ("t=5;e=4;n=17....", "t 5 e 4 n 17"),
    ("t=5;e=4;n=", "none"),
    ("t=5;e=4", "none"),
    ("e=4;t=5;n=1", "none"),
    ("t=5;e=4;n=1;", "none"),
    ("t=5;e=4;n=1.x", "none"),
    ("t=99999999999999999999;e=4;n=1", "none"),   # over 2^64
    ("t=18446744073709551615;e=0;n=0", "t 18446744073709551615 e 0 n 0"),
    ("22:00:01", "none"),
    ("", "none"),
])
def test_stamps(drv, text, want):
    assert replay(drv, [f"stamps {text}"]) == [want]


def test_bad_driver_line_exits_2():
    p = subprocess.run([str(VEC)], input="seq x 0\n", capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.startswith("error: 1: ")
