"""Observe (RFC 7641) end to end: wotbench-ge's OBS / UNOBS rows against a
real wotbench-device on loopback (README.md, "Observe").

- test_pipeline: NON and CON observations straight to the device, the
  device's first seq forced near 2^24 so that every observation wraps;
  every notification the device sent arrives once, in order, ACKed when
  CON, and the notify CSV's rows are self-consistent.
- test_faults: through a UDP relay that drops, duplicates and swaps
  notifications of one observation, withholds another's until the device
  answers the GE's re-registration (Max-Age 1 s), and replays an old
  notification after the deregistration's answer; the GE's counts equal
  the relay's exactly (the withheld ones are the old epoch's tail, not
  counted: README.md, "Observe"), and the replay is answered with an RST.
- test_con_give_up: the relay drops every transmission of a CON
  notification until the device gives the observation up; the GE
  re-registers, the device answers with a new observation (a random first
  seq, or under ASan a fixed one inside the old epoch's window), and the
  GE starts a new epoch there: nothing stale, no jump counted as lost,
  and the one notification the relay drops afterwards is the loss.
All run the release and the ASan/UBSan GE."""

from __future__ import annotations

import json
import re
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import Device
from gehelpers import SAN_ENV, run_ge, write_trace
from lossrelay import UdpRelay

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

SEQ0 = (1 << 24) - 20  # every observation wraps after 20 notifications
OBSERVE, MAX_AGE = 6, 14
CON, NON = 0, 1
N_OF = re.compile(rb";n=(\d+)\.*$")


