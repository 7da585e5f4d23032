"""Turn a WorkloadSpec into the files the GE, the devices and the CD module read.

Output directory (written into a temporary sibling, renamed into place at
the end; nothing is left behind on error)::

    trace.csv               device_id,send_ts_us,method,uri[,payload] sorted by time; the
                            payload column exists when a group has payload_bytes > 0
    resources/dev-<id>.csv  path,service_us for each device
    traces/dev-<id>.csv     per-device traces (only with per_device_traces)
    devices.csv             device_id,group,host,resource_file
    expected.json           intended statistics (format 1), see README.md
    cd/trace.csv            the CD-GE's trace: device id N, host cd-node
    cd/resources.csv        the CD node's one deterministic resource /r/0
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wotbench import __version__
from wotbench._errors import UserError
from wotbench.formats import METHODS, RESOURCE_COLUMNS
from wotbench.tracegen import stats
from wotbench.tracegen.csvtext import TraceEncoder
from wotbench.tracegen.distribution import Distribution
from wotbench.tracegen.spec import WorkloadSpec
from wotbench.tracegen.streams import arrivals

__all__ = ["generate", "GeneratedWorkload", "Requests", "build_requests", "device_host",
           "CD_HOST", "CD_PATH", "EXPECTED_FORMAT"]

CD_HOST = "cd-node"
CD_PATH = "/r/0"
EXPECTED_FORMAT = 1
# Threads that encode trace chunks (bounded by the machine's cores).
_ENCODE_WORKERS = 2


def device_host(device_id: int) -> str:
    """Placeholder host of a device in trace URIs (the harness maps it with ``--hosts``)."""
    return f"dev-{device_id}"


@dataclass(frozen=True)
class GeneratedWorkload:
    """What :func:`generate` wrote (paths are inside ``outdir``)."""

    outdir: Path
    trace: Path
    expected: Path
    devices_csv: Path
    resources: dict[int, Path]
    """Resource file of each device id."""
    cd_trace: Path
    cd_resource: Path
    device_ids: tuple[int, ...]
    device_group: tuple[str, ...]
    """Group name of each device id (index = id)."""
    requests: int
    duration_us: int
    cd_device_id: int
    cd_rit_us: int
    cd_service_us: int
    cd_calibration_us: int
    cd_host: str = CD_HOST
    device_traces: dict[int, Path] = field(default_factory=dict)

    @staticmethod
    def host(device_id: int) -> str:
        return device_host(device_id)


@dataclass
class Requests:
    """All requests of a workload, sorted by send time (ties: by device id)."""

    t_us: np.ndarray
    dev: np.ndarray
    method: np.ndarray
    """Index into formats.METHODS."""
    res: np.ndarray
    """Resource index k (URI path /r/<k>) within the device."""
    duration_us: int
    t_grouped: np.ndarray
    """The same send times grouped by device (device 0 first), ascending within a device."""
    dev_counts: np.ndarray
    rows_by_device: np.ndarray | None = None
    """Row index (into the sorted arrays) of each entry of t_grouped, when asked for."""


def _merge_streams(t: np.ndarray, dev: np.ndarray, n_dev: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows sorted by (time, device). Rows equal in both are indistinguishable
    here (method and resource are drawn later), so this equals a stable sort
    of the device-grouped input by time. One sort of int64 keys when they fit."""
    if t.size == 0:
        return t, dev
    bits = max(1, (n_dev - 1).bit_length())
    if int(t.max()) < (1 << (63 - bits)):
        key = t << bits
        key |= dev
        key.sort()
        dev_sorted = (key & ((1 << bits) - 1)).astype(np.int32)
        key >>= bits
        return key, dev_sorted
    order = np.lexsort((dev, t))
    return t[order], dev[order]


