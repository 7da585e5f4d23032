"""Message-layer behaviour on raw UDP: piggybacked and NON responses,
duplicate detection, separate responses with retransmission, pings,
garbage, the bounded queue and the bounded dedup cache."""

from __future__ import annotations

import json
import time

import pytest
from aiocoap import Message
from aiocoap.numbers.codes import Code
from aiocoap.numbers.types import Type

from wotbench.base.formats import (
    DEVICE_STATS_COUNTERS,
    DEVICE_STATS_FIELDS,
    DEVICE_STATS_FORMAT,
    DEVICE_STATS_HISTOGRAMS,
)

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

ROWS = [("/fast", 0, None), ("/work", 100_000, None), ("/long", 1_000_000, None),
        ("/slow", 2_100_000, None)]


def test_duplicate_con_served_once_same_bytes(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    req = wire.encode(wire.CON, wire.GET, 0x4242, b"\x07\x08", ("work",))
    c.send(req)
    c.send(req)  # while in service: must not be served twice nor answered twice
    first = c.recv_raw(3)
    assert c.recv_raw(0.3) is None
    c.send(req)  # after it finished: the same response again
    again = c.recv_raw(3)
    assert first == again
    msg = Message.decode(first)
    assert msg.mtype == Type.ACK and msg.mid == 0x4242 and msg.token == b"\x07\x08"
    assert msg.code == Code.CONTENT and wire.service_option(msg) == 100_000
    assert dev.stop() == 0
    assert dev.counts["requests"] == 3
    assert dev.counts["served"] == 1
    assert dev.counts["duplicates"] == 2 and dev.counts["dup_replies"] == 1


def test_inline_duplicate_and_new_token_same_mid(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    c.send(wire.encode(wire.CON, wire.PUT, 7, b"a", ("fast",)))
    one = c.recv_raw()
    c.send(wire.encode(wire.CON, wire.PUT, 7, b"a", ("fast",)))
    assert c.recv_raw() == one
    # A wrapped MID with a different token is a new request, not a duplicate.
    c.send(wire.encode(wire.CON, wire.PUT, 7, b"b", ("fast",)))
    assert c.recv().token == b"b"
    assert dev.stop() == 0
    assert dev.counts["served"] == 2 and dev.counts["duplicates"] == 1


def test_non_gets_non_with_new_mid_and_token(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    mids = set()
    for i, path in enumerate(["fast", "work", "fast"]):
        c.send(wire.encode(wire.NON, wire.GET, 500 + i, bytes([i, 1, 2, 3, 4, 5, 6, 7]), (path,)))
        m = c.recv(3)
        assert m.mtype == Type.NON and m.code == Code.CONTENT
        assert m.token == bytes([i, 1, 2, 3, 4, 5, 6, 7])
        assert m.mid != 500 + i
        mids.add(m.mid)
    assert len(mids) == 3
    assert dev.stop() == 0


def test_separate_response_for_long_service_time(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    t0 = time.monotonic()
    c.send(wire.encode(wire.CON, wire.GET, 0x1111, b"sep", ("slow",)))
    ack = c.recv(1)
    assert ack.mtype == Type.ACK and ack.mid == 0x1111 and ack.code == Code.EMPTY
    assert time.monotonic() - t0 < 1.0
    resp = c.recv(4)
    elapsed = time.monotonic() - t0
    assert resp.mtype == Type.CON and resp.token == b"sep" and resp.code == Code.CONTENT
    assert wire.service_option(resp) == 2_100_000 and elapsed >= 2.1
    c.send(wire.encode(wire.ACK, 0, resp.mid))
    assert c.recv_raw(3.5) is None  # ACKed: no retransmission
    assert dev.stop() == 0
    assert dev.counts["separate"] == 1 and dev.counts["sep_acked"] == 1
    assert dev.counts["retransmits"] == 0


@pytest.mark.slow
def test_separate_response_retransmitted_until_acked(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    c.send(wire.encode(wire.CON, wire.GET, 0x2222, b"r", ("slow",)))
    assert c.recv(1).code == Code.EMPTY
    first = c.recv_raw(4)
    t1 = time.monotonic()
    # A duplicate of the request now gets the empty ACK again, not a new answer.
    c.send(wire.encode(wire.CON, wire.GET, 0x2222, b"r", ("slow",)))
    dup_ack = c.recv(1)
    assert dup_ack.code == Code.EMPTY and dup_ack.mid == 0x2222
    again = c.recv_raw(4)
    gap = time.monotonic() - t1
    assert again == first  # same MID, same bytes
    assert 1.9 <= gap <= 3.2  # ACK_TIMEOUT * [1, 1.5]
    c.send(wire.encode(wire.ACK, 0, Message.decode(first).mid))
    assert c.recv_raw(4.5) is None
    assert dev.stop() == 0
    assert dev.counts["retransmits"] == 1 and dev.counts["sep_acked"] == 1
    assert dev.counts["served"] == 1 and dev.counts["duplicates"] == 1


def test_ping_garbage_and_bad_option(make_device, raw_client, wire):
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    c.send(bytes([0x40, 0, 0x12, 0x34]))  # CoAP ping
    rst = c.recv()
    assert rst.mtype == Type.RST and rst.mid == 0x1234
    for junk in [b"", b"\x00", b"\xff" * 50, bytes([0x48, 1, 0, 1]), b"GET / HTTP/1.1\r\n\r\n",
                 bytes([0x40, 1, 0, 1, 0xf0])]:
        c.send(junk)
    # Unknown critical option (odd number 2049): 4.02.
    c.send(wire.encode(wire.CON, wire.GET, 77, b"", ("fast",), options=[(2049, b"x")]))
    m = c.recv()
    assert m.code == Code.BAD_OPTION and m.mid == 77
    # Still serving.
    c.send(wire.encode(wire.CON, wire.GET, 78, b"", ("fast",)))
    assert c.recv().code == Code.CONTENT
    assert dev.stop() == 0
    assert dev.counts["pings"] == 1 and dev.counts["garbage"] == 6
    assert dev.counts["bad_option"] == 1


def test_queue_overflow_answers_503_counted_in_stats_json(make_device, raw_client, wire,
                                                          tmp_path):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--threads", "1", "--queue", "1", "--stats", str(stats))
    c = raw_client(dev.addr)
    c.send(wire.encode(wire.NON, wire.GET, 900, bytes([0]), ("long",)))
    time.sleep(0.3)  # the worker has taken it: the queue (1 place) is empty
    for i in range(1, 6):
        c.send(wire.encode(wire.NON, wire.GET, 900 + i, bytes([i]), ("long",)))
    codes = {}
    for _ in range(6):
        m = c.recv(3)
        codes[m.token[0]] = m.code
    # One in service, one waiting; the rest find the queue full.
    assert sorted(codes.values()).count(Code.SERVICE_UNAVAILABLE) == 4
    assert codes[0] == Code.CONTENT and codes[1] == Code.CONTENT
    assert dev.stop() == 0
    assert dev.counts["overflow"] == 4 and dev.counts["ok"] == 2
    # The harness reads the overload from the --stats JSON (docs/formats.md,
    # "Device stats JSON"): format and cpus, then every counter, in order,
    # as on the stderr line, then the histograms (JSON only).
    counts = json.loads(stats.read_text())
    assert list(counts) == [*DEVICE_STATS_FIELDS, *DEVICE_STATS_COUNTERS, *DEVICE_STATS_HISTOGRAMS]
    assert counts["format"] == DEVICE_STATS_FORMAT
    assert {k: counts[k] for k in DEVICE_STATS_COUNTERS} == dev.counts
    assert list(dev.counts) == list(DEVICE_STATS_COUNTERS)
    assert counts["overflow"] == 4 and counts["served"] == 6 and counts["requests"] == 6
    assert list(tmp_path.glob("stats.json?*")) == []  # the temporary file was renamed


def test_dedup_cache_is_bounded(make_device, raw_client, wire, tmp_path):
    stats = tmp_path / "stats.json"
    dev = make_device(ROWS, "--dedup-entries", "4", "--stats", str(stats))
    c = raw_client(dev.addr)
    for mid in range(10):
        c.send(wire.encode(wire.CON, wire.GET, mid, b"t", ("fast",)))
        assert c.recv().mid == mid
    # MID 0 was evicted: its retransmission is served again, not recognised.
    c.send(wire.encode(wire.CON, wire.GET, 0, b"t", ("fast",)))
    assert c.recv().mid == 0
    # MID 9 is still remembered.
    c.send(wire.encode(wire.CON, wire.GET, 9, b"t", ("fast",)))
    assert c.recv().mid == 9
    assert dev.stop() == 0
    counts = json.loads(stats.read_text())
    assert counts["format"] == 1
    assert counts["dedup_evictions"] == 7 and counts["served"] == 11
    assert counts["duplicates"] == 1


@pytest.mark.parametrize("lifetime,bound", [("1", (1024, 4096)), (None, (3000, 4096))])
def test_dedup_ring_follows_live_exchanges_not_requests(make_device, raw_client, wire, tmp_path, lifetime, bound):
    """The soak (issue W2 4/5) found every device's memory growing ~85
    bytes per request for the whole hour: each new exchange took the next
    slot of a 262,144-slot ring, touching a new page every ~48 requests
    until the ring wrapped. Now the ring grows only while its oldest
    exchange is live: 3,000 requests paced over ~3 s keep it near
    rate x lifetime with a 1 s lifetime, and past 3,000 with the default
    247 s; none is evicted, and a retransmission is still recognised."""
    stats = tmp_path / "stats.json"
    args = ["--stats", str(stats)] + (["--exchange-lifetime", lifetime] if lifetime else [])
    dev = make_device(ROWS, *args)
    c = raw_client(dev.addr)
    for mid in range(3000):
        c.send(wire.encode(wire.CON, wire.GET, mid, b"t", ("fast",)))
        assert c.recv().mid == mid
        time.sleep(0.001)
    c.send(wire.encode(wire.CON, wire.GET, 2999, b"t", ("fast",)))
    assert c.recv().mid == 2999
    assert dev.stop() == 0
    counts = json.loads(stats.read_text())
    assert counts["dedup_evictions"] == 0 and counts["duplicates"] == 1 and counts["served"] == 3000
    assert bound[0] <= counts["dedup_slots"] <= bound[1], counts["dedup_slots"]
