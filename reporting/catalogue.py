"""The results catalogue (docs/run-layout.md, "The catalogue"): one SQLite
file beside the run folders, ``<results>/catalogue.sqlite``, one row per
run folder: its run id, spec, label, scale, start, host, git commit,
gateway under test, verdict and reasons, the headline metrics of its
summary.json and its whole manifest.

The runner adds a run when it ends (:func:`add`), ``wotbench runs
--rebuild`` makes the catalogue anew from the folders (:func:`rebuild`),
``wotbench runs`` reads it (:func:`select`). Every write is one
transaction under SQLite's write lock (rollback journal, ``BEGIN
IMMEDIATE``, a busy timeout): writers on one host wait for each other and
a reader sees the catalogue before or after a write, never a part of one.
``<results>/index.html`` (wotbench.reporting._runindex) is written after
every write, under the same lock.

The catalogue is derived data: the folders are the truth, and it can be
rebuilt from them at any time. Nothing here changes a run folder; the
catalogue (marked by its SQLite ``application_id``) and the index (by its
generator tag) are the only files written, and a file of that name the
tool did not make is refused, never replaced.
"""

from __future__ import annotations

import calendar
import contextlib
import dataclasses
import datetime as _dt
import json
import math
import re
import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir

__all__ = ["CATALOGUE", "INDEX", "VERDICTS", "INCOMPLETE", "SCHEMA", "Entry", "Filters", "Rebuilt", "entry",
           "headline", "run_folders", "add", "rebuild", "select", "refresh_index", "text_table", "as_json"]

#: The catalogue's file name in the results folder.
CATALOGUE = "catalogue.sqlite"
#: The HTML index's file name in the results folder.
INDEX = "index.html"
#: SQLite's application_id of a wotbench catalogue ("WBCT"): a database without it is not ours.
APPLICATION_ID = 0x57424354
#: The schema's version (SQLite's user_version); another one is rebuilt, never read.
SCHEMA = 1
#: How long a writer waits for another's transaction (a rebuild of thousands of runs takes seconds).
BUSY_S = 60.0
#: The verdict of a run folder without summary.json (running, interrupted, failed).
INCOMPLETE = "incomplete"
VERDICTS = ("valid", "invalid", INCOMPLETE)

