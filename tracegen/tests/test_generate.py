"""generate(): the files, their formats, reproducibility and the statistics they promise."""

from __future__ import annotations

import csv
import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from wotbench import UserError
from wotbench.base.formats import METHODS, RESOURCE_COLUMNS, TRACE_COLUMNS
from wotbench.spec import WorkloadSpec
from wotbench.spec.distributions import Lognormal
from wotbench.tracegen import _generate as gen_mod
from wotbench.tracegen._generate import generate

Load = Callable[[str], WorkloadSpec]
ALPHA = 0.001
URI = re.compile(r"^coap://dev-(\d+)/r/(\d+)$")

MIXED = """
workload: {seed: 5, duration: 20s}
devices:
  - name: sensors
    count: 4
    rit: exp:20ms
    service: exp:5ms
    methods: {GET: 0.7, PUT: 0.2, POST: 0.1}
    payload_bytes: 12
  - name: cams
    count: 2
    rit: det:50ms
    service: lognormal:mean=20ms,cv=1.5
    resources: 8
    methods: {GET: 1, DELETE: 1}
cd: {rit: 500ms, calibration: 2s}
"""


def read_trace(path: Path) -> pd.DataFrame:
    """Parse a trace strictly: header, 4 fields (5 for a payload), exact types."""
    rows = []
    with open(path, newline="") as fh:
        r = csv.reader(fh)
        header = next(r)
        assert header in (list(TRACE_COLUMNS), list(TRACE_COLUMNS) + ["payload"])
        for rec in r:
            assert len(rec) == len(header), rec
            dev, ts, method, uri = rec[:4]
            assert dev.isdigit() and ts.isdigit() and method in METHODS, rec
            m = URI.match(uri)
            assert m is not None and int(m.group(1)) == int(dev), rec
            payload = rec[4] if len(rec) == 5 and rec[4] else None
            rows.append((int(dev), int(ts), method, uri, int(m.group(2)), payload))
    return pd.DataFrame(rows, columns=["dev", "ts", "method", "uri", "res", "payload"])


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def mixed(load_spec: Load, tmp_path: Path) -> tuple[WorkloadSpec, gen_mod.GeneratedWorkload, pd.DataFrame]:
    spec = load_spec(MIXED)
    out = generate(spec, tmp_path / "wl", per_device_traces=True)
    return spec, out, read_trace(out.trace)


def test_layout_and_returned_paths(mixed) -> None:
    spec, out, df = mixed
    root = out.outdir
    assert out.trace == root / "trace.csv" and out.expected == root / "expected.json"
    assert out.device_ids == tuple(range(6))
    assert out.device_group == ("sensors",) * 4 + ("cams",) * 2
    assert sorted(out.resources) == list(range(6)) and all(p.exists() for p in out.resources.values())
    assert out.cd_trace.exists() and out.cd_resource.exists() and out.cd_device_id == 6
    assert out.requests == len(df) and out.duration_us == 20_000_000
    assert sorted(p.name for p in root.parent.iterdir()) == ["exp.yaml", "wl"]  # no temp dirs left
    devices = pd.read_csv(root / "devices.csv")
    assert list(devices.columns) == ["device_id", "group", "host", "resource_file"]
    assert list(devices.host) == [f"dev-{i}" for i in range(6)]


def test_trace_is_sorted_and_within_the_test(mixed) -> None:
    _, out, df = mixed
    assert (np.diff(df.ts) >= 0).all()
    assert df.ts.min() >= 0 and df.ts.max() < out.duration_us


def test_uris_methods_and_payloads_follow_each_group(mixed) -> None:
    spec, _, df = mixed
    sensors = df[df.dev < 4]
    cams = df[df.dev >= 4]
    assert sensors.res.max() < 64 and cams.res.max() < 8
    assert set(cams.method) == {"GET", "DELETE"}
    assert set(sensors.method) == {"GET", "PUT", "POST"}
    with_payload = sensors.method.isin(["PUT", "POST"])
    assert (sensors.payload[with_payload] == "x" * 12).all()
    assert sensors.payload[~with_payload].isna().all() and cams.payload.isna().all()
    # Method shares: within 5 sigma of the binomial expectation.
    n = len(sensors)
    for m, share in spec.groups[0].methods:
        k = (sensors.method == m).sum()
        assert abs(k - n * share) < 5 * np.sqrt(n * share * (1 - share)), m


