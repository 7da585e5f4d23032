"""A packet capture to the workload files (``wotbench tracegen --from-pcap``).

Output directory (written into a temporary sibling, renamed into place at
the end, through the same guard as :func:`wotbench.tracegen.generate`)::

    trace.csv               device_id,send_ts_us,method,uri[,payload]: the first transmission
                            of every request (uri path?query), time 0 = the first request,
                            and the OBS/UNOBS rows of the observations
    resources/dev-<id>.csv  path,service_us[,observe columns]: the device's captured paths,
                            each with the median of its service-time samples
    service/dev-<id>.csv    path,service_us: every sample (one per answered request)
    devices.csv             device_id,group,host,resource_file (group "capture")
    capture.json            what was found (format 1), README "From a packet capture"
    .wotbench-made          "wotbench tracegen"

A device is a server endpoint (address and port), numbered in the order of
its first request. Everything is written as the requests settle
(:class:`wotbench.tracegen._pairs.Matcher`), in memory bounded by the
devices, resources and open observations, not by the packets.
expected.json is not written here: the replay workload (issue 29 item 2)
writes it from the trace it replays, after scaling.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.formats import (
    MAX_PATH_BYTES,
    MAX_PAYLOAD_BYTES,
    MAX_SERVICE_US,
    OBSERVE_METHODS,
    RESOURCE_COLUMNS,
    RESOURCE_OBSERVE_COLUMNS,
)
from wotbench.base.inputfile import shown
from wotbench.base.version import __version__
from wotbench.tracegen._capobserve import Observations
from wotbench.tracegen._capture import LINKTYPES, CaptureReader, Messages
from wotbench.tracegen._csvtext import device_host
from wotbench.tracegen._generate import CONTENTS, write_folder
from wotbench.tracegen._multicap import CaptureSet
from wotbench.tracegen._pairs import CON, NON, RST, WINDOW_REQUESTS, Done, Matcher
from wotbench.tracegen._quantiles import Quantiles

__all__ = ["CAPTURE_FORMAT", "CaptureWorkload", "from_capture", "SERVICE_NOTE"]

CAPTURE_FORMAT = 1
SERVICE_NOTE = ("service times are response time minus request time as captured: the devices' service "
                "times only when the capture was taken next to the devices (else they include the network)")
#: CoAP method codes (0.01 .. 0.04) in the trace's names.
_METHOD_OF_CODE = {1: "GET", 2: "POST", 3: "PUT", 4: "DELETE"}
#: Characters wotbench-device accepts in a resource path (RFC 3986 pchar, no
#: percent-encoding, and '/'), less the comma that would split a CSV field.
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+;=:@/")
_WELL_KNOWN = "/.well-known/core"
_MAPPED_SHOWN = 100
_MAPPED_PREFIX = "/_p/"
#: Characters of a Uri-Query option kept in a trace URI: a path's, and '?',
#: less '&' and ';' (libcoap's coap_split_query splits at them).
_QUERY_CHARS = (_PATH_CHARS | {"?"}) - {"&", ";"}
_BODY = "trace.body"
_ROWS = 1 << 14


@dataclass(frozen=True)
class CaptureWorkload:
    """What :func:`from_capture` wrote (paths inside ``outdir``) and its summary."""

    outdir: Path
    trace: Path
    summary: dict[str, object]


def _path_ok(p: str) -> bool:
    """Can ``p`` be a resource path of wotbench-device and a trace URI's path as it is?"""
    return (p.startswith("/") and 1 < len(p.encode()) <= MAX_PATH_BYTES and p != _WELL_KNOWN
            and "//" not in p and not p.endswith("/") and set(p) <= _PATH_CHARS)


def _query_ok(segments: tuple[str, ...]) -> bool:
    """Can the Uri-Query options be a trace URI's query that the GE sends back as they are?"""
    return all(seg and set(seg) <= _QUERY_CHARS for seg in segments) and \
        len("&".join(segments).encode()) <= MAX_PATH_BYTES


