"""expected.json: the intended statistics of a generated workload (format 1).

The "expected" half of the expected-versus-submitted comparison (paper
Table 1): statistics measured on the generated trace, per device, per
group and in aggregate, next to the theoretical targets of the
distributions asked for. The layout is documented in tracegen/README.md.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wotbench.base.version import __version__
from wotbench.tracegen import _stats as stats
from wotbench.tracegen._csvtext import device_host
from wotbench.tracegen._distribution import Exp
from wotbench.tracegen._registry import sampler

if TYPE_CHECKING:
    from wotbench.spec import WorkloadSpec
    from wotbench.tracegen._requests import Requests

__all__ = ["expected_stats", "expected_json", "EXPECTED_FORMAT"]

EXPECTED_FORMAT = 1


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
    """Intended RIT of a device of group g (None: of the aggregate stream).

    Thinning a stream (gateway scope) or superposing streams (device scope)
    gives a stream with a closed form only when they are Poisson processes.
    """
    def exp_of(mean: float) -> dict[str, object]:
        return Exp(f"exp:{mean:g}us", mean).describe(stats.PERCENTILES)

    if spec.rit_scope == "gateway":
        assert spec.rit is not None
        if g is None:
            return sampler(spec.rit).describe(stats.PERCENTILES)
        mean = spec.rit.mean_us() * spec.n_devices
        return exp_of(mean) if spec.rit.poisson else {"dist": None, "mean_us": mean}
    if g is not None:
        rit = spec.groups[g].rit
        return None if rit is None else sampler(rit).describe(stats.PERCENTILES)  # None: observed only
    if not spec.aggregate_rate_per_us() > 0:
        return None
    mean = 1.0 / spec.aggregate_rate_per_us()
    if all(grp.rit.poisson for grp in spec.groups if grp.rit is not None):
        return exp_of(mean)  # a superposition of Poisson streams is Poisson
    return {"dist": None, "mean_us": mean}


@dataclass(frozen=True)
class _DeviceRits:
    """The RITs of every device: sorted within each device, devices one after the other."""

    sorted: np.ndarray
    seg_start: np.ndarray
    """Where device d's RITs start in ``sorted`` (one more entry: the end)."""
    mean: np.ndarray
    pct: np.ndarray
    """Per device: mean (NaN with fewer than two requests) and PERCENTILES."""

    @classmethod
    def of(cls, req: Requests, n_dev: int) -> _DeviceRits:
        counts = req.dev_counts
        rit_sorted, n_rit = stats.rit_by_segment(req.t_grouped, counts)
        ends = np.cumsum(counts)
        starts = ends - counts
        has2 = counts > 1
        mean = np.full(n_dev, np.nan)
        if has2.any():
            mean[has2] = (req.t_grouped[ends[has2] - 1] - req.t_grouped[starts[has2]]) / (counts[has2] - 1)
        return cls(rit_sorted, np.concatenate(([0], np.cumsum(n_rit))), mean,
                   stats.segment_percentiles(rit_sorted, n_rit))

    def of_devices(self, a: int, b: int) -> np.ndarray:
        """The RITs of devices a..b-1 (a view: the pooled statistics reorder it)."""
        return self.sorted[self.seg_start[a]:self.seg_start[b]]


def _resource_counts(spec: WorkloadSpec, req: Requests) -> list[np.ndarray]:
    """Per group, a (devices x resources) matrix of request counts."""
    group_of = np.asarray(spec.group_of_device())
    ks = np.array([g.resources for g in spec.groups], dtype=np.int64)
    if len(spec.groups) == 1:
        code = req.dev.astype(np.int64) * ks[0] + req.res
    else:
        dev_base = np.concatenate(([0], np.cumsum(ks[group_of])))[:-1]
        code = dev_base[req.dev] + req.res
    per_res = np.bincount(code, minlength=int(ks[group_of].sum()))
    sizes = [g.count * g.resources for g in spec.groups]
    cuts = np.cumsum(sizes)[:-1]
    return [part.reshape(g.count, g.resources) for g, part in zip(spec.groups, np.split(per_res, cuts), strict=True)]


