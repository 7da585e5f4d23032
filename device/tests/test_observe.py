"""RFC 7641 Observe on the real device (loopback, raw CoAP and aiocoap):
registration (its answer is notification 0), NON and CON notifications of
the event process with their stamps, deregistration with the last seq
(option 65001), RST, retransmission, superseding and give-up, refresh
before Max-Age, refusals, seq wrap, the resource CSV's observe cells and
the samplers (--dump-notify), and a late RST that names a cancelled
observation's MID."""

from __future__ import annotations

import asyncio
import json
import math
import re
import subprocess
import time
from collections.abc import Callable

import pytest
from aiocoap import GET, Context, Message
from aiocoap.numbers.codes import Code
from aiocoap.numbers.types import Type
from scipy import stats

from wotbench.base.formats import (
    DEVICE_STATS_COUNTERS,
    DEVICE_STATS_HISTOGRAMS,
    LAST_SEQ_OPTION,
    RESOURCE_COLUMNS,
    RESOURCE_OBSERVE_COLUMNS,
    RESOURCE_OPTIONAL_COLUMNS,
)

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

OBSERVE, MAX_AGE = 6, 14
PAYLOAD = re.compile(rb"^t=(\d+);e=(\d+);n=(\d+)\.*$")
HEADER = ",".join((*RESOURCE_COLUMNS, *RESOURCE_OPTIONAL_COLUMNS, *RESOURCE_OBSERVE_COLUMNS))
Row = tuple[object, ...]


def opt(msg: Message, number: int) -> int | None:
    """A uint option's value (aiocoap keeps unknown options opaque)."""
    for o in msg.opt.option_list():
        if int(o.number) == number:
            return int.from_bytes(o.encode(), "big")
    return None


def stamps(msg: Message) -> tuple[int, int, int]:
    """(t, e, n) of a notification's payload."""
    m = PAYLOAD.match(msg.payload)
    assert m, msg.payload
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def observe_req(wire, mid: int, token: bytes, path: str, value: bytes = b"",
                mtype: int = 0, code: int = 1) -> bytes:
    data: bytes = wire.encode(mtype, code, mid, token, tuple(path.strip("/").split("/")),
                              [(OBSERVE, value)])
    return data


def collect(client, seconds: float, ack: Callable[[Message], bool] | None = None,
            until: Callable[[Message], bool] | None = None) -> list[tuple[bytes, Message]]:
    """Every datagram for `seconds` (or up to the first `until`); CON ones
    get an empty ACK when ack(msg)."""
    out: list[tuple[bytes, Message]] = []
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        raw = client.recv_raw(left)
        if raw is None:
            break
        msg = Message.decode(raw)
        out.append((raw, msg))
        if ack is not None and msg.mtype == Type.CON and ack(msg):
            client.send(bytes([0x60, 0, msg.mid >> 8, msg.mid & 0xFF]))
        if until is not None and until(msg):
            break
    return out


@pytest.fixture
def observed(make_device):
    """observed(rows, *args, binary=...): a device with the observe columns."""
    def factory(rows: list[Row], *args: str, binary: str = "release"):
        return make_device(rows, *args, binary=binary, header=HEADER)
    return factory


def clean_exit(dev) -> None:
    assert dev.stop(timeout=10) == 0, dev.stderr
    assert "AddressSanitizer" not in dev.stderr and "runtime error" not in dev.stderr