class _Names:
    """Path and query ids of the reader to their text in the trace, as they come.
    A path the device cannot serve as it is (and any captured path under
    /_p/, so that no kept path can collide with a mapped one) becomes
    ``/_p/<id>``; a query the GE would not send as captured is dropped."""

    def __init__(self, reader: CaptureReader) -> None:
        self.reader = reader
        self.paths: list[str] = []
        self.queries: list[str] = []
        self.mapped: dict[str, str] = {}
        self.queries_dropped = 0

    def update(self) -> None:
        for i in range(len(self.paths), len(self.reader.paths)):
            p = self.reader.paths[i]
            if _path_ok(p) and not p.startswith(_MAPPED_PREFIX):
                self.paths.append(p)
            else:
                self.paths.append(f"{_MAPPED_PREFIX}{i}")
                self.mapped[self.paths[-1]] = p
        for i in range(len(self.queries), len(self.reader.queries)):
            q = self.reader.queries[i]
            self.queries.append("?" + "&".join(q) if _query_ok(q) else "")


class _SampleFiles:
    """service/dev-<id>.csv, appended to per device from a bounded buffer."""

    LIMIT = 8 << 20

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.parts: dict[int, list[str]] = {}
        self.size = 0

    def new_device(self, d: int) -> None:
        (self.folder / f"dev-{d}.csv").write_text("path,service_us\n")

    def add(self, d: int, text: str) -> None:
        self.parts.setdefault(d, []).append(text)
        self.size += len(text)
        if self.size > self.LIMIT:
            self.flush()

    def flush(self) -> None:
        for d, parts in self.parts.items():
            with open(self.folder / f"dev-{d}.csv", "a") as fh:
                fh.write("".join(parts))
        self.parts, self.size = {}, 0


