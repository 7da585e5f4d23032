"""Every request of a workload as arrays: send times, devices, methods, resources.

Deterministic for a given spec and seed: one ``numpy.random.SeedSequence``
spawns the gateway stream (0), the methods (1), the resources (2) and one
stream per group (3 + g). No files here; tracegen/_generate.py writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wotbench.tracegen._registry import sampler
from wotbench.tracegen._streams import arrivals

if TYPE_CHECKING:
    from wotbench.spec import WorkloadSpec

__all__ = ["Requests", "build_requests"]


@dataclass(frozen=True)
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
        for d, c in zip(devs.tolist(), times.tolist(), strict=True):
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
        t, _ = arrivals(sampler(spec.rit), 1, horizon, rng)
        dev = rng.integers(0, spec.n_devices, t.size, dtype=np.int32)
        return t.astype(np.int64), dev, None  # truncation is floor: t >= 0
    times, devs, counts = [], [], []
    first = 0
    for g, grp in enumerate(spec.groups):
        if grp.rit is None:             # observed only (``observe``): not polled
            t, c = np.zeros(0, dtype=np.int64), np.zeros(grp.count, dtype=np.int64)
        else:
            t, c = arrivals(sampler(grp.rit), grp.count, horizon, np.random.default_rng(seeds[3 + g]))
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
    sel: list[slice | np.ndarray] = [slice(None)]
    sizes = [n]
    if len(groups) > 1:
        gidx = np.asarray(spec.group_of_device())[dev]
        masks = [gidx == g for g in range(len(groups))]
        sel, sizes = list(masks), [int(m.sum()) for m in masks]
    method = np.zeros(n, dtype=np.uint8)
    if any(dict(g.methods).get("GET", 0.0) < 1.0 for g in groups):
        u = rng_m.random(n)
        for g, s in zip(groups, sel, strict=True):
            cum = np.cumsum(g.method_shares)[:-1]
            method[s] = np.searchsorted(cum, u[s], side="right")
    same_k = len({g.resources for g in groups}) == 1
    if same_k:
        res = rng_r.integers(0, groups[0].resources, n, dtype=np.int32)
    else:
        res = np.empty(n, dtype=np.int32)
        for g, s, size in zip(groups, sel, sizes, strict=True):
            res[s] = rng_r.integers(0, g.resources, size, dtype=np.int32)
    return method, res
