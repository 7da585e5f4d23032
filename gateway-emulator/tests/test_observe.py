"""Observe (RFC 7641) end to end: wotbench-ge's OBS / UNOBS rows against a
real wotbench-device on loopback (README.md, "Observe").

- test_pipeline: NON and CON observations straight to the device, the
  device's first seq forced near 2^24 so that every observation wraps;
  every notification the device sent arrives once, in order, ACKed when
  CON, and the notify CSV's rows are self-consistent.
- test_faults: through a UDP relay that drops, duplicates and swaps
  notifications of one observation, withholds another's until the GE
  re-registers (Max-Age 1 s), and replays an old notification after the
  deregistration's answer; the GE's counts equal the relay's exactly, and
  the replay is answered with an RST.
Both run the release and the ASan/UBSan binary."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from conftest import Device
from gehelpers import SAN_ENV, run_ge, write_trace
from lossrelay import UdpRelay

SEQ0 = (1 << 24) - 20  # every observation wraps after 20 notifications
OBSERVE, MAX_AGE = 6, 14


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
        self.withhold_from = 5  # obs 1: from this ordinal until the GE re-registers
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
            self.rereg_seen += 1  # the re-registration: stop withholding
            self.withholding = False
        self.to_device(data)

    def notification(self, data: bytes, tok: bytes) -> None:
        k = self.seen[tok] = self.seen.get(tok, -1) + 1  # 0: the registration answer
        if len(self.tokens) > 1 and tok == self.tokens[1]:
            if k == self.withhold_from and not self.rereg_seen:
                self.withholding = True
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


@pytest.mark.parametrize("asan", [False, True])
def test_faults(asan, ge_bin, ge_asan_bin, device_bin, tmp_path):
    obs = {"/o/0": ("non", 60), "/o/1": ("non", 1), "/o/2": ("con", 60)}
    dev = device(device_bin, resources(tmp_path / "res.csv", obs))
    relay = Relay(dev.port)
    try:
        uri = f"coap://127.0.0.1:{relay.port}"
        rows = [(0, 1000 * j, "OBS", uri + p) for j, p in enumerate(obs)]
        rows += [(0, 2_500_000 + 1000 * j, "UNOBS", uri + p) for j, p in enumerate(obs)]
        trace = write_trace(tmp_path / "t.csv", rows)
        notify = tmp_path / "n.csv"
        run = run_ge(ge_asan_bin if asan else ge_bin, trace, "--notify-out", str(notify),
                     "--observe-grace-ms", "200", env=SAN_ENV if asan else None)
    finally:
        relay.close()
        st = stop(dev)
    assert run.returncode == 0, run.stderr
    o = run.summary["observe"]
    notes = pd.read_csv(notify)
    assert relay.rereg_seen == 1 and relay.withheld > 10
    # the replay after cancellation is more than 64 seqs old: stale, not distinct
    assert o["duplicates"] == 1 and o["reordered"] == 1 and o["stale"] == 1
    assert o["lost"] == len(relay.drop) + relay.withheld
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
    assert len(rr) == 1 and int(rr.gap.iloc[0]) == relay.withheld and int(rr.n.iloc[0]) == 0
    assert o["con_notifications"] == st["notify_con"] == o["acks_sent"]
    assert o["acks_sent"] - o["after_cancel"] <= st["notify_acked"] <= o["acks_sent"]
    check_rows(notes)
