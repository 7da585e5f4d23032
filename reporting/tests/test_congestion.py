"""The congestion-control part of the report (reporting/_congestion.py) on
synthetic run folders: its numbers against the GE output recomputed here,
the RTO log read per peer, a missing log as missing evidence, timeouts
under a configured impairment as results (the errors check), the requests
NSTART held, and the sweep's strategies side by side."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wotbench.base import rundir as layout
from wotbench.reporting import _congestion as cc
from wotbench.reporting._analyze import analyze
from wotbench.reporting._load import find_files, ge_data
from wotbench.reporting._render import html_page, markdown, terminal_text


def _edit_json(path: Path, **changes) -> None:
    doc = json.loads(path.read_text())
    doc.update(changes)
    path.write_text(json.dumps(doc))


def _congestion_run(make_run, name: str = "cc", strategy: str = "cocoa", rto: bool = True, **synth):
    """A synthetic run whose GE ran ``strategy`` with NSTART unlimited and
    wrote an RTO log of two peers (devices 0 and 1), named in the manifest."""
    run = make_run(name, **synth)
    rd = layout.RunDir(run)
    _edit_json(rd.ge_summary(0), spurious_retransmissions=7,
               congestion={"strategy": strategy, "ack_random_factor": 1.5, "nstart": None, "probing_rate": None,
                           "held": {"nstart_waits": 0, "probing_waits": 0}, "peers": []})
    _edit_json(rd.manifest, congestion={"strategy": strategy, "nstart": None, "rto_out": ["ge/rto-0.csv"]})
    if rto:
        t = np.arange(0, 40_000_000, 1_000_000, dtype=np.int64)
        rows = [{"row": i, "device_id": p, "peer": f"10.0.0.{p + 2}:5683", "event": "send", "tx": 0,
                 "t_us": int(x), "timer_us": 2000, "rto_us": (p + 1) * 1000 + int(x) // 40_000, "rtt_us": "",
                 "kind": "", "used": ""} for i, x in enumerate(t) for p in (0, 1)]
        pd.DataFrame(rows).to_csv(rd.ge_rto(0), index=False)
    return run


def test_the_numbers_are_the_ge_outputs(make_run):
    run = _congestion_run(make_run, error_rate=0.03)
    an = analyze(run)
    c = an.result["congestion"]
    out = pd.read_csv(layout.RunDir(run).ge_csv(0))
    ph = an.result["phases"]["measure"]
    m = out[(out["intended_us"] >= ph[0]) & (out["intended_us"] < ph[1])]
    ok = m["status"] == "ok"
    sent = m[m["sent_us"].notna()]
    assert (c["requests"], c["ok"]) == (len(m), int(ok.sum()))
    assert c["completion_ratio"] == pytest.approx(ok.mean())
    assert c["transmissions_per_request"] == pytest.approx((1 + sent["retransmissions"]).mean())
    shares = sent["retransmissions"].value_counts(normalize=True)
    assert c["retransmission_shares"]["0"] == pytest.approx(shares.get(0, 0.0))
    assert c["retransmission_shares"]["4"] == pytest.approx(shares.get(4, 0.0)) and shares.get(4, 0) > 0
    assert c["response_us"]["p99"] == pytest.approx(np.percentile(m.loc[ok, "response_us"], 99))
    got = (out["status"] == "ok") & (out["recv_us"] >= ph[0]) & (out["recv_us"] < ph[1])     # arrived in the phase
    assert c["throughput_ok_per_s"] == pytest.approx(got.sum() / ((ph[1] - ph[0]) / 1e6))
    assert got.sum() != ok.sum()                       # not the same as the requests intended in it
    assert c["strategy"] == "cocoa" and c["nstart"] is None and c["spurious_retransmissions"] == 7
    assert c["device_duplicates"] == 0 and c["complete"] and c["problems"] == []
    # The RTO log: two peers, each its own median; the bins cover the run.
    rto = c["rto"]
    assert rto["peers"] == 2 and rto["events"] == 80 and rto["events_by_kind"] == {"send": 80}
    med = {p["peer"]: p["rto_median_us"] for p in rto["per_peer"]}
    assert med == {"10.0.0.2:5683": pytest.approx(1000 + 487.5), "10.0.0.3:5683": pytest.approx(2000 + 487.5)}
    assert len(rto["bins"]) <= cc.RTO_BINS and rto["bins"][0]["t_s"] == 0
    assert all(b["max_us"] - b["min_us"] == 1000 for b in rto["bins"])     # peer 1's RTO is peer 0's + 1 ms
    # Every format shows the part, and the RTO figure is drawn.
    term = terminal_text(an)
    assert "Congestion control" in term and "Strategy cocoa, NSTART unlimited" in term
    assert "## Congestion control" in markdown(an, [], None)
    assert '<h2 id="congestion">Congestion control</h2>' in html_page(an, [])
    from wotbench.reporting._plots import fig_rto
    assert (fig_rto(an) or b"")[:4] == b"\x89PNG"


def test_the_rto_columns_read_are_the_ge_s():
    from wotbench.base.formats import GE_RTO_COLUMNS

    assert cc.RTO_COLUMNS_USED == ("row", "peer", "event", "t_us", "rto_us")
    assert set(cc.RTO_COLUMNS_USED) <= set(GE_RTO_COLUMNS)


def test_a_missing_rto_log_is_missing_evidence_not_a_pass(make_run):
    an = analyze(_congestion_run(make_run, "norto", rto=False))
    c = an.result["congestion"]
    assert c["complete"] is False and c["rto"] is None
    assert c["problems"] == ["GE 0 was given --rto-out ge/rto-0.csv and it is missing: its RTO over time is not "
                             "known (missing evidence)"]
    assert "MISSING EVIDENCE: GE 0 was given --rto-out" in terminal_text(an)
    assert '<p class="fail">MISSING EVIDENCE' in html_page(an, [])
    # A log with its header alone, from a GE that sent CON exchanges, is no evidence either;
    # from a NON run (no CON exchange to log) it is what the GE had to say.
    rd = layout.RunDir(an.path)
    rd.ge_rto(0).write_text("row,device_id,peer,event,tx,t_us,timer_us,rto_us,rtt_us,kind,used\n")
    _edit_json(rd.ge_summary(0), type="con")
    assert analyze(an.path).result["congestion"]["problems"] == ["GE 0's RTO log ge/rto-0.csv has no rows "
                                                                 "(missing evidence)"]
    _edit_json(rd.ge_summary(0), type="non")
    assert analyze(an.path).result["congestion"]["complete"] is True
    # Without the manifest naming it (GE files alone, an older run) nothing was expected.
    _edit_json(layout.RunDir(an.path).manifest, congestion=None)
    assert analyze(an.path).result["congestion"]["complete"] is True


def _impaired(run: Path, groups: dict[str, dict[str, float | None]], group_of_device: str = "s") -> None:
    rd = layout.RunDir(run)
    ids = sorted(pd.read_csv(rd.ge_csv(0), usecols=["device_id"])["device_id"].unique())
    pd.DataFrame({"device_id": ids, "group": group_of_device, "container": [f"wb-synth-dev-{i}" for i in ids],
                  "address": "10.0.0.9"}).to_csv(rd.ge_devices(0), index=False)
    obs = json.loads(rd.observed.read_text())
    obs["impairment"] = {"how": "sidecar-iptables", "containers": len(ids), "requested": len(ids), "groups": groups}
    rd.observed.write_text(json.dumps(obs))


def test_timeouts_under_configured_loss_are_results_not_failures(make_run):
    lossy = make_run("lossy", error_rate=0.05)      # 5 % of the requests time out after 4 retransmissions
    before = {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]
    assert not before["ok"] and "> 1.0%" in before["reason"]
    _impaired(lossy, {"s": {"loss": 0.2, "delay_us": 0, "jitter_us": 0, "rate_bps": None}})
    r = analyze(lossy).result
    errors = {c["check"]: c for c in r["checks"]}["errors"]
    n = r["measure_counts"]["timeouts"]
    assert errors["ok"], errors["reason"]
    assert errors["reason"].startswith(f"{n} timeouts and 0 errors of {r['measure_counts']['requests']} requests "
                                       "(0.00% counted: ")
    assert f"{n} timeouts of devices under the configured impairment (s: loss 20%) are its results" in errors["reason"]
    # A rate limit is an impairment too; a group without loss or rate (delay alone) is not.
    _impaired(lossy, {"s": {"loss": 0.0, "delay_us": 0, "jitter_us": 0, "rate_bps": 8000}})
    assert {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]["ok"]
    _impaired(lossy, {"s": {"loss": 0.0, "delay_us": 10_000, "jitter_us": 0, "rate_bps": None}})
    assert not {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]["ok"]
    # Devices of another group than the impaired one get no excuse.
    _impaired(lossy, {"other": {"loss": 0.2}}, group_of_device="s")
    assert not {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]["ok"]


def test_only_the_timeouts_the_loss_explains_are_excused(make_run):
    """CON with 4 retransmissions at 20 % loss times out one exchange in
    0.2^5: 5 % of the requests timing out is not the loss (a device that
    hangs, a GE that drops what it received), so most are counted."""
    lossy = make_run("con-lossy", error_rate=0.05)
    rd = layout.RunDir(lossy)
    _edit_json(rd.ge_summary(0), type="con", max_retransmit=4)
    _impaired(lossy, {"s": {"loss": 0.2, "delay_us": 0, "jitter_us": 0, "rate_bps": None}})
    errors = {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]
    assert not errors["ok"], errors["reason"]
    assert "timeouts are counted" in errors["reason"]
    # At 80 % loss the same timeouts are what the loss explains (0.8^5 = 33 %).
    _impaired(lossy, {"s": {"loss": 0.8, "delay_us": 0, "jitter_us": 0, "rate_bps": None}})
    assert {c["check"]: c for c in analyze(lossy).result["checks"]}["errors"]["ok"]


def test_a_rate_limit_excuses_no_more_timeouts_than_the_device_answered(make_run):
    dead = make_run("rate-dead", error_rate=0.6)     # most requests time out: the device stopped answering
    _impaired(dead, {"s": {"loss": 0.0, "delay_us": 0, "jitter_us": 0, "rate_bps": 8000}})
    errors = {c["check"]: c for c in analyze(dead).result["checks"]}["errors"]
    assert not errors["ok"], errors["reason"]


def test_an_incomplete_rto_log_fails_the_verdict(make_run):
    an = analyze(_congestion_run(make_run, "norto-verdict", rto=False))
    check = {c["check"]: c for c in an.result["checks"]}.get("congestion")
    assert check is not None and not check["ok"] and "MISSING EVIDENCE" in check["reason"]
    assert an.result["verdict"] == "invalid"


def _ge_files(tmp_path: Path, rows: list[tuple[int, float, float, float | None, str]]) -> Path:
    """A folder of one GE output alone: (device, intended, sent, recv, status) per row."""
    df = pd.DataFrame(rows, columns=["device_id", "intended_us", "sent_us", "recv_us", "status"])
    df["response_us"] = df["recv_us"] - df["sent_us"]
    df["send_lag_us"] = df["sent_us"] - df["intended_us"]
    df["latency_intended_us"] = df["recv_us"] - df["intended_us"]
    for c, v in (("method", "GET"), ("uri", "coap://d/r"), ("code", "2.05"), ("retransmissions", 0),
                 ("service_us", 0)):
        df[c] = v
    (tmp_path / "ge").mkdir()
    df.to_csv(tmp_path / "ge" / "ge-0.csv", index=False)
    return tmp_path


def test_nstart_holds_are_the_requests_whose_peer_was_busy(tmp_path):
    run = _ge_files(tmp_path, [
        (1, 0, 0, 500, "ok"),           # in flight 0 .. 500
        (1, 100, 500, 600, "ok"),       # due at 100, its peer busy: held until 500
        (2, 150, 150, 160, "ok"),       # another peer: free
        (1, 1000, 1000, None, "timeout"),   # gives up at 9000 (the RTO log)
        (1, 2000, 9000, 9100, "ok"),    # held by the exchange that timed out
        (1, 9500, 9500, 9600, "ok"),    # free again
    ])
    g = ge_data(find_files(run))[0]
    log = pd.DataFrame({"row": [0, 1, 2, 3, 4, 5, 3], "event": ["send"] * 6 + ["timeout"],
                        "t_us": [0, 500, 150, 1000, 9000, 9500, 9000], "peer": "p", "rto_us": 1000})
    assert cc.nstart_holds(g, 1, False, log).tolist() == [False, True, False, False, True, False]
    # Without the log the give-up is unknown: the exchange stays in flight, the later rows of its peer count as held.
    assert cc.nstart_holds(g, 1, False, None).tolist() == [False, True, False, False, True, True]
    # NSTART 2: two in flight needed.
    assert cc.nstart_holds(g, 2, False, log).tolist() == [False] * 6
    # One peer for all (a gateway over shared sockets): device 2's request waits too.
    assert cc.nstart_holds(g, 1, True, log).tolist() == [False, True, True, False, True, False]
    # A request the log never saw sent (held past its timeout) was never in flight.
    never = log[~((log["row"] == 3) & (log["event"] == "send"))]
    assert cc.nstart_holds(g, 1, False, never).tolist() == [False, True, False, False, False, False]


def test_holds_excuse_nothing_when_they_cannot_be_trusted(tmp_path):
    """The holds are reconstructed from the rows' times, so lateness of the
    GE's own could pose as NSTART: more rows "held" than the GE counted, no
    RTO log of a CON run, or no row left free to judge: no excuse (None)."""
    run = _ge_files(tmp_path, [
        (1, 0, 0, 500, "ok"), (1, 100, 500, 600, "ok"), (2, 150, 150, 160, "ok"),
        (1, 1000, 1000, None, "timeout"), (1, 2000, 9000, 9100, "ok"), (1, 9500, 9500, 9600, "ok")])
    g = ge_data(find_files(run))[0]
    log = pd.DataFrame({"row": [0, 1, 2, 3, 4, 5, 3], "event": ["send"] * 6 + ["timeout"],
                        "t_us": [0, 500, 150, 1000, 9000, 9500, 9000], "peer": "p", "rto_us": 1000})

    def doc(waits: int) -> dict[str, object]:
        return {"type": "con", "congestion": {"nstart": 1, "held": {"nstart_waits": waits, "probing_waits": 0}}}

    got = cc.holds_section(g, doc(2), log, (0, 10_000), 1000)
    assert got is not None and got["held"] == 2 and got["free"] == 4
    # A window whose every row was held leaves nothing to judge the GE by; without the RTO log the give-ups
    # are unknown.
    assert cc.holds_section(g, doc(2), log, (100, 101), 1000) is None
    assert cc.holds_section(g, doc(2), None, (0, 10_000), 1000) is None


def test_holds_beyond_the_ge_s_own_count_are_its_lateness(tmp_path):
    """30 requests whose responses all come 5 ms late (a GE behind, say):
    by the times alone 29 of them "waited" for NSTART 1; a GE that counted
    1 hold did not hold them, so nothing is excused."""
    run = _ge_files(tmp_path, [(1, 100 * i, 100 * i, 100 * i + 5000, "ok") for i in range(30)])
    g = ge_data(find_files(run))[0]
    log = pd.DataFrame({"row": list(range(30)), "event": ["send"] * 30, "t_us": [100 * i for i in range(30)],
                        "peer": "p", "rto_us": 1000})

    def doc(waits: int) -> dict[str, object]:
        return {"type": "con", "congestion": {"nstart": 1, "held": {"nstart_waits": waits, "probing_waits": 0}}}

    assert cc.holds_section(g, doc(1), log, (0, 1000), 1000) is None
    got = cc.holds_section(g, doc(29), log, (0, 1000), 1000)
    assert got is not None and got["held_whole_run"] == 29


def test_the_sweep_puts_the_strategies_side_by_side_per_condition():
    def row(run: str, strategy: str, cond: str, p99: float) -> dict[str, object]:
        return {"run": run, "verdict": "valid", "congestion": {
            "condition": cond, "strategy": strategy, "nstart": 1, "completion_ratio": 0.99, "p50": 1000.0,
            "p95": 2000.0, "p99": p99, "transmissions_per_request": 1.25, "spurious": 3, "duplicates": 4,
            "throughput": 100.0, "problems": []}}

    rows = [row("r1", "cocoa", "loss 20%", 3e6), row("r2", "rfc7252", "loss 20%", 5e6),
            row("r3", "rfc7252", "no impairment", 2e3), row("r4", "linux-rto", "loss 20%", 4e6)]
    t = cc.side_by_side(rows)
    assert t is not None
    head, body = t
    assert head[:3] == ["condition", "strategy", "NSTART"]
    assert [(b[0], b[1]) for b in body] == [("loss 20%", "rfc7252"), ("loss 20%", "cocoa"),
                                            ("loss 20%", "linux-rto"), ("no impairment", "rfc7252")]
    assert body[0][6] == "5.00 s" and body[0][7] == "1.250" and body[0][-1] == "VALID"
    assert cc.side_by_side(rows[2:3]) is None             # one strategy: nothing to compare


def test_requests_nstart_held_are_not_held_against_the_ge():
    from wotbench.reporting._checks import check_ge_counters, check_rate, check_rit, check_send_lag
    from wotbench.spec import Thresholds

    th = Thresholds()
    holds = {"held": 40, "free": 960, "held_devices": [3], "send_lag_p99_free_us": 80.0, "late_free": 2}
    ge = {"ge": 0, "requests": 1000, "late_sends": 40, "send_lag_us": {"p99": 250_000.0}, "rate_dev": -0.03,
          "target_rate": 100.0, "achieved_rate": 97.0, "duration_s": 10.0,
          "sched": {"policy": "other", "stalls": 0, "stall_max_us": 0, "yields": 0, "yield_us": 0, "holds": 0,
                    "hold_max_us": 0, "majflt": 0},
          "counters": {"send_errors": 0}, "evidence": {}, "nstart_holds": holds}
    dev = {"ge": 0, "device_id": 3, "rit_ok": False, "rit_problems": ["KS"]}
    a = {"ges": [ge], "devices": [dev]}
    for check in (check_send_lag, check_ge_counters, check_rit):
        ok, reason = check(a, th)
        assert ok, reason
    assert "GE 0: 40 requests waited for NSTART" in check_send_lag(a, th)[1]
    assert "not judged: 1 device(s) whose requests waited for NSTART" in check_rit(a, th)[1]
    # A deviation of the rate beyond what was held, or a GE behind on the free requests, still fails.
    more_held = dict(ge, rate_dev=-0.06, achieved_rate=94.0, nstart_holds=dict(holds, held=80))
    assert check_rate({"ges": [more_held]}, th)[0]                       # 60 requests short, 80 held
    assert not check_rate({"ges": [dict(ge, rate_dev=-0.06, achieved_rate=94.0)]}, th)[0]   # 60 short, 40 held
    behind = dict(ge, nstart_holds=dict(holds, send_lag_p99_free_us=5000.0, late_free=50))
    assert not check_send_lag({"ges": [behind], "devices": []}, th)[0]
    assert not check_ge_counters({"ges": [behind], "devices": []}, th)[0]
    # Without holds, the same numbers fail as before.
    bare = dict(ge, nstart_holds=None)
    assert not check_send_lag({"ges": [bare], "devices": []}, th)[0]
    assert not check_ge_counters({"ges": [bare], "devices": []}, th)[0]
    assert not check_rit({"ges": [bare], "devices": [dev]}, th)[0]


BIN = Path(__file__).resolve().parents[2] / "build" / "bin"


def test_the_holds_found_are_those_the_ge_counted(tmp_path):
    """A real GE (basic-rto, NSTART 1, --rto-out) against a real device
    whose 30 ms service outlasts the 10 ms between requests: the requests
    this part finds held are the ones the GE's summary counts as held, and
    its RTO log is read per peer."""
    import socket
    import subprocess

    ge, dev = BIN / "wotbench-ge", BIN / "wotbench-device"
    if not ge.exists() or not dev.exists():
        pytest.fail(f"{ge} or {dev} missing: make build")
    (tmp_path / "res.csv").write_text("path,service_us\n/r0,30000\n")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([str(dev), "--listen", f"127.0.0.1:{port}", "--resources", str(tmp_path / "res.csv"),
                             "--threads", "2"], stderr=subprocess.DEVNULL)
    try:
        (tmp_path / "hosts.csv").write_text(f"host,address\ndev-0,127.0.0.1:{port}\n")
        (tmp_path / "trace.csv").write_text("device_id,send_ts_us,method,uri\n" + "".join(
            f"0,{200_000 + i * 10_000},GET,coap://dev-0/r0\n" for i in range(40)))
        out = tmp_path / "run" / "ge"
        out.mkdir(parents=True)
        r = subprocess.run([str(ge), "--trace", str(tmp_path / "trace.csv"), "--hosts", str(tmp_path / "hosts.csv"),
                            "--out", str(out / "ge-0.csv"), "--summary", str(out / "ge-0.summary.json"),
                            "--rto-out", str(out / "rto-0.csv"), "--congestion", "basic-rto", "--nstart", "1",
                            "--quiet"], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    counted = json.loads((out / "ge-0.summary.json").read_text())["congestion"]["held"]["nstart_waits"]
    c = analyze(tmp_path / "run").result["congestion"]
    holds = c["ges"][0]["nstart_holds"]
    assert counted > 20 and holds["held"] == holds["held_whole_run"] == holds["ge_counted_whole_run"] == counted
    assert holds["held_devices"] == [0]
    assert c["strategy"] == "basic-rto" and c["nstart"] == 1 and c["complete"]
    assert c["rto"]["peers"] == 1 and c["rto"]["events_by_kind"]["send"] == 40
    assert c["rto"]["per_peer"][0]["rto_last_us"] >= 30_000        # RTO = 1.5 x RTT >= 1.5 x 30 ms


def test_requests_given_up_unsent_are_the_rows_without_a_sent_stamp(make_run):
    """The GE leaves `sent_us` and `send_lag_us` empty for a request NSTART
    held past its timeout (never transmitted): the report counts such rows
    as not sent (not in the achieved rate, not in the send lag) and the
    errors check excuses exactly them, no more."""
    run = make_run("unsent", error_rate=0.05)
    rd = layout.RunDir(run)
    before = analyze(run).result
    t = pd.read_csv(rd.ge_csv(0), dtype={"code": str})
    a, b = before["phases"]["measure"]
    inside = t.index[(t.status == "timeout") & (t.intended_us >= a) & (t.intended_us < b)]
    unsent = inside[: len(inside) // 2]      # half of them given up in the queue, the rest lost on the way
    for col in ("sent_us", "send_lag_us"):
        t[col] = t[col].astype("Int64")
        t.loc[unsent, col] = pd.NA
    t.to_csv(rd.ge_csv(0), index=False)
    r = analyze(run).result
    g0, g1 = before["ges"][0], r["ges"][0]
    assert r["measure_counts"]["never_sent"] == g1["never_sent"] == len(unsent) > 10
    assert sum(d["never_sent"] for d in r["devices"]) == len(unsent)
    assert g1["achieved_rate"] == pytest.approx(g0["achieved_rate"] - len(unsent) / g1["duration_s"])
    assert g1["send_lag_us"]["n"] == g0["send_lag_us"]["n"] - len(unsent)
    assert g1["late_sends"] <= g0["late_sends"]
    errors = {c["check"]: c for c in r["checks"]}["errors"]
    n = r["measure_counts"]["timeouts"]
    assert f"{len(unsent)} requests NSTART held past their timeout (no sent stamp: never sent) are the " \
           "protocol's results, not failures" in errors["reason"]
    assert f"the other {n - len(unsent)} timeouts are counted" in errors["reason"]
    assert not errors["ok"]     # the ones that went out and were lost still fail the run
    # Under configured loss, the impairment explains only the timeouts of requests that went out.
    _impaired(run, {"s": {"loss": 0.8, "delay_us": 0, "jitter_us": 0, "rate_bps": None}})
    errors = {c["check"]: c for c in analyze(run).result["checks"]}["errors"]
    assert errors["ok"], errors["reason"]
    assert f"{n - len(unsent)} timeouts of devices under the configured impairment" in errors["reason"]
    assert f"{len(unsent)} requests NSTART held past their timeout" in errors["reason"]
