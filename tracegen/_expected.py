"""expected.json: the intended statistics of a generated workload (format 1).

The "expected" half of the expected-versus-submitted comparison (paper
Table 1): statistics measured on the generated trace, per device, per
group and in aggregate, next to the theoretical targets of the
distributions asked for. The layout is documented in tracegen/README.md.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING

import numpy as np

from wotbench import __version__
from wotbench.tracegen import _stats as stats
from wotbench.tracegen._csvtext import device_host
from wotbench.tracegen._distribution import Exp
from wotbench.tracegen._spec import WorkloadSpec

if TYPE_CHECKING:
    from wotbench.tracegen._generate import Requests

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
            return spec.rit.describe(stats.PERCENTILES)
        mean = spec.rit.mean_us() * spec.n_devices
        return exp_of(mean) if spec.rit.poisson else {"dist": None, "mean_us": mean}
    if g is not None:
        rit = spec.groups[g].rit
        assert rit is not None
        return rit.describe(stats.PERCENTILES)
    mean = 1.0 / spec.aggregate_rate_per_us()
    if all(grp.rit is not None and grp.rit.poisson for grp in spec.groups):
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


def expected_json(doc: dict[str, object]) -> str:
    """Indented JSON, one line per device (the C encoder is only used without indent)."""
    rows = doc.pop("device_stats")
    assert isinstance(rows, list)
    head = json.dumps(doc, indent=1, allow_nan=False)
    body = ",\n  ".join(json.dumps(r, allow_nan=False) for r in rows)
    doc["device_stats"] = rows
    return head[:-2] + ',\n "device_stats": [\n  ' + body + "\n ]\n}\n"