class _Writer:
    """The workload files written as settled requests come (time order), in
    memory bounded by the devices and resources, not the requests."""

    def __init__(self, tmp: Path, reader: CaptureReader) -> None:
        self.tmp, self.reader = tmp, reader
        (tmp / "resources").mkdir()
        (tmp / "service").mkdir()
        self.names = _Names(reader)
        self.body = open(tmp / _BODY, "w")
        self.rows = 0
        self.first_payload_row: int | None = None
        self.t0: int | None = None
        self.reordered = 0                            # rows moved later: the capture went back in time
        self.t_last = 0
        self.dev_of = np.full(0, -1, np.int64)        # endpoint id -> device id
        self.servers: list[int] = []
        self.per_dev = np.zeros((0, 2), np.int64)     # requests, answered
        self.res_keys = np.zeros(0, np.int64)         # device << 32 | path, distinct
        self.res_q, self.dev_q, self.all_q = Quantiles(), Quantiles(), Quantiles()
        self.samples = _SampleFiles(tmp / "service")
        self.requests = self.unsupported = self.con = self.non = 0
        self.answered = self.piggy = 0
        self.methods: dict[str, int] = {}             # of the trace's rows
        self.obs = Observations()
        self.pay_n = self.pay_sum = self.pay_max = self.pay_nonzero = self.clipped = 0

    def add(self, done: Done) -> None:
        m, service = done.m, done.service_us
        is_req = (m.code > 0) & (m.code < 32)
        n_req = int(np.count_nonzero(is_req))
        self.requests += n_req
        self.con += int(np.count_nonzero(is_req & (m.mtype == CON)))
        self.non += int(np.count_nonzero(is_req & (m.mtype == NON)))
        self.answered += int(np.count_nonzero(service >= 0))
        self.piggy += int(np.count_nonzero(done.piggy))
        ok = np.isin(m.code, list(_METHOD_OF_CODE))
        self.unsupported += n_req - int(np.count_nonzero(ok))
        keep = ok | ~is_req
        m, service = m.take(keep), service[keep]
        if not m.size:
            return
        self.names.update()
        for a in range(0, m.size, _ROWS):        # the text of a few rows at a time
            self._part(m.take(slice(a, a + _ROWS)), service[a:a + _ROWS])

    def _part(self, m: Messages, service: np.ndarray) -> None:
        req = (m.code > 0) & (m.code < 32)
        dev = np.full(m.size, -1, np.int64)
        dev[req] = self._devices(m.dst[req])
        paths, queries = self.names.paths, self.names.queries
        q_used = m.query[req & (m.query >= 0)].tolist()
        self.names.queries_dropped += sum(1 for q in q_used if not queries[q])
        d_l = dev.tolist()
        meth = [_METHOD_OF_CODE.get(c, "") for c in m.code.tolist()]
        uris = [f"coap://{device_host(d)}{paths[p]}{queries[q] if q >= 0 else ''}" if d >= 0 else ""
                for d, p, q in zip(d_l, m.path.tolist(), m.query.tolist(), strict=True)]
        pay = np.where(req, m.payload, 0).tolist()
        special = np.flatnonzero(~req | ((m.code == 1) & (m.observe >= 0) & (m.observe <= 1)))
        if special.size:
            self._observe(m, special, d_l, meth, uris)
            for i in special.tolist():
                pay[i] = 0 if meth[i] in OBSERVE_METHODS else pay[i]        # OBS and UNOBS carry none
        rows = [i for i, x in enumerate(meth) if x]
        t = m.t_us.tolist()
        self._write_rows([d_l[i] for i in rows], [t[i] for i in rows], [meth[i] for i in rows],
                         [uris[i] for i in rows], [pay[i] for i in rows])
        self._stats(m.take(req), dev[req], service[req])

    def _devices(self, dst: np.ndarray) -> np.ndarray:
        """The device id of each server endpoint, new ones numbered in order of their first request."""
        if not dst.size:
            return np.zeros(0, np.int64)
        top = int(dst.max()) + 1
        if top > self.dev_of.size:
            self.dev_of = np.concatenate((self.dev_of, np.full(top - self.dev_of.size, -1, np.int64)))
        new = dst[self.dev_of[dst] < 0]
        eps, first = np.unique(new, return_index=True)
        for ep in eps[np.argsort(first, kind="stable")].tolist():
            self.dev_of[ep] = len(self.servers)
            self.samples.new_device(len(self.servers))
            self.servers.append(ep)
        if len(self.servers) > self.per_dev.shape[0]:
            grow = np.zeros((len(self.servers) - self.per_dev.shape[0], 2), np.int64)
            self.per_dev = np.concatenate((self.per_dev, grow))
        out: np.ndarray = self.dev_of[dst]
        return out

    def _observe(self, m: Messages, at: np.ndarray, dev: list[int], meth: list[str], uris: list[str]) -> None:
        """The rows of an observation: OBS, UNOBS (of a GET with Observe 1 or
        an RST; ``dev``, ``meth`` and ``uris`` set in place), notifications."""
        obs = self.obs
        cols = [getattr(m, c)[at].tolist() for c in ("t_us", "src", "dst", "mtype", "code", "mid", "tkl", "token",
                                                     "observe", "path")]
        for i, t, src, dst, mtype, code, mid, tkl, token, ov, path in zip(at.tolist(), *cols, strict=True):
            if code == 1:
                key = (src, dst, tkl, token)
                if ov == 0:
                    fresh = obs.register(key, t, dev[i], uris[i], dev[i] << 32 | path)
                    meth[i] = "OBS" if fresh else ""
                else:
                    closed = obs.deregister(key, t)
                    if closed is not None:
                        meth[i], uris[i] = "UNOBS", closed.uri
            elif code == 0:
                closed = obs.rst(src, dst, mid, t) if mtype == RST else None
                if closed is not None:
                    dev[i], meth[i], uris[i] = closed.device, "UNOBS", closed.uri
            else:
                obs.notification((dst, src, tkl, token), t, mid, mtype)

    def end(self, t_end: int | None) -> None:
        """UNOBS rows of the observations still open, at the capture's last message."""
        if t_end is None:
            return
        left = self.obs.end(t_end)
        if left:
            n = len(left)
            self._write_rows([o.device for o in left], [t_end] * n, ["UNOBS"] * n, [o.uri for o in left], [0] * n)

    def _write_rows(self, dev: list[int], t_us: list[int], meth: list[str], uris: list[str],
                    pay: list[int]) -> None:
        if not dev:
            return
        if self.t0 is None:
            self.t0 = self.t_last = t_us[0]
        # Times never go back (the trace's rule), even where the capture does (interfaces merged).
        ts = np.maximum.accumulate(np.array([self.t_last, *t_us], np.int64))[1:]
        self.reordered += int(np.count_nonzero(ts != np.array(t_us, np.int64)))
        self.t_last = int(ts[-1])
        t = (ts - self.t0).tolist()
        split = 0
        if self.first_payload_row is None:
            split = next((i for i, n in enumerate(pay) if n > 0), len(pay))
            if split < len(pay):
                self.first_payload_row = self.rows + split
        self.rows += len(dev)
        for x in meth:
            self.methods[x] = self.methods.get(x, 0) + 1
        self.body.write("".join(f"{dev[i]},{t[i]},{meth[i]},{uris[i]}\n" for i in range(split)))
        self.body.write("".join(f"{dev[i]},{t[i]},{meth[i]},{uris[i]},{'x' * min(pay[i], MAX_PAYLOAD_BYTES)}\n"
                                for i in range(split, len(dev))))

    def _stats(self, m: Messages, dev: np.ndarray, service: np.ndarray) -> None:
        if not m.size:
            return
        pay = m.payload
        self.pay_n += m.size
        self.pay_sum += int(pay.sum())
        self.pay_max = max(self.pay_max, int(pay.max()))
        self.pay_nonzero += int(np.count_nonzero(pay))
        self.clipped += int(np.count_nonzero(pay > MAX_PAYLOAD_BYTES))
        key = dev << 32 | m.path.astype(np.int64)
        self.res_keys = np.union1d(self.res_keys, key)
        ans = service >= 0
        np.add.at(self.per_dev[:, 0], dev, 1)
        np.add.at(self.per_dev[:, 1], dev[ans], 1)
        self.res_q.add(key[ans], service[ans])
        self.dev_q.add(dev[ans], service[ans])
        self.all_q.add(np.zeros(int(np.count_nonzero(ans)), np.int64), service[ans])
        paths = self.names.paths
        d_a, p_a, s_a = dev[ans], m.path[ans], service[ans]
        if not d_a.size:
            return
        order = np.argsort(d_a, kind="stable")
        d_a, p_a, s_a = d_a[order], p_a[order], s_a[order]
        uniq, start = np.unique(d_a, return_index=True)
        ends = np.append(start[1:], d_a.size).tolist()
        p_l, s_l = p_a.tolist(), s_a.tolist()
        for d, a, b in zip(uniq.tolist(), start.tolist(), ends, strict=True):
            self.samples.add(d, "".join(f"{paths[p_l[i]]},{s_l[i]}\n" for i in range(a, b)))

    def finish(self) -> dict[str, int]:
        """trace.csv from the rows written, resources/, the rest of service/; counts for the summary."""
        self.samples.flush()
        self.body.close()
        _install_trace(self.tmp, self.first_payload_row)
        names = self.names.paths
        overall = self.all_q.median(0) if self.all_q.count else 0.0
        dev_median = {k: self.dev_q.median(k) for k in self.dev_q.keys()}
        no_samples = approximate = 0
        by_dev: dict[int, list[str]] = {}
        for k in self.res_keys.tolist():
            d, p = k >> 32, k & 0xFFFFFFFF
            if self.res_q.has(k):
                value = self.res_q.median(k)
                approximate += not self.res_q.exact(k)
            else:
                no_samples += 1
                value = dev_median.get(d, overall)
            cells = ""
            if self.obs.types:
                cells = "," + (self.obs.columns(k) or ",,,")
            by_dev.setdefault(d, []).append(f"{names[p]},{min(round(value), MAX_SERVICE_US)}{cells}\n")
        _write_devices(self.tmp, len(self.servers))
        header = ",".join(RESOURCE_COLUMNS + (RESOURCE_OBSERVE_COLUMNS if self.obs.types else ())) + "\n"
        for d in range(len(self.servers)):
            (self.tmp / "resources" / f"dev-{d}.csv").write_text(header + "".join(sorted(by_dev[d])))
        return {"resources": int(self.res_keys.size), "resources_without_samples": no_samples,
                "resources_median_approximate": approximate}


