"""The replay workload (``workload.replay``): a captured workload scaled and
written in the layout of :func:`wotbench.tracegen.generate`, so a run uses
it unchanged (tracegen/README.md, "Replaying a capture").

The source is a folder ``wotbench tracegen --from-pcap`` wrote, or a
capture file derived here first (into a temporary folder beside the output,
removed at the end). Emulated device e replays captured device d(e) (copy j
of k_d): its requests' times divided by the rate r, rotated by j*T/k_d
modulo the period T (the captured span plus one mean gap, divided by r),
repeated every T and cut at the test's length. An observation (an OBS row
and the UNOBS row that closes it) moves as a whole; one crossing the
test's start or end, or reaching into its own next repetition, is cut
there (counted: expected.json ``replay.observations_cut``); one with
nothing left, or unpaired in the source, is dropped (``observations_dropped``).
The derived folder is read and checked by tracegen/_replaysrc.py.

Output: trace.csv, resources/, devices.csv, cd/, expected.json (of the
replayed trace), capture.json (the source's), source/ (the derived folder
replayed, a copy: a run's saved spec refers to it, so the run folder stands
alone; a capture file itself is never copied), .wotbench-made.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_PATH_BYTES, MAX_SERVICE_US, METHODS, OBSERVE_METHODS
from wotbench.base.inputfile import shown
from wotbench.base.version import __version__
from wotbench.spec import budget
from wotbench.spec.replayspec import CAPTURE_JSON, KEPT_FILES, KEPT_SOURCE, ReplaySource, check_count, copies
from wotbench.tracegen import _stats as stats
from wotbench.tracegen._csvtext import device_host
from wotbench.tracegen._expected import EXPECTED_FORMAT, _DeviceRits, _pooled, _r, _summ, expected_json
from wotbench.tracegen._generate import GeneratedWorkload, _write_cd, check_out, write_folder
from wotbench.tracegen._obsrows import OBS, UNOBS, _measure_window
from wotbench.tracegen._replaysrc import FIELD, Source, read_resources, read_samples, read_source
from wotbench.tracegen._requests import Requests

if TYPE_CHECKING:
    from wotbench.spec import WorkloadSpec
    from wotbench.spec.replayspec import ReplaySpec

__all__ = ["replay", "replay_times", "replay_info", "MAX_OBSERVATIONS", "EMPIRICAL_BINS"]

#: Observations a trace may hold (docs/formats.md).
MAX_OBSERVATIONS = 262144
#: Resources per captured path in ``service: empirical`` (the samples in as many equal-count bins).
EMPIRICAL_BINS = 64
_MAX_DEVICE_RESOURCES = 65536
#: Max-Age of an observable resource whose max_age cell is empty (docs/formats.md).
DEFAULT_MAX_AGE_S = 60
_NAMES = tuple(METHODS) + tuple(OBSERVE_METHODS)
_PROCESSES = ("det", "exp", "lognormal", "pareto")


def _sha256(path: Path) -> str:
    """The file's sha256 (a FIFO or a missing file: a UserError naming it)."""
    h = hashlib.sha256()
    if not path.is_file():
        raise UserError("missing or not a regular file", shown(path), None, "file")
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError as err:
        raise UserError(f"cannot read ({err.strerror or type(err).__name__})", shown(path), None, "file") from None
    return h.hexdigest()


