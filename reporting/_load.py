"""Reading a run directory (docs/run-layout.md) or a folder of GE output
files alone.

GE per-request CSVs can hold tens of millions of rows, so they are read
with pyarrow.csv (multi-threaded, typed, strings dictionary-encoded) and
converted once to Parquet beside the CSV (``ge-0.csv`` -> ``ge-0.parquet``).
The Parquet file records the CSV's size and modification time and is
rebuilt when they change; when the folder is read-only the table is simply
kept in memory.
"""

from __future__ import annotations

import json
import os
import tempfile
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from wotbench import layout
from wotbench._errors import UserError
from wotbench.formats import GE_OUTPUT_COLUMNS
from wotbench.layout import HostDir, RunDir

__all__ = ["Phases", "RunSummary", "Run", "RunHost", "RunFiles", "HostFiles", "find_files", "read_ge_table",
           "load_run", "read_phases", "read_json"]

_DICT = pa.dictionary(pa.int32(), pa.string())
# Times as float64: the GE writes whole microseconds, but fractional ones
# (older GE builds, other tools) read just as well, and the analysis works
# in float64 (NaN for "no response") anyway.
_US = pa.float64()
GE_SCHEMA: dict[str, pa.DataType] = {
    "device_id": pa.int32(), "method": _DICT, "uri": _DICT, "intended_us": _US,
    "sent_us": _US, "recv_us": _US, "response_us": _US,
    "latency_intended_us": _US, "send_lag_us": _US, "status": _DICT,
    "code": _DICT, "retransmissions": pa.int32(), "service_us": _US,
}
assert tuple(GE_SCHEMA) == GE_OUTPUT_COLUMNS, "GE_SCHEMA drifted from docs/formats.md"
_CACHE_KEY = b"wotbench.source"


@dataclass(frozen=True)
class Phases:
    """Phase windows ``[a, b)`` in us relative to t0 (phases.json)."""

    measure: tuple[float, float]
    calibration: tuple[float, float] | None = None
    warmup: tuple[float, float] | None = None
    cooldown: tuple[float, float] | None = None
    t0_epoch_us: int | None = None
    inferred: bool = False
    """True when there was no phases.json and the measurement phase is the whole trace."""

    @property
    def measure_us(self) -> float:
        return self.measure[1] - self.measure[0]

    def to_dict(self) -> dict[str, Any]:
        return {"t0_epoch_us": self.t0_epoch_us, "inferred": self.inferred,
                **{k: list(v) if v is not None else None for k, v in
                   (("calibration", self.calibration), ("warmup", self.warmup),
                    ("measure", self.measure), ("cooldown", self.cooldown))}}


@dataclass(frozen=True)
class RunSummary:
    """The run's summary.json in brief (``data`` keeps all of it)."""

    run_id: str
    complete: bool
    verdict: str | None
    reasons: tuple[str, ...]
    data: dict[str, Any] = field(repr=False, default_factory=dict)


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
        hosts=hosts)


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise UserError(f"cannot read: {exc.strerror}", path) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"invalid JSON: {exc.msg}", path, exc.lineno) from None


def _source_stamp(csv: Path) -> bytes:
    st = csv.stat()
    return json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}).encode()