@pytest.mark.parametrize("binary", ["release", "asan"])
def test_non_notifications_follow_the_det_process(observed, raw_client, wire, tmp_path, binary):
    stats_file = tmp_path / "stats.json"
    dev = observed([("/plain", 0, None, None, None, None, None),
                    ("/o/0", 0, 60, "det:50000", "non", 7, 42)],
                   "--obs-seq-start", "100", "--stats", str(stats_file), binary=binary)
    c = raw_client(dev.addr)
    t_send = time.monotonic()
    c.send(observe_req(wire, 1, b"obs1", "/o/0"))
    first = c.recv(3)
    t_first = time.monotonic()
    assert first is not None and first.mtype == Type.ACK and first.mid == 1
    assert first.code == Code.CONTENT and first.token == b"obs1"
    assert first.opt.observe == 100 and first.opt.max_age == 7
    t0, e0, n0 = stamps(first)
    assert n0 == 0 and t0 >= e0 and len(first.payload) == 60  # padded
    notes = [m for _, m in collect(c, 1.0)]
    t_dereg = time.monotonic()
    c.send(observe_req(wire, 2, b"obs1", "/o/0", b"\x01"))
    tail = collect(c, 3, until=lambda m: m.mtype == Type.ACK)
    t_end = time.monotonic()
    notes += [m for _, m in tail[:-1]]
    answer = tail[-1][1]
    assert answer.mid == 2 and answer.code == Code.CONTENT and answer.opt.observe is None
    assert collect(c, 0.3) == []  # deregistered: nothing more

    assert all(m.mtype == Type.NON and m.token == b"obs1" and m.opt.max_age == 7 for m in notes)
    seqs = [m.opt.observe for m in notes]
    assert seqs == list(range(101, 101 + len(notes)))
    assert opt(answer, LAST_SEQ_OPTION) == seqs[-1]
    got = [stamps(m) for m in notes]
    assert [n for _, _, n in got] == list(range(1, len(notes) + 1))
    for t, e, n in got:
        assert t >= e
        assert abs(e - e0 - n * 50_000) <= 1000  # scheduled, not measured
    # det: the events inside [registration, deregistration], within one.
    inner = math.floor((t_dereg - t_first) / 0.05)
    outer = math.floor((t_end - t_send) / 0.05)
    assert inner - 1 <= len(notes) <= outer
    clean_exit(dev)
    k = dev.counts
    assert k["obs_registered"] == 1 and k["obs_cancelled"] == 1 and k["obs_active"] == 0
    assert k["notify_sent"] == len(notes) and k["notify_events"] == len(notes) + 1
    assert k["notify_con"] == 0 and k["ok"] == 2 and k["served"] == 2
    js = json.loads(stats_file.read_text())
    assert list(js)[2:] == [*DEVICE_STATS_COUNTERS, *DEVICE_STATS_HISTOGRAMS]
    lag = js["notify_lag_us"]
    assert sum(b[2] for b in lag["buckets"]) + lag["overflow"] == len(notes)


def test_rst_to_a_notification_cancels(observed, raw_client, wire):
    dev = observed([("/o/0", 0, None, "det:30000", None, None, None)])
    c = raw_client(dev.addr)
    c.send(observe_req(wire, 9, b"r", "/o/0", mtype=wire.NON))
    answer = c.recv(3)
    assert answer is not None and answer.mtype == Type.NON and answer.opt.observe is not None
    note = c.recv(3)
    assert note is not None and note.mtype == Type.NON
    c.send(wire.encode(wire.RST, 0, note.mid))
    collect(c, 0.3)  # whatever was sent before the RST arrived
    assert collect(c, 0.3) == []
    clean_exit(dev)
    assert dev.counts["obs_reset"] == 1 and dev.counts["obs_active"] == 0


