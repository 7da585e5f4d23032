"""Reading a run directory (docs/run-layout.md) or a folder of GE output
files alone.

GE per-request CSVs can hold hundreds of millions of rows, so nothing here
holds a whole one in memory: each is converted once, streaming, to Parquet
beside the CSV (``ge-0.csv`` -> ``ge-0.parquet``; pyarrow.csv.open_csv in
16 MB blocks, one row group per ~1M rows), and read back a row group at a
time (:class:`GeData`). The Parquet file records the CSV's size and
modification time and is rebuilt when they change; when the folder is
read-only the cache goes to the temp dir.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.rundir import HostDir, RunDir
from wotbench.reporting._bounded import MAX_JSON_BYTES, MAX_JSON_DEPTH, TraceCounts, read_json, trace_counts
from wotbench.reporting._parquet import ROW_GROUP, ge_parquet

__all__ = ["Phases", "RunSummary", "Run", "RunHost", "RunFiles", "HostFiles", "GeData", "find_files", "read_ge_table",
           "ge_parquet", "ge_data", "MAX_FRAME_ROWS", "ROW_GROUP",
           "load_run", "read_phases", "read_json", "trace_counts", "TraceCounts", "MAX_JSON_BYTES",
           "MAX_JSON_DEPTH"]


@dataclass(frozen=True)
class Phases:
    """Phase windows ``[a, b)`` in us relative to t0 (phases.json)."""

    measure: tuple[float, float]
    """The measurement phase: the requests intended in it are the report's (``Run.requests``)."""
    calibration: tuple[float, float] | None = None
    """The contention detector's calibration, before the workload (negative times); None without one."""
    warmup: tuple[float, float] | None = None
    """The warm-up before the measurement; None without one."""
    cooldown: tuple[float, float] | None = None
    """The cool-down after the measurement; None without one."""
    t0_epoch_us: int | None = None
    """t0, the instant all the times are relative to, in us since the epoch; None when unknown."""
    inferred: bool = False
    """True when there was no phases.json and the measurement phase is the whole trace."""

    @property
    def measure_us(self) -> float:
        """The measurement phase's length in us."""
        return self.measure[1] - self.measure[0]

    def to_dict(self) -> dict[str, Any]:
        """The windows as phases.json writes them (lists, None where absent)."""
        return {"t0_epoch_us": self.t0_epoch_us, "inferred": self.inferred,
                **{k: list(v) if v is not None else None for k, v in
                   (("calibration", self.calibration), ("warmup", self.warmup),
                    ("measure", self.measure), ("cooldown", self.cooldown))}}


@dataclass(frozen=True)
class RunSummary:
    """The run's summary.json in brief (``data`` keeps all of it)."""

    run_id: str
    """The run's id (its folder's name under results/)."""
    complete: bool
    """Whether the run finished (an interrupted run is not complete)."""
    verdict: str | None
    """"valid" or "invalid" (None when the summary has none)."""
    reasons: tuple[str, ...]
    """Why the run is invalid, one sentence per failed check (empty when valid)."""
    data: dict[str, Any] = field(repr=False, default_factory=dict)
    """All of summary.json: the analysis sections the report is made of."""


@dataclass(frozen=True)
class HostFiles:
    """One host's files in a run across a swarm (``nodes/<hostname>/``);
    None where a file is missing."""

    hostname: str
    root: Path
    cd_csv: Path | None
    cd_summary: Path | None
    host_monitor: Path | None
    probe_csv: Path | None
    probe_summary: Path | None

    @classmethod
    def of(cls, h: HostDir) -> HostFiles:
        assert h.hostname is not None, "the run folder itself is not a swarm host's folder"
        return cls(hostname=h.hostname, root=h.root, cd_csv=_opt(h.cd_csv), cd_summary=_opt(h.cd_summary),
                   host_monitor=_opt(h.host_monitor), probe_csv=_opt(h.probe_csv),
                   probe_summary=_opt(h.probe_summary))