def test_resource_files(mixed) -> None:
    spec, out, _ = mixed
    for d, path in out.resources.items():
        rf = pd.read_csv(path)
        assert list(rf.columns) == list(RESOURCE_COLUMNS)
        g = spec.groups[0 if d < 4 else 1]
        assert list(rf.path) == [f"/r/{k}" for k in range(g.resources)]
        assert list(rf.service_us) == list(g.resource_service_us)
        assert rf.path.is_unique and (rf.service_us >= 0).all()


def test_per_device_traces_partition_the_trace(mixed) -> None:
    _, out, df = mixed
    parts = []
    for d, path in out.device_traces.items():
        part = read_trace(path)
        assert (part.dev == d).all() and (np.diff(part.ts) >= 0).all()
        parts.append(part)
    both = pd.concat(parts).sort_values(["ts", "dev", "res", "method"]).reset_index(drop=True)
    ref = df.sort_values(["ts", "dev", "res", "method"]).reset_index(drop=True)
    for frame in (both, ref):
        frame["payload"] = frame.payload.fillna("").astype(str)
    pd.testing.assert_frame_equal(both, ref, check_dtype=False)


def test_cd_workload(mixed) -> None:
    spec, out, _ = mixed
    text = out.cd_trace.read_text().splitlines()
    assert text[0] == ",".join(TRACE_COLUMNS)
    rows = [line.split(",") for line in text[1:]]
    ts = np.array([int(r[1]) for r in rows])
    assert {r[0] for r in rows} == {"6"} and {r[3] for r in rows} == {"coap://cd-node/r/0"}
    assert (np.diff(ts) == 500_000).all() and ts[0] == 0
    assert ts[-1] < 2_000_000 + 20_000_000 <= ts[-1] + 500_000  # calibration + test
    rf = pd.read_csv(out.cd_resource)
    assert list(rf.path) == ["/r/0"] and rf.service_us[0] == spec.cd_service_effective_us()
    assert out.cd_service_us == spec.cd_service_effective_us()


def test_expected_json_matches_the_trace(mixed) -> None:
    spec, out, df = mixed
    doc = json.loads(out.expected.read_text())
    assert doc["format"] == 1 and doc["requests"] == len(df) and doc["devices"] == 6
    assert doc["percentiles"] == [5, 25, 50, 75, 95, 99]
    svc = {d: spec.groups[0 if d < 4 else 1].resource_service_us for d in range(6)}
    service = np.array([svc[d][r] for d, r in zip(df.dev, df.res, strict=True)])
    for row in doc["device_stats"]:
        sub = df[df.dev == row["id"]]
        assert row["requests"] == len(sub) and row["host"] == f"dev-{row['id']}"
        rit = np.diff(sub.ts.to_numpy())
        assert row["rit"]["mean_us"] == pytest.approx(rit.mean(), abs=1e-3)
        want = np.percentile(rit, doc["percentiles"])
        got = [row["rit"][f"p{p}_us"] for p in doc["percentiles"]]
        np.testing.assert_allclose(got, want, atol=1e-3)
        s = service[df.dev.to_numpy() == row["id"]]
        assert row["service"]["mean_us"] == pytest.approx(s.mean(), abs=1e-3)
        np.testing.assert_allclose([row["service"][f"p{p}_us"] for p in doc["percentiles"]],
                                   np.percentile(s, doc["percentiles"]), atol=1e-3)
    agg = doc["aggregate"]
    np.testing.assert_allclose([agg["rit"][f"p{p}_us"] for p in doc["percentiles"]],
                               np.percentile(np.diff(df.ts), doc["percentiles"]), atol=1e-3)
    assert agg["service"]["mean_us"] == pytest.approx(service.mean(), abs=1e-3)
    assert agg["rate_per_s"] == pytest.approx(len(df) / 20)
    assert agg["target"]["rate_per_s"] == pytest.approx(4 / 0.02 + 2 / 0.05)
    g0 = doc["groups"][0]
    assert g0["name"] == "sensors" and g0["target"]["rit"]["dist"] == "exp:20ms"
    assert g0["target"]["rit"]["p50_us"] == pytest.approx(20000 * np.log(2), rel=1e-6)
    pooled = np.concatenate([np.diff(df[df.dev == d].ts.to_numpy()) for d in range(4)])
    assert g0["rit"]["p95_us"] == pytest.approx(np.percentile(pooled, 95), abs=1e-3)
    assert doc["cd"]["service_us"] == spec.cd_service_effective_us()