@pytest.mark.parametrize("binary", ["release", "asan"])
def test_a_late_rst_spares_the_observation_that_reuses_the_slot(observed, raw_client, wire, binary):
    # A is cancelled; B, registered next by the same peer, takes A's slot (the
    # free list); an RST with the MID of A's notification must not cancel B
    dev = observed([("/o/0", 0, None, "det:30000", None, None, None)], binary=binary)
    c = raw_client(dev.addr)
    c.send(observe_req(wire, 1, b"A", "/o/0", mtype=wire.NON))
    notes = collect(c, 3, until=lambda m: m.token == b"A" and stamps(m)[2] == 1)
    a_mid = notes[-1][1].mid
    c.send(observe_req(wire, 2, b"A", "/o/0", b"\x01", mtype=wire.NON))
    collect(c, 3, until=lambda m: m.opt.observe is None)
    c.send(observe_req(wire, 3, b"B", "/o/0", mtype=wire.NON))
    assert collect(c, 3, until=lambda m: m.token == b"B")[-1][1].opt.observe is not None
    c.send(wire.encode(wire.RST, 0, a_mid))
    collect(c, 0.3)  # whatever was sent before the RST arrived
    later = [m for _, m in collect(c, 0.3)]
    assert later and all(m.token == b"B" and m.opt.observe is not None for m in later)
    clean_exit(dev)
    k = dev.counts
    assert k["obs_reset"] == 0 and k["obs_cancelled"] == 1 and k["obs_registered"] == 2


@pytest.mark.parametrize("binary", ["release", "asan"])
def test_con_notifications_acked_then_retransmitted_superseded_given_up(
        observed, raw_client, wire, binary):
    # ACK_TIMEOUT 100 ms: retransmissions at ~T, 3T, 7T, 15T, give-up at
    # 31T (3.1 .. 4.65 s); events every 500 ms wait behind the CON.
    dev = observed([("/c", 0, None, "det:500000", "con", 60, 1)],
                   "--ack-timeout-ms", "100", binary=binary)
    c = raw_client(dev.addr)
    c.send(observe_req(wire, 3, b"con", "/c"))
    answer = c.recv(3)
    assert answer is not None and answer.mtype == Type.ACK and answer.opt.observe is not None
    acked = collect(c, 2.0, ack=lambda m: True)
    assert len(acked) >= 2 and all(m.mtype == Type.CON for _, m in acked)
    seqs = sorted({m.opt.observe for _, m in acked})
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    silent = collect(c, 6.0)  # no ACKs: retransmissions, then give-up
    raws = [raw for raw, _ in silent]
    assert any(raws[i] in raws[:i] for i in range(len(raws)))  # the same bytes again
    ns = [stamps(m)[2] for _, m in silent]
    assert ns == sorted(ns) and max(ns) - min(ns) > len(set(ns)) - 1  # superseded events
    assert collect(c, 0.5) == []  # given up: silent
    clean_exit(dev)
    k = dev.counts
    assert k["notify_acked"] == len({raw for raw, _ in acked})
    assert k["obs_gave_up"] == 1 and k["obs_active"] == 0
    assert k["notify_retransmits"] >= 1 and k["notify_superseded"] >= 1
    assert k["notify_con"] == k["notify_sent"]
    assert k["notify_retransmits"] + k["notify_sent"] == len(acked) + len(silent)


def test_refusals_reregistration_table_full(observed, raw_client, wire):
    dev = observed([("/plain", 0, None, None, None, None, None),
                    ("/o/0", 0, None, "det:10000000", None, None, None)], "--observers", "1")
    c = raw_client(dev.addr)

    def ask(mid: int, token: bytes, path: str, value: bytes = b"", code: int = 1) -> Message:
        c.send(observe_req(wire, mid, token, path, value, code=code))
        m = c.recv(3)
        assert m is not None and m.mid == mid
        return m

    assert ask(1, b"a", "/plain").opt.observe is None  # not observable
    put = ask(2, b"a", "/o/0", code=wire.PUT)
    assert put.code == Code.CHANGED and put.opt.observe is None
    cancel = ask(3, b"a", "/o/0", b"\x01")  # nothing to cancel
    assert cancel.opt.observe is None and opt(cancel, LAST_SEQ_OPTION) is None
    assert ask(4, b"a", "/o/0", b"\x05").opt.observe is None  # a plain GET
    one = ask(5, b"a", "/o/0").opt.observe
    assert one is not None
    assert ask(6, b"b", "/o/0").opt.observe is None  # --observers 1: full
    again = ask(7, b"a", "/o/0").opt.observe  # same token: replaced, seq goes on
    assert again == (one + 1) % (1 << 24)
    dup = observe_req(wire, 7, b"a", "/o/0")
    c.send(dup)  # a duplicate registration: the current state, a new seq
    m = c.recv(3)
    assert m is not None and m.mid == 7 and m.opt.observe == (one + 2) % (1 << 24)
    assert stamps(m)[2] == 0
    gone = ask(8, b"a", "/o/0", b"\x01")
    assert gone.opt.observe is None and opt(gone, LAST_SEQ_OPTION) == (one + 2) % (1 << 24)
    clean_exit(dev)
    k = dev.counts
    assert k["obs_refused"] == 2 and k["obs_table_full"] == 1
    assert k["obs_registered"] == 1 and k["obs_reregistered"] == 1 and k["obs_cancelled"] == 1


