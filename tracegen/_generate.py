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

import math
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wotbench._errors import UserError
from wotbench.formats import METHODS, RESOURCE_COLUMNS
from wotbench.tracegen._csvtext import TraceEncoder, device_host
from wotbench.tracegen._expected import EXPECTED_FORMAT, expected_json, expected_stats
from wotbench.tracegen._spec import WorkloadSpec
from wotbench.tracegen._streams import arrivals

__all__ = ["generate", "GeneratedWorkload", "Requests", "build_requests", "device_host",
           "CD_HOST", "CD_PATH", "EXPECTED_FORMAT"]

CD_HOST = "cd-node"
CD_PATH = "/r/0"
# Threads that encode trace chunks (bounded by the machine's cores).
_ENCODE_WORKERS = 2


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
# writing


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
        fh.write(expected_json(expected))

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