@dataclass(frozen=True)
class RunFiles:
    """Where a run's inputs are; GE files alone are enough."""

    root: Path
    ge_csvs: tuple[Path, ...]
    cd_csv: Path | None
    phases: Path | None
    host_monitor: Path | None
    containers_monitor: Path | None
    manifest: Path | None
    summary: Path | None
    spec: Path | None
    incomplete: Path | None
    observed: Path | None = None
    ge_summaries: tuple[Path | None, ...] = ()
    """The GE summary JSON of each ge_csvs entry (None when missing)."""
    cd_summary: Path | None = None
    device_stats: dict[str, Path] = field(default_factory=dict)
    """container name -> its --stats JSON, for every one written."""
    hosts: tuple[HostFiles, ...] = ()
    """Per host, in a run across a swarm (``nodes/*/``); empty on one host."""
    ge_traces: tuple[Path | None, ...] = ()
    """The trace each ge_csvs entry ran (workload/trace-ge-<k>.csv, or with
    one GE workload/trace.csv); None when missing."""

    def ge_devices(self, ge_csv: Path) -> Path:
        """The device list beside a GE output (harness runs only)."""
        return ge_csv.parent / layout.ge_devices(_ge_index(ge_csv))


def _opt(p: Path) -> Path | None:
    return p if p.is_file() else None


def _ge_index(p: Path) -> int:
    k = layout.ge_index(p)
    return k if k is not None else 1 << 30


def find_files(run_dir: Path, need_ge: bool = True) -> RunFiles:
    """The files of a run folder, or of a folder holding GE outputs alone;
    ``need_ge=False`` accepts a folder without GE output (yet)."""
    run = RunDir(Path(run_dir))
    if not run.root.is_dir():
        raise UserError("not a run directory", run.root)
    ge_dir = run.ge_dir if run.ge_dir.is_dir() else run.root
    ges = tuple(sorted((p for p in ge_dir.glob(layout.GE_OUTPUT_GLOB) if layout.ge_index(p) is not None),
                       key=_ge_index))
    cd_dir = run.cd_dir if run.cd_dir.is_dir() else run.root
    if not ges and need_ge:
        raise UserError(f"no GE output ({layout.GE}/{layout.ge_output(0)})", run.root)
    stats = sorted(run.devices_dir.glob(f"*/{layout.DEVICE_STATS}")) if run.devices_dir.is_dir() else []
    hosts = tuple(HostFiles.of(h) for h in run.hosts() if h.hostname is not None)
    return RunFiles(
        root=run.root, ge_csvs=ges, cd_csv=_opt(cd_dir / layout.CD_OUTPUT), phases=_opt(run.phases),
        host_monitor=_opt(run.host_monitor), containers_monitor=_opt(run.containers_monitor),
        manifest=_opt(run.manifest), summary=_opt(run.summary), spec=_opt(run.spec),
        incomplete=_opt(run.incomplete), observed=_opt(run.observed),
        ge_summaries=tuple(_opt(p.parent / layout.ge_summary(_ge_index(p))) for p in ges),
        cd_summary=_opt(cd_dir / layout.CD_SUMMARY), device_stats={p.parent.name: p for p in stats},
        hosts=hosts, ge_traces=tuple(_ge_trace(run, _ge_index(p)) for p in ges))


def _ge_trace(run: RunDir, k: int) -> Path | None:
    """GE k's trace: its own (several GEs), else the whole trace when no GE has its own."""
    own = _opt(run.ge_trace(k))
    if own is not None or any(run.workload.glob(layout.ge_trace(0).replace("0", "*"))):
        return own
    return _opt(run.trace)


#: The columns the analysis reads (the Parquet cache keeps them all for load_run).
ANALYSIS_COLUMNS = ["device_id", "intended_us", "sent_us", "response_us", "latency_intended_us",
                    "send_lag_us", "status", "code", "service_us", "method"]


def read_ge_table(csv: Path, columns: list[str] | None = None) -> pa.Table:
    """One GE per-request file as an Arrow table, whole (via the Parquet
    cache): for the small ones (CD-GE, probe). ``columns`` selects columns
    (default all)."""
    return pq.read_table(ge_parquet(csv), columns=columns)


