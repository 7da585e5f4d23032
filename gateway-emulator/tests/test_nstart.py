"""NSTART and PROBING_RATE (RFC 7252 section 4.7; README.md, "NSTART and
PROBING_RATE"): the GE against a real wotbench-device on loopback (a
resource with a 50 ms service time, requests due every 10 ms), or against
a UDP sink that never answers. The checks are order relations and counts
read from the CSV rows, not timing thresholds: with --nstart N no send
instant has more than N exchanges of the device in flight (sent <= t <
recv); a held request is sent only after an exchange ended, so its wait is
in its send lag; PROBING_RATE never sends early."""

from __future__ import annotations

import socket
import threading
from dataclasses import dataclass, field

import pytest
from gehelpers import SAN_ENV, free_port, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

SERVICE_US = 50_000  # the device's service time
GAP_US = 10_000      # between intended sends


def slow_trace(tmp_path, dev, n: int):
    return write_trace(tmp_path / "t.csv",
                       [(0, i * GAP_US, "GET", dev.uri("/slow")) for i in range(n)])


def in_flight_at_sends(rows) -> list[int]:
    """For each request's send instant t: the exchanges with sent <= t < recv
    (a request without a response counts until its sent + 10 s)."""
    sent = rows.sent_us.to_list()
    recv = [int(r) if r == r else s + 10_000_000 for r, s in zip(rows.recv_us, sent, strict=True)]
    return [sum(1 for s, r in zip(sent, recv, strict=True) if s <= t < r) for t in sent]


def test_nstart_1_makes_the_exchanges_sequential(ge_bin, make_device, tmp_path):
    dev = make_device({"/slow": SERVICE_US})
    n = 10
    run = run_ge(ge_bin, slow_trace(tmp_path, dev, n), "--nstart", "1")
    rows = run.rows
    assert (rows.status == "ok").all() and run.summary["ok"] == n
    sent, recv, lag = rows.sent_us.to_list(), rows.recv_us.astype(int).to_list(), rows.send_lag_us.to_list()
    for i in range(1, n):
        assert sent[i] >= recv[i - 1], i  # sent only when the previous exchange ended
        # each exchange takes at least the service time, the schedule 10 ms:
        # the wait grows by at least the difference (1 us of truncation)
        assert lag[i] >= lag[i - 1] + SERVICE_US - GAP_US - 1, (i, lag)
    assert max(in_flight_at_sends(rows)) == 1
    assert (rows.latency_intended_us == rows.recv_us.astype(int) - rows.intended_us).all()
    cc = run.summary["congestion"]
    assert cc["nstart"] == 1 and cc["probing_rate"] is None
    held = cc["held"]
    assert held["nstart_waits"] == n - 1  # all but the first found it busy
    assert held["wait_max_us"] == max(lag)  # the same integers
    assert 2 <= held["queue_max"] <= n - 1
    assert held["queue_timeouts"] == 0 and held["probing_waits"] == 0
    assert run.summary["send_lag_us"]["max"] == max(lag)
    assert run.summary["late_sends"] >= n - 1


def test_unlimited_is_the_default_and_sends_on_schedule(ge_bin, make_device, tmp_path):
    dev = make_device({"/slow": SERVICE_US})
    n = 10
    trace = slow_trace(tmp_path, dev, n)
    for args in ((), ("--nstart", "unlimited")):
        run = run_ge(ge_bin, trace, *args)
        rows = run.rows
        assert (rows.status == "ok").all()
        recv = rows.recv_us.astype(int).to_list()
        # sent before the previous one was answered (10 ms apart, 50 ms each)
        overlapping = sum(rows.sent_us[i] < recv[i - 1] for i in range(1, n))
        assert overlapping >= n // 2, rows
        assert max(in_flight_at_sends(rows)) >= 2
        cc = run.summary["congestion"]
        assert cc["nstart"] is None
        assert cc["held"] == {"nstart_waits": 0, "probing_waits": 0, "wait_max_us": 0,
                              "queue_max": 0, "queue_timeouts": 0}