_RUN_ID = re.compile(r"(\d{8}-\d{6})-(.+)-[0-9a-f]{6}")
_COMMIT = re.compile(r"[0-9a-fA-F]{4,40}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True)
class Entry:
    """One run folder's row. The metrics are those of the measurement
    phase (:func:`headline`); None where the run has no value."""

    folder: str
    """The run folder's name in the results folder (the key)."""
    run_id: str
    spec: str | None
    label: str | None
    scale: str | None
    start_epoch_us: int | None
    start_utc: str | None
    host: str | None
    git_commit: str | None
    git_dirty: bool | None
    gateway: str | None
    """The gateway under test's image; None: the GEs sent to the devices directly."""
    verdict: str
    reasons: tuple[str, ...]
    requests: int | None
    ok: int | None
    throughput: float | None
    response_p50_us: float | None
    response_p95_us: float | None
    response_p99_us: float | None
    send_lag_p99_us: float | None
    error_rate: float | None
    rd_median: float | None
    rd_cd_median: float | None
    manifest: dict[str, Any] | None


_FIELDS = tuple(f.name for f in dataclasses.fields(Entry))
_TYPES = {"run_id": "TEXT NOT NULL", "verdict": "TEXT NOT NULL", "start_epoch_us": "INTEGER", "git_dirty": "INTEGER",
          "requests": "INTEGER", "ok": "INTEGER", "reasons": "TEXT NOT NULL"}
_REAL = ("throughput", "response_p50_us", "response_p95_us", "response_p99_us", "send_lag_p99_us", "error_rate",
         "rd_median", "rd_cd_median")
_CREATE = ("CREATE TABLE runs (folder TEXT PRIMARY KEY, "
           + ", ".join(f"{n} {'REAL' if n in _REAL else _TYPES.get(n, 'TEXT')}" for n in _FIELDS[1:])
           + ", catalogued_epoch_us INTEGER NOT NULL)")


# --- one run folder -------------------------------------------------------------

def _num(x: Any) -> float | None:
    """A finite JSON number as a float, else None (a bool is not a number)."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _int(x: Any) -> int | None:
    v = _num(x)
    return int(v) if v is not None else None


def _str(x: Any) -> str | None:
    return x if isinstance(x, str) and x else None


def _dict(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _worst(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def _median(values: Sequence[float]) -> float | None:
    s = sorted(values)
    if not s:
        return None
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def headline(summary: dict[str, Any]) -> dict[str, float | None]:
    """A run's headline metrics from its summary.json, over the measurement
    phase: requests and ok; throughput = ok responses received in the phase
    per second (the ``congestion`` section's ``throughput_ok_per_s``: what
    was delivered, whenever it was due; without it, the phase's answered
    requests per second of the phase, which counts a request answered
    after the phase as well); response
    time p50/p95/p99 of every GE's answered requests pooled (the
    ``congestion`` section's, from the merged samples; without it, the
    worst GE's, which has no p95); send lag p99 of the worst GE
    (percentiles of several GEs are never averaged); error rate = 1 - ok /
    requests; the devices' median R_d (``rd_median``) and the CD node's
    (``rd_cd_median``). A value the summary lacks (a run whose data could
    not be analysed) is None."""
    c = _dict(summary.get("measure_counts"))
    requests, ok = _int(c.get("requests")), _int(c.get("ok"))
    m = _dict(summary.get("phases")).get("measure")
    span = (_num(m[1]) or 0.0) - (_num(m[0]) or 0.0) if isinstance(m, list) and len(m) == 2 else 0.0
    ges = [_dict(g) for g in summary.get("ges") or () if isinstance(g, dict)]
    rd = [v for d in summary.get("devices") or () if (v := _num(_dict(d).get("rd_ratio"))) is not None]
    contention = _dict(_dict(summary.get("cd")).get("contention"))
    cong = _dict(summary.get("congestion"))
    pooled, delivered = _dict(cong.get("response_us")), _num(cong.get("throughput_ok_per_s"))
    return {
        "requests": requests, "ok": ok,
        "throughput": (delivered if delivered is not None
                       else ok / (span / 1e6) if ok is not None and span > 0 else None),
        **{f"response_{q}_us": _num(pooled.get(q)) if pooled else _worst([_num(_dict(g.get("response_us")).get(q))
                                                                           for g in ges])
           for q in ("p50", "p95", "p99")},
        "send_lag_p99_us": _worst([_num(_dict(g.get("send_lag_us")).get("p99")) for g in ges]),
        "error_rate": 1.0 - ok / requests if requests and ok is not None else None,
        "rd_median": _median(rd),
        "rd_cd_median": _num(_dict(contention.get("measure")).get("median")),
    }


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """A JSON record of the folder and None, or None and why it cannot be
    read (None too when it is not there)."""
    if not path.exists():
        return None, None
    from wotbench.reporting._bounded import read_json

    try:
        doc = read_json(path)
    except UserError as err:
        return None, str(err)
    return (doc, None) if isinstance(doc, dict) else (None, f"{path}: expected a JSON object")


def _first_line(path: Path) -> str | None:
    """The first line of a small text file (INCOMPLETE), None when it is
    not there or cannot be read (a FIFO is refused without blocking)."""
    if not path.exists():
        return None
    from wotbench.reporting._bounded import _read_bounded

    try:
        text = _read_bounded(path, 1 << 20).decode(errors="replace")
    except UserError:
        return None
    return next((ln.strip()[:1000] for ln in text.splitlines() if ln.strip()), None)


def _git(manifest: dict[str, Any]) -> tuple[str | None, bool | None]:
    """The commit and dirty state: the manifest's ``disclosure.git`` when it
    has one (docs/run-layout.md), else its top-level git_commit and git_dirty."""
    git = _dict(_dict(manifest.get("disclosure")).get("git"))
    commit = _str(git.get("commit")) or _str(manifest.get("git_commit"))
    for dirty in (git.get("dirty"), manifest.get("git_dirty")):
        if isinstance(dirty, bool):
            return commit, dirty
    return commit, None


def _stamp_us(stamp: str) -> int | None:
    """A run id's ``YYYYmmdd-HHMMSS`` (UTC) as epoch us, None when it is no time."""
    try:
        return calendar.timegm(time.strptime(stamp, "%Y%m%d-%H%M%S")) * 1_000_000
    except ValueError:
        return None


def _utc(epoch_us: int | None) -> str | None:
    if epoch_us is None:
        return None
    return _dt.datetime.fromtimestamp(epoch_us / 1e6, tz=_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def entry(folder: Path) -> Entry:
    """The catalogue row of one run folder, read from its manifest.json and
    summary.json; a folder without summary.json (running, interrupted,
    failed) is ``incomplete``, with the first line of its INCOMPLETE as the
    reason. Reads nothing but those three files."""
    run = RunDir(folder)
    manifest, m_err = _read(run.manifest)
    summary, s_err = _read(run.summary)
    m, s = manifest or {}, summary or {}
    run_id = _str(s.get("run_id")) or _str(m.get("run_id")) or run.name
    ids = _RUN_ID.fullmatch(run_id)
    start = _int(m.get("start_epoch_us"))
    if start is None and ids is not None:
        start = _stamp_us(ids.group(1))
    verdict = _str(s.get("verdict"))
    if summary is None or verdict is None:
        why = s_err or (f"{run.summary.name} has no verdict" if summary is not None else None)
        verdict, reasons = INCOMPLETE, [why or _first_line(run.incomplete) or f"no {run.summary.name}"]
    else:
        reasons = [str(r) for r in s.get("reasons") or () if isinstance(r, str)]
    if m_err:
        reasons.append(m_err)
    commit, dirty = _git(m)
    gateway = _str(_dict(m.get("gateway")).get("image_ref")) or _str(_dict(s.get("gateway")).get("image"))
    h = headline(s)
    return Entry(folder=run.name, run_id=run_id, spec=ids.group(2) if ids else None,
                 label=_str(m.get("label")) or _str(s.get("label")),
                 scale=_str(m.get("scale")) or _str(s.get("scale")), start_epoch_us=start, start_utc=_utc(start),
                 host=_str(m.get("hostname")), git_commit=commit, git_dirty=dirty, gateway=gateway,
                 verdict=verdict.lower(), reasons=tuple(reasons),
                 requests=_int(h["requests"]), ok=_int(h["ok"]), throughput=h["throughput"],
                 response_p50_us=h["response_p50_us"], response_p95_us=h["response_p95_us"],
                 response_p99_us=h["response_p99_us"], send_lag_p99_us=h["send_lag_p99_us"],
                 error_rate=h["error_rate"], rd_median=h["rd_median"], rd_cd_median=h["rd_cd_median"],
                 manifest=manifest)


def run_folders(root: Path) -> list[Path]:
    """The run folders directly in ``root``: folders (not hidden) that hold
    a manifest.json, a summary.json or an INCOMPLETE, by name."""
    out = []
    for p in sorted(root.iterdir()):
        if p.name.startswith(".") or not p.is_dir():
            continue
        run = RunDir(p)
        if run.manifest.exists() or run.summary.exists() or run.incomplete.exists():
            out.append(p)
    return out


# --- the database ------------------------------------------------------------------

def _row(e: Entry) -> tuple[Any, ...]:
    values = [getattr(e, n) for n in _FIELDS]
    values[_FIELDS.index("reasons")] = json.dumps(list(e.reasons))
    values[_FIELDS.index("manifest")] = None if e.manifest is None else json.dumps(e.manifest, sort_keys=True)
    values[_FIELDS.index("git_dirty")] = None if e.git_dirty is None else int(e.git_dirty)
    return (*values, time.time_ns() // 1000)


def _entry(row: Sequence[Any]) -> Entry:
    d = dict(zip(_FIELDS, row, strict=False))
    d["reasons"] = tuple(json.loads(d["reasons"]))
    d["manifest"] = None if d["manifest"] is None else json.loads(d["manifest"])
    d["git_dirty"] = None if d["git_dirty"] is None else bool(d["git_dirty"])
    return Entry(**d)


def _db_error(path: Path, err: sqlite3.Error) -> UserError:
    return UserError(f"the catalogue cannot be used: {err}", path)


def _check_ours(conn: sqlite3.Connection, path: Path, rebuild: bool) -> bool:
    """Whether the open database is an empty new file (True), or a
    catalogue of this schema (False; with ``rebuild`` any schema); else a
    UserError: a database the tool did not make is left as it is."""
    app = conn.execute("PRAGMA application_id").fetchone()[0]
    tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
    if app == 0 and tables == 0:
        return True
    if app != APPLICATION_ID:
        raise UserError("not a wotbench catalogue (another SQLite database): left as it is; move it away", path)
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version != SCHEMA and not rebuild:
        raise UserError(f"a catalogue of schema {version}, this wotbench reads {SCHEMA}: "
                        "`wotbench runs --rebuild` makes it anew from the run folders", path)
    return False


@contextlib.contextmanager
def _writing(root: Path, rebuild: bool = False) -> Iterator[sqlite3.Connection]:
    """The catalogue with its write lock held (``BEGIN IMMEDIATE``: waits up
    to BUSY_S for another writer), made when new (with ``rebuild``: emptied
    and made anew); committed when the block ends, rolled back on an
    exception. A file there that is not a wotbench catalogue is a UserError."""
    path = root / CATALOGUE
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise UserError("is not a regular file: refusing to use it as the catalogue", path)
    try:
        conn = sqlite3.connect(path, timeout=BUSY_S, isolation_level=None)
    except sqlite3.Error as err:
        raise _db_error(path, err) from None
    try:
        conn.execute("BEGIN IMMEDIATE")
        if _check_ours(conn, path, rebuild) or rebuild:
            conn.execute("DROP TABLE IF EXISTS runs")
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA}")
            conn.execute(_CREATE)
        yield conn
        conn.execute("COMMIT")
    except sqlite3.Error as err:
        raise _db_error(path, err) from None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def _insert(conn: sqlite3.Connection, entries: Sequence[Entry]) -> None:
    names = (*_FIELDS, "catalogued_epoch_us")
    conn.executemany(f"INSERT OR REPLACE INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                     [_row(e) for e in entries])


def _all(conn: sqlite3.Connection, where: str = "", params: Sequence[Any] = ()) -> list[Entry]:
    sql = (f"SELECT {', '.join(_FIELDS)} FROM runs {where} "
           "ORDER BY start_epoch_us IS NULL, start_epoch_us, folder")
    return [_entry(r) for r in conn.execute(sql, tuple(params))]


def refresh_index(root: Path) -> Path:
    """Writes ``<root>/index.html`` from the catalogue, under its write lock
    (so that two writers' indexes never cross); returns its path."""
    from wotbench.reporting._runindex import write_index

    with _writing(root) as conn:
        return write_index(root, INDEX, _all(conn))


def add(root: Path, folder: Path) -> Entry:
    """Puts one run folder of ``root`` in the catalogue (or replaces its
    row) in one transaction, then writes the index; returns its row."""
    e = entry(folder)
    with _writing(root) as conn:
        _insert(conn, [e])
    try:
        refresh_index(root)
    except UserError as err:
        raise UserError(f"{e.folder} is in the catalogue, but the index was not written: {err}") from None
    return e


@dataclass(frozen=True)
class Rebuilt:
    catalogue: Path
    index: Path
    runs: int
    incomplete: int


def rebuild(root: Path) -> Rebuilt:
    """Drops the catalogue and makes it anew from every run folder in
    ``root``, in one transaction; then writes the index. The folders are
    read before the lock is taken; under it, the folders that were
    incomplete or new are read again (a run that ended meanwhile)."""
    outpath.resolve(root, "--results")                   # not the root or a system folder
    if not root.is_dir():
        raise UserError("no such folder", root, field="--results")
    rows = {f.name: entry(f) for f in run_folders(root)}
    with _writing(root, rebuild=True) as conn:
        for f in run_folders(root):
            if f.name not in rows or rows[f.name].verdict == INCOMPLETE:
                rows[f.name] = entry(f)
        _insert(conn, list(rows.values()))
    index = refresh_index(root)
    return Rebuilt(root / CATALOGUE, index, len(rows), sum(e.verdict == INCOMPLETE for e in rows.values()))


# --- reading ------------------------------------------------------------------------

def _instant(text: str, field: str, end: bool) -> int:
    """A date (its whole day: the start, or with ``end`` the day after) or
    an ISO date and time (UTC unless it says otherwise) as epoch us; for
    ``end`` exclusive."""
    try:
        t = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"not a date: {text!r} (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS], UTC)", field=field) from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.UTC)
    us = round(t.timestamp() * 1e6)
    if end:
        us += 86_400_000_000 if _DATE.fullmatch(text.strip()) else 1
    return us


@dataclass(frozen=True)
class Filters:
    """Which rows :func:`select` returns. ``spec``, ``host`` and ``gateway``
    are shell patterns (``*``, ``?``, ``[...]``; ``gateway`` ``none``: the
    runs without one); ``commit`` a prefix of the git commit; ``since_us``
    and ``until_us`` (exclusive) bound the start."""

    spec: str | None = None
    since_us: int | None = None
    until_us: int | None = None
    verdict: str | None = None
    host: str | None = None
    commit: str | None = None
    gateway: str | None = None

    @classmethod
    def parse(cls, *, spec: str | None = None, since: str | None = None, until: str | None = None,
              verdict: str | None = None, host: str | None = None, commit: str | None = None,
              gateway: str | None = None) -> Filters:
        """The filters from the command line's text, or a UserError naming the option."""
        for name, v in (("--spec", spec), ("--host", host), ("--gateway", gateway)):
            if v is not None and not v.strip():
                raise UserError("empty: give a name or a pattern (* and ? as in the shell)", field=name)
        if verdict is not None and verdict.lower() not in VERDICTS:
            raise UserError(f"not a verdict: {verdict!r} (one of {', '.join(VERDICTS)})", field="--verdict")
        if commit is not None and not _COMMIT.fullmatch(commit):
            raise UserError(f"not a git commit: {commit!r} (4 to 40 hex digits, a prefix)", field="--commit")
        lo = _instant(since, "--since", end=False) if since is not None else None
        hi = _instant(until, "--until", end=True) if until is not None else None
        if lo is not None and hi is not None and hi <= lo:
            raise UserError(f"{until} is before --since {since}: no run can match", field="--until")
        return cls(spec=spec, since_us=lo, until_us=hi, verdict=verdict.lower() if verdict else None, host=host,
                   commit=commit.lower() if commit else None, gateway=gateway)

    def where(self) -> tuple[str, list[Any]]:
        """The SQL condition and its parameters."""
        cond: list[str] = []
        params: list[Any] = []
        for column, pattern in (("spec", self.spec), ("host", self.host)):
            if pattern is not None:
                cond.append(f"{column} GLOB ?")
                params.append(pattern)
        if self.gateway is not None:
            cond.append("gateway IS NULL" if self.gateway.lower() == "none" else "gateway GLOB ?")
            params += [] if self.gateway.lower() == "none" else [self.gateway]
        if self.verdict is not None:
            cond.append("verdict = ?")
            params.append(self.verdict)
        if self.commit is not None:
            cond.append("substr(lower(git_commit), 1, ?) = ?")
            params += [len(self.commit), self.commit]
        if self.since_us is not None:
            cond.append("start_epoch_us >= ?")
            params.append(self.since_us)
        if self.until_us is not None:
            cond.append("start_epoch_us < ?")
            params.append(self.until_us)
        return ("WHERE " + " AND ".join(cond) if cond else ""), params


def select(root: Path, filters: Filters | None = None) -> list[Entry]:
    """The catalogue's rows that pass ``filters``, oldest first (read only:
    nothing is written). No catalogue there is a UserError that says how
    to make one."""
    path = root / CATALOGUE
    if not root.is_dir():
        raise UserError("no such folder", root, field="--results")
    if not path.is_file():
        raise UserError("no catalogue here yet: `wotbench runs --rebuild` makes it from the run folders", path)
    where, params = (filters or Filters()).where()
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_S)
    except sqlite3.Error as err:
        raise _db_error(path, err) from None
    try:
        return [] if _check_ours(conn, path, rebuild=False) else _all(conn, where, params)
    except sqlite3.Error as err:
        raise _db_error(path, err) from None
    finally:
        conn.close()


def as_json(entries: Sequence[Entry]) -> str:
    """The rows as a JSON array of objects (the manifest as an object)."""
    return json.dumps([{**dataclasses.asdict(e), "reasons": list(e.reasons)} for e in entries], indent=2) + "\n"


def text_table(entries: Sequence[Entry]) -> str:
    """The rows as a terminal table (wotbench.reporting._runindex)."""
    from wotbench.reporting._runindex import terminal_table

    return terminal_table(entries)
