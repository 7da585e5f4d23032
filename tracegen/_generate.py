"""Turn a WorkloadSpec into the files the GE, the devices and the CD module read.

Output directory (written into a temporary sibling, renamed into place at
the end; nothing is left behind on error)::

    trace.csv               device_id,send_ts_us,method,uri[,payload] sorted by time; the
                            payload column exists when a group has payload_bytes > 0; a
                            group with observe adds OBS and UNOBS rows (tracegen/_obsrows.py)
    resources/dev-<id>.csv  path,service_us for each device (and observe_rit,notify_type,
                            max_age,observe_seed when some group has observe)
    traces/dev-<id>.csv     per-device traces (only with per_device_traces)
    devices.csv             device_id,group,host,resource_file
    expected.json           intended statistics (format 1), see README.md
    cd/trace.csv            the CD-GE's trace: device id N, host cd-node
    cd/resources.csv        the CD node's one deterministic resource /r/0
    .wotbench-made          "wotbench tracegen": the marker that lets --force replace it
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.base.formats import METHODS, RESOURCE_COLUMNS, RESOURCE_OBSERVE_COLUMNS
from wotbench.tracegen._csvtext import TraceEncoder, device_host
from wotbench.tracegen._expected import EXPECTED_FORMAT, expected_json, expected_stats
from wotbench.tracegen._obsrows import (
    OBS,
    UNOBS,
    ObserveRows,
    build_observe_rows,
    device_seeds,
    merge_rows,
    observe_expected,
)
from wotbench.tracegen._requests import Requests, _group_by_device, build_requests

if TYPE_CHECKING:
    from collections.abc import Callable

    from wotbench.spec import GroupWorkload, WorkloadSpec

_T = TypeVar("_T")

__all__ = ["generate", "check_out", "write_folder", "CONTENTS", "GeneratedWorkload", "Requests", "build_requests",
           "device_host", "CD_HOST", "CD_PATH", "EXPECTED_FORMAT"]

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
    observations: int = 0
    """OBS rows of the trace (each with its UNOBS row): one per (device, observable resource)."""

    @staticmethod
    def host(device_id: int) -> str:
        return device_host(device_id)


def _resource_csv(values: np.ndarray) -> bytes:
    lines = [",".join(RESOURCE_COLUMNS)] + [f"/r/{k},{int(v)}" for k, v in enumerate(values)]
    return ("\n".join(lines) + "\n").encode()


def _observe_csv(values: np.ndarray, grp: GroupWorkload, seeds: np.ndarray) -> list[bytes]:
    """The resource files of a group when some group has ``observe`` (one per
    device: the seed differs): the /r/<k> rows with empty observe cells, then
    the group's /o/<j> rows."""
    empty = "," * len(RESOURCE_OBSERVE_COLUMNS)
    head = "\n".join([",".join(RESOURCE_COLUMNS + RESOURCE_OBSERVE_COLUMNS)]
                     + [f"/r/{k},{int(v)}{empty}" for k, v in enumerate(values)]) + "\n"
    o = grp.observe
    if o is None:
        return [head.encode()] * seeds.size
    rows = [f"/o/{j},{o.service_us},{o.device_rit()},{o.type},{o.max_age_s}," for j in range(o.resources)]
    return [(head + "".join(f"{r}{int(sd)}\n" for r in rows)).encode() for sd in seeds.tolist()]


#: What tracegen writes into its output folder, generated or from a capture
#: (capture.json, service/: tracegen/_fromcapture.py): all that --force may replace.
CONTENTS = outpath.Contents("wotbench tracegen",
                            frozenset({"trace.csv", "devices.csv", "expected.json", "capture.json"}),
                            {"resources": r"dev-\d+\.csv", "traces": r"dev-\d+\.csv",
                             "cd": r"(trace|resources)\.csv", "service": r"dev-\d+\.csv"})


def check_out(outdir: str | os.PathLike[str], overwrite: bool) -> tuple[Path, bool]:
    """The resolved output folder and whether one is there to replace; a
    UserError (nothing touched) for a path that is not a new folder, an
    empty one or, with ``overwrite``, one tracegen made (its marker file,
    nothing else in it)."""
    final = outpath.resolve(outdir, "--out")
    return final, outpath.check_replaceable(final, CONTENTS, overwrite, "--out", os.fspath(outdir))