def _read_csv(csv: Path) -> pa.Table:
    try:
        table = pacsv.read_csv(
            csv,
            read_options=pacsv.ReadOptions(block_size=16 << 20),
            convert_options=pacsv.ConvertOptions(column_types=GE_SCHEMA, include_columns=list(GE_SCHEMA),
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except pa.ArrowInvalid as exc:
        # Arrow's message names the row ("CSV parse error: ... row 12") when it can.
        raise UserError(f"bad GE output: {str(exc).splitlines()[0]}", csv) from None
    except pa.ArrowKeyError as exc:       # a column of GE_SCHEMA is not in the header
        raise UserError(f"missing columns: {str(exc).splitlines()[0]}", csv, 1) from None
    except OSError as exc:
        raise UserError(f"cannot read GE output: {exc}", csv) from None
    bad = set(GE_OUTPUT_COLUMNS) - set(table.column_names)
    if bad:
        raise UserError(f"missing columns {sorted(bad)}", csv, 1)
    return table


#: The columns the analysis reads (the Parquet cache keeps them all for load_run).
ANALYSIS_COLUMNS = ["device_id", "intended_us", "sent_us", "response_us", "latency_intended_us",
                    "send_lag_us", "status", "code", "service_us"]


def _write_cache(table: pa.Table, cache: Path) -> None:
    """Parquet beside the CSV, atomically; lz4 and dictionaries only for the
    string columns: about twice as fast to write as the defaults, and
    reading a few columns back takes about a second for 10 million rows."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=cache.parent)
        os.close(fd)
        try:
            pq.write_table(table, tmp, compression="lz4", write_statistics=False,
                           use_dictionary=["method", "uri", "status", "code"])
            os.replace(tmp, cache)
        except BaseException:
            os.unlink(tmp)
            raise
    except (OSError, pa.ArrowException):
        pass  # a cache that cannot be written (read-only run directory): work from memory


def read_ge_table(csv: Path, columns: list[str] | None = None, pool: Executor | None = None) -> pa.Table:
    """One GE per-request file as an Arrow table (via the Parquet cache).

    ``columns`` selects columns (default all). With ``pool``, a new cache
    file is written in the background while the caller goes on; the
    caller waits for the pool before it finishes.
    """
    csv = Path(csv)
    cache = csv.with_suffix(".parquet")
    stamp = _source_stamp(csv)
    if cache.is_file():
        try:
            meta = pq.read_schema(cache).metadata or {}
            if meta.get(_CACHE_KEY) == stamp:
                return pq.read_table(cache, columns=columns)
        except (pa.ArrowInvalid, OSError):
            pass  # a damaged cache is rebuilt below
    table = _read_csv(csv).replace_schema_metadata({_CACHE_KEY: stamp})
    if pool is not None:
        pool.submit(_write_cache, table, cache)
    else:
        _write_cache(table, cache)
    return table.select(columns) if columns is not None else table


def read_phases(files: RunFiles, tables: list[pa.Table]) -> Phases:
    """phases.json, or (GE files alone) the span of the intended send times."""
    if files.phases is None:
        full = [t.column("intended_us") for t in tables if t.num_rows]
        if not full:  # nothing was sent: an empty phase, which the checks then report
            return Phases(measure=(0.0, 0.0), inferred=True)
        lo = min(float(np.min(c)) for c in full)
        hi = max(float(np.max(c)) for c in full)
        return Phases(measure=(lo, hi + 1.0), inferred=True)
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
    t0 = doc.get("t0_epoch_us")
    return Phases(measure=measure, calibration=window("calibration"), warmup=window("warmup"),
                  cooldown=window("cooldown"), t0_epoch_us=int(t0) if isinstance(t0, (int, float)) else None)


def read_summary(path: Path) -> RunSummary:
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise UserError("expected a JSON object", path)
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
    cd: pd.DataFrame | None
    monitor: pd.DataFrame | None
    probe: pd.DataFrame | None


@dataclass
class Run:
    """A run for notebooks: DataFrames and the summary.

    ``requests`` has the GE columns of docs/formats.md plus ``ge`` (the GE
    index); strings are categoricals, missing times are NaN/<NA>.
    """

    path: Path
    requests: pd.DataFrame
    cd: pd.DataFrame | None
    monitor: pd.DataFrame | None
    containers: pd.DataFrame | None
    phases: Phases
    summary: RunSummary | None
    manifest: dict[str, Any] | None
    observed: dict[str, Any] | None = None
    """observed.json: what the harness saw (container states, GE exits, ...)."""
    hosts: dict[str, RunHost] = field(default_factory=dict)
    """Per hostname, in a run across a swarm (then ``cd`` and ``monitor`` are
    None: every host has its own); empty on one host."""

    @property
    def measure(self) -> pd.DataFrame:
        """Requests intended inside the measurement phase."""
        a, b = self.phases.measure
        r = self.requests
        return r[(r["intended_us"] >= a) & (r["intended_us"] < b)]


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load a run directory (or a folder of ge-*.csv files) for analysis in pandas."""
    files = find_files(Path(path))
    tables = [read_ge_table(p) for p in files.ge_csvs]
    frames = []
    for p, t in zip(files.ge_csvs, tables):
        df = t.to_pandas()
        df.insert(0, "ge", _ge_index(p))
        frames.append(df)
    requests = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    cd = read_ge_table(files.cd_csv).to_pandas() if files.cd_csv else None
    return Run(
        path=files.root, requests=requests, cd=cd, monitor=read_monitor(files.host_monitor),
        containers=read_monitor(files.containers_monitor), phases=read_phases(files, tables),
        summary=read_summary(files.summary) if files.summary else None,
        manifest=read_json(files.manifest) if files.manifest else None,
        observed=read_json(files.observed) if files.observed else None,
        hosts={h.hostname: _run_host(h) for h in files.hosts})


def _run_host(h: HostFiles) -> RunHost:
    return RunHost(h.hostname, cd=read_ge_table(h.cd_csv).to_pandas() if h.cd_csv else None,
                   monitor=read_monitor(h.host_monitor),
                   probe=read_ge_table(h.probe_csv).to_pandas() if h.probe_csv else None)
