"""Workload integrity (paper section 6.1) and latency, on NumPy arrays.

Expected RITs are the differences of the intended send times, submitted
RITs the differences of the actual send times of the same requests, both
for the GE's whole stream (paper Table 1 takes the GE's perspective) and
per device. They are compared in the form of Table 1 (mean, p5) plus
p50/p95/p99, with the two-sample Kolmogorov-Smirnov distance, and judged
by effect size: with millions of samples any p-value is tiny, so the KS
p-value is reported but never decides.

This module holds what the streaming pass (``_stream``) and the tests'
in-memory reference (``tests/_reference.py``) share: the columns
(:class:`GeArrays`), :func:`dist`, the RIT comparison and its judgement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import stats

from wotbench.base.formats import OBSERVE_METHODS
from wotbench.spec import Thresholds

__all__ = ["GeArrays", "dist", "rit_compare", "rit_judge", "ks_pairs"]

RIT_QUANTILES = (5, 50, 95, 99)
OVERLOAD_CODE = "5.03"
LATENCY_QUANTILES = (50, 90, 99, 99.9)


@dataclass(frozen=True)
class GeArrays:
    """The columns the analysis needs, rows restricted to one phase.
    Times are float64 us (NaN when absent)."""

    device: np.ndarray
    intended: np.ndarray
    sent: np.ndarray
    response: np.ndarray
    latency_intended: np.ndarray
    send_lag: np.ndarray
    service: np.ndarray
    ok: np.ndarray
    timeout: np.ndarray
    overload: np.ndarray
    """Answered 5.03 Service Unavailable: the device's queue was full."""
    observe: np.ndarray
    """An OBS or UNOBS row (Observe registration or deregistration): not a polling
    request, so not in the RIT comparison (its times are no renewal process)."""

    @classmethod
    def from_table(cls, table: pa.Table) -> GeArrays:
        def f64(name: str) -> np.ndarray:
            col = table.column(name)
            return np.asarray(col.to_numpy(), dtype=np.float64) if col.num_chunks else np.zeros(0)

        return cls(
            device=np.asarray(table.column("device_id").to_numpy(), dtype=np.int32),
            intended=f64("intended_us"), sent=f64("sent_us"), response=f64("response_us"),
            latency_intended=f64("latency_intended_us"), send_lag=f64("send_lag_us"),
            service=f64("service_us"), ok=_is(table.column("status"), "ok"),
            timeout=_is(table.column("status"), "timeout"), overload=_is(table.column("code"), OVERLOAD_CODE),
            observe=_observe_rows(table),
        )

    def select(self, mask: np.ndarray) -> GeArrays:
        return GeArrays(**{k: v[mask] for k, v in vars(self).items()})

    def in_window(self, window: tuple[float, float]) -> GeArrays:
        """The requests intended inside ``[a, b)``."""
        return self.select((self.intended >= window[0]) & (self.intended < window[1]))

    def __len__(self) -> int:
        return int(self.intended.size)


def _observe_rows(table: pa.Table) -> np.ndarray:
    """The OBS and UNOBS rows (all False without a method column)."""
    if "method" not in table.column_names:
        return np.zeros(table.num_rows, bool)
    m = table.column("method")
    out: np.ndarray = _is(m, OBSERVE_METHODS[0]) | _is(m, OBSERVE_METHODS[1])
    return out


def _is(status: pa.ChunkedArray, value: str) -> np.ndarray:
    """status == value as a bool array, comparing dictionary indices (no string work per row)."""
    out = np.zeros(len(status), bool)
    pos = 0
    for chunk in status.chunks:
        n = len(chunk)
        if isinstance(chunk, pa.DictionaryArray):
            hit = np.flatnonzero(np.asarray(chunk.dictionary.to_pylist(), dtype=object) == value)
            idx = chunk.indices.to_numpy(zero_copy_only=False)
            out[pos:pos + n] = np.isin(idx, hit) & np.asarray(chunk.is_valid().to_numpy(zero_copy_only=False))
        else:
            out[pos:pos + n] = np.asarray(pc.fill_null(pc.equal(chunk, value), False).to_numpy(zero_copy_only=False))
        pos += n
    return out


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


def dist(x: np.ndarray, quantiles: tuple[float, ...]) -> dict[str, Any]:
    """n, mean, the given percentiles and max of the finite values of x."""
    x = x[np.isfinite(x)]
    out: dict[str, Any] = {"n": int(x.size)}
    if x.size == 0:
        out.update({"mean": None, **{_qname(q): None for q in quantiles}, "max": None})
        return out
    qs = np.percentile(x, quantiles)
    out["mean"] = float(x.mean())
    out.update({_qname(q): float(v) for q, v in zip(quantiles, qs, strict=True)})
    out["max"] = float(x.max())
    return out