def _keep_first(t_pre: np.ndarray, counts_pre: np.ndarray, last: int, dev_after: np.ndarray,
                limit: int) -> tuple[np.ndarray, np.ndarray]:
    """Device-grouped times and counts of the first ``limit`` sends in time order.

    ``last`` is the time of the last kept send and ``dev_after`` the devices
    of the sends sorted after the cut: those at time ``last`` are the ties
    to drop, each the latest kept send of its device.
    """
    keep = t_pre <= last
    extra = int(np.count_nonzero(keep)) - limit
    ends = np.cumsum(counts_pre)
    starts = ends - counts_pre
    kept = np.concatenate(([0], np.cumsum(keep)))
    counts = kept[ends] - kept[starts]
    if extra > 0:
        devs, times = np.unique(dev_after[:extra], return_counts=True)
        for d, c in zip(devs.tolist(), times.tolist()):
            end = int(starts[d] + counts[d])
            keep[end - c:end] = False
            counts[d] -= c
    return t_pre[keep], counts


def _group_by_device(dev: np.ndarray, n_dev: int) -> np.ndarray:
    """Row order that groups rows by device, keeping row order within a device."""
    n = dev.size
    bits = max(1, (n - 1).bit_length()) if n else 1
    if n and (n_dev - 1).bit_length() + bits <= 63:
        key = dev.astype(np.int64) << bits
        key |= np.arange(n, dtype=np.int64)
        key.sort()
        return key & ((1 << bits) - 1)
    return np.argsort(dev, kind="stable")


