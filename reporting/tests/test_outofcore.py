"""The report out of core: the log-linear histogram's error bound, the
bottom-k sample, chunk boundaries of the streaming pass, the streaming pass
against the in-memory reference, and the chunked CSV -> Parquet conversion."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import wotbench
from wotbench import UserError
from wotbench.reporting import _load, _parquet
from wotbench.reporting._integrity import LATENCY_QUANTILES, GeArrays
from wotbench.reporting._load import ANALYSIS_COLUMNS, find_files, ge_data, read_phases
from wotbench.reporting._sketch import EMAX, EMIN, REL_ERROR, BottomK, GroupQuantiles, bucket_of, bucket_value
from wotbench.reporting._stream import GeStream, chunk_arrays
from wotbench.reporting.tests._reference import ge_integrity, per_device
from wotbench.spec import Thresholds

Q = [0, 0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100]


def _bound(x: np.ndarray, q: float) -> float:
    """The documented bound of one percentile: REL_ERROR of the larger of
    the two order statistics it interpolates, plus the zero bucket's width."""
    s = np.sort(x)
    h = (s.size - 1) * q / 100.0
    lo, hi = s[int(math.floor(h))], s[int(math.ceil(h))]
    return float(REL_ERROR * max(abs(lo), abs(hi)) + 2.0 ** EMIN + 1e-12 * max(abs(lo), abs(hi), 1.0))


@pytest.mark.parametrize("kind", ["lognormal", "exponential-us", "signed", "integers", "point-mass"])
def test_histogram_quantiles_within_the_documented_error(kind: str) -> None:
    rng = np.random.default_rng(11)
    n = 300_000
    x = {"lognormal": lambda: rng.lognormal(8.0, 2.0, n),
         "exponential-us": lambda: np.round(rng.exponential(5000.0, n)),
         "signed": lambda: rng.normal(0.05, 0.4, n),             # R_d: around 0, both signs
         "integers": lambda: rng.integers(0, 3000, n).astype(np.float64),
         "point-mass": lambda: np.full(n, 33_333.0)}[kind]()
    g = GroupQuantiles(exact_max=0)                              # histogram from the first value
    for part in np.array_split(x, 7):
        g.add(np.zeros(part.size, np.int64), part)
    d = g.total(Q)
    assert d is not None and not d.exact
    assert d.n == n and d.min == x.min() and d.max == x.max()
    assert d.mean == pytest.approx(x.mean(), rel=1e-9, abs=1e-12)
    exact = np.percentile(x, Q)
    for q, e in zip(Q, exact, strict=True):
        assert abs(d.q[q] - e) <= _bound(x, q), (kind, q, d.q[q], e)


def test_bucket_midpoint_is_within_rel_error_of_every_value_in_it() -> None:
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.lognormal(0, 6, 100_000), -rng.lognormal(0, 6, 100_000)])
    x = x[(np.abs(x) >= 2.0 ** EMIN) & (np.abs(x) < 2.0 ** EMAX)]       # beyond: the top bucket, clipped to max
    v = bucket_value(bucket_of(x))
    assert np.all(np.abs(v - x) <= REL_ERROR * np.abs(x))
    assert np.all(np.diff(bucket_of(np.sort(x))) >= 0)                 # monotone


def test_per_group_histograms_match_each_groups_exact_quantiles() -> None:
    rng = np.random.default_rng(5)
    grp = rng.integers(0, 9, 200_000)
    x = rng.exponential(1000.0 * (grp + 1))
    exact_g, hist_g = GroupQuantiles(exact_max=1 << 30), GroupQuantiles(exact_max=10_000)
    for s in np.array_split(np.arange(x.size), 13):
        exact_g.add(grp[s], x[s])
        hist_g.add(grp[s], x[s])
    assert exact_g.exact and not hist_g.exact
    for i, (e, h) in enumerate(zip(exact_g.dists([5, 50, 99]), hist_g.dists([5, 50, 99]), strict=True)):
        xi = x[grp == i]
        assert e is not None and h is not None and e.n == h.n == xi.size
        assert e.q[50] == np.percentile(xi, 50)
        for q in (5, 50, 99):
            assert abs(h.q[q] - e.q[q]) <= _bound(xi, q)


def test_bottom_k_is_a_bounded_sample_independent_of_chunking() -> None:
    rng = np.random.default_rng(9)
    n = 300_000
    grp = rng.integers(0, 4, n)
    val = np.arange(n, dtype=np.float64)

    def run(splits: int, k: int) -> list[list[np.ndarray]]:
        b = BottomK(k, 1, seed=3)
        for s in np.array_split(np.arange(n), splits):
            b.add(b.keys(s.size), grp[s], [val[s]])
        return [b.sample(i) for i in range(4)]

    one, many = run(1, 1000), run(37, 1000)
    for a, b in zip(one, many, strict=True):
        assert a[0].size == 1000 and np.array_equal(a[0], b[0])
    every = run(5, n)                                          # k above the group sizes: all rows
    assert sum(s[0].size for s in every) == n