def resources(path: Path, obs: dict[str, tuple[str, int]]) -> Path:
    """/r/0 (plain) and the observable resources {path: (type, max_age)},
    each det:20ms."""
    lines = ["path,service_us,payload_bytes,observe_rit,notify_type,max_age,observe_seed",
             "/r/0,0,,,,,"]
    lines += [f"{p},0,0,det:20000,{t},{age},{i + 1}" for i, (p, (t, age)) in enumerate(obs.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def device(device_bin: Path, res: Path, *args: str) -> Device:
    return Device(device_bin, res, args=("--stats", str(res.with_suffix(".stats.json")), *args)).start()


def stop(dev: Device) -> dict[str, Any]:
    """SIGINT, then the device's stats."""
    assert dev.proc is not None
    dev.proc.send_signal(signal.SIGINT)
    dev.proc.communicate(timeout=30)
    assert dev.proc.returncode == 0
    stats: dict[str, Any] = json.loads(dev.resources.with_suffix(".stats.json").read_text())
    return stats


def options(data: bytes) -> dict[int, bytes]:
    """The options of a CoAP message (first value of each)."""
    tkl = data[0] & 0x0F
    i, num = 4 + tkl, 0
    out: dict[int, bytes] = {}
    while i < len(data) and data[i] != 0xFF:
        d, ln = data[i] >> 4, data[i] & 0x0F
        i += 1
        if d == 13:
            d, i = data[i] + 13, i + 1
        elif d == 14:
            d, i = int.from_bytes(data[i:i + 2], "big") + 269, i + 2
        if ln == 13:
            ln, i = data[i] + 13, i + 1
        elif ln == 14:
            ln, i = int.from_bytes(data[i:i + 2], "big") + 269, i + 2
        num += d
        out.setdefault(num, data[i:i + ln])
        i += ln
    return out


def parts(data: bytes) -> tuple[int, int, bytes, dict[int, bytes]]:
    """(type, code, token, options) of a CoAP message."""
    return data[0] >> 4 & 3, data[1], data[4:4 + (data[0] & 0x0F)], options(data) if data[1] else {}


def n_of(data: bytes) -> int | None:
    """The payload's n (wotbench-device's t=;e=;n=), None without one."""
    m = N_OF.search(data)
    return int(m.group(1)) if m else None


def check_rows(notes: pd.DataFrame) -> None:
    """Every stamped row is self-consistent in integers (formats.md)."""
    s = notes.dropna(subset=["latency_us"])
    assert len(s) == len(notes)
    assert (s.dev_sent_us == s.recv_us - s.latency_us).all()
    assert (s.age_us == s.recv_us - s.event_us).all()
    assert (s.event_us <= s.dev_sent_us).all() and (s.latency_us >= 0).all()


@pytest.mark.parametrize("asan", [False, True])
def test_pipeline(asan, ge_bin, ge_asan_bin, device_bin, tmp_path):
    obs = {f"/o/{j}": ("con" if j % 2 else "non", 60) for j in range(6)}
    dev = device(device_bin, resources(tmp_path / "res.csv", obs), "--obs-seq-start", str(SEQ0))
    try:
        rows = [(0, 1000 * j, "OBS", dev.uri(p)) for j, p in enumerate(obs)]
        rows += [(0, 10_000 + 100_000 * k, "GET", dev.uri("/r/0")) for k in range(10)]
        rows += [(0, 1_200_000 + 1000 * j, "UNOBS", dev.uri(p)) for j, p in enumerate(obs)]
        trace = write_trace(tmp_path / "t.csv", sorted(rows, key=lambda r: str(r[1]).zfill(12)))
        notify = tmp_path / "n.csv"
        run = run_ge(ge_asan_bin if asan else ge_bin, trace, "--notify-out", str(notify),
                     env=SAN_ENV if asan else None)
    finally:
        st = stop(dev)
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "ok").all() and list(run.rows.method.unique()) == ["OBS", "GET", "UNOBS"]
    o = run.summary["observe"]
    notes = pd.read_csv(notify)
    assert st["obs_registered"] == st["obs_cancelled"] == 6 and st["obs_active"] == 0
    assert o["observations"] == o["registered"] == o["cancelled"] == 6
    assert o["lost"] == o["tail_unknown"] == o["dropped_by_device"] == 0
    # every message the device sent, once: its registration answers and notifications
    assert o["notifications"] == len(notes) == st["notify_sent"] + 6
    # (one in flight while its UNOBS was is `after_cancel`)
    assert o["fresh"] + o["after_cancel"] == st["notify_sent"]
    assert o["duplicates"] == o["reordered"] == 0
    # every CON one ACKed; the ACK of one in flight at the UNOBS may come too late to count
    assert o["con_notifications"] == st["notify_con"] == o["acks_sent"]
    assert o["acks_sent"] - o["after_cancel"] <= st["notify_acked"] <= o["acks_sent"]
    assert st["notify_retransmits"] == 0 and o["rsts_sent"] == 0
    assert run.summary["acks_sent"] == o["acks_sent"]  # no CON responses besides
    for key, g in notes.groupby("obs"):
        k = int(str(key))
        assert g.status.iloc[0] == "registered"
        assert g.status.iloc[1:].isin(["fresh", "after_cancel"]).all()
        assert (g.seq == [(SEQ0 + i) % (1 << 24) for i in range(len(g))]).all(), k
        assert g.n.tolist() == list(range(len(g)))
        assert (g.gap[g.status == "fresh"] == 0).all()
        assert len(g) > 21  # ~1.2 s of det:20ms: every observation wrapped
        assert set(g.type.iloc[1:]) == {"con" if k % 2 else "non"}
    assert notes.reg_row.tolist() == [int(run.rows.index[run.rows.method == "OBS"][k]) for k in notes.obs]
    check_rows(notes)
    assert o["latency_us"]["count"] == len(notes) and o["age_us"]["count"] == len(notes)


class Relay(UdpRelay):
    """GE <-> relay <-> device, with notification faults (module doc)."""

    def __init__(self, device_port: int) -> None:
        self.drop = {5, 15}  # obs 0: notification ordinals
        self.dup = 8
        self.swap = 11  # with 12
        self.replay = 3
        self.withhold_from = 5  # obs 1: from this ordinal until the device answers the re-registration
        self.tokens: list[bytes] = []  # the observations' tokens, in OBS order
        self.seen: dict[bytes, int] = {}  # notifications per token
        self.kept: dict[int, bytes] = {}  # obs 0's notifications by ordinal
        self.held: bytes | None = None
        self.withholding = False
        self.withheld = 0
        self.rereg_seen = 0
        self.rsts: list[int] = []
        self.forwarded = 0
        super().__init__(device_port)

    def to_ge(self, data: bytes) -> None:
        assert self.client
        self.front.sendto(data, self.client)
        self.forwarded += 1

    def from_client(self, data: bytes, addr: tuple[str, int], now: int) -> None:
        typ, tkl, code = data[0] >> 4 & 3, data[0] & 0x0F, data[1]
        if code == 0 and typ == 3:
            self.rsts.append(int.from_bytes(data[2:4], "big"))
        tok = data[4:4 + tkl]
        obs = options(data).get(OBSERVE) if code == 1 else None
        if obs == b"" and tok not in self.tokens:
            self.tokens.append(tok)
        elif obs == b"" and typ == 1 and len(self.tokens) > 1 and tok == self.tokens[1]:
            self.rereg_seen += 1  # the re-registration: its answer ends the withholding
        self.to_device(data)

    def notification(self, data: bytes, tok: bytes) -> None:
        k = self.seen[tok] = self.seen.get(tok, -1) + 1  # 0: the registration answer
        if len(self.tokens) > 1 and tok == self.tokens[1]:
            if k == self.withhold_from and not self.rereg_seen:
                self.withholding = True
            if self.withholding and self.rereg_seen and n_of(data) == 0:
                self.withholding = False  # the answer (n=0) goes through
            if self.withholding:
                self.withheld += 1
                return
            self.to_ge(data)
            return
        if tok != self.tokens[0]:
            self.to_ge(data)
            return
        self.kept[k] = data
        if k in self.drop:
            return
        if k == self.swap:
            self.held = data
            return
        self.to_ge(data)
        if k == self.dup:
            self.to_ge(data)
        if k == self.swap + 1 and self.held:
            self.to_ge(self.held)

    def from_device(self, data: bytes, now: int) -> None:
        tkl, code = data[0] & 0x0F, data[1]
        tok = data[4:4 + tkl]
        opts = options(data) if code else {}
        if code and tok in self.tokens and OBSERVE in opts:
            self.notification(data, tok)
            return
        self.to_ge(data)
        if code and self.tokens and tok == self.tokens[0] and 65001 in opts:
            self.to_ge(self.kept[self.replay])  # after its UNOBS answer: an old one again

    def close(self) -> None:
        time.sleep(0.2)  # the RST of the replay
        super().close()


def observe_through(relay: UdpRelay, dev: Device, paths: list[str], unobs_us: int, grace_ms: int,
                    ge: Path, asan: bool, tmp_path: Path) -> tuple[Any, dict[str, Any], pd.DataFrame]:
    """The GE observes ``paths`` through ``relay`` from t=0 and cancels them at
    ``unobs_us``; the relay closed and the device stopped whatever happens:
    (the GE's run, the device's stats, the notify CSV)."""
    try:
        uri = f"coap://127.0.0.1:{relay.port}"
        rows = [(0, 1000 * j, "OBS", uri + p) for j, p in enumerate(paths)]
        rows += [(0, unobs_us + 1000 * j, "UNOBS", uri + p) for j, p in enumerate(paths)]
        notify = tmp_path / "n.csv"
        run = run_ge(ge, write_trace(tmp_path / "t.csv", rows), "--notify-out", str(notify),
                     "--observe-grace-ms", str(grace_ms), env=SAN_ENV if asan else None)
    finally:
        relay.close()
        st = stop(dev)
    assert run.returncode == 0, run.stderr
    return run, st, pd.read_csv(notify)


@pytest.mark.parametrize("asan", [False, True])
def test_faults(asan, ge_bin, ge_asan_bin, device_bin, tmp_path):
    obs = {"/o/0": ("non", 60), "/o/1": ("non", 1), "/o/2": ("con", 60)}
    dev = device(device_bin, resources(tmp_path / "res.csv", obs))
    relay = Relay(dev.port)
    run, st, notes = observe_through(relay, dev, list(obs), 2_500_000, 200,
                                     ge_asan_bin if asan else ge_bin, asan, tmp_path)
    o = run.summary["observe"]
    assert relay.rereg_seen == 1 and relay.withheld > 10
    # the replay after cancellation is more than 64 seqs old: stale, not distinct
    assert o["duplicates"] == 1 and o["reordered"] == 1 and o["stale"] == 1
    assert o["lost"] == len(relay.drop)  # the withheld tail of obs 1's first epoch is not counted
    assert o["reregistrations"] == o["rereg_answered"] == 1 and st["obs_reregistered"] == 1
    assert o["after_cancel"] >= 1 and o["rsts_sent"] == 1 and len(relay.rsts) == 1
    assert o["notifications"] == len(notes) == relay.forwarded - 3  # all but the UNOBS answers
    assert o["cancelled"] == 3 and o["tail_unknown"] == 0
    assert st["obs_active"] == 0 and st["obs_cancelled"] == 3
    n0 = notes[notes.obs == 0]
    assert n0.status.tolist().count("reordered") == 1 and n0.status.iloc[-1] == "after_cancel"
    assert (n0.gap == 1).sum() == 3 and (n0.gap > 1).sum() == 0  # after each drop, and the swap
    n1 = notes[notes.obs == 1]
    rr = n1[n1.status == "reregistered"]
    assert len(rr) == 1 and int(rr.gap.iloc[0]) == 0 and int(rr.n.iloc[0]) == 0
    assert n1.gap.sum() == 0 and o["seq_resets"] == 1
    assert o["con_notifications"] == st["notify_con"] == o["acks_sent"]
    assert o["acks_sent"] - o["after_cancel"] <= st["notify_acked"] <= o["acks_sent"]
    check_rows(notes)


class GiveUpRelay(UdpRelay):
    """GE <-> relay <-> device: every datagram of observation 0 from its
    first CON notification on is dropped (the CON, its retransmissions and
    the newer states sent in its place) until the GE re-registers; after
    the device's answer (n=0) the third NON notification is dropped."""

    def __init__(self, device_port: int) -> None:
        self.tokens: list[bytes] = []
        self.k = -1  # obs 0's notifications so far (0: the registration answer)
        self.dropping = False
        self.dropped: list[bytes] = []  # obs 0's datagrams dropped before the re-registration
        self.rereg_seen = 0
        self.answer: bytes | None = None  # the device's answer to it
        self.non_after = 0
        self.lost_after: list[bytes] = []  # dropped after the answer
        self.notes = 0  # notifications passed to the GE
        super().__init__(device_port)

    def from_client(self, data: bytes, addr: tuple[str, int], now: int) -> None:
        typ, code, tok, opts = parts(data)
        if code == 1 and opts.get(OBSERVE) == b"":
            if tok not in self.tokens:
                self.tokens.append(tok)
            elif typ == NON and tok == self.tokens[0]:
                self.rereg_seen += 1
                self.dropping = False
        self.to_device(data)

    def from_device(self, data: bytes, now: int) -> None:
        assert self.client
        typ, code, tok, opts = parts(data)
        if code >> 5 == 2 and OBSERVE in opts and self.tokens and tok == self.tokens[0]:
            self.k += 1
            if not self.rereg_seen and (self.dropping or (typ == CON and self.k >= 3)):
                self.dropping = True
                self.dropped.append(data)
                return
            if self.rereg_seen and self.answer is None and n_of(data) == 0:
                self.answer = data
            elif self.answer is not None and typ == NON:
                self.non_after += 1
                if self.non_after == 3:
                    self.lost_after.append(data)
                    return
        self.notes += code >> 5 == 2 and OBSERVE in opts
        self.front.sendto(data, self.client)


@pytest.mark.parametrize("asan", [False, True])
def test_con_give_up(asan, ge_bin, ge_asan_bin, device_bin, tmp_path):
    # ACK_TIMEOUT 20 ms: the device gives up 31 x [20, 30) ms after the first
    # drop; the GE re-registers Max-Age 1 s + 400 ms after the last fresh one
    obs = {"/o/0": ("non:4", 1), "/o/1": ("non", 60)}
    seq = ("--obs-seq-start", "100") if asan else ()  # the restart lands on the old epoch's seqs
    dev = device(device_bin, resources(tmp_path / "res.csv", obs), "--ack-timeout-ms", "20", *seq)
    relay = GiveUpRelay(dev.port)
    run, st, notes = observe_through(relay, dev, list(obs), 2_300_000, 400,
                                     ge_asan_bin if asan else ge_bin, asan, tmp_path)
    o = run.summary["observe"]
    # the device gave up and made a new observation for the re-registration
    assert st["obs_gave_up"] == 1 and st["obs_registered"] == 3 and st["obs_reregistered"] == 0
    assert relay.rereg_seen == 1 and relay.answer is not None
    assert len(relay.dropped) >= 1 + 4  # the CON and its retransmissions (or newer states instead)
    assert o["reregistrations"] == o["rereg_answered"] == 1 and o["seq_resets"] == 1
    # the jump to the new observation's seqs is no loss and nothing is stale;
    # the old epoch's dropped tail is not counted (README.md, "Observe")
    assert o["stale"] == 0 and o["reordered"] == 0
    assert len(relay.lost_after) == 1 and o["lost"] == 1 == int(notes.gap.sum())
    assert o["cancelled"] == 2 and o["tail_unknown"] == o["dropped_by_device"] == 0
    n0 = notes[notes.obs == 0]
    rr = n0[n0.status == "reregistered"]
    assert len(rr) == 1 and int(rr.n.iloc[0]) == 0 and int(rr.gap.iloc[0]) == 0
    assert int(rr.seq.iloc[0]) == int.from_bytes(options(relay.answer)[OBSERVE], "big")
    assert rr.index[0] > n0.index[0]
    after = n0.loc[rr.index[0]:]
    assert after.status.iloc[1:].isin(["fresh", "duplicate", "after_cancel"]).all()
    assert int(after.gap.sum()) == 1 and (after.n.diff().dropna() > 0).all()
    # the notify CSV is the summary's
    assert o["notifications"] == len(notes) == relay.notes
    counts = notes.status.value_counts()
    for status, key in (("registered", "registered"), ("fresh", "fresh"), ("reregistered", "rereg_answered"),
                        ("duplicate", "duplicates"), ("after_cancel", "after_cancel")):
        assert int(counts.get(status, 0)) == o[key], status
    assert o["registered"] == 2
    check_rows(notes)