def generate(spec: WorkloadSpec, outdir: str | os.PathLike[str], *, per_device_traces: bool = False,
             overwrite: bool = False) -> GeneratedWorkload:
    """Generate the workload into ``outdir`` atomically (temp dir beside it,
    renamed at the end; folders made above it are removed again on error).

    An existing non-empty ``outdir`` is an error unless ``overwrite`` and
    tracegen made it (see :func:`check_out`). A spec with ``replay`` writes
    the replayed capture instead (:func:`wotbench.tracegen._replay.replay`).
    """
    if spec.replay is not None:         # a captured workload replayed (tracegen/_replay.py)
        if per_device_traces:
            raise UserError("not with a replay (workload.replay)", field="--per-device-traces")
        from wotbench.tracegen._replay import replay

        return replay(spec, outdir, overwrite=overwrite)
    final, replace = check_out(outdir, overwrite)
    return write_folder(final, replace, lambda tmp: _write_all(spec, tmp, Path(outdir), per_device_traces))


def write_folder(final: Path, replace: bool, fill: Callable[[Path], _T]) -> _T:
    """``fill`` writes tracegen's files into a temporary folder beside
    ``final``, which then becomes ``final`` with tracegen's marker (see
    :func:`_install`); on any error nothing is left, not even the folders
    made above ``final``."""
    made = outpath.make_parents(final)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    except BaseException:
        outpath.remove_made(made)
        raise
    try:
        info = fill(tmp)
        outpath.write_marker(tmp, CONTENTS.maker)
        _install(tmp, final, replace)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        outpath.remove_made(made)
        raise
    return info


def _install(tmp: Path, final: Path, replace: bool) -> None:
    """Renames ``tmp`` to ``final``; a folder there (checked replaceable) is
    moved aside first and removed once the new one is in place."""
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, final)               # nothing there, or an empty folder
        return
    except OSError as err:
        if not replace or err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise UserError(f"cannot put the output in place: {err.strerror}", final, field="--out") from None
    trash = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
    try:
        os.rename(final, trash / "old")
    except OSError as err:
        trash.rmdir()
        raise UserError(f"cannot replace it: {err.strerror}", final, field="--out") from None
    try:
        os.rename(tmp, final)
    except OSError as err:
        os.rename(trash / "old", final)
        trash.rmdir()
        raise UserError(f"cannot replace it: {err.strerror}", final, field="--out") from None
    shutil.rmtree(trash, ignore_errors=True)


def _write_all(spec: WorkloadSpec, tmp: Path, final: Path, per_device_traces: bool) -> GeneratedWorkload:
    req = build_requests(spec, rows_by_device=per_device_traces)
    obs = build_observe_rows(spec, req.duration_us)
    n_dev = spec.n_devices
    group_of = np.asarray(spec.group_of_device())
    hosts = [device_host(d) for d in range(n_dev)]
    used = [i for i, m in enumerate(METHODS) if any(dict(g.methods).get(m, 0.0) > 0 for g in spec.groups)]
    observed = None
    if obs is not None:
        used += [OBS, UNOBS]
        observed = [0 if g.observe is None else g.observe.resources for g in spec.groups]
    enc = TraceEncoder(hosts, group_of, [g.resources for g in spec.groups],
                       [g.payload_bytes for g in spec.groups], methods_used=used, observed=observed)
    rows = merge_rows((req.t_us, req.dev, req.method, req.res), obs)
    # The trace (most of the work) is encoded by worker threads while this
    # thread computes the statistics and writes the small files.
    workers = max(1, min(_ENCODE_WORKERS, os.cpu_count() or 1))
    writer = ThreadPoolExecutor(1, thread_name_prefix="tracegen-write")
    trace_done = writer.submit(_write_trace, tmp / "trace.csv", enc, rows, workers)
    try:
        info = _write_rest(spec, req, obs, rows, enc, tmp, final, per_device_traces)
        trace_done.result()
    finally:
        writer.shutdown(wait=True, cancel_futures=True)
    return info


def _write_trace(path: Path, enc: TraceEncoder, rows: tuple[np.ndarray, ...], workers: int) -> None:
    with open(path, "wb") as fh:
        enc.write(fh, *rows, workers=workers)


