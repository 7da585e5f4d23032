"""A packet capture to the workload files (``wotbench tracegen --from-pcap``).

Output directory (written into a temporary sibling, renamed into place at
the end, through the same guard as :func:`wotbench.tracegen.generate`)::

    trace.csv               device_id,send_ts_us,method,uri[,payload]: the first transmission
                            of every request, time 0 = the first request
    resources/dev-<id>.csv  path,service_us: the device's captured paths, each with the
                            median of its service-time samples
    service/dev-<id>.csv    path,service_us: every sample (one per answered request)
    devices.csv             device_id,group,host,resource_file (group "capture")
    capture.json            what was found (format 1), README "From a packet capture"
    .wotbench-made          "wotbench tracegen"

A device is a server endpoint (address and port), numbered in the order of
its first request. expected.json is not written here: the replay workload
(issue 29 item 2) writes it from the trace it replays, after scaling.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_PATH_BYTES, MAX_PAYLOAD_BYTES, MAX_SERVICE_US, RESOURCE_COLUMNS
from wotbench.base.inputfile import shown
from wotbench.base.version import __version__
from wotbench.tracegen._capture import LINKTYPES, CaptureReader, Messages, read_capture
from wotbench.tracegen._csvtext import device_host
from wotbench.tracegen._generate import CONTENTS, write_folder
from wotbench.tracegen._pairs import CON, NON, Pairs, match

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


def _final_paths(paths: list[str]) -> tuple[list[str], dict[str, str]]:
    """Each captured path as written, and the mapped ones (new -> captured).
    A path the device cannot serve as is (empty, a character it refuses, too
    long, /.well-known/core) becomes ``/_p/<id>``."""
    kept = {p for p in paths if _path_ok(p)}
    out, mapped = [], {}
    for i, p in enumerate(paths):
        if p in kept:
            out.append(p)
            continue
        new, n = f"/_p/{i}", 0
        while new in kept:
            n += 1
            new = f"/_p/{i}_{n}"
        out.append(new)
        mapped[new] = p
    return out, mapped


@dataclass(frozen=True)
class _Trace:
    """The trace's requests (rows of Messages, time order) and their devices."""

    rows: np.ndarray          # Messages rows of the requests in the trace
    device: np.ndarray        # device id of each
    service_us: np.ndarray    # service sample of each, -1 when unanswered
    servers: np.ndarray       # endpoint id of each device id
    unsupported: int          # requests with a method the trace cannot hold (FETCH, PATCH, ...)


def _trace_of(m: Messages, pairs: Pairs) -> _Trace:
    req = pairs.requests
    ok = np.isin(m.code[req], list(_METHOD_OF_CODE))
    rows, service = req[ok], pairs.service_us[ok]
    servers_all, first = np.unique(m.dst[rows], return_index=True)
    servers = servers_all[np.argsort(first, kind="stable")]
    dev_of = np.zeros(int(servers.max()) + 1 if servers.size else 1, dtype=np.int64)
    dev_of[servers] = np.arange(servers.size)
    return _Trace(rows, dev_of[m.dst[rows]], service, servers, int(req.size - rows.size))


def _write_trace(path: Path, m: Messages, tr: _Trace, names: list[str]) -> int:
    """trace.csv; returns how many payloads were clipped to the trace's limit."""
    t = m.t_us[tr.rows] - (m.t_us[tr.rows[0]] if tr.rows.size else 0)
    pay = m.payload[tr.rows]
    with_payload = bool(np.any(pay > 0))
    clipped = int(np.count_nonzero(pay > MAX_PAYLOAD_BYTES))
    codes = m.code[tr.rows]
    with open(path, "w") as fh:
        fh.write("device_id,send_ts_us,method,uri" + (",payload\n" if with_payload else "\n"))
        step = 1 << 16
        for a in range(0, tr.rows.size, step):
            parts = zip(tr.device[a:a + step].tolist(), t[a:a + step].tolist(), codes[a:a + step].tolist(),
                        m.path[tr.rows[a:a + step]].tolist(), pay[a:a + step].tolist(), strict=True)
            if with_payload:
                fh.write("".join(f"{d},{ts},{_METHOD_OF_CODE[c]},coap://{device_host(d)}{names[p]},"
                                 f"{'x' * min(n, MAX_PAYLOAD_BYTES)}\n" for d, ts, c, p, n in parts))
            else:
                fh.write("".join(f"{d},{ts},{_METHOD_OF_CODE[c]},coap://{device_host(d)}{names[p]}\n"
                                 for d, ts, c, p, _ in parts))
    return clipped