@dataclass(frozen=True)
class GeData:
    """One workload GE's per-request output (docs/formats.md), read lazily
    from its Parquet cache: nothing is in memory until asked for. Times
    are float64 us (null when absent), strings dictionary-encoded."""

    ge: int
    """The GE index k (``ge-<k>.csv``)."""
    csv: Path
    """The GE's per-request CSV, as the GE wrote it."""
    parquet: Path
    """Its Parquet cache, which every read here uses."""

    @property
    def num_rows(self) -> int:
        """Its rows, every phase's (from the Parquet metadata, nothing read)."""
        return int(pq.read_metadata(self.parquet).num_rows)

    def batches(self, columns: list[str] | None = None, batch_size: int = ROW_GROUP) -> Iterator[pa.RecordBatch]:
        """The rows in order, ``batch_size`` at a time (bounded memory: without
        ``pre_buffer``, whose read cache keeps every row group read until the
        file is closed: 2 GB of Arrow memory by the end of a 100M-row file)."""
        with pq.ParquetFile(self.parquet, pre_buffer=False) as pf:
            yield from pf.iter_batches(batch_size=batch_size, columns=columns)

    def dataset(self) -> pads.Dataset:
        """A pyarrow dataset: filter, project and aggregate out of core."""
        return pads.dataset(self.parquet, format="parquet")

    def table(self, columns: list[str] | None = None, filter: pc.Expression | None = None) -> pa.Table:
        """The rows matching ``filter`` (e.g. ``pc.field("device_id") == 3``), in memory."""
        return self.dataset().to_table(columns=columns, filter=filter)

    def to_pandas(self, columns: list[str] | None = None) -> pd.DataFrame:
        """All its rows (or ``columns``) as one DataFrame, in memory: for outputs that fit."""
        df: pd.DataFrame = pq.read_table(self.parquet, columns=columns).to_pandas()
        return df


def ge_data(files: RunFiles) -> list[GeData]:
    """Every workload GE's output, converted to Parquet where needed."""
    return [GeData(_ge_index(p), p, ge_parquet(p, files.root)) for p in files.ge_csvs]


def _intended_span(g: GeData) -> tuple[float, float] | None:
    """min and max intended_us of one GE output (row-group statistics, else a scan)."""
    md = pq.read_metadata(g.parquet)
    if md.num_rows == 0:
        return None
    col = md.schema.names.index("intended_us")
    lo, hi = math.inf, -math.inf
    for i in range(md.num_row_groups):
        st = md.row_group(i).column(col).statistics
        if st is None or not st.has_min_max:
            break
        lo, hi = min(lo, float(st.min)), max(hi, float(st.max))
    else:
        return (lo, hi) if lo <= hi else None
    for b in g.batches(["intended_us"]):
        x = b.column(0)
        if len(x) - x.null_count:
            mm = pc.min_max(x)
            lo, hi = min(lo, mm["min"].as_py()), max(hi, mm["max"].as_py())
    return (lo, hi) if lo <= hi else None


def read_phases(files: RunFiles, ges: Sequence[GeData]) -> Phases:
    """phases.json, or (GE files alone) the span of the intended send times."""
    if files.phases is None:
        spans = [s for s in map(_intended_span, ges) if s is not None]
        if not spans:  # nothing was sent: an empty phase, which the checks then report
            return Phases(measure=(0.0, 0.0), inferred=True)
        return Phases(measure=(min(s[0] for s in spans), max(s[1] for s in spans) + 1.0), inferred=True)
    doc = read_json(files.phases)

    def window(key: str, required: bool = False) -> tuple[float, float] | None:
        v = doc.get(key) if isinstance(doc, dict) else None
        if v is None and not required:
            return None
        if (not isinstance(v, list) or len(v) != 2
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
                or v[1] < v[0]):
            raise UserError("expected [start_us, end_us] with start <= end", files.phases, None, key)
        return float(v[0]), float(v[1])

    measure = window("measure", required=True)
    assert measure is not None
    _within_outputs(measure, ges, files.phases)
    t0 = doc.get("t0_epoch_us")
    return Phases(measure=measure, calibration=window("calibration"), warmup=window("warmup"),
                  cooldown=window("cooldown"), t0_epoch_us=int(t0) if isinstance(t0, (int, float)) else None)


def _within_outputs(measure: tuple[float, float], ges: Sequence[GeData], path: Path) -> None:
    """The measurement window against the GE outputs' intended sends: a
    window reaching further than the sends' own span on either side is not
    this run's (the analysis's per-bin state grows with the window)."""
    spans = [s for s in map(_intended_span, ges) if s is not None]
    if not spans:
        return
    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    slack = max(hi - lo, 1e6)
    if measure[0] < lo - slack or measure[1] > hi + slack:
        raise UserError(f"[{measure[0]:.0f}, {measure[1]:.0f}] reaches far beyond the GE outputs' intended sends "
                        f"[{lo:.0f}, {hi:.0f}] us: not this run's phases", path, None, "measure")