def _install_trace(tmp: Path, first_payload_row: int | None) -> None:
    """trace.csv: the header, then the rows written; with a payload column
    when some request had a payload (the rows before the first such get an
    empty one)."""
    body = tmp / _BODY
    with open(tmp / "trace.csv", "w") as out, open(body) as src:
        if first_payload_row is None:
            out.write("device_id,send_ts_us,method,uri\n")
        else:
            out.write("device_id,send_ts_us,method,uri,payload\n")
            for _ in range(first_payload_row):
                out.write(src.readline()[:-1] + ",\n")
        shutil.copyfileobj(src, out, 1 << 20)
    body.unlink()


def _write_devices(tmp: Path, n: int) -> None:
    with open(tmp / "devices.csv", "w") as fh:
        fh.write("device_id,group,host,resource_file\n")
        fh.writelines(f"{d},capture,{device_host(d)},resources/dev-{d}.csv\n" for d in range(n))


def _stats(q: Quantiles) -> dict[str, float | int | None]:
    if q.count == 0:
        return {"samples": 0, "mean_us": None, "p5_us": None, "p50_us": None, "p95_us": None}
    p5, p50, p95 = q.percentiles(0, [5, 50, 95])
    return {"samples": q.count, "mean_us": q.total / q.count, "p5_us": p5, "p50_us": p50, "p95_us": p95,
            "exact": q.exact(0)}