def _medians(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys and the median of ``values`` per key (vectorised, sorted)."""
    order = np.lexsort((values, keys))
    k, v = keys[order], values[order]
    uniq, start, count = np.unique(k, return_index=True, return_counts=True)
    lo = v[start + (count - 1) // 2]
    hi = v[start + count // 2]
    return uniq, (lo + hi) / 2.0


def _write_resources(tmp: Path, m: Messages, tr: _Trace, names: list[str]) -> dict[str, int]:
    """resources/ and service/ of each device; returns counts for the summary."""
    (tmp / "resources").mkdir()
    (tmp / "service").mkdir()
    n_paths = max(len(names), 1)
    path = m.path[tr.rows].astype(np.int64)
    key = tr.device * n_paths + path
    answered = tr.service_us >= 0
    res_keys = np.unique(key)
    med_keys, meds = _medians(key[answered], tr.service_us[answered])
    dev_keys, dev_meds = _medians(tr.device[answered], tr.service_us[answered])
    overall = float(np.median(tr.service_us[answered])) if answered.any() else 0.0
    median_of = dict(zip(med_keys.tolist(), meds.tolist(), strict=True))
    dev_median = dict(zip(dev_keys.tolist(), dev_meds.tolist(), strict=True))
    no_samples = 0
    by_dev: dict[int, list[str]] = {}
    for k in res_keys.tolist():
        d, p = divmod(k, n_paths)
        value = median_of.get(k)
        if value is None:
            no_samples += 1
            value = dev_median.get(d, overall)
        by_dev.setdefault(d, []).append(f"{names[p]},{min(round(value), MAX_SERVICE_US)}\n")
    header = ",".join(RESOURCE_COLUMNS) + "\n"
    for d in range(tr.servers.size):
        (tmp / "resources" / f"dev-{d}.csv").write_text(header + "".join(sorted(by_dev[d])))
    _write_samples(tmp, tr, path, answered, names)
    return {"resources": int(res_keys.size), "resources_without_samples": no_samples}


def _write_samples(tmp: Path, tr: _Trace, path: np.ndarray, answered: np.ndarray, names: list[str]) -> None:
    """service/dev-<id>.csv: one row per answered request, in time order."""
    dev, p, s = tr.device[answered], path[answered], tr.service_us[answered]
    order = np.argsort(dev, kind="stable")
    dev, p, s = dev[order], p[order], s[order]
    bounds = np.searchsorted(dev, np.arange(tr.servers.size + 1))
    for d in range(tr.servers.size):
        a, b = bounds[d], bounds[d + 1]
        rows = "".join(f"{names[x]},{v}\n" for x, v in zip(p[a:b].tolist(), s[a:b].tolist(), strict=True))
        (tmp / "service" / f"dev-{d}.csv").write_text("path,service_us\n" + rows)


def _write_devices(tmp: Path, n: int) -> None:
    with open(tmp / "devices.csv", "w") as fh:
        fh.write("device_id,group,host,resource_file\n")
        fh.writelines(f"{d},capture,{device_host(d)},resources/dev-{d}.csv\n" for d in range(n))


def _stats(v: np.ndarray) -> dict[str, float | int | None]:
    if v.size == 0:
        return {"samples": 0, "mean_us": None, "p5_us": None, "p50_us": None, "p95_us": None}
    p5, p50, p95 = np.percentile(v, [5, 50, 95]).tolist()
    return {"samples": int(v.size), "mean_us": float(v.mean()), "p5_us": p5, "p50_us": p50, "p95_us": p95}


def _device_stats(m: Messages, tr: _Trace, reader: CaptureReader, span_s: float) -> list[dict[str, object]]:
    n = tr.servers.size
    reqs = np.bincount(tr.device, minlength=n)
    answered = np.bincount(tr.device[tr.service_us >= 0], minlength=n)
    paths = np.bincount(np.unique(tr.device * max(len(reader.paths), 1) + m.path[tr.rows])
                        // max(len(reader.paths), 1), minlength=n)
    return [{"id": d, "endpoint": reader.endpoints[int(tr.servers[d])], "host": device_host(d),
             "requests": int(reqs[d]), "rate_per_s": float(reqs[d]) / span_s if span_s > 0 else None,
             "resources": int(paths[d]), "answered": int(answered[d])} for d in range(n)]


def _summary(reader: CaptureReader, m: Messages, pairs: Pairs, tr: _Trace,
             extra: dict[str, object]) -> dict[str, object]:
    t = m.t_us[tr.rows]
    span_us = int(t[-1] - t[0]) if t.size else 0
    span_s = span_us / 1e6
    types = m.mtype[pairs.requests]
    codes = m.code[tr.rows]
    pay = m.payload[tr.rows]
    answered = int(np.count_nonzero(pairs.service_us >= 0))
    return {
        "format": CAPTURE_FORMAT, "generator": f"wotbench.tracegen {__version__}",
        "file": os.path.basename(reader.path), "capture_format": reader.format,
        "linktype": reader.linktype, "linktype_name": LINKTYPES.get(reader.linktype),
        "packets": reader.packets, "max_packets": reader.max_packets, "stopped_early": reader.stopped_early,
        "coap_messages": m.size, "requests": int(pairs.requests.size),
        "requests_in_trace": int(tr.rows.size), "requests_unsupported_method": tr.unsupported,
        "requests_with_query": reader.with_query, "responses": pairs.responses,
        "devices": int(tr.servers.size), "duration_us": span_us,
        "rate_per_s": tr.rows.size / span_s if span_s > 0 else None,
        "first_us": int(m.t_us.min()) if m.size else None, "last_us": int(m.t_us.max()) if m.size else None,
        "matched": {"requests_answered": answered, "requests_unanswered": int(pairs.requests.size) - answered,
                    "responses_matched": pairs.responses_matched, "responses_extra": pairs.responses_extra,
                    "responses_unmatched": pairs.responses_unmatched, "piggybacked": pairs.piggybacked,
                    "separate": pairs.separate},
        "retransmissions": pairs.retransmissions,
        "types": {"CON": int(np.count_nonzero(types == CON)), "NON": int(np.count_nonzero(types == NON))},
        "methods": {name: int(np.count_nonzero(codes == c)) for c, name in _METHOD_OF_CODE.items()
                    if np.any(codes == c)},
        "payload_bytes": {"mean": float(pay.mean()) if pay.size else None,
                          "max": int(pay.max()) if pay.size else None,
                          "nonzero": int(np.count_nonzero(pay))},
        "skipped": dict(reader.skipped),
        "service": {**_stats(tr.service_us[tr.service_us >= 0]), "note": SERVICE_NOTE},
        **extra,
        "device_stats": _device_stats(m, tr, reader, span_s),
    }


def _no_requests(reader: CaptureReader, m: Messages) -> UserError:
    skipped = ", ".join(f"{k} {v}" for k, v in reader.skipped.items() if v) or "none"
    return UserError(f"no CoAP request with GET, POST, PUT or DELETE found ({reader.packets} packets, "
                     f"{m.size} CoAP messages; skipped: {skipped})", shown(reader.path), field="capture")


def from_capture(capture: str | os.PathLike[str], outdir: str | os.PathLike[str], *,
                 overwrite: bool = False, max_packets: int | None = None) -> CaptureWorkload:
    """Read ``capture`` (its first ``max_packets`` records, or all) and write
    its workload into ``outdir`` atomically (nothing is written when the
    capture is refused)."""
    final = outpath.resolve(outdir, "--out")
    replace = outpath.check_replaceable(final, CONTENTS, overwrite, "--out", os.fspath(outdir))
    reader, m = read_capture(capture, max_packets)
    pairs = match(m)
    tr = _trace_of(m, pairs)
    if tr.rows.size == 0:
        raise _no_requests(reader, m)
    summary = write_folder(final, replace, lambda tmp: _write_all(tmp, reader, m, pairs, tr))
    return CaptureWorkload(final, final / "trace.csv", summary)


def _write_all(tmp: Path, reader: CaptureReader, m: Messages, pairs: Pairs, tr: _Trace) -> dict[str, object]:
    names, mapped = _final_paths(reader.paths)
    clipped = _write_trace(tmp / "trace.csv", m, tr, names)
    counts = _write_resources(tmp, m, tr, names)
    _write_devices(tmp, int(tr.servers.size))
    extra: dict[str, object] = {**counts, "payloads_clipped": clipped, "paths_mapped_count": len(mapped),
                                "paths_mapped": dict(list(mapped.items())[:_MAPPED_SHOWN])}
    summary = _summary(reader, m, pairs, tr, extra)
    with open(tmp / "capture.json", "w") as fh:
        json.dump(summary, fh, indent=1)
        fh.write("\n")
    return summary
