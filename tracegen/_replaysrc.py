"""The derived folder a replay reads (tracegen/_replay.py), read and checked:
trace.csv in chunks into compact arrays, resources/dev-<d>.csv through the
bounded reader, service/dev-<d>.csv in chunks.

A derived folder is outside input (a user may edit it): every bad file,
line or cell is one :class:`wotbench.UserError` naming the file, the line
(when known) and the column, never the file's content (a library's error
text may carry the bad value, so it is never shown).

Memory: the trace is read ``_CHUNK`` rows at a time (as text, then
checked); what is kept is per request an int64 time, an int32 device, an
int8 method, an int32 URI code and an int32 payload size (21 bytes), and
the distinct URIs once (``path?query``, split into a path id and a query).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_PATH_BYTES, MAX_PAYLOAD_BYTES, MAX_SERVICE_US, METHODS
from wotbench.base.inputfile import read_text, shown
from wotbench.tracegen._obsrows import OBS, UNOBS

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Source", "read_source", "read_resources", "read_samples", "Resources", "FIELD"]

FIELD = "workload.replay.from"
_CHUNK = 1 << 14
#: A resource file of 65536 resources, each a path of 255 bytes and its cells.
_RESOURCE_FILE_MAX = 48 << 20
_MAX_TIME_US = 1 << 53
_TRACE_COLUMNS = ("device_id", "send_ts_us", "method", "uri")
_URI = re.compile(r"coap://[^/?]*(/[^?]*)(\?.*)?")
_CODE = {m: i for i, m in enumerate(METHODS)} | {"OBS": OBS, "UNOBS": UNOBS}


@dataclass(frozen=True)
class Source:
    """A derived folder read: its trace as arrays (in time order, as the file), its URIs."""

    folder: Path
    devices: int
    t_us: np.ndarray
    """int64, from 0."""
    dev: np.ndarray
    """int32."""
    method: np.ndarray
    """int8: index into METHODS, or OBS / UNOBS."""
    uri: np.ndarray
    """int32: index into ``uri_path`` / ``uri_query``."""
    payload: np.ndarray
    """int32: payload bytes."""
    uri_path: np.ndarray
    """int64, per URI: its path's index into ``paths``."""
    uri_query: list[str]
    """Per URI: its query with the '?' (or empty)."""
    paths: list[str]
    has_payload: bool
    sha256: str


def _bad(path: Path, line: int | None, field: str, what: str) -> UserError:
    return UserError(what, shown(path), line, field)


class _Uris:
    """The distinct URIs of a trace as they come: code -> path id and query."""

    def __init__(self) -> None:
        self.code: dict[str, int] = {}
        self.path_id: dict[str, int] = {}
        self.uri_path: list[int] = []
        self.query: list[str] = []

    def codes(self, trace: Path, col: np.ndarray, lines: np.ndarray) -> np.ndarray:
        import pandas as pd

        local, uniq = pd.factorize(col)
        glob = np.array([self.code.get(text, -1) for text in uniq.tolist()], dtype=np.int32)
        new = np.flatnonzero(glob < 0)
        if new.size:
            first = np.unique(local, return_index=True)[1]      # codes in order of first appearance
            for i in new.tolist():
                glob[i] = self._new(trace, str(uniq[i]), int(lines[first[i]]))
        return glob[local]

    def _new(self, trace: Path, text: str, line: int) -> int:
        m = _URI.fullmatch(text)
        if m is None:
            raise _bad(trace, line, "uri", "not coap://HOST/path[?query]")
        path, query = m.group(1), m.group(2) or ""
        if len(path.encode()) > MAX_PATH_BYTES or len(query[1:].encode()) > MAX_PATH_BYTES:
            raise _bad(trace, line, "uri", f"a path or query longer than {MAX_PATH_BYTES} bytes")
        self.code[text] = len(self.query)
        self.uri_path.append(self.path_id.setdefault(path, len(self.path_id)))
        self.query.append(query)
        return len(self.query) - 1