def test_same_spec_and_seed_give_identical_bytes(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec(MIXED)
    a = generate(spec, tmp_path / "a", per_device_traces=True)
    b = generate(spec, tmp_path / "b", per_device_traces=True)
    assert tree_digest(a.outdir) == tree_digest(b.outdir)
    other = load_spec(MIXED.replace("seed: 5", "seed: 6"))
    c = generate(other, tmp_path / "c")
    assert a.trace.read_bytes() != c.trace.read_bytes()


def test_device_scope_rits_follow_the_target(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {seed: 2, duration: 100s}
        devices:
          - {count: 4, rit: exp:20ms, service: det:1ms}
          - {count: 2, rit: "lognormal:mean=40ms,cv=2", service: det:1ms}
    """)
    df = read_trace(generate(spec, tmp_path / "wl").trace)
    for devs, cdf in ((range(4), stats.expon(scale=20000).cdf),
                      (range(4, 6), stats.lognorm(s=np.sqrt(np.log(5)), scale=40000 / np.sqrt(5)).cdf)):
        rits = np.concatenate([np.diff(df[df.dev == d].ts.to_numpy()) for d in devs])
        # Send times are whole microseconds: compare the mid-points of the 1 us bins.
        assert stats.kstest(rits + 0.5, cdf).pvalue > ALPHA


def test_service_times_of_requests_follow_the_target(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {seed: 3, requests: 20000}
        devices: [{count: 3, rit: exp:1ms, service: "lognormal:mean=5ms,cv=1", resources: 2048}]
    """)
    df = read_trace(generate(spec, tmp_path / "wl").trace)
    s = spec.groups[0].resource_service_us[df.res.to_numpy()]
    service = spec.groups[0].service
    assert isinstance(service, Lognormal), service
    mu, sigma = service.lognormal_params
    assert stats.kstest(s, stats.lognorm(s=sigma, scale=np.exp(mu)).cdf).pvalue > ALPHA
    assert s.mean() == pytest.approx(5000, rel=0.03)


def test_gateway_scope_aggregate_rit_and_uniform_assignment(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {seed: 4, requests: 30000, rit_scope: gateway, rit: exp:300us}
        devices: [{count: 10, service: exp:5ms}]
    """)
    out = generate(spec, tmp_path / "wl")
    df = read_trace(out.trace)
    assert len(df) == 30000 and out.requests == 30000
    assert out.duration_us > df.ts.max()
    assert stats.kstest(np.diff(df.ts) + 0.5, stats.expon(scale=300).cdf).pvalue > ALPHA
    counts = np.bincount(df.dev, minlength=10)
    assert stats.chisquare(counts).pvalue > ALPHA
    doc = json.loads(out.expected.read_text())
    # Table 1 of the paper: per-device RIT of the thinned stream has mean N x 300 us.
    assert doc["groups"][0]["target"]["rit"]["mean_us"] == pytest.approx(3000)
    assert doc["aggregate"]["target"]["rit"]["p5_us"] == pytest.approx(-300 * np.log(0.95), rel=1e-3)


def test_requests_mode_device_scope_gives_exactly_n(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {seed: 8, requests: 5000}
        devices:
          - {count: 3, rit: exp:10ms, service: det:1ms}
          - {count: 2, rit: "mmpp2:on=exp:1ms,off=exp:50ms,t_on=100ms,t_off=400ms", service: det:2ms}
    """)
    out = generate(spec, tmp_path / "wl")
    df = read_trace(out.trace)
    assert len(df) == 5000 and (np.diff(df.ts) >= 0).all()
    doc = json.loads(out.expected.read_text())
    assert sum(r["requests"] for r in doc["device_stats"]) == 5000


def test_empirical_rit_relative_to_the_spec(load_spec: Load, tmp_path: Path) -> None:
    obs = np.random.default_rng(0).exponential(2000, 3000).round()
    (tmp_path / "rits.csv").write_text("\n".join(str(int(v)) for v in obs) + "\n")
    spec = load_spec("""
        workload: {seed: 1, duration: 30s}
        devices: [{count: 2, rit: empirical:rits.csv, service: det:1ms}]
    """)
    df = read_trace(generate(spec, tmp_path / "wl").trace)
    rits = np.concatenate([np.diff(df[df.dev == d].ts.to_numpy()) for d in range(2)])
    assert stats.ks_2samp(rits, obs).pvalue > ALPHA


def test_error_leaves_nothing_behind(load_spec: Load, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    spec = load_spec(MIXED)

    def boom(*_a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(gen_mod, "expected_stats", boom)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(OSError):
        generate(spec, tmp_path / "out" / "wl")
    assert sorted(p.name for p in tmp_path.iterdir()) == before   # the folders it made are gone too


def test_existing_output_is_kept_unless_overwrite(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec(MIXED)
    out = tmp_path / "wl"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    with pytest.raises(UserError, match="not empty"):
        generate(spec, out)
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    with pytest.raises(UserError, match="not made by wotbench tracegen"):   # a folder it did not make
        generate(spec, out, overwrite=True)
    assert [p.name for p in out.iterdir()] == ["mine.txt"]
    (out / "mine.txt").unlink()
    generate(spec, out)
    generate(spec, out, overwrite=True)                  # one it made is replaced
    assert (out / "trace.csv").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml", "wl"]


def test_empty_existing_directory_is_fine(load_spec: Load, tmp_path: Path) -> None:
    (tmp_path / "wl").mkdir()
    assert generate(load_spec(MIXED), tmp_path / "wl").trace.exists()


def test_both_text_builders_give_the_same_bytes(load_spec: Load, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Large device x resource counts use three small tables instead of one fused table."""
    from wotbench.tracegen._csvtext import TraceEncoder

    spec = load_spec(MIXED)
    fused = generate(spec, tmp_path / "fused").trace.read_bytes()
    monkeypatch.setattr(TraceEncoder, "_FUSED_MAX", 0)
    assert generate(spec, tmp_path / "split").trace.read_bytes() == fused


def test_one_and_two_encoder_threads_give_the_same_bytes(load_spec: Load, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from wotbench.tracegen import _csvtext as csvtext

    spec = load_spec(MIXED)
    two = generate(spec, tmp_path / "two").trace.read_bytes()
    monkeypatch.setattr(csvtext, "_CHUNK_BYTES", 4096)  # many small chunks
    monkeypatch.setattr(gen_mod, "_ENCODE_WORKERS", 1)
    assert generate(spec, tmp_path / "one").trace.read_bytes() == two


def test_a_workload_with_no_requests(load_spec: Load, tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {duration: 1ms}
        devices: [{count: 2, rit: det:1h, service: det:1ms}]
    """)
    out = generate(spec, tmp_path / "wl")
    assert out.trace.read_text() == ",".join(TRACE_COLUMNS) + "\n" and out.requests == 0
    doc = json.loads(out.expected.read_text())
    assert doc["requests"] == 0 and doc["device_stats"][0]["rit"]["mean_us"] is None
    assert doc["aggregate"]["rit"]["p50_us"] is None and doc["aggregate"]["service"]["mean_us"] is None


@pytest.mark.parametrize("n", [997, 1000, 1003])
def test_request_count_cut_through_ties(load_spec: Load, tmp_path: Path, n: int) -> None:
    """Many devices sending at the same microsecond: the first n sends are kept exactly,
    and expected.json's per-device numbers describe exactly those."""
    spec = load_spec(f"""
        workload: {{seed: 2, requests: {n}}}
        devices: [{{count: 400, rit: det:10us, service: det:1ms}}]
    """)
    out = generate(spec, tmp_path / "wl")
    df = read_trace(out.trace)
    assert len(df) == n and (df.ts == df.ts.iloc[-1]).sum() > 3  # the cut falls among ties
    doc = json.loads(out.expected.read_text())
    for row in doc["device_stats"]:
        sub = df[df.dev == row["id"]].ts.to_numpy()
        assert row["requests"] == sub.size
        if sub.size > 1:
            assert row["rit"]["p50_us"] == pytest.approx(np.median(np.diff(sub)), abs=1e-3)
    assert out.duration_us >= df.ts.max()