@contextlib.contextmanager
def _folder(rp: ReplaySpec, beside: Path) -> Iterator[tuple[Path, str]]:
    """The derived folder to replay and the hash naming the source (the
    capture's, else the folder's trace.csv); a capture is derived into a
    temporary folder beside ``beside``, removed at the end."""
    if not rp.is_capture:
        yield rp.path, _sha256(rp.path / "trace.csv")
        return
    from wotbench.tracegen._fromcapture import from_capture

    while not beside.is_dir() and beside != beside.parent:    # no folder made for it
        beside = beside.parent
    tmp = Path(tempfile.mkdtemp(prefix=".replay-source-", dir=beside))
    try:
        from_capture(rp.path, tmp / "derived")
        yield tmp / "derived", _sha256(rp.path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _read_source(folder: Path, sha: str) -> Source:
    """The derived folder's trace (its capture.json checked first)."""
    info = ReplaySource.read(folder, FIELD)
    return read_source(folder, info.devices, sha)


@dataclass(frozen=True)
class _Rows:
    """The replayed trace: rows sorted by (time, emulated device)."""

    t_us: np.ndarray
    dev: np.ndarray
    method: np.ndarray
    uri: np.ndarray
    """URI code (Source.uri)."""
    payload: np.ndarray
    period_us: float
    observations: int
    observations_cut: int
    observations_dropped: int
    obs: np.ndarray
    """One row per observation: emulated device, URI code, OBS time, UNOBS time."""


def _period(src: Source) -> float | None:
    """The captured stream's period: its span plus one mean gap between requests
    (captured clock); None when its requests have no span (then it is played once)."""
    poll = src.t_us[src.method < len(METHODS)]
    if poll.size < 2 or poll[-1] == poll[0]:
        return None
    span = float(poll[-1] - poll[0])
    return span + span / (poll.size - 1)


def _shifts(sources: list[int], period: float) -> np.ndarray:
    """Copy j of k_d copies of a captured device is rotated by j*T/k_d."""
    j, k = copies(sources)
    return np.array([ji * period / ki for ji, ki in zip(j, k, strict=True)], dtype=np.float64)


def _polling(src: Source, sources: list[int], shifts: np.ndarray, period: float, length: int,
             rate: float) -> tuple[np.ndarray, ...]:
    """(time, emulated device, source row) of every polling row of the replay."""
    poll = np.flatnonzero(src.method < len(METHODS))
    by_dev = poll[np.argsort(src.dev[poll], kind="stable")]
    bounds = np.searchsorted(src.dev[by_dev], np.arange(src.devices + 1))
    reps = np.arange(math.ceil(length / period) + 1, dtype=np.float64) * period
    ts, devs, rows = [], [], []
    for e, d in enumerate(sources):
        r = by_dev[bounds[d]:bounds[d + 1]]
        x = np.mod(src.t_us[r] / rate + shifts[e], period)
        t = np.floor(np.add.outer(reps, x).ravel()).astype(np.int64)
        keep = t < length
        ts.append(t[keep])
        devs.append(np.full(int(keep.sum()), e, dtype=np.int32))
        rows.append(np.tile(r, reps.size)[keep])
    return np.concatenate(ts), np.concatenate(devs), np.concatenate(rows)


def _pairs(src: Source) -> tuple[list[tuple[int, int, int, int]], int]:
    """Each observation of the source (device, URI code, OBS time, UNOBS time; an OBS of a
    (device, path?query) closed by its UNOBS, docs/formats.md), and the unpaired rows."""
    obs = np.flatnonzero(src.method >= len(METHODS))
    open_: dict[tuple[int, int], int] = {}
    out, unpaired = [], 0
    for i in obs.tolist():
        key = (int(src.dev[i]), int(src.uri[i]))
        if src.method[i] == OBS:
            unpaired += key in open_
            open_[key] = int(src.t_us[i])
        elif key in open_:
            out.append((key[0], key[1], open_.pop(key), int(src.t_us[i])))
        else:
            unpaired += 1
    return out, unpaired + len(open_)


def _observations(src: Source, sources: list[int], shifts: np.ndarray, period: float, length: int,
                  rate: float) -> tuple[list[tuple[int, int, int, int]], int, int]:
    """The replay's observations (emulated device, URI code, OBS time, UNOBS time), those cut and
    those dropped. Each is repeated with the stream (period T); one crossing the test's start or
    end is cut at it (registered at 0; deregistered at the last microsecond), one reaching into
    its pair's next repetition is deregistered a microsecond before that one registers (the GE's
    rule: an OBS closed by its UNOBS before the pair's next OBS, docs/formats.md). Dropped:
    unpaired in the source, or nothing left once cut."""
    pairs, dropped = _pairs(src)
    by_src: dict[int, list[tuple[int, int, int]]] = {}
    for d, p, a, b in pairs:
        by_src.setdefault(d, []).append((p, a, b))
    n_reps = math.ceil(length / period) + 1
    out: list[tuple[int, int, int, int]] = []
    cut = 0
    for e, d in enumerate(sources):
        mine: list[tuple[int, int, int, bool]] = []
        for p, a, b in by_src.get(d, ()):
            a0 = math.fmod(a / rate + shifts[e], period)
            dur = max((b - a) / rate, 1.0)
            for m in range(-1, n_reps):         # m = -1: the tail of the repetition before the test
                start, end = a0 + m * period, a0 + m * period + dur
                if end <= 0 or start >= length:
                    continue
                s_us, e_us = max(int(start), 0), min(max(int(end), int(start) + 1), length - 1)
                mine.append((p, s_us, e_us, start < 0 or e_us < int(end)))
        mine.sort()
        for i, (p, a, b, edge) in enumerate(mine):
            nxt = mine[i + 1] if i + 1 < len(mine) and mine[i + 1][0] == p else None
            if nxt is not None and b >= nxt[1]:
                b, edge = nxt[1] - 1, True
            if b <= a:
                dropped += 1
                continue
            cut += edge
            out.append((e, p, a, b))
    return out, cut, dropped


def _rows(spec: WorkloadSpec, src: Source) -> _Rows:
    rp = spec.replay
    assert rp is not None and spec.duration_us is not None
    sources = rp.sources(src.devices)
    length, rate = spec.duration_us, rp.rate
    captured = _period(src)
    period = captured / rate if captured is not None else float(max(length, int(src.t_us.max() / rate) + 1))
    shifts = _shifts(sources, period)
    per_src = np.bincount(src.dev[src.method < len(METHODS)], minlength=src.devices)
    bound = float(per_src[sources].sum()) * (length / period + 1)
    if bound > budget.MAX_REQUESTS:       # before the arrays are built
        raise UserError(f"the replay would have up to {bound:,.0f} requests: more than the "
                        f"{budget.MAX_REQUESTS:,} a test may have; a lower rate, fewer devices or shorter phases",
                        field="workload.replay.rate")
    t, dev, row = _polling(src, sources, shifts, period, length, rate)
    obs, cut, dropped = _observations(src, sources, shifts, period, length, rate)
    if len(obs) > MAX_OBSERVATIONS:
        raise UserError(f"the replay has {len(obs)} observations: more than the {MAX_OBSERVATIONS} a trace "
                        "may hold; fewer devices or shorter phases", field="workload.replay.devices")
    n = t.size + 2 * len(obs)
    if n > budget.MAX_REQUESTS:
        raise UserError(f"the replay has {n:,} requests: more than the {budget.MAX_REQUESTS:,} a test may have; "
                        "a lower rate, fewer devices or shorter phases", field="workload.replay.rate")
    o = np.array(obs, dtype=np.int64).reshape(-1, 4)
    k = o.shape[0]
    t = np.concatenate((t, o[:, 2], o[:, 3]))
    dev = np.concatenate((dev, o[:, 0].astype(np.int32), o[:, 0].astype(np.int32)))
    method = np.concatenate((src.method[row], np.full(k, OBS, np.int8), np.full(k, UNOBS, np.int8)))
    uri = np.concatenate((src.uri[row], o[:, 1].astype(np.int32), o[:, 1].astype(np.int32)))
    payload = np.concatenate((src.payload[row], np.zeros(2 * k, np.int32)))
    del row
    order = np.lexsort((dev, t))
    t, dev, method, uri, payload = t[order], dev[order], method[order], uri[order], payload[order]
    return _Rows(t, dev, method, uri, payload, period, k, cut, dropped, o)


def replay_times(spec: WorkloadSpec, beside: Path | None = None) -> np.ndarray:
    """The send times of the replayed trace (for its peak rate; a capture is
    derived into a temporary folder beside ``beside``, the system's by default)."""
    assert spec.replay is not None
    where = beside if beside is not None else Path(tempfile.gettempdir())
    with _folder(spec.replay, where) as (folder, sha):
        src = _read_source(folder, sha)
        check_count(spec.replay, src.devices, spec.n_devices)
        return _rows(spec, src).t_us


# --- resources: median (as derived) or empirical (the samples in bins) ----------------------------


def _bins(samples: np.ndarray, q: int) -> np.ndarray:
    """The means of ``q`` equal-count bins of the sorted samples (ascending)."""
    return np.array([float(b.mean()) for b in np.array_split(np.sort(samples), q)])


@dataclass
class _Service:
    """Per source device: its resource file's text and, per path id, the
    service time(s) a request of it takes (one: median; several: the bins)."""

    text: list[bytes]
    values: list[dict[int, np.ndarray]]
    observe: list[dict[int, tuple[str, str, int]]]
    """Per source device, per observable path id: its observe_rit and notify_type cells, its Max-Age (s)."""


def _service(src: Source, mode: str) -> _Service:
    index = {p: i for i, p in enumerate(src.paths)}
    texts, values, observe = [], [], []
    for d in range(src.devices):
        res = read_resources(src.folder, d)
        cols, rows = res.header, res.rows
        vals = {index[r[0]]: np.array([float(v)]) for r, v in zip(rows, res.service_us, strict=True)
                if r[0] in index}
        observe.append(_observable(cols, rows, index))
        extra: list[str] = []
        samples = read_samples(src.folder, d) if mode == "empirical" else None
        if samples is not None:
            names, pid, us = samples
            taken = {r[0] for r in rows}
            q_max = max(1, min(EMPIRICAL_BINS, _MAX_DEVICE_RESOURCES // max(len(rows), 1) - 1))
            order = np.argsort(pid, kind="stable")
            bounds = np.searchsorted(pid[order], np.arange(len(names) + 1))
            blank = "," * (len(cols) - 2)
            for i, p in enumerate(names):
                grp = us[order[bounds[i]:bounds[i + 1]]]
                q = min(q_max, grp.size)
                if p not in index or q < 2 or len(f"{p}/_e{q_max - 1}".encode()) > MAX_PATH_BYTES \
                        or any(f"{p}/_e{j}" in taken for j in range(q)):
                    continue
                b = _bins(grp.astype(np.float64), q)
                vals[index[p]] = b
                extra += [f"{p}/_e{j},{min(round(v), MAX_SERVICE_US)}{blank}" for j, v in enumerate(b)]
        texts.append(("\n".join([",".join(cols)] + [",".join(r) for r in rows] + extra) + "\n").encode())
        values.append(vals)
    return _Service(texts, values, observe)


def _observable(cols: list[str], rows: list[list[str]], index: dict[str, int]) -> dict[int, tuple[str, str, int]]:
    """The observable resources of a resource file (a non-empty observe_rit cell, docs/formats.md):
    path id -> (observe_rit, notify_type, max_age s; empty: the device's default)."""
    if "observe_rit" not in cols:
        return {}
    at = {c: cols.index(c) for c in ("observe_rit", "notify_type", "max_age") if c in cols}

    def cell(r: list[str], c: str) -> str:
        return r[at[c]].strip() if c in at and at[c] < len(r) else ""

    def max_age(r: list[str]) -> int:
        text = cell(r, "max_age")
        return int(text) if text.isdigit() else DEFAULT_MAX_AGE_S

    return {index[r[0]]: (cell(r, "observe_rit"), cell(r, "notify_type") or "non", max_age(r))
            for r in rows if r[0] in index and cell(r, "observe_rit")}


def _process_mean(cell: str) -> float | None:
    """The mean time between events (us) of an observe_rit cell (docs/formats.md), None when unreadable."""
    kind, _, rest = cell.partition(":")
    try:
        v = [float(x) for x in rest.split(":")]
    except ValueError:
        return None
    mean = (v[0] + v[1]) / 2 if kind == "uniform" and len(v) == 2 else v[0] if kind in _PROCESSES else None
    return mean if mean is not None and math.isfinite(mean) and mean > 0 else None


def _group_process(cells: list[str], live: np.ndarray, means: np.ndarray) -> tuple[str | None, float]:
    """One process for a group's observations (expected.json ``device_rit``, what the observe
    check judges the event count by) and its effective mean (total live time over the draws):
    the cell itself when all share it; ``det`` or ``exp`` with the effective mean when all are of
    that kind (the count bounds of either hold for a mix of their means); else None."""
    mean = float(live.sum() / (live / means).sum()) if live.sum() > 0 else float(means.mean())
    kinds = {c.partition(":")[0] for c in cells}
    if len(set(cells)) == 1:
        return cells[0], mean
    if len(kinds) == 1 and kinds <= {"det", "exp"}:
        return f"{kinds.pop()}:{max(1, round(mean))}", mean
    return None, mean


def _observe_expected(spec: WorkloadSpec, rows: _Rows, svc: _Service, sources: list[int],
                      uri_path: np.ndarray) -> dict[str, object]:
    """expected.json's ``observe`` of the replayed trace (as tracegen's observe_expected for
    synthetic groups): per group and in total the observations and the events their devices
    should draw, each observation its live time over its resource's mean time between events,
    plus the registration's event 0. An observation of a resource without an observe_rit cell
    leaves its group without a process (the observe check then says so)."""
    assert spec.duration_us is not None
    o = rows.obs
    cell = [svc.observe[sources[int(e)]].get(int(uri_path[u])) for e, u in zip(o[:, 0], o[:, 1], strict=True)]
    means = np.array([(_process_mean(c[0]) or math.nan) if c else math.nan for c in cell])
    live = (o[:, 3] - o[:, 2]).astype(np.float64)
    m_lo, m_hi = _measure_window(spec, spec.duration_us)
    in_meas = np.clip(np.minimum(o[:, 3], m_hi) - np.maximum(o[:, 2], m_lo), 0, None).astype(np.float64)
    firsts = np.concatenate(([0], np.cumsum([g.count for g in spec.groups])))
    groups, total_events, total_rate, total_meas = [], 0.0, 0.0, 0.0
    for g, grp in enumerate(spec.groups):
        sel = (o[:, 0] >= firsts[g]) & (o[:, 0] < firsts[g + 1])
        n = int(sel.sum())
        if not n:
            continue
        ok = sel & np.isfinite(means)
        events = float((live[ok] / means[ok]).sum()) + int(ok.sum())
        rate = float((1e6 / means[ok]).sum())
        meas = float((in_meas[ok] / means[ok]).sum())
        total_events, total_rate, total_meas = total_events + events, total_rate + rate, total_meas + meas
        known = [c for c, s_ in zip(cell, sel.tolist(), strict=True) if s_ and c is not None]
        device_rit, mean = (_group_process([c[0] for c in known], live[ok], means[ok])
                            if ok.sum() == n else (None, math.nan))
        types = {c[1] for c in known}
        groups.append({
            "group": grp.name, "observations": n, "resources_per_device": None,
            "rit": device_rit, "rit_mean_us": _r(mean), "device_rit": device_rit,
            "type": types.pop() if len(types) == 1 else None,
            "max_age_s": max((c[2] for c in known), default=DEFAULT_MAX_AGE_S), "service_us": None,
            "expected_events": _r(events) if ok.sum() == n else None, "rate_per_s": _r(rate),
            "expected_events_measure": _r(meas)})
    return {"observations": int(o.shape[0]), "expected_events": _r(total_events), "rate_per_s": _r(total_rate),
            "measure_us": [m_lo, m_hi], "expected_events_measure": _r(total_meas),
            "registration_us": [int(o[:, 2].min()), int(o[:, 2].max())],
            "deregistration_us": [int(o[:, 3].min()), int(o[:, 3].max())], "groups": groups}


def _draws(spec: WorkloadSpec, svc: _Service, src: Source, src_dev: np.ndarray, rows: _Rows
           ) -> tuple[np.ndarray, np.ndarray]:
    """Per row: its service time (us) and its bin (-1: the path itself)."""
    n = rows.t_us.size
    poll = np.flatnonzero(rows.method < len(METHODS))
    rng = np.random.default_rng(np.random.SeedSequence(spec.seed))
    u = rng.random(poll.size)
    service = np.zeros(n)
    bin_ = np.full(n, -1, dtype=np.int8)
    n_paths = len(src.paths)
    key = src_dev[poll].astype(np.int64) * n_paths + src.uri_path[rows.uri[poll]]
    uniq, inv = np.unique(key, return_inverse=True)
    tables = [svc.values[int(k) // n_paths].get(int(k) % n_paths, np.zeros(1)) for k in uniq.tolist()]
    cnt = np.array([v.size for v in tables], dtype=np.int64)
    off = np.concatenate(([0], np.cumsum(cnt)[:-1])).astype(np.int64)
    flat = np.concatenate(tables) if tables else np.zeros(0)
    c = cnt[inv]
    j = np.minimum((u * c).astype(np.int64), c - 1)
    service[poll] = flat[off[inv] + j]
    bin_[poll] = np.where(c > 1, j, -1)
    return service, bin_


# --- writing -------------------------------------------------------------------------------------------


def _write_trace(path: Path, rows: _Rows, src: Source, bin_: np.ndarray) -> None:
    """trace.csv, row by row from the arrays: the URI is the captured path (with ``/_e<j>``
    when a bin is drawn: a path of the resource file, which has no query), then its query."""
    path_of = [src.paths[i] for i in src.uri_path.tolist()]
    query_of = src.uri_query
    with open(path, "w") as fh:
        fh.write("device_id,send_ts_us,method,uri" + (",payload\n" if src.has_payload else "\n"))
        step = 1 << 16
        for a in range(0, rows.t_us.size, step):
            sl = slice(a, a + step)
            parts = zip(rows.dev[sl].tolist(), rows.t_us[sl].tolist(), rows.method[sl].tolist(),
                        rows.uri[sl].tolist(), bin_[sl].tolist(), rows.payload[sl].tolist(), strict=True)
            fh.write("".join(
                f"{d},{t},{_NAMES[m]},coap://{device_host(d)}{path_of[u]}{f'/_e{b}' if b >= 0 else ''}{query_of[u]}"
                + ((f",{'x' * n}" if n else ",") if src.has_payload else "") + "\n"
                for d, t, m, u, b, n in parts))


def _expected(spec: WorkloadSpec, rows: _Rows, service: np.ndarray, info: dict[str, object]) -> dict[str, object]:
    """expected.json of the replayed trace (format 1; rit_scope ``replay``, targets null)."""
    n_dev = spec.n_devices
    poll = rows.method < len(METHODS)
    t, dev, svc = rows.t_us[poll], rows.dev[poll], service[poll]
    length = spec.duration_us or 1
    dur_s = length / 1e6
    order = np.argsort(dev, kind="stable")
    counts = np.bincount(dev, minlength=n_dev)
    req = Requests(t, dev, np.zeros(0), np.zeros(0), length, t[order], counts)
    rits = _DeviceRits.of(req, n_dev)
    so = np.lexsort((svc, dev))
    s_sorted = svc[so]
    s_pct = stats.segment_percentiles(s_sorted, counts)
    s_sum = np.bincount(dev, weights=svc, minlength=n_dev)
    firsts = np.concatenate(([0], np.cumsum([g.count for g in spec.groups]))).tolist()
    groups_out = []
    for g, grp in enumerate(spec.groups):
        a, b = firsts[g], firsts[g + 1]
        sel = (dev >= a) & (dev < b)
        g_req = int(sel.sum())
        groups_out.append({
            "name": grp.name, "devices": grp.count, "first_device_id": a, "requests": g_req,
            "rate_per_s": _r(g_req / dur_s), "rit": _summ(*_pooled(rits.of_devices(a, b))),
            "service": _summ(*_pooled(svc[sel].copy())),
            "methods": _shares(rows.method[poll][sel]), "payload_bytes": _r(float(rows.payload[poll][sel].mean())
                                                                        if g_req else 0.0),
            "resources": None, "target": None})
    devices_out = [{"id": d, "group": spec.groups[int(gi)].name, "host": device_host(d),
                    "requests": int(counts[d]), "rate_per_s": _r(counts[d] / dur_s),
                    "rit": _summ(rits.mean[d], rits.pct[d]),
                    "service": _summ(s_sum[d] / counts[d] if counts[d] else None, s_pct[d])}
                   for d, gi in enumerate(spec.group_of_device())]
    n_all = int(t.size)
    aggregate = {
        "requests": n_all, "rate_per_s": _r(n_all / dur_s),
        "rit": _summ(float((t[-1] - t[0]) / (n_all - 1)) if n_all > 1 else None,
                     stats.percentiles_inplace(np.diff(t))),
        "service": _summ(*_pooled(svc.copy())),
        "target": None}
    doc: dict[str, object] = {
        "format": EXPECTED_FORMAT, "generator": f"wotbench.tracegen {__version__}", "seed": spec.seed,
        "rit_scope": "replay", "duration_us": length, "requests": int(rows.t_us.size), "devices": n_dev,
        "percentiles": list(stats.PERCENTILES), "aggregate": aggregate, "groups": groups_out,
        "device_stats": devices_out, "replay": info}
    if rows.observations:
        doc["polling_requests"] = n_all
    return doc


def _shares(method: np.ndarray) -> dict[str, float]:
    c = np.bincount(method, minlength=len(METHODS))[:len(METHODS)]
    return {m: round(float(c[i] / c.sum()), 6) for i, m in enumerate(METHODS) if c[i]}


def replay(spec: WorkloadSpec, outdir: str | os.PathLike[str], *, overwrite: bool = False) -> GeneratedWorkload:
    """Write the replay of ``spec.replay`` into ``outdir`` (atomically, as :func:`generate`)."""
    rp = spec.replay
    if rp is None:
        raise ValueError("replay() needs a WorkloadSpec with replay")
    final, replace = check_out(outdir, overwrite)
    with _folder(rp, final.parent) as (folder, sha):
        src = _read_source(folder, sha)
        check_count(rp, src.devices, spec.n_devices)
        rows = _rows(spec, src)
        svc = _service(src, rp.service)
        return write_folder(final, replace, lambda tmp: _write_all(spec, src, rows, svc, tmp, final))


def _write_all(spec: WorkloadSpec, src: Source, rows: _Rows, svc: _Service, tmp: Path,
               final: Path) -> GeneratedWorkload:
    rp = spec.replay
    assert rp is not None and spec.duration_us is not None
    sources = rp.sources(src.devices)
    src_dev = np.asarray(sources, dtype=np.int64)[rows.dev]
    service, bin_ = _draws(spec, svc, src, src_dev, rows)
    _write_trace(tmp / "trace.csv", rows, src, bin_)
    (tmp / "resources").mkdir()
    for e, d in enumerate(sources):
        (tmp / "resources" / f"dev-{e}.csv").write_bytes(svc.text[d])
    group_of = spec.group_of_device()
    with open(tmp / "devices.csv", "w") as fh:
        fh.write("device_id,group,host,resource_file\n")
        fh.writelines(f"{e},{spec.groups[int(group_of[e])].name},{device_host(e)},resources/dev-{e}.csv\n"
                      for e in range(spec.n_devices))
    shutil.copyfile(src.folder / CAPTURE_JSON, tmp / CAPTURE_JSON)
    _keep_source(src.folder, tmp / KEPT_SOURCE)
    poll = rows.method < len(METHODS)
    mean = float(service[poll].mean()) if poll.any() else 0.0
    cd_service = spec.cd_service_us if spec.cd_service_us is not None else int(round(mean))
    info = {**rp.describe(), "sha256": src.sha256, "captured_devices": src.devices, "map": sources,
            "period_us": round(rows.period_us, 3), "observations": rows.observations,
            "observations_cut": rows.observations_cut, "observations_dropped": rows.observations_dropped,
            "service_mean_us": _r(mean)}
    doc = _expected(spec, rows, service, info)
    if rows.observations:       # the observe check judges the replayed observations by it
        doc["observe"] = _observe_expected(spec, rows, svc, sources, src.uri_path)
    doc["cd"] = _write_cd(spec, spec.duration_us, cd_service, tmp)
    (tmp / "expected.json").write_text(expected_json(doc))
    return GeneratedWorkload(
        outdir=final, trace=final / "trace.csv", expected=final / "expected.json",
        devices_csv=final / "devices.csv",
        resources={e: final / "resources" / f"dev-{e}.csv" for e in range(spec.n_devices)},
        cd_trace=final / "cd" / "trace.csv", cd_resource=final / "cd" / "resources.csv",
        device_ids=tuple(range(spec.n_devices)),
        device_group=tuple(spec.groups[int(g)].name for g in group_of),
        requests=int(rows.t_us.size), duration_us=spec.duration_us, cd_device_id=spec.cd_device_id,
        cd_rit_us=spec.cd_rit_us, cd_service_us=cd_service, cd_calibration_us=spec.cd_calibration_us,
        observations=rows.observations)


def _keep_source(folder: Path, to: Path) -> None:
    """The derived folder replayed (a capture's: derived first), copied: the output stands alone."""
    to.mkdir()
    for name in KEPT_FILES:
        p = folder / name
        if p.is_dir():
            shutil.copytree(p, to / name)
        elif p.is_file():
            shutil.copyfile(p, to / name)


def replay_info(out: GeneratedWorkload) -> dict[str, object]:
    """expected.json's ``replay`` entry of a written replay (for the run's manifest)."""
    doc = json.loads(out.expected.read_text())
    info = doc.get("replay")
    return info if isinstance(info, dict) else {}