def _group_entry(spec: WorkloadSpec, g: int, first: int, cmat: np.ndarray, rits: np.ndarray,
                 dur_s: float) -> dict[str, object]:
    """One group of expected.json: pooled measured statistics and the targets."""
    grp = spec.groups[g]
    vals = grp.resource_service_us
    pooled_counts = cmat.sum(axis=0)
    g_req = int(cmat.sum())
    r_mean, r_pct = _pooled(rits)
    s_pct = stats.counts_percentiles(vals, pooled_counts)[0]
    s_mean = float(pooled_counts @ vals / g_req) if g_req else None
    return {
        "name": grp.name,
        "devices": grp.count,
        "first_device_id": first,
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
            "service": sampler(grp.service).describe(stats.PERCENTILES) if grp.service is not None else None,
            "resource_mean_us": _r(grp.resource_mean_us),
        },
    }


def _aggregate_entry(spec: WorkloadSpec, req: Requests, cmats: list[np.ndarray],
                     dur_s: float) -> dict[str, object]:
    """All requests of the workload: the merged trace's RITs and every request's service time."""
    vals = np.concatenate([g.resource_service_us for g in spec.groups])
    order = np.argsort(vals, kind="stable")
    all_vals = vals[order]
    all_counts = np.concatenate([c.sum(axis=0) for c in cmats])[order]
    n_all = int(req.t_us.size)
    rit_mean = float((req.t_us[-1] - req.t_us[0]) / (n_all - 1)) if n_all > 1 else None
    return {
        "requests": n_all,
        "rate_per_s": _r(n_all / dur_s),
        "rit": _summ(rit_mean, stats.percentiles_inplace(np.diff(req.t_us))),
        "service": _summ(float(all_counts @ all_vals / n_all) if n_all else None,
                         stats.counts_percentiles(all_vals, all_counts)[0]),
        "target": {
            "rate_per_s": _r(spec.aggregate_rate_per_us() * 1e6),
            "rit": _target_rit(spec, None),
            "service_mean_us": _r(spec.mean_service_us()),
        },
    }


def expected_stats(spec: WorkloadSpec, req: Requests) -> dict[str, object]:
    """The intended statistics ("expected" half of expected-versus-submitted)."""
    n_dev = spec.n_devices
    dur_s = req.duration_us / 1e6
    counts = req.dev_counts
    firsts = np.concatenate(([0], np.cumsum([g.count for g in spec.groups]))).tolist()
    rits = _DeviceRits.of(req, n_dev)  # before the group statistics reorder rits.sorted
    cmats = _resource_counts(spec, req)

    svc_mean = np.full(n_dev, np.nan)
    svc_pct = np.full((n_dev, len(stats.PERCENTILES)), np.nan)
    groups_out = []
    for g, (grp, cmat) in enumerate(zip(spec.groups, cmats, strict=True)):
        a, b = firsts[g], firsts[g + 1]
        with np.errstate(invalid="ignore", divide="ignore"):
            svc_mean[a:b] = (cmat @ grp.resource_service_us) / cmat.sum(axis=1)
        svc_pct[a:b] = stats.counts_percentiles(grp.resource_service_us, cmat)
        groups_out.append(_group_entry(spec, g, a, cmat, rits.of_devices(a, b), dur_s))

    group_of = spec.group_of_device()
    devices_out = [
        {
            "id": d,
            "group": spec.groups[int(group_of[d])].name,
            "host": device_host(d),
            "requests": int(counts[d]),
            "rate_per_s": _r(counts[d] / dur_s),
            "rit": _summ(rits.mean[d], rits.pct[d]),
            "service": _summ(svc_mean[d], svc_pct[d]),
        }
        for d in range(n_dev)
    ]
    aggregate = _aggregate_entry(spec, req, cmats, dur_s)
    return {
        "format": EXPECTED_FORMAT,
        "generator": f"wotbench.tracegen {__version__}",
        "seed": spec.seed,
        "rit_scope": spec.rit_scope,
        "duration_us": req.duration_us,
        "requests": aggregate["requests"],
        "devices": n_dev,
        "percentiles": list(stats.PERCENTILES),
        "aggregate": aggregate,
        "groups": groups_out,
        "device_stats": devices_out,
    }


def expected_json(doc: dict[str, object]) -> str:
    """Indented JSON, one line per device (the C encoder is only used without indent)."""
    rows = doc.pop("device_stats")
    assert isinstance(rows, list)
    head = json.dumps(doc, indent=1, allow_nan=False)
    body = ",\n  ".join(json.dumps(r, allow_nan=False) for r in rows)
    doc["device_stats"] = rows
    return head[:-2] + ',\n "device_stats": [\n  ' + body + "\n ]\n}\n"
