"""The CD node's service time S: the mean service time of the devices under test.

The paper (section 6.2) configures the CD node with the same mean service
time as the devices so that it competes for the host the way they do. With
synthetic devices that mean is known from their resource files
(docs/formats.md, "Resource CSV"). When the trace is given, each resource is
weighted by how often the trace requests it (tracegen picks resources to
shape the service-time distribution, so the plain mean over resources is
only right when every resource is requested equally often).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_SERVICE_US, RESOURCE_COLUMNS

__all__ = ["read_resources", "mean_service_us", "cd_service_us"]

_DEV_FILE = re.compile(r"dev-(\d+)\.csv")


def read_resources(path: Path) -> pd.DataFrame:
    """A resource CSV as a DataFrame with ``path`` and ``service_us`` (validated)."""
    try:
        df = pd.read_csv(path, dtype={"path": str}, skipinitialspace=True)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read resource file: {exc}", path) from None
    for col in RESOURCE_COLUMNS:
        if col not in df.columns:
            raise UserError("missing column (header must start with path,service_us)", path, 1, col)
    if df.empty:
        raise UserError("no resources", path, 1)
    svc = pd.to_numeric(df["service_us"], errors="coerce")
    bad = svc.isna() | (svc < 0) | (svc > MAX_SERVICE_US) | (svc != np.floor(svc))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise UserError(f"expected an integer 0..{MAX_SERVICE_US}, got {df['service_us'].iloc[row]!r}",
                        path, row + 2, "service_us")
    return pd.DataFrame({"path": df["path"].astype(str), "service_us": svc.astype(np.int64)})


def mean_service_us(resource_files: Iterable[Path], trace: Path | None = None) -> float:
    """Mean service time (us) of the devices whose resource files are given.

    Without a trace: the mean over all resources of all files (each device
    weighted by its resource count). With a trace: the mean over the
    trace's requests, each request taking the service time of the resource
    it names on its device (files named ``dev-<device_id>.csv``).
    """
    files = [Path(f) for f in resource_files]
    if not files:
        raise UserError("no resource files: cannot compute the mean service time")
    tables = {f: read_resources(f) for f in files}
    if trace is None:
        return float(np.mean(np.concatenate([t["service_us"].to_numpy() for t in tables.values()])))
    per_device: dict[int, pd.Series] = {}
    for f, t in tables.items():
        m = _DEV_FILE.fullmatch(f.name)
        if m is None:
            raise UserError("resource file name must be dev-<device_id>.csv to weight by a trace", f)
        per_device[int(m.group(1))] = t.set_index("path")["service_us"]
    counts = _trace_counts(trace)
    total = 0.0
    n = 0
    for (dev, path), count in zip(counts.index, counts, strict=True):
        svc = per_device.get(int(dev))
        if svc is None:
            continue  # a device outside this set of files
        if path not in svc.index:
            raise UserError(f"device {dev} has no resource {path!r}", trace, None, "uri")
        total += float(svc[path]) * int(count)
        n += int(count)
    if n == 0:
        raise UserError("the trace requests none of the given devices' resources", trace)
    return total / n


def _trace_counts(trace: Path) -> pd.Series[int]:
    """Request count per (device_id, path) of a trace CSV (docs/formats.md)."""
    try:
        df = pd.read_csv(trace, header=None, names=["device_id", "uri"], usecols=[0, 3], dtype=str, comment="#",
                         skipinitialspace=True, skip_blank_lines=True)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read trace: {exc}", trace) from None
    df = df[df["device_id"].str.strip() != "device_id"]
    dev = pd.to_numeric(df["device_id"], errors="coerce")
    if dev.isna().any():
        raise UserError("device_id is not an integer", trace, None, "device_id")
    # coap://host[:port]/path?query -> /path (the resource file names paths).
    path = (df["uri"].str.strip().str.replace(r"^coap://[^/]*", "", regex=True)
            .str.replace(r"\?.*$", "", regex=True))
    return pd.DataFrame({"device_id": dev.astype(np.int64), "path": path}).groupby(["device_id", "path"]).size()


def cd_service_us(resources_dir: Path, trace: Path | None = None) -> int:
    """S for the CD node: the devices' mean service time in whole microseconds
    (at least 1, so that R_d = (R - S) / S is defined), from every
    ``dev-*.csv`` in ``resources_dir`` (tracegen's ``workload/resources``)."""
    files = sorted(Path(resources_dir).glob("dev-*.csv"))
    if not files:
        raise UserError("no dev-*.csv resource files", resources_dir)
    return max(1, int(round(mean_service_us(files, trace))))