def test_registration_by_a_worker_and_as_a_separate_response(observed, raw_client, wire):
    dev = observed([("/w", 300_000, None, "det:100000", None, None, None),
                    ("/s", 2_100_000, None, "det:1000000", None, None, None)],
                   "--obs-seq-start", "7")
    c = raw_client(dev.addr)
    c.send(observe_req(wire, 1, b"w", "/w"))
    first = c.recv(3)
    assert first is not None and first.mtype == Type.ACK and first.mid == 1
    assert first.opt.observe == 7 and stamps(first)[2] == 0
    nxt = c.recv(3)  # the events since the receipt are due at once
    assert nxt is not None and nxt.mtype == Type.NON
    assert nxt.opt.observe == 8 and stamps(nxt)[2] == 1
    c.send(observe_req(wire, 2, b"w", "/w", b"\x01", mtype=wire.NON))
    collect(c, 3, until=lambda m: m.opt.observe is None)
    c.send(observe_req(wire, 3, b"s", "/s"))
    empty = c.recv(1)
    assert empty is not None and empty.mtype == Type.ACK and empty.code == Code.EMPTY
    sep = c.recv(4)  # notification 0 as a separate CON response
    assert sep is not None and sep.mtype == Type.CON and sep.token == b"s"
    assert sep.opt.observe == 7 and stamps(sep)[2] == 0
    c.send(bytes([0x60, 0, sep.mid >> 8, sep.mid & 0xFF]))
    late = c.recv(3)  # events 1 and 2 waited behind it: the newer one goes
    assert late is not None and late.mtype == Type.NON
    assert late.opt.observe == 8 and stamps(late)[2] == 2
    clean_exit(dev)
    k = dev.counts
    assert k["obs_registered"] == 2 and k["notify_acked"] == 1 and k["notify_superseded"] == 1
    assert k["retransmits"] == 0 and k["separate"] == 0


def test_seq_wraps_and_refresh_before_max_age(observed, raw_client, wire):
    dev = observed([("/w", 0, None, "det:50000", None, None, None),
                    ("/f", 0, None, "det:100000000", "non", 1, None)],
                   "--obs-seq-start", "16777215")
    c = raw_client(dev.addr)
    c.send(observe_req(wire, 1, b"w", "/w"))
    first = c.recv(3)
    assert first is not None and first.opt.observe == 0xFFFFFF
    nxt = c.recv(3)
    assert nxt is not None and nxt.opt.observe == 0 and stamps(nxt)[2] == 1
    c.send(observe_req(wire, 2, b"w", "/w", b"\x01"))
    collect(c, 3, until=lambda m: m.mtype == Type.ACK)
    c.send(observe_req(wire, 3, b"f", "/f"))
    assert c.recv(3) is not None
    refreshed = collect(c, 1.3)  # Max-Age 1 s: refreshed every 0.5 s, same event
    assert len(refreshed) >= 1
    assert all(stamps(m)[2] == 0 and m.opt.max_age == 1 for _, m in refreshed)
    clean_exit(dev)
    assert len(refreshed) <= dev.counts["notify_refresh"] <= len(refreshed) + 1