def _stream(ge: _load.GeData, window: tuple[float, float], th: Thresholds, batch: int,
            exact_max: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    s = GeStream(window, th, exact_max=exact_max)
    for b in ge.batches(ANALYSIS_COLUMNS, batch_size=batch):
        s.add(chunk_arrays(b))
    out = s.finish()
    return out.ge, out.devices


def _close(a, b, path: str = "") -> None:
    """Equal, floats to 1e-9 relative (sums in another order)."""
    if isinstance(a, dict):
        assert set(a) == set(b), path
        for k in a:
            _close(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-12), path
    else:
        assert a == b, path


@pytest.mark.parametrize("exact_max", [1 << 21, 500])
def test_results_do_not_depend_on_chunk_boundaries(make_run, exact_max: int) -> None:
    """Chunks of 1, 7 and 677 rows give what one chunk gives: the RIT of
    a chunk's first request (GE and device), the windows, the samples. The
    run is small (~2,000 rows: one chunk per row costs ~1 ms a row), but
    holds more than two chunks of 677 and, with exact_max 500, more values
    in the window than the exact budget."""
    run = make_run("chunks", devices=5, rit_us=10_000.0, measure_s=2.0, warmup_s=1.0, cooldown_s=1.0,
                   ge_floor_us=40.0, error_rate=0.02)
    files = find_files(run)
    ge = ge_data(files)[0]
    assert ge.num_rows > 2 * 677
    window = read_phases(files, [ge]).measure
    th = Thresholds(min_measure_us=1e6)
    whole = _stream(ge, window, th, 1 << 30, exact_max)
    for batch in (677, 7):
        _close(_stream(ge, window, th, batch, exact_max), whole, f"batch={batch}")
    _close(_stream(ge, window, th, 1, exact_max), whole, "batch=1")


def test_streaming_pass_matches_the_in_memory_reference(make_run) -> None:
    """On a run that fits, the streaming pass gives the in-memory code's
    numbers; with the histogram forced, quantiles within the bound and the
    rest unchanged."""
    run = make_run("ref", devices=6, rit_us=5_000.0, ge_floor_us=30.0, overload_rate=0.01)
    files = find_files(run)
    ge = ge_data(files)[0]
    window = read_phases(files, [ge]).measure
    th = Thresholds()
    a = GeArrays.from_table(pq.read_table(ge.parquet, columns=ANALYSIS_COLUMNS)).in_window(window)
    ref_ge, ref_dev = ge_integrity(a, window, th), per_device(a, window, th)
    got_ge, got_dev = _stream(ge, window, th, 10_000, 1 << 21)
    for d in ("send_lag_us", "response_us", "latency_intended_us"):
        assert got_ge[d].pop("exact") is True
    for d in ("expected", "submitted"):
        assert got_ge["rit"][d].pop("exact") is True
    assert got_ge["rd"].pop("median_exact") is True
    _close(got_ge, ref_ge)
    for row in got_dev:
        assert row.pop("quantiles_exact") is True
    _close(got_dev, ref_dev)
    # Forced histogram: every quantile within its bound, everything else the same.
    hist_ge, hist_dev = _stream(ge, window, th, 10_000, 100)
    assert hist_ge["response_us"]["exact"] is False
    resp = np.where(a.ok, a.response, np.nan)
    resp = resp[np.isfinite(resp)]
    for q in LATENCY_QUANTILES:
        key = f"p{q:g}".replace(".", "_")
        assert abs(hist_ge["response_us"][key] - ref_ge["response_us"][key]) <= _bound(resp, q)
    for k in ("requests", "ok", "late_sends", "overloaded", "target_rate", "achieved_rate", "throughput"):
        assert hist_ge[k] == ref_ge[k]
    assert hist_ge["rit"]["ok"] == ref_ge["rit"]["ok"] and hist_ge["rit"]["ks_d"] == ref_ge["rit"]["ks_d"]
    assert [d["rit_ok"] for d in hist_dev] == [d["rit_ok"] for d in ref_dev]


def test_analysis_verdict_and_numbers_hold_with_the_histogram(make_run, monkeypatch) -> None:
    """The whole analyze_run with every quantile from the histogram: the
    same verdict and reasons as with exact quantiles."""
    from wotbench.reporting import _stream as stream

    runs = {"ok": make_run("v-ok"), "slow": make_run("v-slow", devices=1, rit_us=300.0, ge_floor_us=450.0,
                                                        measure_s=10.0, warmup_s=0.5, cooldown_s=0.5)}
    th = Thresholds(min_measure_us=5e6)
    exact = {k: wotbench.reporting.analyze_run(r, th) for k, r in runs.items()}
    monkeypatch.setattr(stream, "EXACT_MAX", 64)
    approx = {k: wotbench.reporting.analyze_run(r, th) for k, r in runs.items()}
    for k in runs:
        assert approx[k]["ges"][0]["response_us"]["exact"] is False
        failed = lambda r: [(c["check"], c["ok"]) for c in r["checks"]]  # noqa: E731  (reasons quote the numbers)
        assert approx[k]["verdict"] == exact[k]["verdict"] and failed(approx[k]) == failed(exact[k])
        for q in ("p50", "p99"):
            e, a = exact[k]["ges"][0]["response_us"][q], approx[k]["ges"][0]["response_us"][q]
            # integers: the two order statistics differ by < 1 us here
            assert abs(a - e) <= 2 * REL_ERROR * abs(e) + 1.0


def test_conversion_is_chunked_and_leaves_nothing_half_written(make_run, monkeypatch) -> None:
    monkeypatch.setattr(_parquet, "CSV_BLOCK", 1 << 16)
    monkeypatch.setattr(_parquet, "ROW_GROUP", 1000)
    run = make_run("conv")
    csv = run / "ge" / "ge-0.csv"
    cache = _load.ge_parquet(csv)
    md = pq.read_metadata(cache)
    assert md.num_row_groups > 3 and md.num_rows == sum(1 for _ in csv.open()) - 1
    assert pq.read_schema(cache).field("status").type.value_type == "string"    # dictionary-encoded
    table = pq.read_table(cache)
    assert table.column("uri").chunk(0).type.index_type == "int32"
    # A bad row far into the file: an error naming the file, and no cache, no temporary file.
    cache.unlink()
    lines = csv.read_text().splitlines(keepends=True)
    lines[len(lines) - 50] = "1,GET,coap://x/r0,not-a-number\n"
    csv.write_text("".join(lines))
    with pytest.raises(UserError) as e:
        _load.ge_parquet(csv)
    assert str(csv) in str(e.value)
    assert not list(csv.parent.glob("*.parquet")) and not list(csv.parent.glob(".tmp-*"))


def test_load_run_is_lazy_and_refuses_a_frame_too_big(make_run, monkeypatch) -> None:
    run = make_run("lazy", ges=2)
    r = wotbench.load_run(run)
    assert [g.ge for g in r.ges] == [0, 1]
    assert r.num_requests == sum(g.num_rows for g in r.ges) == len(r.all_requests)
    first = next(r.ges[0].batches(["device_id", "intended_us"], batch_size=100))
    assert first.num_rows == 100
    import pyarrow.compute as pc
    dev1 = r.ges[1].table(["device_id"], filter=pc.field("device_id") == 1)
    assert dev1.num_rows == int((r.all_requests["device_id"] == 1).sum()) > 0
    monkeypatch.setattr(_load, "MAX_FRAME_ROWS", 10)
    with pytest.raises(UserError, match="batches"):
        _ = wotbench.load_run(run).all_requests


_PEAK = """
import sys, tracemalloc
import pyarrow as pa
from wotbench.reporting import _analyze, _stream
_stream.EXACT_MAX = 1 << 16                         # the histograms and KS samples at their bounds
_stream.KS_MAX_PAIRS = 20_000                       # early: the regime of a long run
_analyze.PeakBins = lambda w: _stream.PeakBins(w, exact_max=1 << 16)
from wotbench.reporting._load import GeData, find_files, ge_data
GeData.batches.__defaults__ = (None, 1 << 17)      # chunks well below both runs' sizes
ge_data(find_files(sys.argv[1]))                    # the Parquet cache first, not measured
arrow = [0]
add = _stream.GeStream.add
def watched(self, c):
    add(self, c)
    arrow[0] = max(arrow[0], pa.total_allocated_bytes())
_stream.GeStream.add = watched
tracemalloc.start()                                 # NumPy's allocations are traced
_analyze.analyze(sys.argv[1])
print(arrow[0] >> 20, tracemalloc.get_traced_memory()[1] >> 20)
"""


@pytest.mark.slow
def test_analysis_memory_does_not_grow_with_the_run(tmp_path) -> None:
    """The analysis of 0.5M and 4M requests (fresh processes, the Parquet
    cache made first, chunks of 128k rows, the exact-quantile budgets
    small): its peak Arrow and NumPy memory must not grow with the rows.
    Arrow's did, by ~18 bytes per row (2.7 GiB RSS at 100M): Parquet's
    pre-buffer cache kept every row group read until the file closed."""
    import subprocess
    import sys

    from wotbench.reporting.bench.synth import SynthSpec, synth_run

    peaks = {}
    for n in (500_000, 4_000_000):
        run = tmp_path / f"run-{n}"
        synth_run(run, SynthSpec(devices=20, rit_us=20 * 30e6 / n, measure_s=25.0, seed=3))
        p = subprocess.run([sys.executable, "-c", _PEAK, str(run)], capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, p.stderr
        peaks[n] = tuple(map(int, p.stdout.split()[-2:]))
    print("analysis peaks (MB), Arrow and NumPy:", peaks)
    (arrow_small, numpy_small), (arrow_big, numpy_big) = peaks[500_000], peaks[4_000_000]
    assert arrow_big - arrow_small < 40, peaks       # pre-buffered: +83 MB here, and growing with the file
    assert numpy_big - numpy_small < 32, peaks
