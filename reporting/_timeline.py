"""Timeline and drift (the soak's report section): per time window the
achieved rate, send lag and response time (p50/p99, from the GE outputs),
host CPU and memory (collectl), and the memory of the GE, devices, CD pair
(monitor/containers.csv) and the harness (monitor/harness.csv); then a
linear fit of each memory series and of the per-window p99 send lag over
the measurement phase.

"Flat" means: the fitted line's rise over the measurement phase
(slope x duration) is at most ``rel`` (5 %) of the series' median, or at
most the absolute floor (memory 1 MiB, p99 lag 1 ms). Above both, the
series is flagged as drifting.

Bounded memory: the GE CSVs (or their Parquet cache) are streamed in
record batches; percentiles come from a per-window histogram on
log-spaced bins (1 us .. 100 s, 2 % wide), so an hour-long run holds
windows x bins counters, never the rows. containers.csv is read in chunks
and reduced per sample instant.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from wotbench.base import rundir as layout
from wotbench.base.rundir import RunDir
from wotbench.base.units import MISSING, fmt_count, fmt_duration_us, fmt_num, fmt_rate

if TYPE_CHECKING:
    from wotbench.reporting._analyze import Analysis

__all__ = ["WINDOW_S", "REL", "DRIFT_RULE", "Drift", "Timeline", "drift", "timeline", "run_timeline", "drift_table",
           "timeline_table", "TIMELINE_COLUMNS"]

WINDOW_S = 10.0
REL = 0.05
MEM_FLOOR = 2**20            # bytes
LAG_FLOOR_US = 1000.0
DRIFT_RULE = (f"Over the measurement phase a least-squares line is fitted to each memory series and to the "
              f"per-window p99 send lag, and another over the phase's second half (the steady state). Flat "
              f"means the steady-state rise (the second half's slope times the phase's length) is at most "
              f"{REL:.0%} of the series' median or at most the absolute floor (memory {MEM_FLOOR / 2**20:g} MiB, "
              f"lag {LAG_FLOOR_US / 1e3:g} ms); above both, the series drifts (DRIFT). A leak grows all along; "
              f"what fills up early and then stays (the GE's exact histograms reaching the largest response "
              f"time) shows in the whole-phase fit only. A container's memory is its "
              f"working set (cgroup usage less the inactive file cache, as docker stats), which still holds "
              f"active page cache charged to it (e.g. the pages of the trace the GE reads twice); (anon) is its "
              f"anonymous memory alone, the heaps and stacks a leak would grow.")
#: log-spaced histogram edges for lag / response time, microseconds.
_EDGES = np.concatenate([[0.0], np.geomspace(1.0, 1e8, int(np.log(1e8) / np.log(1.02)) + 1)])
_COLS = ["intended_us", "send_lag_us", "response_us", "status"]
_CHUNK = 1 << 20             # containers.csv rows per chunk


@dataclass(frozen=True)
class Drift:
    series: str
    unit: str
    start: float             # fitted value at the measurement start (whole-phase fit)
    end: float               # fitted value at the measurement end (whole-phase fit)
    rise: float              # end - start
    median: float
    limit: float             # max(rel * median, floor)
    points: int
    flagged: bool
    steady_rise: float = 0.0  # the second half's slope x the phase's length: what is judged


@dataclass
class Timeline:
    windows: pd.DataFrame    # t_s (window start, s since t0) and one column per series
    drifts: list[Drift]
    window_s: float


def drift(t_s: np.ndarray, y: np.ndarray, series: str, unit: str, floor: float,
          rel: float = REL, min_points: int = 3) -> Drift | None:
    """Least-squares lines through (t_s, y): over the whole span (shown)
    and over its second half, whose slope times the whole span (the
    steady-state rise) is judged: flagged when it exceeds both ``rel`` x
    median and ``floor``. A leak grows all along and is flagged; a table
    that fills up early and then stays (a histogram reaching the largest
    response time, a cache reaching its working set) is not."""
    ok = np.isfinite(t_s) & np.isfinite(y)
    t, v = np.asarray(t_s, float)[ok], np.asarray(y, float)[ok]
    if len(t) < min_points or np.ptp(t) <= 0:
        return None
    slope, icpt = np.polyfit(t, v, 1)
    start, end = icpt + slope * t.min(), icpt + slope * t.max()
    half = t >= t.min() + np.ptp(t) / 2
    steady = float(np.polyfit(t[half], v[half], 1)[0] * np.ptp(t)) if half.sum() >= min_points \
        and np.ptp(t[half]) > 0 else float(end - start)
    med = float(np.median(v))
    limit = max(rel * abs(med), floor)
    return Drift(series, unit, float(start), float(end), float(end - start), med, float(limit),
                 int(len(t)), bool(steady > limit), steady)


# --- GE outputs, streamed ----------------------------------------------------------------

def _batches(csv: Path) -> Iterator[pa.RecordBatch]:
    pq_path = csv.with_suffix(".parquet")
    if pq_path.exists():
        try:
            f = pq.ParquetFile(pq_path, pre_buffer=False)       # bounded: see _load.GeData.batches
            if set(_COLS) <= set(f.schema_arrow.names):
                yield from f.iter_batches(columns=_COLS, batch_size=1 << 18)
                return
        except OSError:
            pass
    reader = pacsv.open_csv(csv, convert_options=pacsv.ConvertOptions(include_columns=_COLS))
    yield from reader


def _ge_windows(run: RunDir, t_lo: float, n: int, w_us: float) -> dict[str, np.ndarray]:
    nb = len(_EDGES)
    sent = np.zeros(n, np.int64)
    ok = np.zeros(n, np.int64)
    lag_h = np.zeros(n * nb, np.int64)
    rt_h = np.zeros(n * nb, np.int64)
    for csv in sorted(run.ge_dir.glob(layout.GE_OUTPUT_GLOB)):
        if layout.ge_index(csv) is None:
            continue
        for b in _batches(csv):
            t = b.column("intended_us").to_numpy(zero_copy_only=False).astype(float)
            w = np.floor((t - t_lo) / w_us)
            inw = (w >= 0) & (w < n)
            wi = w[inw].astype(np.int64)
            sent += np.bincount(wi, minlength=n)
            status = b.column("status")
            if pa.types.is_dictionary(status.type):
                status = status.cast(pa.string())
            st = pc.fill_null(pc.equal(status, "ok"), False).to_numpy(zero_copy_only=False)[inw]
            ok += np.bincount(wi[st], minlength=n)
            for col, h in (("send_lag_us", lag_h), ("response_us", rt_h)):
                v = b.column(col).to_numpy(zero_copy_only=False).astype(float)[inw]
                fin = np.isfinite(v)
                bi = np.clip(np.searchsorted(_EDGES, np.maximum(v[fin], 0), side="right") - 1, 0, nb - 1)
                h += np.bincount(wi[fin] * nb + bi, minlength=n * nb)
    out = {"rate_per_s": sent / (w_us / 1e6), "ok_per_s": ok / (w_us / 1e6)}
    for name, h in (("lag", lag_h), ("rt", rt_h)):
        per_window = h.reshape(n, nb)
        for q in (50, 99):
            out[f"{name}_p{q}_ms"] = _hist_q(per_window, q / 100) / 1e3
    return out


def _hist_q(h: np.ndarray, q: float) -> np.ndarray:
    """Per row, the upper edge of the bin holding quantile q (NaN: empty row)."""
    tot = h.sum(axis=1)
    cum = np.cumsum(h, axis=1)
    idx = np.argmax(cum >= np.maximum(np.ceil(q * tot), 1)[:, None], axis=1)
    upper = np.append(_EDGES[1:], _EDGES[-1])[idx]
    return np.where(tot > 0, upper, np.nan)


# --- monitors ------------------------------------------------------------------------------

def _memory(run: RunDir) -> pd.DataFrame:
    """t_s and bytes per sample instant: ge, cd (node + GE), devices_total,
    devices_max (working set), the same with ``_anon`` (anonymous memory
    alone, where containers.csv has it), and harness (RSS)."""
    parts = []
    if run.containers_monitor.exists():
        have = set(pd.read_csv(run.containers_monitor, nrows=0).columns)
        vals = ["mem_bytes"] + (["anon_bytes"] if "anon_bytes" in have else [])
        for ch in pd.read_csv(run.containers_monitor, usecols=["t_us", "role", *vals], chunksize=_CHUNK):
            if "anon_bytes" in ch:
                ch["anon_bytes"] = ch["anon_bytes"].where(ch["anon_bytes"] >= 0)
            g = ch.groupby(["t_us", "role"])[vals]
            parts.append(pd.concat([g.sum(min_count=1).add_suffix(":sum"), g.max().add_suffix(":max")],
                                   axis=1).reset_index())
    cols: dict[str, pd.Series] = {}
    if parts:
        g = pd.concat(parts).groupby(["t_us", "role"])   # an instant may straddle two chunks
        df = pd.concat([g[[c for c in parts[0].columns if c.endswith(":sum")]].sum(min_count=1),
                        g[[c for c in parts[0].columns if c.endswith(":max")]].max()], axis=1).reset_index()
        for val, suffix in (("mem_bytes", ""), ("anon_bytes", "_anon")):
            if f"{val}:sum" not in df:
                continue
            piv_sum = df.pivot(index="t_us", columns="role", values=f"{val}:sum")
            piv_max = df.pivot(index="t_us", columns="role", values=f"{val}:max")
            if "ge" in piv_sum:
                cols[f"mem_ge{suffix}"] = piv_sum["ge"]
            cd = [c for c in ("cd-node", "cd-ge") if c in piv_sum]
            if cd:
                cols[f"mem_cd{suffix}"] = piv_sum[cd].sum(axis=1, min_count=len(cd))
            if "device" in piv_sum:
                cols[f"mem_devices_total{suffix}"] = piv_sum["device"]
                cols[f"mem_devices_max{suffix}"] = piv_max["device"]
    out = pd.DataFrame(cols)
    out.index.name = "t_us"
    out = out.reset_index()
    if run.harness_monitor.exists():
        h = pd.read_csv(run.harness_monitor, usecols=["t_us", "rss_bytes"]).rename(columns={"rss_bytes": "mem_harness"})
        out = pd.concat([out, h], ignore_index=True)
    out["t_s"] = out.pop("t_us") / 1e6
    return out.sort_values("t_s", ignore_index=True)


def _host(run: RunDir) -> pd.DataFrame | None:
    if not run.host_monitor.exists():
        return None
    h = pd.read_csv(run.host_monitor)
    idle = [c for c in h.columns if c.startswith("cpu") and c.endswith("_idle") and c[3:-5].isdigit()]
    out = pd.DataFrame({"t_s": h["t_us"] / 1e6})
    if idle:
        out["host_cpu_pct"] = 100.0 - h[idle].mean(axis=1)
    if "mem_used_kb" in h:
        out["host_mem_mb"] = h["mem_used_kb"] / 1024
    return out


def _bin_mean(df: pd.DataFrame, t_lo: float, n: int, w_s: float) -> pd.DataFrame:
    w = np.floor((df["t_s"].to_numpy() - t_lo) / w_s)
    inw = (w >= 0) & (w < n)
    d = df.loc[inw].drop(columns="t_s").assign(_w=w[inw].astype(int))
    return d.groupby("_w").mean().reindex(range(n))


MEM_SERIES = {"mem_ge": "GE", "mem_cd": "CD pair (node + CD-GE)", "mem_devices_total": "devices, total",
              "mem_devices_max": "devices, largest", "mem_harness": "harness (RSS)",
              "mem_ge_anon": "GE (anon)", "mem_cd_anon": "CD pair (anon)",
              "mem_devices_total_anon": "devices, total (anon)", "mem_devices_max_anon": "devices, largest (anon)"}


def timeline(run_dir: Path, phases: dict[str, Any], window_s: float = WINDOW_S) -> Timeline:
    """Per-window series over the whole test (calibration start or 0 .. cool-down end)
    and the drift verdicts over the measurement phase."""
    run = RunDir(Path(run_dir))
    spans = [v for v in phases.values() if isinstance(v, (list, tuple)) and len(v) == 2]
    lo = min(v[0] for v in spans) / 1e6
    hi = max(v[1] for v in spans) / 1e6
    n = max(1, int(np.ceil((hi - lo) / window_s)))
    win = pd.DataFrame({"t_s": lo + window_s * np.arange(n)})
    for k, v in _ge_windows(run, lo * 1e6, n, window_s * 1e6).items():
        win[k] = v
    host = _host(run)
    if host is not None and len(host):
        win = win.join(_bin_mean(host, lo, n, window_s))
    mem = _memory(run)
    if len(mem):
        win = win.join(_bin_mean(mem, lo, n, window_s) / 2**20)     # MiB
    m0, m1 = phases["measure"][0] / 1e6, phases["measure"][1] / 1e6
    drifts: list[Drift] = []
    inm = mem[(mem["t_s"] >= m0) & (mem["t_s"] <= m1)]
    for col, label in MEM_SERIES.items():
        if col in inm:
            s = inm[["t_s", col]].dropna()
            d = drift(s["t_s"].to_numpy(), s[col].to_numpy() / 2**20, label, "MiB", MEM_FLOOR / 2**20)
            if d:
                drifts.append(d)
    full = (win["t_s"] >= m0) & (win["t_s"] + window_s <= m1 + 1e-9)
    d = drift(win.loc[full, "t_s"].to_numpy(), win.loc[full, "lag_p99_ms"].to_numpy(), "send lag p99 per window",
              "ms", LAG_FLOOR_US / 1e3)
    if d:
        drifts.append(d)
    return Timeline(win, drifts, window_s)


def run_timeline(an: Analysis) -> Timeline | None:
    """The timeline of an analysed run, None when its files do not allow one."""
    try:
        return timeline(an.path, an.result["phases"])
    except (OSError, KeyError, ValueError):
        return None


def _in_unit(v: float, unit: str) -> str:
    """A drift value in its series' unit: MiB with three significant digits, ms as a duration."""
    if unit == "ms":
        return fmt_duration_us(v * 1e3)
    return f"{fmt_num(v if abs(v) >= 5e-4 else 0.0)} {unit}"   # below 0.5 KiB: float noise, "0"


