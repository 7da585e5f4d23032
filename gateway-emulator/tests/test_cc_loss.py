"""Congestion control in the loop (README.md, "Congestion control"): the GE
against a real wotbench-device on loopback through a small UDP relay
(lossrelay.py) that drops chosen datagrams deterministically (the first
transmission of every third request, the first two of request 10) and
holds back the first answer to requests 4 and 7 until the GE sends them
again (a spurious retransmission each: the GE then gets both answers).
The retransmissions per request must be what the script implies, and each
retransmission comes one timer after the transmission before it, measured
by the relay: rfc7252 keeps ACK_TIMEOUT (dithering off with
--ack-random-factor 1.0), doubled; cocoa's first timer follows its RTO
estimate (computed here again from the CSV's stamps by the draft's
formulas) and backs off by its variable factor (3 below 1 s). The same
runs write the per-exchange RTO log (--rto-out), checked against the
relay's record and the recomputed estimates, and count the delayed
exchanges in spurious_retransmissions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from gehelpers import SAN_ENV, GeRun, free_port, run_ge, write_trace
from lossrelay import LossScript, Relay

from wotbench.base.formats import GE_RTO_COLUMNS, GE_RTO_EVENTS, GE_RTO_KINDS

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

N = 15            # requests
GAP_US = 100_000  # between them
ACK_MS = 300      # --ack-timeout-ms
# request index -> first transmissions the relay drops
DROPS = {i: 1 for i in range(N) if i % 3 == 2} | {10: 2}
# request index -> first answers held until the GE sends the request again
DELAYS = {4: 1, 7: 1}
RETRANS = [DROPS.get(i, 0) + DELAYS.get(i, 0) for i in range(N)]
TOL_NS = 10_000_000  # the relay's and the loop's jitter
RTO_TOL_US = 10      # the model on whole-us stamps against the GE's ns


@dataclass
class Estimator:
    srtt: float
    var: float


@dataclass
class Cocoa:
    """The draft's cocoa (G = 100 ms) in ns, without aging (the runs are
    too short for it)."""

    ack: float
    rto: float = 0.0
    sampled: bool = False
    est: dict[bool, Estimator] = field(default_factory=dict)  # strong? -> estimator

    def base(self, inflight: int) -> float:
        return min(self.rto, 32e9) if self.sampled else self.ack * (inflight + 1)

    def sample(self, rtt: float, retrans: int) -> None:
        if retrans > 2:
            return
        strong = retrans == 0
        k, w = (4, 0.5) if strong else (1, 0.25)
        e = self.est.get(strong)
        e = Estimator(rtt, rtt / 2) if e is None else Estimator(
            0.875 * e.srtt + 0.125 * rtt, 0.75 * e.var + 0.25 * abs(e.srtt - rtt))
        self.est[strong] = e
        self.rto = w * (e.srtt + max(100e6, k * e.var)) + (1 - w) * self.rto
        self.sampled = True


@dataclass
class Replay:
    first: list[float]  # each request's first timer B (ns)
    after: list[float]  # the RTO after its sample (ns)
    changes: list[tuple[int, float]]  # (t_us, RTO from then on), in time order

    def rto_at(self, t_us: int) -> float:
        return [r for t, r in self.changes if t <= t_us][-1]


def cocoa_replay(rows: pd.DataFrame) -> Replay:
    """The draft's cocoa replayed on the run's own stamps: each request's
    first timer from the state at its first send, the state fed at each
    answer with R = recv - sent (strong after no retransmission, weak after
    one or two), in time order."""
    model = Cocoa(ACK_MS * 1e6, ACK_MS * 1e6)
    sent = [int(v) for v in rows.sent_us]
    recv = [int(v) for v in rows.recv_us]
    events = sorted([(t, 1, i) for i, t in enumerate(sent)] + [(t, 0, i) for i, t in enumerate(recv)])
    first, after = [0.0] * len(rows), [0.0] * len(rows)
    changes = [(0, model.rto)]
    inflight = 0
    for t, is_send, i in events:
        if is_send:
            first[i] = model.base(inflight)
            inflight += 1
            continue
        inflight -= 1
        model.sample((recv[i] - sent[i]) * 1000.0, int(rows.retransmissions[i]))
        after[i] = model.rto
        changes.append((t, model.rto))
    return Replay(first, after, changes)


def run_lossy(ge, make_device, tmp_path: Path, strategy: str,
              env: dict[str, str] | None = None) -> tuple[GeRun, dict[int, list[int]], Path, str]:
    dev = make_device({"/s0": 0})
    relay = Relay(dev.port, LossScript(requests=DROPS, delays=DELAYS))
    rto = tmp_path / "rto.csv"
    try:
        uri = f"coap://127.0.0.1:{relay.port}/s0"
        trace = write_trace(tmp_path / "t.csv", [(0, i * GAP_US, "GET", uri) for i in range(N)])
        run = run_ge(ge, trace, "--congestion", strategy, "--ack-random-factor", "1.0",
                     "--ack-timeout-ms", str(ACK_MS), "--max-retransmit", "4",
                     "--rto-out", str(rto), env=env, timeout=60)
    finally:
        relay.close()
    assert run.returncode == 0, run.stderr
    return run, relay.seen, rto, f"127.0.0.1:{relay.port}"


def read_rto(path: Path) -> pd.DataFrame:
    log = pd.read_csv(path, dtype={"peer": str, "event": str, "kind": str})
    assert tuple(log.columns) == GE_RTO_COLUMNS
    assert set(log.event) <= set(GE_RTO_EVENTS)
    assert set(log.kind.dropna()) <= set(GE_RTO_KINDS)
    return log


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in frame.to_dict("records")]


def check_losses(run: GeRun, seen: dict[int, list[int]]) -> None:
    rows = run.rows
    assert (rows.status == "ok").all()
    assert list(rows.retransmissions) == RETRANS
    assert [len(seen[i]) for i in range(N)] == [r + 1 for r in RETRANS]
    assert run.summary["retransmissions"] == sum(RETRANS)
    # each held answer came back after the GE had sent the request again
    assert run.summary["spurious_retransmissions"] == len(DELAYS)
    assert run.summary["garbage"]["duplicate_response"] == len(DELAYS)


def gaps(seen: dict[int, list[int]], i: int) -> list[int]:
    return [b - a for a, b in zip(seen[i], seen[i][1:], strict=False)]


def check_rto_log(run: GeRun, seen: dict[int, list[int]], path: Path, peer: str,
                  used: int) -> pd.DataFrame:
    """The log against the relay and the CSV: one send row per transmission
    the relay saw (tx 0, 1, ...; the first at or before the CSV's sent_us, the kernel's stamp; each timer
    the gap to the next transmission), one sample row per request at its
    answer (R = the CSV's response_us, strong after no retransmission, weak
    after one or two), one dup row per held answer, no timeouts."""
    rows, log = run.rows, read_rto(path)
    assert (log.peer == peer).all() and (log.device_id == 0).all()
    assert len(log) == sum(RETRANS) + N + N + len(DELAYS)
    assert not (log.event == "timeout").any()
    for i in range(N):
        sends = log[(log.row == i) & (log.event == "send")]
        assert list(sends.tx) == list(range(RETRANS[i] + 1))
        t_us, timer = list(sends.t_us), list(sends.timer_us)
        # the log's instant is the GE's, before its send call; the CSV's is the kernel's stamp of
        # that datagram: between the call and the first retransmission
        assert t_us[0] <= int(rows.sent_us[i]) and (len(t_us) == 1 or int(rows.sent_us[i]) <= t_us[1]), i
        for n, g in enumerate(gaps(seen, i)):
            assert abs((t_us[n + 1] - t_us[n]) * 1000 - g) < TOL_NS, (i, n, g)
            assert abs(timer[n] * 1000 - g) < TOL_NS, (i, n, g, timer[n])
        [s] = records(log[(log.row == i) & (log.event == "sample")])
        assert (s["tx"], s["t_us"], s["rtt_us"]) == (RETRANS[i], rows.recv_us[i], rows.response_us[i])
        assert s["kind"] == ("strong" if RETRANS[i] == 0 else "weak") and s["used"] == used
        assert pd.isna(s["timer_us"])
    dups = log[log.event == "dup"]
    assert list(dups.row) == sorted(DELAYS) and (dups.tx == 1).all()
    assert (dups.rtt_us > dups.row.map(lambda i: rows.response_us[i])).all()
    assert run.summary["memory"]["rto_forced"] == 0
    return log


def test_rfc7252_keeps_todays_timers(ge_bin, make_device, tmp_path):
    run, seen, rto, peer_addr = run_lossy(ge_bin, make_device, tmp_path, "rfc7252")
    check_losses(run, seen)
    for i in range(N):
        for n, g in enumerate(gaps(seen, i)):
            assert abs(g - ACK_MS * 1e6 * 2**n) < TOL_NS, (i, n, g)
    log = check_rto_log(run, seen, rto, peer_addr, used=0)
    assert (log.rto_us == ACK_MS * 1000).all()
    sends = log[log.event == "send"]
    assert (sends.timer_us == ACK_MS * 1000 * 2**sends.tx).all()
    cc = run.summary["congestion"]
    assert cc["strategy"] == "rfc7252" and cc["ack_random_factor"] == 1.0
    t0 = cc["timer0_us"]
    assert t0["count"] == N and t0["p5"] == t0["max"] == ACK_MS * 1000
    [peer] = cc["peers"]
    assert peer["peer"] == peer_addr
    assert peer["exchanges"] == N and peer["samples_unused"] == N
    assert peer["samples_strong"] == peer["samples_weak"] == 0
    assert peer["rto_us"] == ACK_MS * 1000


def check_cocoa(run: GeRun, seen: dict[int, list[int]], rto: Path, peer_addr: str) -> None:
    check_losses(run, seen)
    model = cocoa_replay(run.rows)
    want = model.first
    vbf = [3 if b < 1e9 else 1.5 if b > 3e9 else 2 for b in want]
    for i in range(N):
        for n, g in enumerate(gaps(seen, i)):
            assert abs(g - want[i] * vbf[i] ** n) < TOL_NS, (i, n, g, want[i])
    # after two clean exchanges the first timer is cocoa's, well below 300 ms
    assert want[0] == ACK_MS * 1e6 and max(want[2:]) < 0.7 * ACK_MS * 1e6
    assert gaps(seen, 2)[0] < 0.7 * ACK_MS * 1e6
    # the log's timers and RTO estimates are the draft's, to the us
    log = check_rto_log(run, seen, rto, peer_addr, used=1)
    for r in records(log[log.event == "send"]):
        i = int(r["row"])
        assert abs(r["timer_us"] - want[i] * vbf[i] ** r["tx"] / 1000) <= RTO_TOL_US, r
        assert abs(r["rto_us"] - model.rto_at(r["t_us"]) / 1000) <= RTO_TOL_US, r
    for r in records(log[log.event == "sample"]):
        assert abs(r["rto_us"] - model.after[int(r["row"])] / 1000) <= RTO_TOL_US, r
    cc = run.summary["congestion"]
    assert cc["strategy"] == "cocoa"
    t0 = cc["timer0_us"]
    assert t0["count"] == N and t0["max"] == ACK_MS * 1000
    assert abs(t0["mean"] - sum(want) / N / 1000) < 1000  # within 1 ms
    [peer] = cc["peers"]
    assert peer["exchanges"] == N and peer["samples_unused"] == 0
    retried = sum(1 for r in RETRANS if r)
    assert peer["samples_weak"] == retried and peer["samples_strong"] == N - retried
    assert peer["aging_steps"] == 0 and 100_000 < peer["rto_us"] < ACK_MS * 1000
    assert abs(peer["rto_us"] - model.changes[-1][1] / 1000) <= RTO_TOL_US


def test_cocoa_adapts_its_first_timer(ge_bin, make_device, tmp_path):
    check_cocoa(*run_lossy(ge_bin, make_device, tmp_path, "cocoa"))


def test_cocoa_under_asan(ge_asan_bin, make_device, tmp_path):
    run, seen, rto, peer = run_lossy(ge_asan_bin, make_device, tmp_path, "cocoa", env=SAN_ENV)
    check_cocoa(run, seen, rto, peer)
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr


def test_rto_log_gives_up_and_skips_non(ge_bin, tmp_path):
    """Toward a port nobody answers: per request a send row for each of its
    two transmissions and a timeout row after the last timer; a NON run
    writes the header alone; the log may not be another output."""
    uri = f"coap://127.0.0.1:{free_port()}/a"
    trace = write_trace(tmp_path / "t.csv", [(3, i * 1000, "GET", uri) for i in range(2)])
    rto = tmp_path / "rto.csv"
    run = run_ge(ge_bin, trace, "--ack-timeout-ms", "20", "--max-retransmit", "1",
                 "--ack-random-factor", "1.0", "--rto-out", str(rto))
    assert run.returncode == 0, run.stderr
    log = read_rto(rto)
    assert (log.device_id == 3).all() and run.summary["spurious_retransmissions"] == 0
    for i in range(2):
        mine = log[log.row == i]
        assert list(zip(mine.event, mine.tx, strict=True)) == [("send", 0), ("send", 1), ("timeout", 1)]
        assert list(mine.timer_us[:2]) == [20_000, 40_000] and pd.isna(mine.timer_us.iloc[2])
        assert mine.t_us.iloc[2] - mine.t_us.iloc[1] >= 40_000  # at or after its timer
        assert mine.rtt_us.isna().all() and mine.kind.isna().all()
    run = run_ge(ge_bin, trace, "--type", "non", "--timeout-ms", "20", "--rto-out", str(rto))
    assert run.returncode == 0, run.stderr
    assert rto.read_text() == ",".join(GE_RTO_COLUMNS) + "\n"
    rto.unlink()
    run = run_ge(ge_bin, trace, "--rto-out", str(run.out))
    assert run.returncode == 2 and "--rto-out: is the same file as --out" in run.stderr
    assert not rto.exists() and not list(tmp_path.glob("*.tmp.*"))


@pytest.mark.parametrize("strategy", ["rfc7252", "cocoa", "cocoa-strong", "basic-rto",
                                      "linux-rto", "peakhopper-rto"])
def test_every_strategy_runs_and_is_recorded(strategy, ge_bin, make_device, tmp_path):
    dev = make_device({"/s0": 0})
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/s0")) for i in range(20)])
    run = run_ge(ge_bin, trace, "--congestion", strategy, "--ack-timeout-ms", str(ACK_MS))
    assert run.returncode == 0, run.stderr
    assert (run.rows.status == "ok").all()
    cc = run.summary["congestion"]
    assert cc["strategy"] == strategy and cc["ack_random_factor"] == 1.5
    [peer] = cc["peers"]
    assert peer["exchanges"] == 20 and cc["timer0_us"]["count"] == 20
    used = peer["samples_strong"] + peer["samples_weak"]
    assert used + peer["samples_unused"] == 20
    assert used == (0 if strategy == "rfc7252" else 20)


def test_default_dithering_is_rfc7252s(ge_bin, make_device, tmp_path):
    dev = make_device({"/s0": 0})
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/s0")) for i in range(200)])
    run = run_ge(ge_bin, trace, "--ack-timeout-ms", str(ACK_MS))
    assert run.returncode == 0, run.stderr
    t0 = run.summary["congestion"]["timer0_us"]
    assert run.summary["congestion"]["strategy"] == "rfc7252"
    # ACK_TIMEOUT x [1, 1.5): 200 draws spread over the interval
    assert ACK_MS * 1000 <= t0["p5"] < ACK_MS * 1100 and ACK_MS * 1400 < t0["max"] < ACK_MS * 1500


def test_non_runs_have_no_timers(ge_bin, make_device, tmp_path):
    dev = make_device({"/s0": 0})
    trace = write_trace(tmp_path / "t.csv", [(0, i * 1000, "GET", dev.uri("/s0")) for i in range(5)])
    run = run_ge(ge_bin, trace, "--type", "non", "--congestion", "cocoa")
    assert run.returncode == 0, run.stderr
    cc = run.summary["congestion"]
    assert cc["timer0_us"] is None
    assert cc["peers"][0]["exchanges"] == 0 and cc["peers"][0]["samples_unused"] == 0