def _is_str(v: object) -> bool:
    return isinstance(v, str)


def _is_str_or_none(v: object) -> bool:
    return v is None or isinstance(v, str)


def _is_strs_or_none(v: object) -> bool:
    return v is None or (isinstance(v, list) and all(isinstance(x, str) for x in v))


#: The keys of summary.json that read_summary takes, and what each must hold when present.
_SUMMARY_KEYS: tuple[tuple[str, Callable[[object], bool], str], ...] = (
    ("run_id", _is_str, "a string"), ("verdict", _is_str_or_none, "a string"),
    ("reasons", _is_strs_or_none, "a list of strings"))


def read_summary(path: Path) -> RunSummary:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise UserError("expected a JSON object", path)
    for key, ok, what in _SUMMARY_KEYS:
        if key in doc and not ok(doc[key]):
            raise UserError(f"expected {what}", path, None, key)
    return RunSummary(run_id=str(doc.get("run_id", path.parent.name)), complete=bool(doc.get("complete", False)),
                      verdict=doc.get("verdict"), reasons=tuple(doc.get("reasons", ()) or ()), data=doc)


def read_monitor(path: Path | None) -> pd.DataFrame | None:
    if path is None:
        return None
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return None
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read monitor data: {exc}", path) from None
    if "t_us" not in df.columns:
        raise UserError("missing column", path, 1, "t_us")
    return df if len(df) else None


@dataclass
class RunHost:
    """One host of a run across a swarm: its CD-GE requests (on t0), host
    monitor samples and the GE node's probe of it (intended_us relative to
    the probe's own start); None when missing."""

    hostname: str
    """The swarm node's hostname."""
    cd: pd.DataFrame | None
    """That host's CD-GE requests (GE output columns, on t0)."""
    monitor: pd.DataFrame | None
    """That host's monitor samples (as ``Run.monitor``)."""
    probe: pd.DataFrame | None
    """The GE node's probe of that host (intended_us relative to the probe's start)."""