@pytest.mark.parametrize("asan", [False, True])
def test_nstart_2_never_has_more_than_2_in_flight(asan, ge_bin, ge_asan_bin, make_device, tmp_path):
    dev = make_device({"/slow": SERVICE_US})
    n = 20
    ge = ge_asan_bin if asan else ge_bin
    run = run_ge(ge, slow_trace(tmp_path, dev, n), "--nstart", "2",
                 env=SAN_ENV if asan else None)
    assert run.returncode == 0, run.stderr
    rows = run.rows
    assert (rows.status == "ok").all()
    counts = in_flight_at_sends(rows)
    assert max(counts) == 2, counts
    # in trace order per device (FIFO), and each held send follows an end
    assert rows.sent_us.is_monotonic_increasing
    recv = sorted(rows.recv_us.astype(int))
    for t in rows.sent_us[2:]:
        assert any(r <= t for r in recv), t
    assert run.summary["congestion"]["held"]["nstart_waits"] >= n - 2 - 2


@pytest.mark.parametrize("asan", [False, True])
def test_requests_given_up_in_the_queue_have_no_sent_stamp(asan, ge_bin, ge_asan_bin, make_device, tmp_path):
    # 50 ms exchanges, due every 10 ms, NSTART 1: the wait grows by 40 ms a
    # request, so the later ones wait past --timeout-ms 100 and are given up
    dev = make_device({"/slow": SERVICE_US})
    n = 10
    run = run_ge(ge_asan_bin if asan else ge_bin, slow_trace(tmp_path, dev, n), "--nstart", "1",
                 "--timeout-ms", "100", env=SAN_ENV if asan else None)
    assert run.returncode == 0, run.stderr
    rows = run.rows
    gave_up = rows.status == "timeout"
    held = run.summary["congestion"]["held"]
    assert held["queue_timeouts"] == int(gave_up.sum()) >= 1
    assert (rows.status[~gave_up] == "ok").all()
    # never transmitted: no sent stamp and no send lag; only what went out is
    # in the send lag, the submitted RITs and late_sends
    assert rows.sent_us[gave_up].isna().all() and rows.send_lag_us[gave_up].isna().all()
    assert rows.sent_us[~gave_up].notna().all()
    s = run.summary
    assert s["send_lag_us"]["count"] == int((~gave_up).sum()) == s["rit_submitted_us"]["count"] + 1
    assert s["send_lag_us"]["max"] == int(rows.send_lag_us.max()) == held["wait_max_us"]
    assert s["late_sends"] == int((rows.send_lag_us > 100).sum())  # --late-us 100
    assert s["timeouts"] == held["queue_timeouts"]


@dataclass
class Sink:
    """A UDP peer that never answers; records each datagram (the request
    index from the GE's token, its length)."""

    sock: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
    got: list[tuple[int, int]] = field(default_factory=list)  # (idx, bytes)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                continue
            if len(data) >= 12 and data[0] & 0x0F == 8:
                self.got.append((int.from_bytes(data[8:12], "big"), len(data)))

    def close(self) -> list[tuple[int, int]]:
        self.stop.set()
        self.thread.join(5)
        self.sock.close()
        return self.got


@pytest.fixture
def sink():
    s = Sink()
    yield s
    s.close()


def test_a_timeout_frees_the_slot_at_give_up(ge_bin, sink, tmp_path):
    n = 4
    trace = write_trace(tmp_path / "t.csv",
                        [(0, i * GAP_US, "GET", f"coap://127.0.0.1:{sink.port}/a") for i in range(n)])
    run = run_ge(ge_bin, trace, "--nstart", "1", "--ack-timeout-ms", "100",
                 "--max-retransmit", "0", "--ack-random-factor", "1.0")
    rows = run.rows
    assert (rows.status == "timeout").all() and rows.recv_us.isna().all()
    sent = rows.sent_us.to_list()
    for i in range(1, n):  # the previous exchange gave up 100 ms after its send
        assert sent[i] >= sent[i - 1] + 100_000 - 1, sent
    assert sorted(i for i, _ in sink.close()) == list(range(n))  # each sent once
    held = run.summary["congestion"]["held"]
    assert held["nstart_waits"] == n - 1 and held["queue_timeouts"] == 0