def test_aiocoap_client_observes(observed):
    dev = observed([("/o/0", 0, None, "det:20000", None, None, None)])

    async def run() -> list[Message]:
        ctx = await Context.create_client_context()
        try:
            req = ctx.request(Message(code=GET, uri=f"coap://127.0.0.1:{dev.port}/o/0",
                                      observe=0))
            first = await asyncio.wait_for(req.response, 5)
            got = [first]
            async for note in req.observation:
                got.append(note)
                if len(got) == 6:
                    req.observation.cancel()
                    break
            return got
        finally:
            await ctx.shutdown()

    got = asyncio.run(asyncio.wait_for(run(), 20))
    seqs = [m.opt.observe for m in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == 6
    assert [stamps(m)[2] for m in got] == sorted(stamps(m)[2] for m in got)
    clean_exit(dev)
    assert dev.counts["obs_registered"] == 1


@pytest.mark.parametrize(("field", "row"), [
    ("observe_rit", "poisson:1000,,,"), ("observe_rit", "det:99,,,"),
    ("observe_rit", "det:1x,,,"), ("observe_rit", "uniform:500:100,,,"),
    ("observe_rit", "lognormal:1000:0,,,"), ("observe_rit", "pareto:1000:1,,,"),
    ("observe_rit", "exp,,,"), ("observe_rit", "det:100:5,,,"), ("observe_rit", "mmpp2:100,,,"),
    ("notify_type", "det:100,maybe,,"), ("notify_type", "det:100,non:0,,"),
    ("notify_type", "det:100,non:1001,,"), ("notify_type", "det:100,con:2,,"),
    ("max_age", "det:100,,0,"), ("max_age", "det:100,,4294967296,"), ("max_age", ",,-1,"),
    ("observe_seed", "det:100,,,18446744073709551616"), ("observe_seed", ",,,x"),
])
def test_bad_observe_cells(device_bins, tmp_path, field, row):
    res = tmp_path / "r.csv"
    res.write_text(f"{HEADER}\n/a,0,,{row}\n")
    proc = subprocess.run([str(device_bins["release"]), "--listen", "127.0.0.1:0",
                           "--resources", str(res)], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2
    assert re.fullmatch(rf"error: {re.escape(str(res))}:2: {field}: .+\n", proc.stderr), proc.stderr


@pytest.mark.parametrize(("spec", "dist"), [
    ("exp:1000", stats.expon(scale=1000)),
    ("uniform:100:300", stats.uniform(loc=100, scale=200)),
    ("lognormal:1000:0.5", stats.lognorm(s=math.sqrt(math.log1p(0.25)),
                                         scale=1000 * math.exp(-math.log1p(0.25) / 2))),
    ("pareto:1000:2.5", stats.pareto(b=2.5, scale=1000 * 1.5 / 2.5)),
])
def test_samplers_match_their_distribution(device_bins, tmp_path, spec, dist):
    res = tmp_path / "r.csv"

    def dump(seed: str) -> list[float]:
        res.write_text(f"path,service_us,observe_rit,observe_seed\n/x,0,{spec},{seed}\n/d,0,det:777,\n")
        out = subprocess.run([str(device_bins["release"]), "--resources", str(res),
                              "--dump-notify", "/x:20000"], capture_output=True, text=True,
                             check=True, timeout=30).stdout
        return [int(v) / 1000 for v in out.split()]

    draws = dump("5")
    assert len(draws) == 20000 and draws == dump("5") and draws != dump("6")
    assert stats.kstest(draws, dist.cdf).pvalue > 0.001
    det = subprocess.run([str(device_bins["release"]), "--resources", str(res),
                          "--dump-notify", "/d:5"], capture_output=True, text=True, check=True,
                         timeout=30).stdout.split()
    assert det == ["777000"] * 5