def _write_rest(spec: WorkloadSpec, req: Requests, obs: ObserveRows | None, rows: tuple[np.ndarray, ...],
                enc: TraceEncoder, tmp: Path, final: Path, per_device_traces: bool) -> GeneratedWorkload:
    """Everything but trace.csv (which another thread writes meanwhile)."""
    resources = _write_devices(spec, tmp, final)
    device_traces = _write_device_traces(req, obs, rows, enc, tmp, final) if per_device_traces else {}
    cd_service = spec.cd_service_effective_us()
    expected = expected_stats(spec, req)
    if obs is not None:
        expected["polling_requests"] = expected["requests"]
        expected["requests"] = int(rows[0].size)
        expected["observe"] = observe_expected(spec, obs, req.duration_us)
    expected["cd"] = _write_cd(spec, req.duration_us, cd_service, tmp)
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
        device_ids=tuple(range(spec.n_devices)),
        device_group=tuple(spec.groups[int(g)].name for g in spec.group_of_device()),
        requests=int(rows[0].size),
        duration_us=req.duration_us,
        cd_device_id=spec.cd_device_id,
        cd_rit_us=spec.cd_rit_us,
        cd_service_us=cd_service,
        cd_calibration_us=spec.cd_calibration_us,
        device_traces=device_traces,
        observations=0 if obs is None else obs.count,
    )


def _write_devices(spec: WorkloadSpec, tmp: Path, final: Path) -> dict[int, Path]:
    """resources/dev-<id>.csv and devices.csv; returns each device's resource file."""
    group_of = spec.group_of_device()
    (tmp / "resources").mkdir()
    resources: dict[int, Path] = {}
    if spec.observed:
        seeds = device_seeds(spec.seed, spec.n_devices)
        first = 0
        for g in spec.groups:
            for i, data in enumerate(_observe_csv(g.resource_service_us, g, seeds[first:first + g.count])):
                (tmp / "resources" / f"dev-{first + i}.csv").write_bytes(data)
            first += g.count
    else:
        res_bytes = [_resource_csv(g.resource_service_us) for g in spec.groups]
        for d in range(spec.n_devices):
            (tmp / "resources" / f"dev-{d}.csv").write_bytes(res_bytes[int(group_of[d])])
    for d in range(spec.n_devices):
        resources[d] = final / "resources" / f"dev-{d}.csv"
    with open(tmp / "devices.csv", "w") as fh:
        fh.write("device_id,group,host,resource_file\n")
        fh.writelines(f"{d},{spec.groups[int(group_of[d])].name},{device_host(d)},resources/dev-{d}.csv\n"
                      for d in range(spec.n_devices))
    return resources


def _write_device_traces(req: Requests, obs: ObserveRows | None, all_rows: tuple[np.ndarray, ...],
                         enc: TraceEncoder, tmp: Path, final: Path) -> dict[int, Path]:
    """traces/dev-<id>.csv: each device's own rows of the trace."""
    assert req.rows_by_device is not None
    t, dev, method, res = all_rows
    by_device, dev_counts = req.rows_by_device, req.dev_counts
    if obs is not None:
        by_device = _group_by_device(dev, dev_counts.size)
        dev_counts = np.bincount(dev, minlength=dev_counts.size)
    (tmp / "traces").mkdir()
    ends = np.cumsum(dev_counts)
    out: dict[int, Path] = {}
    for d in range(dev_counts.size):
        rows = by_device[ends[d] - dev_counts[d]:ends[d]]
        with open(tmp / "traces" / f"dev-{d}.csv", "wb") as fh:
            enc.write(fh, t[rows], dev[rows], method[rows], res[rows])
        out[d] = final / "traces" / f"dev-{d}.csv"
    return out


def _write_cd(spec: WorkloadSpec, duration_us: int, cd_service: int, tmp: Path) -> dict[str, object]:
    """The CD workload: a deterministic RIT to one deterministic resource (paper section 6.2),
    over the calibration and the test. Returns its entry of expected.json."""
    cd_t = np.arange(0, spec.cd_calibration_us + duration_us, spec.cd_rit_us, dtype=np.int64)
    (tmp / "cd").mkdir()
    cd_enc = TraceEncoder([CD_HOST], np.zeros(1), [1], [0], device_ids=[spec.cd_device_id],
                          methods_used=[METHODS.index("GET")])
    with open(tmp / "cd" / "trace.csv", "wb") as fh:
        # The resource is /r/0 in the encoder; the CD node's resource file names it the same.
        cd_enc.write(fh, cd_t, np.zeros(cd_t.size, dtype=np.int32), np.zeros(cd_t.size, dtype=np.uint8),
                     np.zeros(cd_t.size, dtype=np.int32))
    (tmp / "cd" / "resources.csv").write_bytes(_resource_csv(np.array([cd_service])))
    return {
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
