"""The device tier's share of a request through a gateway under test and the
latency the gateway adds, as distributions.

``device_share``: the residence times (request received to response sent)
of the devices behind the workload GEs, from their --stats histograms
(docs/formats.md, "Device stats JSON"), merged. The devices do not know the
phases: the histograms cover their whole life (warm-up, the readiness
probe's GET /.well-known/core and cool-down included), and the report says so.

``added_latency``: the workload GEs' response-time quantiles (ok rows of
the measurement phase, one pass over the Parquet caches, batch by batch)
minus the device residence quantiles at the same levels, p1..p99. A
QUANTILE DIFFERENCE, not a per-request difference: the p99 of the
responses need not be the p99 residence plus the p99 added time. It holds
the gateway, its two extra network legs and the GE's own receive path; a
negative value means the response quantile is below the device quantile
at that level (the phases differ, or the gateway answered some requests
itself: errors, caches) and is kept, not clipped.

Quantiles of a device histogram spread each bucket's values evenly over
it (lo <= t < hi, at most 1/64 of t wide) and interpolate between order
statistics like numpy's default, so they are within a bucket of exact."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from wotbench.base.errors import UserError
from wotbench.base.formats import DEVICE_STATS_HISTOGRAMS
from wotbench.reporting._load import GeData
from wotbench.reporting._shape import ListOf, Obj, read_record
from wotbench.reporting._sketch import Dist, GroupQuantiles

__all__ = ["LEVELS", "TABLE_LEVELS", "DeviceHist", "read_device_hists", "merge_hists", "hist_quantiles", "ok_response",
           "response_quantiles", "latency_section", "cpu_per_kreq", "latency_text", "gateway_latency_table"]

#: The levels of the added-latency curve (summary.json), and of the tables.
LEVELS: tuple[int, ...] = tuple(range(1, 100))
TABLE_LEVELS: tuple[int, ...] = (50, 90, 99)
RESIDENCE, QUEUE_WAIT = DEVICE_STATS_HISTOGRAMS[:2]      # (notify_lag_us: reporting/_notify.py)
_READ_HISTS = (RESIDENCE, QUEUE_WAIT)
_HIST = Obj({"buckets": ListOf(ListOf(int)), "overflow": int, "sum": int, "max": int},
            required=("buckets", "overflow", "sum", "max"))
#: What this module reads of a device's --stats file.
STATS_HISTS = Obj({"served": int, RESIDENCE: _HIST, QUEUE_WAIT: _HIST}, required=("served",))
#: The device histograms' overflow starts here (device/hist.h: 2^27 us).
TOP_US = 1 << 27


@dataclass(frozen=True)
class DeviceHist:
    """A histogram of whole microseconds: ``n[i]`` values with
    ``lo[i] <= t < hi[i]`` (ascending, disjoint), plus ``overflow`` values
    of TOP_US and more; ``vmax`` the largest value (exact)."""

    lo: np.ndarray
    hi: np.ndarray
    n: np.ndarray
    overflow: int
    vmax: int

    @property
    def count(self) -> int:
        return int(self.n.sum()) + self.overflow


def _hist(doc: dict[str, Any], name: str) -> DeviceHist:
    b = np.asarray(doc["buckets"], dtype=np.int64).reshape(-1, 3)
    if b.size and (np.any(b[:, 0] < 0) or np.any(b[:, 1] <= b[:, 0]) or np.any(b[:, 2] < 0)):
        raise ValueError(f"{name}: a bucket is not [lo, hi, count] with 0 <= lo < hi, count >= 0")
    return DeviceHist(b[:, 0], b[:, 1], b[:, 2], int(doc["overflow"]), int(doc["max"]))


def read_device_hists(path: Path) -> tuple[dict[str, DeviceHist] | None, str | None]:
    """A device's residence and queue-wait histograms, or (None, why not):
    the file is damaged, or holds none (a device older than the histograms)."""
    try:
        doc = read_record(path, STATS_HISTS)
    except UserError as err:
        return None, str(err)
    if any(k not in doc for k in _READ_HISTS):
        return None, f"{path.parent.name}: its stats have no residence histogram (an older device)"
    try:
        hists = {k: _hist(doc[k], k) for k in _READ_HISTS}
    except ValueError as err:
        return None, f"{path.parent.name}: {err}"
    if hists[RESIDENCE].count != doc["served"]:
        return None, (f"{path.parent.name}: its residence histogram counts {hists[RESIDENCE].count} "
                      f"requests, its `served` {doc['served']}")
    return hists, None


def merge_hists(hists: Iterable[DeviceHist]) -> DeviceHist | None:
    """One histogram of all (the devices share the fixed bucket set, so
    equal ``lo`` means the same bucket); None without any."""
    hs = list(hists)
    if not hs:
        return None
    lo = np.concatenate([h.lo for h in hs])
    hi = np.concatenate([h.hi for h in hs])
    n = np.concatenate([h.n for h in hs])
    keys, first, inv = np.unique(lo, return_index=True, return_inverse=True)
    return DeviceHist(keys, hi[first], np.bincount(inv, weights=n, minlength=keys.size).astype(np.int64),
                      sum(h.overflow for h in hs), max(h.vmax for h in hs))


def hist_quantiles(h: DeviceHist, q: Sequence[float]) -> np.ndarray:
    """Percentiles (0..100) of the histogram's values, NaN when it is empty:
    the k-th value of a bucket of n stands at lo + (k + 0.5) / n x (hi - lo)
    (overflow values spread over [TOP_US, max]); numpy's linear
    interpolation between order statistics; at most the exact max."""
    lo = np.append(h.lo, TOP_US).astype(np.float64)
    hi = np.append(h.hi, max(h.vmax + 1, TOP_US + 1)).astype(np.float64)
    n = np.append(h.n, h.overflow).astype(np.float64)
    cum = np.cumsum(n)
    total = int(cum[-1]) if cum.size else 0
    qa = np.asarray(q, dtype=np.float64)
    if total == 0:
        return np.full(qa.shape, np.nan)

    def order_stat(k: np.ndarray) -> np.ndarray:
        b = np.searchsorted(cum, k, side="right")
        j = k - (cum[b] - n[b])
        out: np.ndarray = lo[b] + (j + 0.5) / n[b] * (hi[b] - lo[b])
        return out

    r = (total - 1) * qa / 100.0
    k0 = np.floor(r)
    v0, v1 = order_stat(k0), order_stat(np.minimum(k0 + 1, total - 1))
    out: np.ndarray = np.minimum(v0 + (r - k0) * (v1 - v0), float(h.vmax))
    return out


def ok_response(data: Sequence[GeData], window: tuple[float, float], q: Sequence[float]) -> Dist | None:
    """The workload GEs' response times (ok rows intended in ``window``):
    n, mean and the percentiles ``q``; one pass over each Parquet cache,
    batch by batch (exact up to a few million values, then a log-linear
    sketch within 0.1 %: wotbench.reporting._sketch). None without any."""
    gq = GroupQuantiles()
    flt = ((pc.field("intended_us") >= window[0]) & (pc.field("intended_us") < window[1])
           & (pc.field("status") == "ok") & pc.field("response_us").is_valid())
    for g in data:
        for batch in g.dataset().scanner(columns=["response_us"], filter=flt).to_batches():
            v = np.asarray(batch.column(0).to_numpy(zero_copy_only=False), dtype=np.float64)
            v = v[np.isfinite(v)]
            if v.size:
                gq.add(np.zeros(v.size, np.int64), v)
    return gq.total(list(q))


def response_quantiles(data: Sequence[GeData], window: tuple[float, float],
                       q: Sequence[float]) -> tuple[np.ndarray | None, int]:
    """The percentiles ``q`` of :func:`ok_response` and how many values there were."""
    d = ok_response(data, window, q)
    if d is None:
        return None, 0
    return np.array([d.q[x] for x in q]), d.n


def _levels(values: np.ndarray, levels: Sequence[int]) -> dict[str, float]:
    return {f"p{lv}": float(values[LEVELS.index(lv)]) for lv in levels}


def _null(keys: Sequence[str], **extra: Any) -> dict[str, Any]:
    return {**dict.fromkeys(keys), **extra}


def latency_section(stats: dict[str, Path | None], data: Sequence[GeData],
                    window: tuple[float, float]) -> dict[str, Any]:
    """``device_share`` and ``added_latency`` of a gateway section. ``stats``:
    the devices behind the workload GEs (container -> its --stats file, None
    when missing). Values are None with a ``reason`` when they cannot be
    had; never guessed."""
    keys = [f"p{lv}" for lv in TABLE_LEVELS]
    share = _null(keys, source="device stats", scope="whole run (warm-up and cool-down included)",
                  devices=0, of=len(stats), served=0, queue_wait=None, reason=None)
    added = _null(keys, method="quantile difference", curve=None, levels=list(LEVELS), responses=0, reason=None)
    if not stats:
        share["reason"] = added["reason"] = "the devices behind the GEs are unknown (no device list of the GEs)"
        return {"device_share": share, "added_latency": added}
    got, why = [], []
    for name, path in sorted(stats.items()):
        h, err = read_device_hists(path) if path is not None else (None, f"{name}: no stats file")
        if h is None:
            why.append(err or name)
        else:
            got.append(h)
    res = merge_hists(x[RESIDENCE] for x in got)
    if res is None or res.count == 0:
        share["reason"] = added["reason"] = ("no device residence histograms: " + "; ".join(why[:3])
                                             if why else "no device served a request")
        return {"device_share": share, "added_latency": added}
    dev_q = hist_quantiles(res, LEVELS)
    wait = merge_hists(x[QUEUE_WAIT] for x in got)
    share.update(_levels(dev_q, TABLE_LEVELS), devices=len(got), served=res.count,
                 queue_wait=_levels(hist_quantiles(wait, LEVELS), TABLE_LEVELS) if wait else None,
                 reason=(f"{len(why)} of {len(stats)} devices have no histogram ({'; '.join(why[:3])}): "
                         "the others' only") if why else None)
    resp_q, n = response_quantiles(data, window, LEVELS)
    if resp_q is None:
        added["reason"] = "no ok response in the measurement phase"
    else:
        diff = resp_q - dev_q
        added.update(_levels(diff, TABLE_LEVELS), curve=[float(x) for x in diff], responses=n,
                     response=_levels(resp_q, TABLE_LEVELS))
    return {"device_share": share, "added_latency": added}


def cpu_per_kreq(cpu_mean_pct: float | None, answered: int, duration_s: float) -> float | None:
    """Gateway CPU (% of one core) per 1000 requests/s answered through it;
    None without CPU samples or without answered requests."""
    if cpu_mean_pct is None or duration_s <= 0 or answered <= 0:
        return None
    return cpu_mean_pct / (answered / duration_s / 1000.0)


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f} ms"


def latency_text(share: dict[str, Any], added: dict[str, Any], cpu_kreq: float | None) -> str:
    """The report's sentence on the device share, the added latency and the CPU cost."""
    if share["p50"] is None:
        dev = f"device share: unknown ({share['reason']})"
    else:
        dev = (f"device share (residence in the device, receipt to response sent, from {share['devices']} "
               f"devices' stats over the whole run, warm-up included) p50 {_ms(share['p50'])}, "
               f"p90 {_ms(share['p90'])}, p99 {_ms(share['p99'])}")
        if share["reason"]:
            dev += f" [{share['reason']}]"
    if added["p50"] is None:
        add = f"added latency: unknown ({added['reason']})"
    else:
        add = (f"added latency (quantile difference: GE response minus device residence at the same "
               f"level, not per request; negative where the response quantile is below the device's) "
               f"p50 {_ms(added['p50'])}, p90 {_ms(added['p90'])}, p99 {_ms(added['p99'])}")
    cpu = "-" if cpu_kreq is None else f"{cpu_kreq:.1f} % of a core"
    return f"{dev}; {add}; gateway CPU per 1000 req/s answered: {cpu}"


def gateway_latency_table(gw: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """The report's table (ms at p50/p90/p99): the GEs' end-to-end response,
    the device share, the added latency and the devices' queue wait; None
    for a section without them."""
    share, added = gw.get("device_share"), gw.get("added_latency")
    if share is None or added is None:
        return None

    def row(name: str, d: dict[str, Any] | None) -> list[str]:
        return [name, *(_ms((d or {}).get(f"p{lv}")) for lv in TABLE_LEVELS)]

    return (["gateway latency", *(f"p{lv}" for lv in TABLE_LEVELS)],
            [row("end-to-end response (GEs, ok, measurement phase)", added.get("response")),
             row("device share: residence (device stats, whole run)", share),
             row("added latency (quantile difference)", added),
             row("device queue wait (device stats, whole run)", share.get("queue_wait"))])
