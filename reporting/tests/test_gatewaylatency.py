"""The device tier's share and the gateway's added latency
(reporting/_gatewaylatency.py): quantiles of the devices' residence
histograms, their merge, the quantile difference against the GEs' response
times on a synthetic run, CPU per 1000 req/s, and a run whose device stats
have no histograms (an older device): null values with a reason."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wotbench.base.rundir import RunDir
from wotbench.reporting import analyze_run, write_reports
from wotbench.reporting._gatewaylatency import LEVELS, DeviceHist, cpu_per_kreq, hist_quantiles, merge_hists

SPEC = ("name: spec\ndevices: [{count: 4, rit: exp:20ms, service: det:1ms}]\nphases: {measure: 40s}\n"
        "gateway_under_test: {image: libcoap, north: coap-uri}\n")


def _hist(rows: list[tuple[int, int, int]], overflow: int = 0, vmax: int | None = None) -> DeviceHist:
    a = np.array(rows, dtype=np.int64).reshape(-1, 3)
    top = vmax if vmax is not None else int(a[:, 1].max()) - 1
    return DeviceHist(a[:, 0], a[:, 1], a[:, 2], overflow, top)


def test_quantiles_of_one_microsecond_buckets_are_numpys_within_half_a_bucket():
    values = np.arange(100)
    h = _hist([(v, v + 1, 1) for v in range(100)], vmax=99)
    got = hist_quantiles(h, LEVELS)
    want = np.percentile(values, LEVELS)
    assert np.all(np.abs(got - (want + 0.5)) <= 0.5 + 1e-9)
    assert math.isnan(hist_quantiles(_hist([(0, 1, 0)]), [50])[0])


def test_quantiles_spread_a_wide_bucket_and_never_pass_the_max():
    h = _hist([(10, 11, 10), (1000, 2000, 10)], vmax=1400)
    p = hist_quantiles(h, [25, 50, 75, 100])
    assert 10 <= p[0] < 11 and 1000 <= p[2] <= 1400 and p[3] == 1400
    assert 10 < p[1] < 1100                       # between the two buckets' neighbours
    # overflow values (>= 2^27 us) spread between 2^27 us and the exact max
    o = hist_quantiles(_hist([(5, 6, 1)], overflow=3, vmax=(1 << 27) + 1000), [50, 100])
    assert (1 << 27) <= o[0] <= o[1] <= (1 << 27) + 1000


def test_merging_adds_equal_buckets_and_keeps_the_others_in_order():
    a = _hist([(5, 6, 2), (4096, 4160, 3)], vmax=4100)
    b = _hist([(7, 8, 1), (4096, 4160, 4)], overflow=1, vmax=9_999_999)
    m = merge_hists([a, b])
    assert m is not None
    assert m.lo.tolist() == [5, 7, 4096] and m.hi.tolist() == [6, 8, 4160] and m.n.tolist() == [2, 1, 7]
    assert (m.overflow, m.vmax, m.count) == (1, 9_999_999, 11)
    assert merge_hists([]) is None


def test_cpu_per_thousand_requests_per_second():
    assert cpu_per_kreq(25.0, 10_000, 20.0) == pytest.approx(50.0)     # 500 req/s at 25 % of a core
    assert cpu_per_kreq(None, 10_000, 20.0) is None                     # no CPU samples
    assert cpu_per_kreq(25.0, 0, 20.0) is None                          # nothing answered
    assert cpu_per_kreq(25.0, 100, 0.0) is None


def _device_list(run: Path) -> list[int]:
    """devices-0.csv of the synthetic run (its devices wb-synth-dev-<id>)."""
    ids = sorted(pd.read_csv(run / "ge" / "ge-0.csv", usecols=["device_id"])["device_id"].unique().tolist())
    pd.DataFrame({"device_id": ids, "group": "g", "container": [f"wb-synth-dev-{d}" for d in ids],
                  "address": "10.0.0.1"}).to_csv(RunDir(run).ge_devices(0), index=False)
    return ids


def _gateway_run(make_run) -> Path:
    run: Path = make_run()
    (run / "spec.yaml").write_text(SPEC)
    rows = []
    for s in range(-5, 60):             # a quarter of a core
        rows.append((s * 1_000_000, "wb-x-gateway", "gateway", (s + 5) * 250_000, 10 << 20, 5 << 20))
    RunDir(run).monitor_dir.mkdir(exist_ok=True)
    pd.DataFrame(rows, columns=["t_us", "container", "role", "cpu_usage_us", "mem_bytes", "anon_bytes"]).to_csv(
        RunDir(run).containers_monitor, index=False)
    return run


def _give_histograms(run: Path, ids: list[int], residence: list[int]) -> None:
    """Every device's stats get a residence histogram of one-us buckets,
    ``residence`` spread over the devices in turn (counts = served)."""
    for i, d in enumerate(ids):
        path = RunDir(run).device_stats(f"wb-synth-dev-{d}")
        doc = json.loads(path.read_text())
        mine = residence[i::len(ids)]
        vals, counts = np.unique(mine, return_counts=True)
        buckets = [[int(v), int(v) + 1, int(c)] for v, c in zip(vals, counts, strict=True)]
        doc["served"] = len(mine)
        doc["residence_us"] = {"buckets": buckets, "overflow": 0, "sum": int(sum(mine)), "max": int(max(mine))}
        doc["queue_wait_us"] = {"buckets": [[0, 1, len(mine)]], "overflow": 0, "sum": 0, "max": 0}
        path.write_text(json.dumps(doc))


def test_added_latency_is_the_response_quantiles_minus_the_device_quantiles(make_run):
    run = _gateway_run(make_run)
    ids = _device_list(run)
    rng = np.random.default_rng(3)
    residence = rng.integers(0, 120, 4000).tolist()     # one-us buckets: exact up to the half-bucket spread
    _give_histograms(run, ids, residence)
    r = analyze_run(run)
    gw = r["gateway"]
    share, added = gw["device_share"], gw["added_latency"]
    dev = np.percentile(residence, LEVELS) + 0.5          # the buckets' spread puts values at v + 0.5
    assert share["source"] == "device stats" and share["devices"] == len(ids) == share["of"]
    assert share["served"] == len(residence) and share["reason"] is None and "whole run" in share["scope"]
    assert share["p50"] == pytest.approx(dev[49], abs=0.51) and share["p99"] == pytest.approx(dev[98], abs=0.51)
    assert share["queue_wait"] == {"p50": 0.0, "p90": 0.0, "p99": 0.0}      # at most the exact max
    # the GEs' ok responses in the measurement phase, straight from the CSV
    df = pd.read_csv(run / "ge" / "ge-0.csv")
    a, b = json.loads((run / "phases.json").read_text())["measure"]
    ok = df[(df["intended_us"] >= a) & (df["intended_us"] < b) & (df["status"] == "ok")]["response_us"].dropna()
    resp = np.percentile(ok, LEVELS)
    assert added["method"] == "quantile difference" and added["responses"] == len(ok)
    assert len(added["curve"]) == 99 and added["levels"] == list(LEVELS)
    assert np.allclose(added["curve"], resp - dev, atol=0.51)
    assert added["p90"] == pytest.approx(resp[89] - dev[89], abs=0.51) and added["reason"] is None
    # CPU per 1000 req/s answered: 25 % of a core over the rows answered per second
    answered = sum(n for c, n in gw["codes"].items() if c)
    rate = answered / ((b - a) / 1e6)
    assert gw["usage"]["answered_per_s"] == pytest.approx(rate)
    assert gw["usage"]["cpu_pct_per_kreq_s"] == pytest.approx(25.0 / (rate / 1000))
    assert "quantile difference" in gw["numbers"] and "whole run" in gw["numbers"]
    json.dumps(r, allow_nan=False)
    write_reports([run], None)
    md = (run / "report" / "summary.md").read_text()
    assert "added latency (quantile difference" in md
    row = next(x for x in md.splitlines() if x.startswith("| added latency (quantile difference)"))
    assert f"{added['p50'] / 1000:.2f} ms" in row and f"{added['p99'] / 1000:.2f} ms" in row
    assert "gateway latency" in (run / "report" / "index.html").read_text()


def test_device_stats_without_histograms_give_null_values_with_a_reason(make_run):
    run = _gateway_run(make_run)
    _device_list(run)                       # the synthetic devices' stats are counters only (an older device)
    gw = analyze_run(run)["gateway"]
    share, added = gw["device_share"], gw["added_latency"]
    assert share["p50"] is None and share["p99"] is None and added["p50"] is None and added["curve"] is None
    assert "no residence histogram" in share["reason"] and added["reason"] == share["reason"]
    assert "Device share: unknown" in gw["numbers"]
    # and without the GEs' device lists the devices are unknown: said too
    RunDir(run).ge_devices(0).unlink()
    gw = analyze_run(run)["gateway"]
    assert gw["device_share"]["p50"] is None and "unknown" in gw["device_share"]["reason"]


def test_a_histogram_that_disagrees_with_served_is_not_used(make_run):
    run = _gateway_run(make_run)
    ids = _device_list(run)
    _give_histograms(run, ids, list(range(100)))
    path = RunDir(run).device_stats(f"wb-synth-dev-{ids[0]}")
    doc = json.loads(path.read_text())
    doc["served"] += 1
    path.write_text(json.dumps(doc))
    share = analyze_run(run)["gateway"]["device_share"]
    assert share["devices"] == len(ids) - 1 and "counts" in share["reason"] and share["p50"] is not None
