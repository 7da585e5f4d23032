"""Observe in a workload (``devices[*].observe``): the spec's errors, the
OBS/UNOBS rows (one pair per device and resource, registration in the first
half of warmup, deregistration in the first half of cooldown), the /o/<j>
resource rows, expected.json's ``observe``, and the polling rows unchanged
by adding an observed group."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from wotbench import UserError
from wotbench.base.formats import RESOURCE_COLUMNS, RESOURCE_OBSERVE_COLUMNS
from wotbench.spec import WorkloadSpec, budget
from wotbench.tracegen._generate import generate

Load = Callable[[str], WorkloadSpec]

POLLED = """
workload: {seed: 4}
phases: {warmup: 2s, measure: 6s, cooldown: 2s}
devices:
  - name: pollers
    count: 3
    rit: exp:50ms
    service: exp:2ms
    payload_bytes: 8
    methods: {GET: 1, PUT: 1}
"""
OBSERVED = POLLED + """
  - name: sensors
    count: 4
    service: det:0us
    observe: {resources: 5, rit: exp:200ms, type: "non:5", max_age: 30s, service: 150us}
"""


def _trace(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"payload": str}, keep_default_na=False)


def test_rows_pairs_and_windows(load_spec: Load, tmp_path: Path) -> None:
    wl = load_spec(OBSERVED)
    gen = generate(wl, tmp_path / "o")
    t = _trace(gen.trace)
    obs, unobs = t[t["method"] == "OBS"], t[t["method"] == "UNOBS"]
    assert len(obs) == len(unobs) == 4 * 5 == gen.observations
    pairs = set(zip(obs["device_id"], obs["uri"], strict=True))
    assert pairs == set(zip(unobs["device_id"], unobs["uri"], strict=True))
    assert pairs == {(d, f"coap://dev-{d}/o/{j}") for d in range(3, 7) for j in range(5)}
    assert obs["send_ts_us"].between(0, 1_000_000 - 1).all()              # first half of warmup
    assert unobs["send_ts_us"].between(8_000_000, 9_000_000 - 1).all()    # first half of cooldown
    assert (obs["payload"] == "").all() and (unobs["payload"] == "").all()
    assert t["send_ts_us"].is_monotonic_increasing
    polling = t[~t["method"].isin(["OBS", "UNOBS"])]
    assert set(polling["device_id"]) <= {0, 1, 2} and polling["uri"].str.contains("/r/").all()
    assert gen.requests == len(t)


def test_polling_rows_unchanged_by_an_observed_group(load_spec: Load, tmp_path: Path) -> None:
    plain = generate(load_spec(POLLED), tmp_path / "p")
    with_obs = generate(load_spec(OBSERVED), tmp_path / "o")
    t = _trace(with_obs.trace)
    polling = t[~t["method"].isin(["OBS", "UNOBS"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(polling, _trace(plain.trace))
    for d in range(3):         # the polled devices' own resources keep their service times
        a = pd.read_csv(plain.resources[d])
        b = pd.read_csv(with_obs.resources[d], keep_default_na=False)
        assert list(b.columns) == list(RESOURCE_COLUMNS + RESOURCE_OBSERVE_COLUMNS)
        pd.testing.assert_frame_equal(a, b[list(RESOURCE_COLUMNS)])
        assert (b["observe_rit"] == "").all()


def test_without_observe_the_files_have_no_observe_columns(load_spec: Load, tmp_path: Path) -> None:
    gen = generate(load_spec(POLLED), tmp_path / "p")
    assert gen.resources[0].read_text().splitlines()[0] == ",".join(RESOURCE_COLUMNS)
    assert "OBS" not in set(_trace(gen.trace)["method"])
    doc = json.loads(gen.expected.read_text())
    assert "observe" not in doc and "polling_requests" not in doc


def test_resource_rows_and_expected(load_spec: Load, tmp_path: Path) -> None:
    wl = load_spec(OBSERVED)
    gen = generate(wl, tmp_path / "o")
    with open(gen.resources[4], newline="") as fh:
        rows = list(csv.DictReader(fh))
    o_rows = [r for r in rows if r["path"].startswith("/o/")]
    assert [r["path"] for r in o_rows] == [f"/o/{j}" for j in range(5)]
    assert {(r["service_us"], r["observe_rit"], r["notify_type"], r["max_age"]) for r in o_rows} == {
        ("150", "exp:200000", "non:5", "30")}
    seeds = {d: next(r["observe_seed"] for r in csv.DictReader(open(gen.resources[d])) if r["observe_seed"])
             for d in range(3, 7)}
    assert len(set(seeds.values())) == 4 and all(s.isdigit() for s in seeds.values())
    doc = json.loads(gen.expected.read_text())
    t = _trace(gen.trace)
    assert doc["requests"] == len(t) and doc["polling_requests"] == len(t) - 40
    o = doc["observe"]
    reg = t[t["method"] == "OBS"].set_index(["device_id", "uri"])["send_ts_us"]
    dereg = t[t["method"] == "UNOBS"].set_index(["device_id", "uri"])["send_ts_us"]
    events = float(((dereg - reg.reindex(dereg.index)) / 200_000 + 1).sum())
    assert o["observations"] == 20 and o["expected_events"] == pytest.approx(events, abs=0.01)
    assert o["rate_per_s"] == pytest.approx(20 * 5.0)
    assert o["expected_events_measure"] == pytest.approx(100.0 * 6)
    assert o["groups"][0]["device_rit"] == "exp:200000" and o["groups"][0]["type"] == "non:5"


def test_same_seed_same_files(load_spec: Load, tmp_path: Path) -> None:
    a = generate(load_spec(OBSERVED), tmp_path / "a")
    b = generate(load_spec(OBSERVED), tmp_path / "b")
    for name in ("trace.csv", "expected.json", "resources/dev-5.csv"):
        assert (a.outdir / name).read_bytes() == (b.outdir / name).read_bytes()


def test_observe_only_without_phases(load_spec: Load, tmp_path: Path) -> None:
    wl = load_spec("""
        workload: {duration: 10s}
        devices:
          - {count: 2, service: det:0us, observe: {resources: 3, rit: "pareto:mean=1s,alpha=1.5"}}
        """)
    gen = generate(wl, tmp_path / "o")
    t = _trace(gen.trace)
    assert set(t["method"]) == {"OBS", "UNOBS"} and len(t) == 12
    assert t.loc[t["method"] == "OBS", "send_ts_us"].lt(100_000).all()           # the first 1 %
    assert t.loc[t["method"] == "UNOBS", "send_ts_us"].ge(9_900_000).all()       # the last 1 %
    rows = pd.read_csv(gen.resources[0], keep_default_na=False)
    assert rows.loc[rows["path"] == "/o/0", "observe_rit"].item() == "pareto:1000000:1.5"
    assert json.loads(gen.expected.read_text())["polling_requests"] == 0


def test_budget_counts_notifications(load_spec: Load) -> None:
    wl = load_spec(OBSERVED)
    tc = budget.trace_cost(wl)
    assert tc.notifications == pytest.approx(20 * 10e6 / 200_000 + 20)
    base = budget.trace_cost(load_spec(POLLED))
    assert tc.disk_bytes > base.disk_bytes + tc.notifications * budget.BYTES_PER_NOTIFICATION


OBS = "devices:\n  - {count: 2, service: det:0us, observe: {%s}}\nphases: {warmup: 2s, measure: 4s}\n"


@pytest.mark.parametrize(("observe", "field", "needle"), [
    ("resources: 3, rit: 'mmpp2:on=exp:1ms,off=exp:1s,t_on=1s,t_off=1s'", "devices[0].observe.rit",
     "not a notification"),
    ("resources: 3, rit: 'empirical:x.csv'", "devices[0].observe.rit", ""),
    ("resources: 3, rit: exp:99us", "devices[0].observe.rit", "at least 100 us"),
    ("resources: 3, rit: 'uniform:50us,1s'", "devices[0].observe.rit", "at least 100 us"),
    ("resources: 3, rit: exp:1s, type: con:3", "devices[0].observe.type", "non, con or non:N"),
    ("resources: 3, rit: exp:1s, type: 'non:0'", "devices[0].observe.type", "N 1..1000"),
    ("resources: 3, rit: exp:1s, type: 'non:1001'", "devices[0].observe.type", "N 1..1000"),
    ("resources: 3, rit: exp:1s, max_age: 1500ms", "devices[0].observe.max_age", "whole seconds"),
    ("resources: 3, rit: exp:1s, max_age: 0s", "devices[0].observe.max_age", "1..4294967295"),
    ("resources: 0, rit: exp:1s", "devices[0].observe.resources", "at least 1"),
    ("resources: 70000, rit: exp:1s", "devices[0].observe.resources", ""),
    ("rit: exp:1s", "devices[0].observe.resources", "missing"),
    ("resources: 3", "devices[0].observe.rit", "missing"),
    ("resources: 3, rit: exp:1s, colour: red", "devices[0].observe.colour", "unknown key"),
    ("resources: 3, rit: exp:1s, service: 2000s", "devices[0].observe.service", "us"),
    # the device's bounds (device/notify.c), refused before anything starts
    ("resources: 3, rit: 'pareto:mean=1s,alpha=1.0000001'", "devices[0].observe.rit",
     "alpha 1.0000001 is written to the device with 6 decimals as 1, which the device refuses"),
    ("resources: 3, rit: 'lognormal:mean=1s,cv=0.0000004'", "devices[0].observe.rit",
     "cv 4e-07 is written to the device with 6 decimals as 0"),
    ("resources: 3, rit: 'pareto:mean=1s,alpha=1000001'", "devices[0].observe.rit", "alpha must be at most 1000000"),
    ("resources: 3, rit: 'lognormal:mean=1s,cv=2000000'", "devices[0].observe.rit", "cv must be at most 1000000"),
    ("resources: 3, rit: exp:720h", "devices[0].observe.rit", "the mean must be at most 1000000000000 us"),
    ("resources: 3, rit: det:1000000001s", "devices[0].observe.rit", "the mean must be at most"),
    ("resources: 3, rit: 'uniform:1s,300h'", "devices[0].observe.rit", "the high must be at most"),
])
def test_spec_errors(load_spec: Load, observe: str, field: str, needle: str) -> None:
    with pytest.raises(UserError) as ei:
        load_spec(OBS % observe)
    err = ei.value
    assert err.field == field and needle in err.what and err.line == 2, str(err)
    assert "\n" not in str(err)


@pytest.mark.parametrize("rit", ["pareto:mean=1s,alpha=1.000001", "lognormal:mean=1s,cv=0.000001",
                                 "pareto:mean=1s,alpha=1000000", "exp:1000000s", "uniform:100us,277h"])
def test_device_bounds_accept_their_edges(load_spec: Load, rit: str) -> None:
    """The values at the device's bounds are written as it parses them."""
    from wotbench.spec._observe import MAX_OBSERVE_RIT_US

    o = load_spec(OBS % f"resources: 1, rit: '{rit}'").groups[0].observe
    assert o is not None
    kind, *params = o.device_rit().split(":")
    assert kind == rit.split(":")[0] and 100 <= int(params[-1 if kind == "uniform" else 0]) <= MAX_OBSERVE_RIT_US
    if kind in ("pareto", "lognormal"):
        assert float(params[1]) > (1 if kind == "pareto" else 0) and float(params[1]) <= 1e6


def test_rit_is_required_without_observe_and_requests_mode_is_refused(load_spec: Load) -> None:
    with pytest.raises(UserError) as ei:
        load_spec("devices: [{count: 1, service: det:0us}]\nworkload: {duration: 5s}\n")
    assert ei.value.field == "devices[0].rit"
    with pytest.raises(UserError) as ei:
        load_spec("devices: [{count: 1, rit: exp:1s, service: det:0us, observe: {resources: 1, rit: exp:1s}}]\n"
                  "workload: {requests: 100}\n")
    assert ei.value.field == "devices[0].observe" and "duration" in ei.value.what