def _int_ok(text: object, lo: int, hi: int) -> bool:
    try:
        return lo <= int(str(text)) <= hi
    except ValueError:
        return False


def _ints(path: Path, col: object, lines: np.ndarray, field: str, lo: int, hi: int) -> np.ndarray:
    """A column of integers lo..hi (int64); else an error at the first bad line."""
    import pandas as pd

    s = pd.Series(col, dtype=object)
    try:
        v = s.astype(np.int64).to_numpy()
        ok = v.size == 0 or (int(v.min()) >= lo and int(v.max()) <= hi)
    except (ValueError, TypeError, OverflowError):
        ok = False
    if ok:
        return v
    bad = next(i for i, text in enumerate(s.tolist()) if not _int_ok(text, lo, hi))
    raise _bad(path, int(lines[bad]), field, f"not an integer {lo}..{hi}")


def _header(path: Path) -> tuple[str, ...]:
    """The names of a CSV file's first line (at most 4 KiB read)."""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(4096)
    except OSError as err:
        raise _bad(path, None, "file", f"cannot read ({err.strerror or type(err).__name__})") from None
    return tuple(c.strip() for c in first.decode("utf-8", "replace").rstrip("\r\n").split(","))


def _chunks(path: Path, names: tuple[str, ...], optional: tuple[str, ...] = ()
            ) -> Iterator[tuple[pd.DataFrame, np.ndarray]]:
    """(DataFrame of text cells, their line numbers) of ``_CHUNK`` rows at a time; blank and ``#`` lines
    dropped; a header that is not ``names`` (+ ``optional``) or a line of other fields is an error."""
    import pandas as pd

    if not path.is_file():
        raise _bad(path, None, "file", "missing or not a regular file")
    head = _header(path)
    if head[:len(names)] != names or not set(head[len(names):]) <= set(optional):
        raise _bad(path, 1, "header", f"not {','.join(names)}" + "".join(f"[,{c}]" for c in optional))
    try:
        reader = pd.read_csv(path, dtype=str, keep_default_na=False, na_filter=False, skipinitialspace=True,
                             skip_blank_lines=False, quoting=csv.QUOTE_NONE, index_col=False,
                             chunksize=_CHUNK, encoding="utf-8")
        with reader:
            for df in reader:
                lines = df.index.to_numpy(np.int64) + 2
                first = df[names[0]]
                keep = (first != "") & ~first.str.startswith("#")
                if not keep.all():
                    df, lines = df[keep.to_numpy()], lines[keep.to_numpy()]
                yield df, lines
    except pd.errors.ParserError as err:
        m = re.search(r"line (\d+)", str(err))
        raise _bad(path, int(m.group(1)) if m else None, "line", "not a CSV line of the header's fields") from None
    except pd.errors.EmptyDataError:
        raise _bad(path, 1, "header", "empty file") from None
    except UnicodeDecodeError:
        raise _bad(path, None, "file", "not UTF-8 text") from None
    except OSError as err:
        raise _bad(path, None, "file", f"cannot read ({err.strerror or type(err).__name__})") from None


