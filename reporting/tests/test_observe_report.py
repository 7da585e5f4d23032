"""The Observe section and the ``observe`` check on a synthetic run folder:
a synth run with, added, what an Observe run has (workload/expected.json's
``observe``, ge/devices-0.csv, ge/notify-0.csv, the GE summary's ``observe``
object and the devices' obs_*/notify_* counters and notify_lag_us histogram)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from wotbench.base.rundir import RunDir
from wotbench.commands.main import main
from wotbench.reporting import analyze_run
from wotbench.reporting._gatewaylatency import DeviceHist
from wotbench.reporting._notify import NOTIFY_COLUMNS, lag_p99

DEVICES = 4        # BASE in conftest.py
PER_DEVICE = 5     # observations per device
RIT_US = 100_000   # events every 100 ms
WARM, MEAS = 2e6, 40e6


def _notify_rows(rng: np.random.Generator, every: int = 50) -> tuple[pd.DataFrame, dict[str, int]]:
    """Every observation's notifications over [1 s, 43 s): seq +1 each, with
    known loss (every ``every``-th dropped), 3 reordered pairs, 4 duplicates and one
    re-registration; latency 200..400 us, age 1 ms more."""
    rows, truth = [], {"lost": 0, "reordered": 0, "duplicates": 0, "reregistered": 0}
    obs = 0
    for d in range(DEVICES):
        for _j in range(PER_DEVICE):
            times = np.arange(1e6, 43e6, RIT_US)
            for i, t in enumerate(times):
                status, gap = ("registered", "") if i == 0 else ("fresh", "0")
                if i and i % every == 0:          # lost: the next one has gap 1
                    truth["lost"] += 1
                    continue
                if i and (i - 1) % every == 0 and i > 1:
                    gap = "1"
                lat = float(rng.integers(200, 400))
                rows.append([obs, 0, d, i, i, t - 1000, t, t + lat, lat, lat + 1000, "non", status, gap])
            obs += 1
    df = pd.DataFrame(rows, columns=list(NOTIFY_COLUMNS))
    # reordered: a late arrival filling a hole (counted lost by the gap first, then back)
    late = df.iloc[[10, 20, 30]].copy()
    late["status"], late["gap"] = "reordered", ""
    truth["reordered"] = 3
    dup = df.iloc[[11, 12, 13, 14]].copy()
    dup["status"], dup["gap"] = "duplicate", ""
    truth["duplicates"] = 4
    rer = df.iloc[[15]].copy()
    rer["status"], rer["gap"] = "reregistered", "0"
    truth["reregistered"] = 1
    df = pd.concat([df, late, dup, rer], ignore_index=True)
    # the reordered ones were counted as gaps when the hole opened
    df.loc[df.index[[9, 19, 29]], "gap"] = "1"
    return df, truth


def _lag_hist(p99_us: int) -> dict[str, Any]:
    """980 values below 100 us, 20 in [p99_us, p99_us + 10). Four devices: the
    p99 of their 4000 values (numpy's linear definition, each value spread in
    its bucket) is the 40th of the 80 top ones, p99_us + 4.94."""
    return {"buckets": [[0, 100, 980], [p99_us, p99_us + 10, 20]], "overflow": 0, "sum": 100000,
            "max": p99_us + 9}


def _add_observe(run: Path, *, events: int | None = None, refused: int = 0, lag_p99: int = 200,
                 drop_stats: bool = False, summary: bool = True, notify: bool = True,
                 rows_dropped: int = 0, loss_every: int = 50, impaired: bool = True) -> dict[str, int]:
    """``impaired``: observed.json says the group ran under 2 % loss (the
    notify rows lose every ``loss_every``-th notification)."""
    rd = RunDir(run)
    rng = np.random.default_rng(3)
    rows, truth = _notify_rows(rng, loss_every)
    if notify:
        rows.to_csv(rd.ge_notify(0), index=False)
    n_obs = DEVICES * PER_DEVICE
    expected_events = n_obs * (42e6 / RIT_US) + n_obs
    (rd.workload).mkdir(exist_ok=True)
    (rd.workload / "expected.json").write_text(json.dumps({
        "requests": 9999, "polling_requests": 9000,
        "observe": {"observations": n_obs, "expected_events": expected_events, "rate_per_s": 200.0,
                    "groups": [{"group": "sensors", "observations": n_obs, "expected_events": expected_events,
                                "device_rit": f"exp:{RIT_US}", "rit_mean_us": RIT_US, "max_age_s": 60}]}}))
    if impaired:
        obs = json.loads(rd.observed.read_text())
        obs["impairment"] = {"how": "sidecar-iptables", "containers": DEVICES, "requested": DEVICES, "groups": {
            "sensors": {"loss": 0.02, "delay_us": 0, "jitter_us": 0, "rate_bps": None}}}
        rd.observed.write_text(json.dumps(obs))
    pd.DataFrame({"device_id": range(DEVICES), "group": "sensors",
                  "container": [f"wb-synth-dev-{d}" for d in range(DEVICES)],
                  "address": [f"10.0.0.{d + 2}" for d in range(DEVICES)]}).to_csv(rd.ge_devices(0), index=False)
    per_dev = round((events if events is not None else expected_events) / DEVICES)
    for d in range(DEVICES):
        p = rd.device_stats(f"wb-synth-dev-{d}")
        if drop_stats and d == 0:            # the device wrote no --stats (killed)
            p.unlink()
            continue
        doc = json.loads(p.read_text())
        doc.update(obs_registered=PER_DEVICE, obs_reregistered=0, obs_refused=refused if d == 1 else 0,
                   obs_table_full=0, obs_cancelled=PER_DEVICE, obs_reset=0, obs_gave_up=0, obs_active=0,
                   notify_events=per_dev, notify_sent=per_dev - PER_DEVICE, notify_con=0,
                   notify_retransmits=0, notify_acked=0, notify_superseded=2, notify_refresh=0,
                   notify_lag_us=_lag_hist(lag_p99))
        p.write_text(json.dumps(doc))
    if summary:
        s = json.loads(rd.ge_summary(0).read_text())
        s["observe"] = {"observations": n_obs, "registered": n_obs, "refused": 0, "lost": truth["lost"] + 2,
                        "tail_unknown": 0, "rows_dropped": rows_dropped}
        rd.ge_summary(0).write_text(json.dumps(s))
    return truth


@pytest.fixture
def observe_run(make_run: Callable[..., Path]) -> Callable[..., Path]:
    def make(**kw: Any) -> Path:
        run = make_run("obs")
        make.truth = _add_observe(run, **kw)  # type: ignore[attr-defined]
        return run
    return make


def _check(result: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in result["checks"] if c["check"] == "observe")


def test_section_counts_and_latency(observe_run):
    run = observe_run()
    r = analyze_run(run)
    o = r["observe"]
    t = o["total"]
    notify = pd.read_csv(RunDir(run).ge_notify(0))
    assert t["observations"] == DEVICES * PER_DEVICE
    assert t["duplicates"] == 4 and t["reordered"] == 3 and t["reregistrations"] == 1
    distinct = notify["status"].isin(["registered", "fresh", "reregistered", "reordered"]).sum()
    assert t["received"] == distinct
    # every 50th dropped; 3 more holes were filled late (reordered), so not lost
    assert t["lost"] == observe_run.truth["lost"] > 0
    assert t["lost_ge"] == observe_run.truth["lost"] + 2       # the GE summary's (with the tail)
    assert t["device_events"] == DEVICES * round(t["expected_events"] / DEVICES)
    assert t["superseded"] == 2 * DEVICES
    # latency and age in the measurement phase only, duplicates left out
    m = notify[(notify["recv_us"] >= WARM) & (notify["recv_us"] < WARM + MEAS) & (notify["status"] != "duplicate")]
    assert t["latency_us"]["n"] == len(m)
    assert t["latency_us"]["p50"] == pytest.approx(np.percentile(m["latency_us"], 50))
    assert t["age_us"]["max"] == m["age_us"].max()
    assert t["notify_lag_p99_us"] == pytest.approx(204.94, abs=0.01)
    assert [g["group"] for g in o["groups"]] == ["sensors"]
    assert _check(r)["ok"], _check(r)["reason"]
    assert r["verdict"] == "valid", r["reasons"]


def test_loss_is_a_result_not_a_failure(observe_run):
    r = analyze_run(observe_run())
    assert r["observe"]["total"]["lost"] > 0 and _check(r)["ok"]


def test_loss_without_impairment_is_judged_by_max_error_rate(observe_run):
    """No loss configured: only the GE's receive path loses notifications. 1 in
    200 lost (0.48 %; the GE's own count, 2 more for the tail, 0.50 %) is within
    the 1 % of max_error_rate; 1 in 50 (the fixture's default) is not."""
    r = analyze_run(observe_run(impaired=False, loss_every=200))
    assert _check(r)["ok"], _check(r)["reason"]
    assert r["observe"]["ges"][0]["groups"] == ["sensors"]
    assert r["observe"]["ges"][0]["received"] == r["observe"]["total"]["received"]
    assert "within 1.0% in sensors (no impairment)" in _check(r)["reason"]


@pytest.mark.parametrize(("kw", "words"), [
    ({"refused": 2}, "registrations refused"),
    ({"lag_p99": 5000}, "notification lag p99 5005us"),
    ({"lag_p99": 996}, "notification lag p99 1001us > 1000us"),
    ({"events": 100}, "the devices drew 100 events"),
    ({"drop_stats": True}, "wrote no observe counters"),
    ({"summary": False}, "no observe object in the summary of GE 0"),
    ({"notify": False}, "no notification output (--notify-out) of a GE with observed devices: notify-0.csv"),
    ({"rows_dropped": 7}, "7 notification rows dropped by the GEs"),
    ({"impaired": False}, "group sensors (no impairment): 160 of 8,404 notifications lost (1.90% > 1.0%)"),
])
def test_check_fails(observe_run, kw, words):
    r = analyze_run(observe_run(**kw))
    c = _check(r)
    assert not c["ok"] and words in c["reason"], c["reason"]
    assert r["verdict"] == "invalid"


def test_events_within_tolerance_pass(observe_run):
    n_obs = DEVICES * PER_DEVICE
    e = n_obs * 420 + n_obs
    r = analyze_run(observe_run(events=int(e * 1.04)))
    assert _check(r)["ok"], _check(r)["reason"]


def test_observations_without_an_expected_workload_fail(observe_run):
    """A GE that registered observations, and a workload whose expected.json
    lost its observe object: no check to leave out, missing evidence."""
    run = observe_run()
    (RunDir(run).workload / "expected.json").write_text(json.dumps({"requests": 9999}))
    r = analyze_run(run)
    assert r["observe"] is None
    assert not _check(r)["ok"] and "missing evidence" in _check(r)["reason"] and r["verdict"] == "invalid"


def test_no_check_without_observations(make_run):
    r = analyze_run(make_run("plain"))
    assert r["observe"] is None and all(c["check"] != "observe" for c in r["checks"])


def test_report_has_observe_section_and_figure(observe_run):
    run = observe_run()
    assert main(["report", str(run)]) == 0
    md = (run / "report" / "summary.md").read_text()
    assert "## Observe" in md and "re-registrations" in md
    assert list((run / "report").rglob("observe-cdf.png"))


def test_lag_p99_merges_the_devices():
    def one(lo: list[int], n: list[int], vmax: int) -> DeviceHist:
        a = np.asarray(lo)
        return DeviceHist(a, a + 10, np.asarray(n), 0, vmax)

    # 1000 values: 980 in [0, 10), 20 in [500, 510) split over two devices
    hs = [one([0, 500], [490, 10], 509), one([0, 500], [490, 10], 505)]
    both, small = lag_p99(hs), lag_p99([one([0], [100], 9)])
    assert both is not None and 500 <= both < 510
    assert small is not None and small < 10 and lag_p99([]) is None


def test_rit_integrity_leaves_out_obs_and_unobs_rows():
    """A device's RITs are of its polling rows: OBS/UNOBS rows between them
    (here at odd instants, sent late) change neither the expected nor the
    submitted RITs, and a device with only OBS/UNOBS rows has none."""
    import pyarrow as pa

    from wotbench.reporting._integrity import GeArrays
    from wotbench.reporting._stream import GeStream
    from wotbench.spec import Thresholds

    poll = np.arange(0.0, 10e6, 100_000.0)
    obs_t = np.array([1234.0, 55_555.0, 3_333_333.0, 9_999_000.0])
    t = np.concatenate([poll, obs_t, obs_t + 7])
    dev = np.concatenate([np.zeros(poll.size + obs_t.size, np.int32), np.ones(obs_t.size, np.int32)])
    method = ["GET"] * poll.size + ["OBS", "UNOBS", "OBS", "UNOBS"] * 2
    order = np.argsort(t, kind="stable")
    sent = t + np.where(np.array(method) == "GET", 10.0, 5_000.0)

    def col(x: np.ndarray) -> np.ndarray:
        return x[order]

    table = pa.table({"device_id": col(dev), "intended_us": col(t), "sent_us": col(sent),
                      "response_us": col(sent) + 500,
                      "latency_intended_us": col(sent - t) + 500, "send_lag_us": col(sent - t),
                      "status": pa.array(["ok"] * t.size).dictionary_encode(),
                      "code": pa.array(["2.05"] * t.size).dictionary_encode(), "service_us": np.zeros(t.size),
                      "method": pa.array(np.array(method)[order]).dictionary_encode()})
    s = GeStream((0.0, 10e6), Thresholds())
    s.add(GeArrays.from_table(table))
    rows = {d["device_id"]: d for d in s.finish().devices}
    assert rows[0]["rit_expected_mean_us"] == rows[0]["rit_submitted_mean_us"] == 100_000.0
    assert rows[0]["rit_ok"] and rows[1]["rit_expected_mean_us"] is None and rows[1]["rit_ok"]


def test_observe_only_judges_notifications_not_requests():
    """No polling rows: the measurement check counts the notifications received
    (validity.min_notifications) and the rate check has nothing to judge."""
    from wotbench.reporting._checks import check_measure_length, check_rate
    from wotbench.spec import Thresholds

    def analysis(n: int) -> dict[str, Any]:
        return {"phases": {"inferred": False, "measure": [0, 40e6]}, "measure_counts": {"requests": 0}, "ges": [
            {"ge": 0, "rate_dev": None, "achieved_rate": 0.0, "target_rate": 0.0}],
                "observe": {"polling_requests": 0, "total": {"latency_us": {"n": n}}}}

    th = Thresholds(min_notifications=500)
    assert check_measure_length(analysis(500), th)[0]
    ok, why = check_measure_length(analysis(499), th)
    assert not ok and "only 499 notifications" in why
    assert check_rate(analysis(499), th)[0]
    polled = analysis(5000)
    polled["observe"]["polling_requests"] = 10
    assert not check_measure_length(polled, th)[0]      # 0 requests < min_requests
    assert not check_rate(polled, th)[0]


def test_notify_file_is_not_a_ge_output(tmp_path):
    from fnmatch import fnmatch

    from wotbench.base import rundir as layout

    p = RunDir(tmp_path).ge_notify(2)
    assert p == tmp_path / "ge" / "notify-2.csv"
    assert not fnmatch(p.name, layout.GE_OUTPUT_GLOB) and layout.ge_index(p) is None
    assert p.name in (Path(__file__).resolve().parents[2] / "docs" / "run-layout.md").read_text().replace(
        "<k>", "2")
