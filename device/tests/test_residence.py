"""The device's time histograms in the --stats JSON (docs/formats.md,
"Device stats JSON"): every served request's residence (receipt to the
response's send) and queue wait (receipt to a worker's pick-up, 0 inline),
counted once each, so both histograms sum to `served`. Only bucket-level
facts that cannot flake are asserted: a residence is at least the service
time, a request queued behind k others waited at least k service times;
the upper bounds are generous."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiocoap.numbers.codes import Code

SERVICE_US = 20_000
ROWS = [("/zero", 0, None), ("/s20", SERVICE_US, 8), ("/sep", 2_050_000, None)]


def _stats(path: Path) -> dict[str, Any]:
    doc = json.loads(path.read_text())
    for name in ("residence_us", "queue_wait_us"):
        h = doc[name]
        assert set(h) == {"buckets", "overflow", "sum", "max"}
        lows = [b[0] for b in h["buckets"]]
        assert lows == sorted(set(lows)) and all(lo < hi and n > 0 for lo, hi, n in h["buckets"])
        # every served request once, in one of the buckets or the overflow
        assert sum(n for _, _, n in h["buckets"]) + h["overflow"] == doc["served"], name
        assert h["max"] < h["buckets"][-1][1] and h["sum"] <= h["max"] * doc["served"]
    got: dict[str, Any] = doc
    return got


def _p50_bucket(h: dict[str, Any]) -> tuple[int, int]:
    half, seen = (sum(n for _, _, n in h["buckets"]) + 1) // 2, 0
    for lo, hi, n in h["buckets"]:
        seen += n
        if seen >= half:
            return lo, hi
    raise AssertionError("empty histogram")


def _count_at_least(h: dict[str, Any], us: int) -> int:
    """Values in buckets that can hold a value >= us (hi > us): at least
    the count of values >= us, so a bound on it cannot fail spuriously."""
    return int(sum(n for _, hi, n in h["buckets"] if hi > us) + h["overflow"])


@pytest.mark.parametrize("binary", ["release", "asan"])
def test_residence_counts_every_served_request_and_covers_the_service_time(
        make_device, raw_client, wire, tmp_path, binary):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--threads", "4", "--stats", str(stats), binary=binary)
    c = raw_client(dev.addr)
    for i in range(12):                     # one at a time: no queueing
        c.send(wire.encode(wire.CON, wire.GET, i, bytes([i]), ("s20",)))
        assert c.recv(3).code == Code.CONTENT
    for i in range(3):                      # inline: S = 0 and a 4.04
        c.send(wire.encode(wire.NON, wire.GET, 100 + i, b"z", ("zero",) if i else ("nope",)))
        assert c.recv(3) is not None
    c.send(wire.encode(wire.CON, wire.GET, 7, bytes([7]), ("s20",)))   # a duplicate: not served again
    assert c.recv(3) is not None
    c.send(wire.encode(wire.CON, wire.GET, 200, b"sep", ("sep",)))      # separate: empty ACK, then CON
    acks = [c.recv(4), c.recv(4)]
    con = next(m for m in acks if m is not None and m.code == Code.CONTENT)
    c.send(wire.encode(wire.ACK, 0, con.mid))
    assert dev.stop(timeout=10) == 0, dev.stderr
    assert "ERROR: AddressSanitizer" not in dev.stderr and "runtime error" not in dev.stderr
    doc = _stats(stats)
    assert doc["served"] == 16 and doc["duplicates"] == 1
    res, wait = doc["residence_us"], doc["queue_wait_us"]
    # the 12 timed requests sit at or above 20 ms; their median bucket holds
    # 20 ms or a little more, far below 10x
    assert _count_at_least(res, SERVICE_US) >= 13                  # the 12 and the separate one
    assert res["max"] >= 2_050_000 and res["overflow"] == 0        # the separate response's CON
    lo, hi = _p50_bucket(res)
    assert hi > SERVICE_US and lo < 10 * SERVICE_US
    # residence never below the service time: no value under 20 ms but the 3 inline ones
    assert sum(n for lo, hi, n in res["buckets"] if hi <= SERVICE_US) == 3
    # the inline answers waited 0
    assert wait["buckets"][0][:2] == [0, 1] and wait["buckets"][0][2] >= 3
    assert wait["max"] < 1_000_000


def test_queue_wait_with_one_worker_and_a_burst(make_device, raw_client, wire, tmp_path):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--threads", "1", "--stats", str(stats))
    c = raw_client(dev.addr)
    burst = 6
    for i in range(burst):                  # all at once: the k-th waits behind k others
        c.send(wire.encode(wire.NON, wire.GET, i, bytes([i]), ("s20",)))
    got = [c.recv(5) for _ in range(burst)]
    assert all(m is not None and m.code == Code.CONTENT for m in got)
    assert dev.stop() == 0
    doc = _stats(stats)
    assert doc["served"] == burst
    wait, res = doc["queue_wait_us"], doc["residence_us"]
    # k = 1..5 waited >= k x 20 ms; the last >= 100 ms
    for k in range(1, burst):
        assert _count_at_least(wait, k * SERVICE_US) >= burst - k, (k, wait)
        assert _count_at_least(res, (k + 1) * SERVICE_US) >= burst - k, (k, res)
    assert wait["max"] >= (burst - 1) * SERVICE_US
    assert wait["sum"] >= SERVICE_US * sum(range(burst))