def drift_table(tl: Timeline | None) -> tuple[list[str], list[list[str]]] | None:
    """The drift verdicts of a run (None without data)."""
    if tl is None or not tl.drifts:
        return None
    rows = [[d.series, _in_unit(d.start, d.unit), _in_unit(d.end, d.unit),
             ("+" if d.rise >= 0 else "") + _in_unit(d.rise, d.unit),
             ("+" if d.steady_rise >= 0 else "") + _in_unit(d.steady_rise, d.unit),
             _in_unit(d.limit, d.unit), fmt_count(d.points), "DRIFT" if d.flagged else "flat"] for d in tl.drifts]
    return ["series", "fit at start", "fit at end", "rise", "steady-state rise", "limit", "points", "verdict"], rows


#: A timeline column's label (with its unit) and how its values read; memory columns are MiB.
TIMELINE_COLUMNS: dict[str, str] = {
    "t_s": "window start (s since t0)", "rate_per_s": "sent", "ok_per_s": "answered ok",
    "lag_p50_ms": "send lag p50", "lag_p99_ms": "send lag p99", "rt_p50_ms": "response p50",
    "rt_p99_ms": "response p99", "host_cpu_pct": "host CPU", "host_mem_mb": "host memory used",
    **{k: f"memory: {v}" for k, v in MEM_SERIES.items()},
}


def _cell(col: str, v: Any) -> str:
    """One timeline value by its column's suffix: rates per second, ms as
    durations, % and MiB with their unit; NaN (an empty window) as "–"."""
    if not isinstance(v, (int, float)) or v != v:
        return MISSING
    if col == "t_s":
        return fmt_num(v, 4)
    if col.endswith("_per_s"):
        return fmt_rate(v)
    if col.endswith("_ms"):
        return fmt_duration_us(v * 1e3)
    if col.endswith("_pct"):
        return f"{fmt_num(v)} %"
    return f"{fmt_num(v)} MiB"          # host_mem_mb and the mem_* series


def timeline_table(tl: Timeline, max_rows: int = 40) -> tuple[list[str], list[list[str]]]:
    """Per window (every k-th when there are more than ``max_rows``), each
    column labelled with what it is and each value with its unit."""
    w = tl.windows
    step = max(1, int(np.ceil(len(w) / max_rows)))
    w = w.iloc[::step]
    cols = list(w.columns)
    return ([TIMELINE_COLUMNS.get(c, c.replace("_", " ")) for c in cols],
            [[_cell(c, v) for c, v in zip(cols, row, strict=True)] for row in w.itertuples(index=False)])