def _qname(q: float) -> str:
    return f"p{q:g}".replace(".", "_")


def _rel(sub: float | None, exp: float | None) -> float | None:
    if sub is None or exp is None or exp == 0:
        return None
    return (sub - exp) / exp


#: The KS test runs on at most this many (expected, submitted) pairs: a
#: fixed-seed sample of the same requests on both sides, so sampling adds
#: almost no noise to D, while its cost no longer grows with the run.
KS_MAX_PAIRS = 200_000


def _ks(expected: np.ndarray, submitted: np.ndarray, max_pairs: int,
        slack_us: float = 0.0) -> tuple[float, float, int]:
    """Two-sample KS (D, p, pairs used) of paired samples (NaN pairs dropped).

    A submitted RIT within ``slack_us`` of its own expected RIT counts as
    equal to it: jitter below the clock granularity is no deviation, and
    without this a deterministic RIT (a point mass) gives D ~ 0.5 for a GE
    that is off by a single microsecond half of the time.
    """
    keep = np.isfinite(expected) & np.isfinite(submitted)
    e, s = expected[keep], submitted[keep]
    if e.size > max_pairs:
        idx = np.random.default_rng(0).integers(0, e.size, max_pairs)
        e, s = e[idx], s[idx]
    return ks_pairs(e, s, slack_us)


def ks_pairs(e: np.ndarray, s: np.ndarray, slack_us: float = 0.0) -> tuple[float, float, int]:
    """KS (D, p, pairs) of all the given finite (expected, submitted) pairs
    (a sample: _stream's bottom-k), with the slack of :func:`_ks`."""
    s = np.where(np.abs(s - e) <= slack_us, e, s)
    ks = stats.ks_2samp(np.sort(e), np.sort(s), method="asymp")
    return float(ks.statistic), float(ks.pvalue), int(e.size)


def rit_compare(expected: np.ndarray, submitted: np.ndarray, th: Thresholds,
                ks_max_pairs: int = KS_MAX_PAIRS) -> dict[str, Any]:
    """Expected vs submitted RIT in paper Table 1 form, KS test, and a pass/fail
    with reason. ``expected[i]`` and ``submitted[i]`` belong to the same request."""
    paired_e, paired_s = expected, submitted
    # Sorted: percentiles are faster on sorted data.
    expected = np.sort(expected[np.isfinite(expected)])
    submitted = np.sort(submitted[np.isfinite(submitted)])
    e = dist(expected, RIT_QUANTILES)
    s = dist(submitted, RIT_QUANTILES)
    ks = _ks(paired_e, paired_s, ks_max_pairs, th.rit_slack_us) if e["n"] >= 2 and s["n"] >= 2 else None
    return rit_judge(e, s, ks, th)


def rit_judge(e: dict[str, Any], s: dict[str, Any], ks: tuple[float, float, int] | None,
              th: Thresholds) -> dict[str, Any]:
    """The RIT comparison of two :func:`dist` dicts (mean, p5) and a KS
    result (None: not tested), with the pass/fail and its reasons."""
    out: dict[str, Any] = {"expected": e, "submitted": s, "ks_d": None, "ks_p": None, "ks_pairs": 0,
                           "mean_dev": None, "p5_dev": None, "ok": True, "problems": []}
    if e["n"] < 2 or s["n"] < 2 or ks is None:
        return out
    out["ks_d"], out["ks_p"], out["ks_pairs"] = ks
    out["mean_dev"], out["p5_dev"] = _rel(s["mean"], e["mean"]), _rel(s["p5"], e["p5"])
    problems = []
    if abs(s["mean"] - e["mean"]) > max(th.rit_mean_tolerance * e["mean"], th.rit_slack_us):
        problems.append(f"mean RIT {s['mean']:.0f}us vs expected {e['mean']:.0f}us "
                        f"({out['mean_dev']:+.1%}, tolerance {th.rit_mean_tolerance:.0%})")
    if abs(s["p5"] - e["p5"]) > max(th.rit_p5_tolerance * e["p5"], th.rit_slack_us):
        dev = f"{out['p5_dev']:+.0%}" if out["p5_dev"] is not None else "n/a"
        problems.append(f"p5 RIT {s['p5']:.0f}us vs expected {e['p5']:.0f}us "
                        f"({dev}, tolerance {th.rit_p5_tolerance:.0%})")
    if out["ks_d"] > th.rit_ks_max and out["ks_p"] < th.rit_ks_alpha:
        problems.append(f"KS distance {out['ks_d']:.3f} > {th.rit_ks_max:g} (p = {out['ks_p']:.2g})")
    out["ok"] = not problems
    out["problems"] = problems
    return out