def _draw(spec: WorkloadSpec, horizon: float, seeds: list[np.random.SeedSequence]
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Send times (int64 us) and device ids.

    Gateway scope: one time-sorted stream, devices drawn uniformly; the
    third value is None. Device scope: rows grouped by device (ascending
    within each), and the third value is each device's row count.
    """
    if spec.rit_scope == "gateway":
        assert spec.rit is not None
        rng = np.random.default_rng(seeds[0])
        t, _ = arrivals(spec.rit, 1, horizon, rng)
        dev = rng.integers(0, spec.n_devices, t.size, dtype=np.int32)
        return t.astype(np.int64), dev, None  # truncation is floor: t >= 0
    times, devs, counts = [], [], []
    first = 0
    for g, grp in enumerate(spec.groups):
        assert grp.rit is not None
        t, c = arrivals(grp.rit, grp.count, horizon, np.random.default_rng(seeds[3 + g]))
        times.append(t.astype(np.int64))
        devs.append(np.repeat(np.arange(first, first + grp.count, dtype=np.int32), c))
        counts.append(c)
        first += grp.count
    return np.concatenate(times), np.concatenate(devs), np.concatenate(counts)


def build_requests(spec: WorkloadSpec, *, rows_by_device: bool = False) -> Requests:
    """Draw every request of the workload (deterministic for a given spec and seed).

    Duration mode keeps every send before the end of the test; request-count
    mode draws past the expected end and keeps the first ``requests`` sends
    (the test then ends at the first send not kept).
    """
    seeds = np.random.SeedSequence(spec.seed).spawn(3 + len(spec.groups))
    n_dev = spec.n_devices
    if spec.duration_us is not None:
        t_pre, dev_pre, counts_pre = _draw(spec, float(spec.duration_us), seeds)
        limit = t_pre.size
    else:
        assert spec.requests is not None
        limit = spec.requests
        rate = spec.aggregate_rate_per_us()
        horizon = limit / rate * (1 + 6 / math.sqrt(limit)) + 20 / rate
        while True:
            t_pre, dev_pre, counts_pre = _draw(spec, horizon, seeds)
            if t_pre.size > limit:
                break
            horizon *= 1.5
    cut = limit < t_pre.size
    if counts_pre is None:
        t, dev = t_pre, dev_pre
        duration = int(t[limit]) if cut else int(spec.duration_us or 0)
        t, dev = t[:limit], dev[:limit]
        counts = np.bincount(dev, minlength=n_dev).astype(np.int64)
        order = _group_by_device(dev, n_dev)
        t_grouped = t[order]
        rows = order if rows_by_device else None
    else:
        t, dev = _merge_streams(t_pre, dev_pre, n_dev)
        duration = int(t[limit]) if cut else int(spec.duration_us or 0)
        t_grouped, counts = t_pre, counts_pre
        if cut:
            t_grouped, counts = _keep_first(t_pre, counts_pre, int(t[limit - 1]), dev[limit:], limit)
            t, dev = t[:limit], dev[:limit]
        rows = _group_by_device(dev, n_dev) if rows_by_device else None
    method, res = _methods_and_resources(spec, dev, np.random.default_rng(seeds[1]),
                                         np.random.default_rng(seeds[2]))
    return Requests(t, dev, method, res, duration, t_grouped, counts.astype(np.int64), rows)


def _methods_and_resources(spec: WorkloadSpec, dev: np.ndarray, rng_m: np.random.Generator,
                           rng_r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    n = dev.size
    groups = spec.groups
    if len(groups) == 1:
        sel = [slice(None)]
        sizes = [n]
    else:
        gidx = spec.group_of_device()[dev]
        sel = [gidx == g for g in range(len(groups))]
        sizes = [int(s.sum()) for s in sel]
    method = np.zeros(n, dtype=np.uint8)
    if any(dict(g.methods).get("GET", 0.0) < 1.0 for g in groups):
        u = rng_m.random(n)
        for g, s in zip(groups, sel):
            cum = np.cumsum(g.method_shares)[:-1]
            method[s] = np.searchsorted(cum, u[s], side="right")
    same_k = len({g.resources for g in groups}) == 1
    if same_k:
        res = rng_r.integers(0, groups[0].resources, n, dtype=np.int32)
    else:
        res = np.empty(n, dtype=np.int32)
        for g, s, size in zip(groups, sel, sizes):
            res[s] = rng_r.integers(0, g.resources, size, dtype=np.int32)
    return method, res


# ---------------------------------------------------------------------------
# expected.json


def _r(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), 3)


def _summ(mean: float | None, pct: np.ndarray | None) -> dict[str, float | None]:
    return {k: _r(v) for k, v in stats.summary(mean, pct).items()}


def _pooled(values: np.ndarray) -> tuple[float | None, np.ndarray | None]:
    """Mean and percentiles; reorders ``values`` (scratch)."""
    if values.size == 0:
        return None, None
    return float(values.mean(dtype=np.float64)), stats.percentiles_inplace(values)


def _target_rit(spec: WorkloadSpec, g: int | None) -> dict[str, object] | None:
    """Intended RIT of a device of group g (None: of the aggregate stream)."""
    def exp_of(mean: float) -> dict[str, object]:
        return Distribution("exp", f"exp:{mean:g}us", mean=mean).describe(stats.PERCENTILES)

    if spec.rit_scope == "gateway":
        assert spec.rit is not None
        if g is None:
            return spec.rit.describe(stats.PERCENTILES)
        mean = spec.rit.mean_us() * spec.n_devices
        return exp_of(mean) if spec.rit.kind == "exp" else {"dist": None, "mean_us": mean}
    if g is not None:
        rit = spec.groups[g].rit
        assert rit is not None
        return rit.describe(stats.PERCENTILES)
    mean = 1.0 / spec.aggregate_rate_per_us()
    if all(grp.rit is not None and grp.rit.kind == "exp" for grp in spec.groups):
        return exp_of(mean)  # a superposition of Poisson streams is Poisson
    return {"dist": None, "mean_us": mean}


def expected_stats(spec: WorkloadSpec, req: Requests) -> dict[str, object]:
    """The intended statistics ("expected" half of expected-versus-submitted)."""
    n_dev = spec.n_devices
    dur_s = req.duration_us / 1e6
    counts = req.dev_counts
    group_of = spec.group_of_device()
    firsts = np.concatenate(([0], np.cumsum([g.count for g in spec.groups])))

    # RITs per device.
    rit_sorted, n_rit = stats.rit_by_segment(req.t_grouped, counts)
    rit_pct = stats.segment_percentiles(rit_sorted, n_rit)
    ends = np.cumsum(counts)
    starts = ends - counts
    has2 = counts > 1
    rit_mean = np.full(n_dev, np.nan)
    if has2.any():
        rit_mean[has2] = (req.t_grouped[ends[has2] - 1] - req.t_grouped[starts[has2]]) / (counts[has2] - 1)
    rit_seg_start = np.concatenate(([0], np.cumsum(n_rit)))

    # Service times per device: counts of requests per (device, resource).
    ks = np.array([g.resources for g in spec.groups], dtype=np.int64)
    if len(spec.groups) == 1:
        code = req.dev.astype(np.int64) * ks[0] + req.res
    else:
        dev_base = np.concatenate(([0], np.cumsum(ks[group_of])))[:-1]
        code = dev_base[req.dev] + req.res
    per_res = np.bincount(code, minlength=int(ks[group_of].sum()))
    del code
    svc_mean = np.full(n_dev, np.nan)
    svc_pct = np.full((n_dev, len(stats.PERCENTILES)), np.nan)
    agg_vals, agg_counts = [], []
    groups_out = []
    off = 0
    for g, grp in enumerate(spec.groups):
        a, b = int(firsts[g]), int(firsts[g + 1])
        vals = grp.resource_service_us
        cmat = per_res[off:off + grp.count * grp.resources].reshape(grp.count, grp.resources)
        off += grp.count * grp.resources
        n_g = cmat.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            svc_mean[a:b] = (cmat @ vals) / n_g
        svc_pct[a:b] = stats.counts_percentiles(vals, cmat)
        pooled_counts = cmat.sum(axis=0)
        agg_vals.append(vals)
        agg_counts.append(pooled_counts)
        g_req = int(counts[a:b].sum())
        g_rits = rit_sorted[rit_seg_start[a]:rit_seg_start[b]]
        r_mean, r_pct = _pooled(g_rits)
        s_pct = stats.counts_percentiles(vals, pooled_counts)[0]
        s_mean = float(pooled_counts @ vals / g_req) if g_req else None
        groups_out.append({
            "name": grp.name,
            "devices": grp.count,
            "first_device_id": a,
            "requests": g_req,
            "rate_per_s": _r(g_req / dur_s),
            "rit": _summ(r_mean, r_pct),
            "service": _summ(s_mean, s_pct),
            "methods": {m: round(s, 6) for m, s in grp.methods},
            "payload_bytes": grp.payload_bytes,
            "resources": grp.resources,
            "target": {
                "rate_per_s_per_device": _r(spec.device_rate_per_us()[g] * 1e6),
                "rit": _target_rit(spec, g),
                "service": grp.service.describe(stats.PERCENTILES),
                "resource_mean_us": _r(grp.resource_mean_us),
            },
        })

    order = np.argsort(np.concatenate(agg_vals), kind="stable")
    all_vals = np.concatenate(agg_vals)[order]
    all_counts = np.concatenate(agg_counts)[order]
    n_all = int(req.t_us.size)
    agg_rit_mean = float((req.t_us[-1] - req.t_us[0]) / (n_all - 1)) if n_all > 1 else None
    agg_rit_pct = stats.percentiles_inplace(np.diff(req.t_us))
    devices_out = [
        {
            "id": d,
            "group": spec.groups[int(group_of[d])].name,
            "host": device_host(d),
            "requests": int(counts[d]),
            "rate_per_s": _r(counts[d] / dur_s),
            "rit": _summ(rit_mean[d], rit_pct[d]),
            "service": _summ(svc_mean[d], svc_pct[d]),
        }
        for d in range(n_dev)
    ]
    return {
        "format": EXPECTED_FORMAT,
        "generator": f"wotbench.tracegen {__version__}",
        "seed": spec.seed,
        "rit_scope": spec.rit_scope,
        "duration_us": req.duration_us,
        "requests": n_all,
        "devices": n_dev,
        "percentiles": list(stats.PERCENTILES),
        "aggregate": {
            "requests": n_all,
            "rate_per_s": _r(n_all / dur_s),
            "rit": _summ(agg_rit_mean, agg_rit_pct),
            "service": _summ(float(all_counts @ all_vals / n_all) if n_all else None,
                             stats.counts_percentiles(all_vals, all_counts)[0]),
            "target": {
                "rate_per_s": _r(spec.aggregate_rate_per_us() * 1e6),
                "rit": _target_rit(spec, None),
                "service_mean_us": _r(spec.mean_service_us()),
            },
        },
        "groups": groups_out,
        "device_stats": devices_out,
    }


# ---------------------------------------------------------------------------
# writing


def _expected_json(doc: dict[str, object]) -> str:
    """Indented JSON, one line per device (the C encoder is only used without indent)."""
    rows = doc.pop("device_stats")
    assert isinstance(rows, list)
    head = json.dumps(doc, indent=1, allow_nan=False)
    body = ",\n  ".join(json.dumps(r, allow_nan=False) for r in rows)
    doc["device_stats"] = rows
    return head[:-2] + ',\n "device_stats": [\n  ' + body + "\n ]\n}\n"


def _resource_csv(values: np.ndarray) -> bytes:
    lines = [",".join(RESOURCE_COLUMNS)] + [f"/r/{k},{int(v)}" for k, v in enumerate(values)]
    return ("\n".join(lines) + "\n").encode()


def _check_outdir(outdir: Path, overwrite: bool) -> None:
    if outdir.exists():
        if not outdir.is_dir():
            raise UserError("exists and is not a directory", str(outdir), field="--out")
        if any(outdir.iterdir()) and not overwrite:
            raise UserError("output directory exists and is not empty (use --force to replace it)",
                            str(outdir), field="--out")


def generate(spec: WorkloadSpec, outdir: Path, *, per_device_traces: bool = False,
             overwrite: bool = False) -> GeneratedWorkload:
    """Generate the workload into ``outdir`` atomically (temp dir beside it, renamed at the end).

    An existing non-empty ``outdir`` is an error unless ``overwrite``.
    """
    outdir = Path(outdir)
    _check_outdir(outdir, overwrite)
    outdir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.tmp-", dir=outdir.parent))
    try:
        info = _write_all(spec, tmp, outdir, per_device_traces)
        _install(tmp, outdir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return info


def _install(tmp: Path, outdir: Path) -> None:
    os.chmod(tmp, 0o755)
    if outdir.exists():
        trash = Path(tempfile.mkdtemp(prefix=f".{outdir.name}.old-", dir=outdir.parent))
        os.rename(outdir, trash / "old")
        os.rename(tmp, outdir)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.rename(tmp, outdir)


def _write_all(spec: WorkloadSpec, tmp: Path, final: Path, per_device_traces: bool) -> GeneratedWorkload:
    req = build_requests(spec, rows_by_device=per_device_traces)
    n_dev = spec.n_devices
    group_of = spec.group_of_device()
    hosts = [device_host(d) for d in range(n_dev)]
    used = [i for i, m in enumerate(METHODS) if any(dict(g.methods).get(m, 0.0) > 0 for g in spec.groups)]
    enc = TraceEncoder(hosts, group_of, [g.resources for g in spec.groups],
                       [g.payload_bytes for g in spec.groups], methods_used=used)
    # The trace (most of the work) is encoded by worker threads while this
    # thread computes the statistics and writes the small files.
    workers = max(1, min(_ENCODE_WORKERS, os.cpu_count() or 1))
    writer = ThreadPoolExecutor(1, thread_name_prefix="tracegen-write")
    trace_done = writer.submit(_write_trace, tmp / "trace.csv", enc, req, workers)
    try:
        info = _write_rest(spec, req, enc, tmp, final, per_device_traces)
        trace_done.result()
    finally:
        writer.shutdown(wait=True, cancel_futures=True)
    return info


def _write_trace(path: Path, enc: TraceEncoder, req: Requests, workers: int) -> None:
    with open(path, "wb") as fh:
        enc.write(fh, req.t_us, req.dev, req.method, req.res, workers=workers)


def _write_rest(spec: WorkloadSpec, req: Requests, enc: TraceEncoder, tmp: Path, final: Path,
                per_device_traces: bool) -> GeneratedWorkload:
    n_dev = spec.n_devices
    group_of = spec.group_of_device()
    hosts = [device_host(d) for d in range(n_dev)]

    (tmp / "resources").mkdir()
    res_bytes = [_resource_csv(g.resource_service_us) for g in spec.groups]
    resources: dict[int, Path] = {}
    for d in range(n_dev):
        (tmp / "resources" / f"dev-{d}.csv").write_bytes(res_bytes[int(group_of[d])])
        resources[d] = final / "resources" / f"dev-{d}.csv"

    device_traces: dict[int, Path] = {}
    if per_device_traces:
        assert req.rows_by_device is not None
        (tmp / "traces").mkdir()
        ends = np.cumsum(req.dev_counts)
        for d in range(n_dev):
            rows = req.rows_by_device[ends[d] - req.dev_counts[d]:ends[d]]
            with open(tmp / "traces" / f"dev-{d}.csv", "wb") as fh:
                enc.write(fh, req.t_us[rows], req.dev[rows], req.method[rows], req.res[rows])
            device_traces[d] = final / "traces" / f"dev-{d}.csv"

    with open(tmp / "devices.csv", "w") as fh:
        fh.write("device_id,group,host,resource_file\n")
        fh.writelines(f"{d},{spec.groups[int(group_of[d])].name},{hosts[d]},resources/dev-{d}.csv\n"
                      for d in range(n_dev))

    # CD workload: deterministic RIT to one deterministic resource (paper section 6.2).
    cd_service = spec.cd_service_effective_us()
    cd_len = spec.cd_calibration_us + req.duration_us
    cd_t = np.arange(0, cd_len, spec.cd_rit_us, dtype=np.int64)
    (tmp / "cd").mkdir()
    cd_enc = TraceEncoder([CD_HOST], np.zeros(1), [1], [0], device_ids=[spec.cd_device_id],
                          methods_used=[METHODS.index("GET")])
    with open(tmp / "cd" / "trace.csv", "wb") as fh:
        # The resource is /r/0 in the encoder; the CD node's resource file names it the same.
        cd_enc.write(fh, cd_t, np.zeros(cd_t.size, dtype=np.int32), np.zeros(cd_t.size, dtype=np.uint8),
                     np.zeros(cd_t.size, dtype=np.int32))
    (tmp / "cd" / "resources.csv").write_bytes(_resource_csv(np.array([cd_service])))

    expected = expected_stats(spec, req)
    expected["cd"] = {
        "device_id": spec.cd_device_id,
        "host": CD_HOST,
        "path": CD_PATH,
        "rit_us": spec.cd_rit_us,
        "service_us": cd_service,
        "service_auto": spec.cd_service_us is None,
        "calibration_us": spec.cd_calibration_us,
        "requests": int(cd_t.size),
        "trace": "cd/trace.csv",
        "resource": "cd/resources.csv",
    }
    with open(tmp / "expected.json", "w") as fh:
        fh.write(_expected_json(expected))

    return GeneratedWorkload(
        outdir=final,
        trace=final / "trace.csv",
        expected=final / "expected.json",
        devices_csv=final / "devices.csv",
        resources=resources,
        cd_trace=final / "cd" / "trace.csv",
        cd_resource=final / "cd" / "resources.csv",
        device_ids=tuple(range(n_dev)),
        device_group=tuple(spec.groups[int(g)].name for g in group_of),
        requests=int(req.t_us.size),
        duration_us=req.duration_us,
        cd_device_id=spec.cd_device_id,
        cd_rit_us=spec.cd_rit_us,
        cd_service_us=cd_service,
        cd_calibration_us=spec.cd_calibration_us,
        device_traces=device_traces,
    )
