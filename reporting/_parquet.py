"""The Parquet cache of a GE per-request CSV (docs/formats.md): converted
once, streaming, in bounded memory, beside the CSV (``ge-0.csv`` ->
``ge-0.parquet``) or in the temp dir when that folder is read-only; rebuilt
when the CSV's size or mtime changes."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.formats import GE_OUTPUT_COLUMNS

__all__ = ["GE_SCHEMA", "ROW_GROUP", "CSV_BLOCK", "ge_parquet"]

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


def _source_stamp(csv: Path) -> bytes:
    st = csv.stat()
    return json.dumps({"size": st.st_size, "mtime_ns": st.st_mtime_ns}).encode()


#: Rows per Parquet row group, and per batch the analysis reads: about
#: 100 MB of columns, so that memory does not grow with the run.
ROW_GROUP = 1 << 20
#: Bytes of CSV parsed at a time by the streaming conversion.
CSV_BLOCK = 16 << 20


class _CannotWrite(Exception):
    """The cache cannot be written there (read-only folder, disk full)."""


def _csv_reader(csv: Path) -> pacsv.CSVStreamingReader:
    try:
        reader = pacsv.open_csv(
            csv,
            read_options=pacsv.ReadOptions(block_size=CSV_BLOCK),
            convert_options=pacsv.ConvertOptions(column_types=GE_SCHEMA, include_columns=list(GE_SCHEMA),
                                                 strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except pa.ArrowKeyError as exc:       # a column of GE_SCHEMA is not in the header
        raise UserError(f"missing columns: {str(exc).splitlines()[0]}", csv, 1) from None
    except pa.ArrowInvalid as exc:
        raise UserError(f"bad GE output: {str(exc).splitlines()[0]}", csv) from None
    except OSError as exc:
        raise UserError(f"cannot read GE output: {exc}", csv) from None
    bad = set(GE_OUTPUT_COLUMNS) - set(reader.schema.names)
    if bad:
        raise UserError(f"missing columns {sorted(bad)}", csv, 1)
    return reader


def _convert(csv: Path, cache: Path, stamp: bytes) -> None:
    """CSV -> Parquet in blocks of CSV_BLOCK bytes, one row group per
    ROW_GROUP rows, into a temporary file renamed into place: memory stays
    bounded, and a bad row leaves no half-written cache. lz4, with
    dictionaries only for the string columns (about twice as fast to write
    as the defaults), and min/max statistics of intended_us (the span of a
    folder of GE files alone)."""
    reader = _csv_reader(csv)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=cache.parent)
        os.close(fd)
    except OSError as exc:
        raise _CannotWrite(str(exc)) from None
    schema = reader.schema.with_metadata({_CACHE_KEY: stamp})
    try:
        try:
            writer = pq.ParquetWriter(tmp, schema, compression="lz4", write_statistics=["intended_us"],
                                      use_dictionary=["method", "uri", "status", "code"])
        except (OSError, pa.ArrowException) as exc:
            raise _CannotWrite(str(exc)) from None
        with writer:
            buf: list[pa.RecordBatch] = []
            rows = 0
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                except pa.ArrowInvalid as exc:   # Arrow's message names the row when it can
                    raise UserError(f"bad GE output: {str(exc).splitlines()[0]}", csv) from None
                except OSError as exc:
                    raise UserError(f"cannot read GE output: {exc}", csv) from None
                buf.append(batch)
                rows += batch.num_rows
                if rows >= ROW_GROUP:
                    _write_group(writer, buf, rows)
                    buf, rows = [], 0
            if rows:
                _write_group(writer, buf, rows)
        os.replace(tmp, cache)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _write_group(writer: pq.ParquetWriter, batches: list[pa.RecordBatch], rows: int) -> None:
    """One row group; the batches' dictionaries unified so that the string
    columns stay dictionary-encoded in the file."""
    table = pa.Table.from_batches(batches)
    try:
        writer.write_table(table.unify_dictionaries(), row_group_size=rows)
    except (OSError, pa.ArrowException) as exc:
        raise _CannotWrite(str(exc)) from None


def _fallback_cache(csv: Path) -> Path:
    """Where the cache of a CSV in a read-only folder goes."""
    key = hashlib.sha1(str(csv.resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / "wotbench-parquet" / f"{csv.stem}-{key}.parquet"


def _own_folder(folder: Path) -> None:
    """``folder`` (in the shared temp dir) made if missing, and refused
    (_CannotWrite) unless it is a real folder of this user that no one
    else may write: another user's symlink or folder there would take the
    cache, or give it."""
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        st = os.lstat(folder)
    except OSError as exc:
        raise _CannotWrite(str(exc)) from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise _CannotWrite(f"{folder} is not a private folder of this user")


def _beside(csv: Path, root: Path | None) -> Path | None:
    """The cache beside the CSV, when the way down to it from ``root`` (the
    run folder; the folder above the CSV's when None) has no symlink: a cache is
    never written through one out of the run folder."""
    cache = csv.with_suffix(".parquet")
    base = Path(root) if root is not None else csv.parent.parent   # without a root: its folder no symlink
    try:
        rel = cache.relative_to(base)
        outpath.inside(base, rel, field="cache")
    except (ValueError, UserError):
        return None
    return cache


def _cache_ok(cache: Path, stamp: bytes) -> bool:
    try:
        return cache.is_file() and (pq.read_schema(cache).metadata or {}).get(_CACHE_KEY) == stamp
    except (pa.ArrowInvalid, OSError):
        return False   # a damaged cache is rebuilt


def ge_parquet(csv: Path, root: Path | None = None) -> Path:
    """The Parquet cache of one GE per-request CSV: beside it
    (``ge-0.csv`` -> ``ge-0.parquet``) when no symlink below ``root`` (the
    run folder) leads there, else (or when that folder is read-only) in a
    private folder of the temp dir; converted in bounded memory when
    missing or stale (the CSV's size or mtime changed)."""
    csv = Path(csv)
    try:
        stamp = _source_stamp(csv)
    except OSError as exc:
        raise UserError(f"cannot read GE output: {exc.strerror}", csv) from None
    fallback = _fallback_cache(csv)
    places = tuple(p for p in (_beside(csv, root), fallback) if p is not None)
    for cache in places:
        if _cache_ok(cache, stamp):
            return cache
    why = ""
    for cache in places:
        try:
            if cache == fallback:
                _own_folder(cache.parent)
            _convert(csv, cache, stamp)
            return cache
        except _CannotWrite as exc:
            why = str(exc)
    raise UserError(f"cannot write its Parquet cache beside it or in {fallback.parent}: {why}", csv)