def _device_stats(w: _Writer, span_s: float) -> list[dict[str, object]]:
    n = len(w.servers)
    paths = np.bincount(w.res_keys >> 32, minlength=n)
    reqs, answered = w.per_dev[:, 0], w.per_dev[:, 1]
    return [{"id": d, "endpoint": w.reader.endpoints[w.servers[d]], "host": device_host(d),
             "requests": int(reqs[d]), "rate_per_s": float(reqs[d]) / span_s if span_s > 0 else None,
             "resources": int(paths[d]), "answered": int(answered[d])} for d in range(n)]


def _summary(w: _Writer, mt: Matcher, extra: dict[str, object]) -> dict[str, object]:
    reader = w.reader
    span_us = w.t_last - w.t0 if w.t0 is not None else 0
    span_s = span_us / 1e6
    in_trace = w.rows - sum(w.methods.get(x, 0) for x in OBSERVE_METHODS)
    return {
        "format": CAPTURE_FORMAT, "generator": f"wotbench.tracegen {__version__}",
        "file": os.path.basename(reader.path), "capture_format": reader.format,
        "linktype": reader.linktype, "linktype_name": LINKTYPES.get(reader.linktype),
        "linktypes": reader.linktypes,
        "packets": reader.packets, "max_packets": reader.max_packets, "stopped_early": reader.stopped_early,
        "coap_messages": reader.messages, "requests": w.requests,
        "requests_in_trace": in_trace, "trace_rows": w.rows, "requests_unsupported_method": w.unsupported,
        "requests_with_query": reader.with_query, "queries_dropped": w.names.queries_dropped,
        "responses": mt.responses,
        "devices": len(w.servers), "duration_us": span_us,
        "rate_per_s": in_trace / span_s if span_s > 0 else None,
        "first_us": mt.first_us, "last_us": mt.last_us,
        "matched": {"requests_answered": w.answered, "requests_unanswered": w.requests - w.answered,
                    "responses_matched": w.answered, "responses_extra": mt.responses_found - w.answered,
                    "responses_unmatched": mt.responses - mt.responses_found, "piggybacked": w.piggy,
                    "separate": w.answered - w.piggy},
        "retransmissions": mt.retransmissions, "rows_reordered": w.reordered,
        "window": {"requests_max": mt.window_requests, "settled_early": mt.shortened,
                   "shortest_us": mt.shortest_us},
        "types": {"CON": w.con, "NON": w.non},
        "methods": {name: w.methods[name] for name in (*_METHOD_OF_CODE.values(), *OBSERVE_METHODS)
                    if w.methods.get(name)},
        "observe": w.obs.summary(),
        "payload_bytes": {"mean": w.pay_sum / w.pay_n if w.pay_n else None,
                          "max": w.pay_max if w.pay_n else None, "nonzero": w.pay_nonzero},
        "skipped": dict(reader.skipped),
        "files": reader.files if isinstance(reader, CaptureSet) else [],
        "service": {**_stats(w.all_q), "note": SERVICE_NOTE},
        **extra,
        "device_stats": _device_stats(w, span_s),
    }