def test_a_request_held_past_the_timeout_is_never_sent(ge_bin, sink, tmp_path):
    n = 4
    trace = write_trace(tmp_path / "t.csv",
                        [(0, i * GAP_US, "GET", f"coap://127.0.0.1:{sink.port}/a") for i in range(n)])
    run = run_ge(ge_bin, trace, "--nstart", "1", "--ack-timeout-ms", "300",
                 "--max-retransmit", "0", "--timeout-ms", "100")
    rows = run.rows
    assert (rows.status == "timeout").all()
    assert [i for i, _ in sink.close()] == [0]  # the rest waited, then gave up
    # given up: no sent stamp, no send lag
    assert rows.sent_us[1:].isna().all() and rows.send_lag_us[1:].isna().all()
    assert rows.sent_us.notna()[0]
    held = run.summary["congestion"]["held"]
    assert held["queue_timeouts"] == n - 1 and held["nstart_waits"] == n - 1
    assert run.summary["timeouts"] == n


def probing_trace(tmp_path, port: int, n: int, gap_us: int):
    return write_trace(tmp_path / "t.csv",
                       [(0, i * gap_us, "POST", f"coap://127.0.0.1:{port}/a", "x" * 100)
                        for i in range(n)])


def test_probing_rate_paces_non_to_a_peer_that_does_not_respond(ge_bin, sink, tmp_path):
    n, gap_us, timeout_ms, rate = 60, 20_000, 200, 1000
    run = run_ge(ge_bin, probing_trace(tmp_path, sink.port, n, gap_us), "--type", "non",
                 "--timeout-ms", str(timeout_ms), "--probing-rate", str(rate))
    rows = run.rows
    got = sink.close()
    assert (rows.status == "timeout").all()
    size = got[0][1]
    assert size > 100 and all(b == size for _, b in got)
    pace_us = size * 1_000_000 // rate  # e.g. 130 bytes -> 130 ms
    sent_idx = sorted({i for i, _ in got})
    assert len(sent_idx) == len(got)  # each at most once
    sent = sorted(int(rows.sent_us[i]) for i in sent_idx)
    # silent from the first NON's timeout on (with room for the loop)
    silent_from = int(rows.sent_us[0]) + timeout_ms * 1000 + 50_000
    paced = [t for t in sent if t >= silent_from]
    assert len(paced) >= 4, sent
    for a, b in zip(paced, paced[1:], strict=False):
        assert b - a >= pace_us - 1_000, (a, b, pace_us)  # never early
    # before the silence, on schedule: the first timeout_ms / gap all went out
    assert set(range(timeout_ms * 1000 // gap_us)) <= set(sent_idx)
    held = run.summary["congestion"]["held"]
    assert run.summary["congestion"]["probing_rate"] == rate
    assert held["probing_waits"] > 0 and held["nstart_waits"] == 0
    assert held["queue_timeouts"] == n - len(sent_idx)  # the rest waited past 200 ms
    assert sorted(rows.index[rows.sent_us.notna()]) == sent_idx  # and have no sent stamp


def test_without_probing_rate_non_is_not_held(ge_bin, sink, tmp_path):
    n = 30
    run = run_ge(ge_bin, probing_trace(tmp_path, sink.port, n, 20_000), "--type", "non",
                 "--timeout-ms", "200", "--nstart", "1")  # NSTART holds CON only
    assert (run.rows.status == "timeout").all()
    assert sorted(i for i, _ in sink.close()) == list(range(n))
    assert run.summary["congestion"]["held"]["probing_waits"] == 0
    assert run.summary["congestion"]["held"]["nstart_waits"] == 0


def test_probing_rate_leaves_a_peer_that_responds_alone(ge_bin, make_device, tmp_path):
    dev = make_device({"/a": 0})
    n = 30
    run = run_ge(ge_bin, probing_trace(tmp_path, dev.port, n, 5_000), "--type", "non",
                 "--probing-rate", "1")
    assert (run.rows.status == "ok").all()
    assert run.summary["congestion"]["held"]["probing_waits"] == 0


def test_nstart_with_http_north_is_bad_input(ge_bin, tmp_path):
    port = free_port()
    trace = write_trace(tmp_path / "t.csv", [(0, 0, "GET", f"coap://127.0.0.1:{port}/a")])
    run = run_ge(ge_bin, trace, "--gateway", f"127.0.0.1:{port}", "--north", "http",
                 "--nstart", "1")
    assert run.returncode == 2 and run.stderr.startswith("error: --nstart: ")