def read_source(folder: Path, devices: int, sha: str) -> Source:
    """trace.csv of a derived folder of ``devices`` captured devices."""
    trace = folder / "trace.csv"
    uris = _Uris()
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("t", "dev", "method", "uri", "payload")}
    has_payload, last_t = False, 0
    for df, lines in _chunks(trace, _TRACE_COLUMNS, ("payload",)):
        has_payload = "payload" in df.columns
        dev = _ints(trace, df["device_id"], lines, "device_id", 0, devices - 1)
        t = _ints(trace, df["send_ts_us"], lines, "send_ts_us", 0, _MAX_TIME_US)
        back = np.flatnonzero(np.diff(np.concatenate(([last_t], t))) < 0)
        if back.size:
            raise _bad(trace, int(lines[back[0]]), "send_ts_us", "earlier than the line before (not in time order)")
        method = df["method"].map(_CODE)
        if method.isna().any():
            raise _bad(trace, int(lines[int(np.argmax(method.isna().to_numpy()))]), "method",
                       "not GET, PUT, POST, DELETE, OBS or UNOBS")
        pay = df["payload"].str.len().to_numpy(np.int64) if has_payload else np.zeros(dev.size, np.int64)
        if pay.size and int(pay.max()) > MAX_PAYLOAD_BYTES:
            raise _bad(trace, int(lines[int(np.argmax(pay))]), "payload", f"more than {MAX_PAYLOAD_BYTES} bytes")
        parts["t"].append(t)
        parts["dev"].append(dev.astype(np.int32))
        parts["method"].append(method.to_numpy(np.int8))
        parts["uri"].append(uris.codes(trace, df["uri"].to_numpy(), lines))
        parts["payload"].append(pay.astype(np.int32))
        last_t = int(t[-1]) if t.size else last_t
    if not parts["t"] or not sum(a.size for a in parts["t"]):
        raise _bad(trace, None, "file", "no requests")
    col = {k: np.concatenate(parts.pop(k)) for k in list(parts)}      # one column's chunks freed at a time
    col["t"] -= col["t"][0]
    return Source(folder=folder, devices=devices, t_us=col["t"], dev=col["dev"], method=col["method"],
                  uri=col["uri"], payload=col["payload"], uri_path=np.asarray(uris.uri_path, np.int64),
                  uri_query=uris.query, paths=list(uris.path_id), has_payload=has_payload, sha256=sha)


@dataclass(frozen=True)
class Resources:
    """A resource file read: its header, its rows (cells as text) and each row's service time."""

    header: list[str]
    rows: list[list[str]]
    service_us: list[int]


def read_resources(folder: Path, d: int) -> Resources:
    """resources/dev-<d>.csv (docs/formats.md "Resource CSV"): a header with path and service_us,
    each path starting with '/' (at most 255 bytes, once), each service_us an integer 0..10^9."""
    f = folder / "resources" / f"dev-{d}.csv"
    if not f.is_file():
        raise _bad(f, None, "file", "missing or not a regular file")
    text = read_text(f, _RESOURCE_FILE_MAX, FIELD, what="a resource file")
    rows = list(csv.reader(io.StringIO(text, newline=""), quoting=csv.QUOTE_NONE))
    if not rows or rows[0][:2] != ["path", "service_us"]:
        raise _bad(f, 1, "header", "not path,service_us[,...]")
    head, out, svc, seen = rows[0], [], [], set()
    for line, r in enumerate(rows[1:], start=2):
        if not r:
            continue
        if len(r) > len(head):
            raise _bad(f, line, "line", f"more than the header's {len(head)} fields")
        p = r[0]
        if not p.startswith("/") or len(p.encode()) > MAX_PATH_BYTES or p in seen:
            raise _bad(f, line, "path", f"not a path starting with '/', at most {MAX_PATH_BYTES} bytes, once")
        svc.append(int(_ints(f, [r[1] if len(r) > 1 else ""], np.array([line]), "service_us", 0,
                             MAX_SERVICE_US)[0]))
        seen.add(p)
        out.append(r + [""] * (len(head) - len(r)))
    return Resources(head, out, svc)


def read_samples(folder: Path, d: int) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """service/dev-<d>.csv (path,service_us: one sample a line): the paths, each sample's path
    index and its service time (us); None when there is no such file."""
    import pandas as pd

    f = folder / "service" / f"dev-{d}.csv"
    if not f.exists():
        return None
    names: dict[str, int] = {}
    ids, values = [], []
    for df, lines in _chunks(f, ("path", "service_us")):
        values.append(_ints(f, df["service_us"], lines, "service_us", 0, MAX_SERVICE_US))
        local, uniq = pd.factorize(df["path"])
        glob = np.array([names.setdefault(str(p), len(names)) for p in uniq.tolist()], dtype=np.int64)
        ids.append(glob[local])
    if not ids:
        return list(names), np.zeros(0, np.int64), np.zeros(0, np.int64)
    return list(names), np.concatenate(ids), np.concatenate(values)