def _no_requests(reader: CaptureReader) -> UserError:
    skipped = ", ".join(f"{k} {v}" for k, v in reader.skipped.items() if v) or "none"
    return UserError(f"no CoAP request with GET, POST, PUT or DELETE found ({reader.packets} packets, "
                     f"{reader.messages} CoAP messages; skipped: {skipped})", shown(reader.path), field="capture")


def from_capture(capture: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
                 outdir: str | os.PathLike[str], *, overwrite: bool = False, max_packets: int | None = None,
                 window_requests: int = WINDOW_REQUESTS) -> CaptureWorkload:
    """Read ``capture`` (its first ``max_packets`` records, or all) and write
    its workload into ``outdir`` atomically (nothing is left when the
    capture is refused, however far it was read). ``capture`` may be several
    files or a run's capture folder (tracegen/_multicap.py: merged in time
    order; ``max_packets`` then counts each file's records)."""
    final = outpath.resolve(outdir, "--out")
    replace = outpath.check_replaceable(final, CONTENTS, overwrite, "--out", os.fspath(outdir))
    given = [capture] if isinstance(capture, (str, os.PathLike)) else list(capture)
    reader = CaptureSet.of(given, max_packets)
    summary = write_folder(final, replace, lambda tmp: _write_all(tmp, reader, window_requests))
    return CaptureWorkload(final, final / "trace.csv", summary)


def _write_all(tmp: Path, reader: CaptureReader, window_requests: int) -> dict[str, object]:
    w = _Writer(tmp, reader)
    mt = Matcher(window_requests=window_requests)
    try:
        for chunk in reader.chunks():
            for done in mt.feed(chunk):
                w.add(done)
        for done in mt.finish():
            w.add(done)
        w.end(mt.last_us)
    finally:
        w.body.close()
    if w.rows == 0:
        raise _no_requests(reader)
    counts = w.finish()
    mapped = w.names.mapped
    extra: dict[str, object] = {**counts, "payloads_clipped": w.clipped, "paths_mapped_count": len(mapped),
                                "paths_mapped": dict(list(mapped.items())[:_MAPPED_SHOWN])}
    summary = _summary(w, mt, extra)
    with open(tmp / "capture.json", "w") as fh:
        json.dump(summary, fh, indent=1)
        fh.write("\n")
    return summary