@dataclass
class Run:
    """A finished run for notebooks: its GE outputs (lazy), the small frames
    and the summary, as :func:`load_run` returns it. ::

        import wotbench
        run = wotbench.load_run("results/<run-id>")
        print(run.summary.verdict, run.summary.reasons)     # "valid" / "invalid", and why
        ok = run.requests[run.requests.status == "ok"]      # the measurement phase's answered requests
        print(ok.response_us.quantile([.5, .99]))          # the report's p50 / p99 (exact mode)

    Attributes: ``path``, ``ges``, ``cd``, ``monitor``, ``containers``,
    ``phases``, ``summary``, ``manifest``, ``observed``, ``hosts``; the
    per-request rows: ``requests`` (the measurement phase's: what the
    report computes on), ``all_requests`` (every row), ``num_requests``.
    The columns are those of docs/formats.md (GE output); the folder's
    files, docs/run-layout.md.

    ``requests`` holds the requests intended inside the measurement phase
    (``phases.measure``), so its quantiles are the report's; the warm-up,
    the cool-down and the drain after it are in ``all_requests`` only.
    ``measure`` is the same as ``requests`` (its name before 0.1.0's
    report rework, kept for notebooks that use it).

    ``ges`` gives each GE's per-request output lazily (:class:`GeData`:
    ``batches()``, ``dataset()``, ``table(filter=...)``): nothing of it is
    read by :func:`load_run`, so a run of any size loads in bounded memory.
    ``requests`` and ``all_requests`` are the convenient path for runs that
    fit: every GE's rows as one DataFrame (the GE columns of docs/formats.md
    plus ``ge``, the GE index; strings categoricals, missing times NaN),
    built on first use and refused (UserError) beyond ``MAX_FRAME_ROWS`` rows.
    """

    path: Path
    """The run folder (or the folder of GE output files) that was loaded."""
    ges: tuple[GeData, ...]
    """Each workload GE's per-request output, lazily (nothing read yet); in GE order."""
    cd: pd.DataFrame | None
    """The CD-GE's requests (the contention detector's probe of the CD node;
    GE output columns, calibration rows at negative ``intended_us``); None without a CD."""
    monitor: pd.DataFrame | None
    """The host monitor's samples (collectl: ``t_us``, ``cpu<N>_idle``, memory, ...); None when missing."""
    containers: pd.DataFrame | None
    """The cgroup sampler's rows (monitor/containers.csv: ``t_us``, ``container``,
    ``role``, ``cpu_usage_us``, ``mem_bytes``); None when missing."""
    phases: Phases
    """The phase windows (us from t0): calibration, warm-up, measure, cool-down (phases.json)."""
    summary: RunSummary | None
    """summary.json in brief (verdict, reasons; ``.data`` all of it); None before the run finished."""
    manifest: dict[str, Any] | None
    """manifest.json: what ran (spec, versions, placement, start-up times); None when missing."""
    observed: dict[str, Any] | None = None
    """observed.json: what the harness saw (container states, GE exits, ...)."""
    hosts: dict[str, RunHost] = field(default_factory=dict)
    """Per hostname, in a run across a swarm (then ``cd`` and ``monitor`` are
    None: every host has its own); empty on one host."""

    @property
    def num_requests(self) -> int:
        """Rows of all GE outputs (from the Parquet metadata, nothing read)."""
        return sum(g.num_rows for g in self.ges)

    @cached_property
    def all_requests(self) -> pd.DataFrame:
        """Every GE's rows in one DataFrame, of **every** phase (warm-up,
        cool-down and the drain included): the GE output columns of
        docs/formats.md plus ``ge``. For runs of at most MAX_FRAME_ROWS rows
        (else a UserError: read ``ges[k]`` instead)."""
        n = self.num_requests
        if n > MAX_FRAME_ROWS:
            raise UserError(f"{n:,} requests are more than a DataFrame here takes ({MAX_FRAME_ROWS:,}): "
                            "read run.ges[k].batches(), .dataset() or .table(filter=...) instead", self.path)
        frames = []
        for g in self.ges:
            df = g.to_pandas()
            df.insert(0, "ge", g.ge)
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    @cached_property
    def requests(self) -> pd.DataFrame:
        """The rows of :attr:`all_requests` intended inside the measurement
        phase (``phases.measure``): what the report computes on. Its latency
        quantiles are those of the ``status == "ok"`` rows' ``response_us``."""
        a, b = self.phases.measure
        r = self.all_requests
        return r[(r["intended_us"] >= a) & (r["intended_us"] < b)]

    @property
    def measure(self) -> pd.DataFrame:
        """The same rows as :attr:`requests` (the measurement phase's; this
        name is kept for notebooks written before ``requests`` meant it)."""
        return self.requests


#: The most rows ``Run.all_requests`` (and so ``Run.requests``) puts in one DataFrame (about 2 GB of it).
MAX_FRAME_ROWS = 20_000_000


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load a run directory (or a folder of ge-*.csv files): the GE outputs
    as lazy handles (``Run.ges``; for small runs ``Run.requests``
    materializes the measurement phase's rows, ``Run.all_requests`` every row), the CD-GE,
    monitor and records as DataFrames and dicts. Converts each GE CSV to
    its Parquet cache once (in bounded memory). See :class:`Run`."""
    files = find_files(Path(path))
    ges = tuple(ge_data(files))
    cd = read_ge_table(files.cd_csv).to_pandas() if files.cd_csv else None
    return Run(
        path=files.root, ges=ges, cd=cd, monitor=read_monitor(files.host_monitor),
        containers=read_monitor(files.containers_monitor), phases=read_phases(files, ges),
        summary=read_summary(files.summary) if files.summary else None,
        manifest=read_json(files.manifest) if files.manifest else None,
        observed=read_json(files.observed) if files.observed else None,
        hosts={h.hostname: _run_host(h) for h in files.hosts})


def _run_host(h: HostFiles) -> RunHost:
    return RunHost(h.hostname, cd=read_ge_table(h.cd_csv).to_pandas() if h.cd_csv else None,
                   monitor=read_monitor(h.host_monitor),
                   probe=read_ge_table(h.probe_csv).to_pandas() if h.probe_csv else None)
