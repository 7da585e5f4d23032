"""One streaming pass over a GE's per-request output (its Parquet cache, a
row group at a time) computing everything the report needs of it, in
memory that does not grow with the number of requests.

The per-request arithmetic is the in-memory reference's (``ge_integrity``
and ``per_device`` in ``tests/_reference.py``, which the tests hold this
pass to); what carries across chunk boundaries is explicit: the last
(intended, sent) of the GE's stream and of each device (the RIT of a
chunk's first request), running counts and sums, the per-second and
per-window bins, the quantile accumulators and the KS samples. What is
exact and what is not:

- exact: every count, rate, mean, min, max, R_d ratio, the per-second
  series, the ten window means (response_window_cv), the 100 ms bins of
  ``behind_rps``;
- quantiles: exact while a GE's values fit ``EXACT_MAX`` (2M), else from a
  log-linear histogram, relative error <= 0.098 % (``_sketch``); each
  dist says ``"exact"``;
- KS tests: on a uniform random sample of at most ``KS_MAX_PAIRS`` pairs per
  GE, and a shared budget per device (``_sketch.BottomK``; all pairs when
  fewer), as the in-memory code did.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from wotbench.cd import normalized_deviation
from wotbench.reporting._integrity import (
    KS_MAX_PAIRS,
    LATENCY_QUANTILES,
    RIT_QUANTILES,
    GeArrays,
    _num,
    _qname,
    ks_pairs,
    rit_judge,
)
from wotbench.reporting._sketch import BottomK, Dist, GroupQuantiles, _grow
from wotbench.spec import Thresholds

__all__ = ["EXACT_MAX", "GeStream", "GeOut", "PeakBins", "chunk_arrays", "prefetched", "QGRID"]

#: Values of one statistic of one GE kept for exact quantiles; beyond, a histogram.
EXACT_MAX = 1 << 21
#: The distribution plots' quantile grid: 0.05 % steps, 200 points in the lowest decile (Fig. 6 zoom).
QGRID = np.linspace(0.0, 1.0, 2001)
_WINDOWS = 10
_BIN_US = 100_000


def chunk_arrays(batch: pa.RecordBatch) -> GeArrays:
    return GeArrays.from_table(pa.Table.from_batches([batch]))


def prefetched(batches: Iterator[pa.RecordBatch]) -> Iterator[GeArrays]:
    """The batches as arrays, the next one read and converted in a second
    thread while the caller works on the current one (Arrow and most of
    NumPy release the GIL): at most two chunks in memory."""
    def next_arrays() -> GeArrays | None:
        b = next(batches, None)
        return None if b is None else chunk_arrays(b)

    with ThreadPoolExecutor(max_workers=1) as pool:
        ahead = pool.submit(next_arrays)
        while (cur := ahead.result()) is not None:
            ahead = pool.submit(next_arrays)
            yield cur
            del cur


def _kept(mask: np.ndarray, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """The arrays where ``mask`` holds (the arrays themselves when it holds everywhere)."""
    return arrays if mask.all() else tuple(x[mask] for x in arrays)


def dist_dict(d: Dist | None, quantiles: Sequence[float]) -> dict[str, Any]:
    """A Dist in :func:`_integrity.dist`'s form, plus whether its quantiles are exact."""
    if d is None:
        return {"n": 0, "mean": None, **{_qname(q): None for q in quantiles}, "max": None, "exact": True}
    return {"n": d.n, "mean": d.mean, **{_qname(q): d.q[q] for q in quantiles}, "max": d.max, "exact": d.exact}


class _Bins:
    """Counts and sums over integer bins that grow as keys appear (per second of the run)."""

    def __init__(self) -> None:
        self.lo: int | None = None
        self.cols: dict[str, np.ndarray] = {}

    def add(self, key: np.ndarray, **weights: np.ndarray | None) -> None:
        if key.size == 0:
            return
        lo, hi = int(key.min()), int(key.max())
        if self.lo is None:
            self.lo = lo
            self.cols = {k: np.zeros(hi - lo + 1) for k in weights}
        if lo < self.lo:
            self.cols = {k: np.concatenate([np.zeros(self.lo - lo), v]) for k, v in self.cols.items()}
            self.lo = lo
        n = hi - self.lo + 1
        for k, w in weights.items():
            v = self.cols[k]
            if v.size < n:
                v = self.cols[k] = np.concatenate([v, np.zeros(n - v.size)])
            v[:n] += np.bincount(key - self.lo, weights=w, minlength=n)


class PeakBins:
    """All GEs' intended sends in the measurement phase for ``ges_needed``:
    the values themselves while at most ``exact_max`` (exact peak), and
    always their counts per millisecond (beyond: the peak of the 100 ms
    windows aligned to the millisecond, at most one millisecond's sends
    below the exact one)."""

    def __init__(self, window: tuple[float, float], exact_max: int = 1 << 23) -> None:
        self.window = window
        self.exact_max = exact_max
        self.values: list[np.ndarray] | None = []
        self.held = 0
        self.ms = np.zeros(max(1, int(math.ceil((window[1] - window[0]) / 1000.0))), np.int64)

    def add(self, intended: np.ndarray) -> None:
        b = np.clip(((intended - self.window[0]) // 1000.0).astype(np.int64), 0, self.ms.size - 1)
        self.ms += np.bincount(b, minlength=self.ms.size)
        if self.values is not None:
            self.held += intended.size
            if self.held > self.exact_max:
                self.values = None
            else:
                self.values.append(intended)

    def binned_peak_rps(self, window_us: int) -> float:
        k = max(1, window_us // 1000)
        c = np.concatenate([[0], np.cumsum(self.ms)])
        sums = c[k:] - c[:-k] if c.size > k else c[-1:]
        return float(sums.max()) * 1e6 / window_us


@dataclass
class GeOut:
    """One GE's sections: its ``ges[]`` entry, its ``devices[]`` rows, and plot data."""

    ge: dict[str, Any]
    devices: list[dict[str, Any]]
    quantile_curves: dict[str, np.ndarray]
    per_second: pd.DataFrame


class GeStream:
    """Feed a GE's rows in order (:meth:`add`, any chunking), then :meth:`finish`."""

    def __init__(self, window: tuple[float, float], th: Thresholds, peak: PeakBins | None = None,
                 exact_max: int | None = None) -> None:
        self.window = window
        self.th = th
        self.peak = peak
        self.slot_of: dict[int, int] = {}
        self.ids: list[int] = []
        z = np.zeros(0, np.int64)
        self.req, self.okc, self.tmo, self.unsent = z.copy(), z.copy(), z.copy(), z.copy()
        self.sum_r, self.sum_s = np.zeros(0), np.zeros(0)
        self.n = self.n_ok = self.n_timeout = self.n_unsent = self.late = self.overloaded = self.sent_in = 0
        budget = EXACT_MAX if exact_max is None else exact_max

        def q() -> GroupQuantiles:
            return GroupQuantiles(budget)

        self.resp, self.lat, self.rd, self.lag = q(), q(), q(), q()
        self.dev_e, self.dev_s, self.ge_e, self.ge_s = q(), q(), q(), q()
        self.ge_ks = BottomK(KS_MAX_PAIRS, 2, seed=0)
        self.dev_ks = BottomK(KS_MAX_PAIRS, 2, seed=1)
        self.last: tuple[float, float] | None = None
        self.dev_last_i, self.dev_last_s = np.zeros(0), np.zeros(0)
        self.win_n, self.win_sum = np.zeros(_WINDOWS), np.zeros(_WINDOWS)
        self.behind_bins = int((window[1] - window[0]) // _BIN_US)
        self.behind_n = np.zeros(max(self.behind_bins, 0))
        self.behind_late = np.zeros(max(self.behind_bins, 0))
        self.per_sec = _Bins()

    # --- feeding --------------------------------------------------------------

    def _slots(self, dev: np.ndarray) -> np.ndarray:
        """Dense slot (0..devices-1, in order of appearance) of each device id."""
        d = dev.astype(np.int64)
        lo, hi = int(d.min()), int(d.max())
        if hi - lo < 1 << 22:
            present = np.flatnonzero(np.bincount(d - lo)) + lo
            inv, offset = d - lo, lo
        else:
            present, inv = np.unique(d, return_inverse=True)
            offset = None
        for i in present.tolist():
            if i not in self.slot_of:
                self.slot_of[i] = len(self.ids)
                self.ids.append(i)
        slots = np.array([self.slot_of[i] for i in present.tolist()], np.int64)
        if offset is None:
            return slots[inv]
        lut = np.zeros(hi - lo + 1, np.int64)
        lut[present - offset] = slots
        return lut[inv]

    def add(self, c: GeArrays) -> None:
        """The next rows of the GE's output (the whole run; the measurement phase is picked here)."""
        if len(c) == 0:
            return
        answered = c.ok & np.isfinite(c.response)
        sec = np.floor(c.intended / 1e6).astype(np.int64)
        self.per_sec.add(sec, sent=None, ok=answered.astype(np.float64),
                         resp=np.where(answered, c.response, 0.0))
        a0, b0 = self.window
        m = (c.intended >= a0) & (c.intended < b0)
        a = c if m.all() else c.select(m)
        if len(a) == 0:
            return
        self._counts(a)
        slot = self._slots(a.device)
        g = len(self.ids)
        # The RITs (a sort by device, their quantiles and KS samples: about
        # half the work) in a second thread while this one does the rest:
        # the two touch disjoint state, and NumPy drops the GIL in its loops.
        with ThreadPoolExecutor(max_workers=1) as pool:
            rit = pool.submit(self._rit, a, slot)
            self._rest(a, slot, g)
            rit.result()

    def _rest(self, a: GeArrays, slot: np.ndarray, g: int) -> None:
        """Everything of :meth:`add` but the RITs. The answered requests are
        picked once and every statistic of them reads that pick (a mask
        that keeps all is not applied): the same values in the same order
        as picking each statistic's own, in fewer passes."""
        a0, b0 = self.window
        for name in ("req", "okc", "tmo", "unsent", "sum_r", "sum_s"):
            setattr(self, name, _grow(getattr(self, name), g))
        self.req[:g] += np.bincount(slot, minlength=g)
        self.okc[:g] += np.bincount(slot[a.ok], minlength=g)
        self.tmo[:g] += np.bincount(slot[a.timeout], minlength=g)
        self.unsent[:g] += np.bincount(slot[a.timeout & ~np.isfinite(a.sent)], minlength=g)
        fin = a.ok & np.isfinite(a.response)
        s_ok, resp, li, serv, at = _kept(fin, slot, a.response, a.latency_intended, a.service, a.intended)
        self.resp.add(s_ok, resp)
        s_li, li = _kept(np.isfinite(li), s_ok, li)
        self.lat.add(s_li, li)
        rd = normalized_deviation(resp, serv)
        s_rd, rd = _kept(np.isfinite(rd), s_ok, rd)
        self.rd.add(s_rd, rd)
        s_both, r_both, sv_both = _kept(np.isfinite(serv), s_ok, resp, serv)
        self.sum_r[:g] += np.bincount(s_both, weights=r_both, minlength=g)
        self.sum_s[:g] += np.bincount(s_both, weights=sv_both, minlength=g)
        (lag,) = _kept(np.isfinite(a.send_lag), a.send_lag)
        self.lag.add(np.zeros(lag.size, np.int64), lag)
        w = np.clip(((at - a0) / (b0 - a0) * _WINDOWS).astype(np.int64), 0, _WINDOWS - 1)
        self.win_n += np.bincount(w, minlength=_WINDOWS)
        self.win_sum += np.bincount(w, weights=resp, minlength=_WINDOWS)
        self._behind(a)
        if self.peak is not None:
            self.peak.add(a.intended)

    def _counts(self, a: GeArrays) -> None:
        a0, b0 = self.window
        self.n += len(a)
        self.n_ok += int(np.count_nonzero(a.ok))
        self.n_timeout += int(np.count_nonzero(a.timeout))
        self.n_unsent += int(np.count_nonzero(a.timeout & ~np.isfinite(a.sent)))
        self.late += int(np.count_nonzero(a.send_lag > self.th.late_send_us))
        self.overloaded += int(np.count_nonzero(a.overload))
        self.sent_in += int(np.count_nonzero((a.sent >= a0) & (a.sent < b0)))

    def _behind(self, a: GeArrays) -> None:
        """100 ms bins by send time: sends, and sends later than the lag limit (_gesneeded.behind_rate)."""
        if self.behind_bins <= 0:
            return
        s = a.sent
        keep = np.isfinite(s) & (s >= self.window[0]) & (s < self.window[1])
        b = ((s[keep] - self.window[0]) // _BIN_US).astype(np.int64)
        inside = b < self.behind_bins
        b, lag = b[inside], a.send_lag[keep][inside]
        self.behind_n += np.bincount(b, minlength=self.behind_bins)
        self.behind_late += np.bincount(b, weights=(lag > self.th.send_lag_p99_max_us).astype(np.float64),
                                        minlength=self.behind_bins)

    def _rit(self, a: GeArrays, slot: np.ndarray) -> None:
        """Expected and submitted RITs of the same requests: of the GE's
        stream and of each device's, the previous chunk's last send carried."""
        so = np.isfinite(a.sent) & ~a.observe        # polling rows only: OBS/UNOBS are no RITs
        ti, ts, sl = a.intended[so], a.sent[so], slot[so]
        if ti.size == 0:
            return
        if self.last is None:
            e, s = np.diff(ti), np.diff(ts)
        else:
            e, s = np.diff(ti, prepend=self.last[0]), np.diff(ts, prepend=self.last[1])
        self.last = (float(ti[-1]), float(ts[-1]))
        keys = self.ge_ks.keys(e.size)
        self._pairs(self.ge_e, self.ge_s, self.ge_ks, np.zeros(e.size, np.int64), e, s, keys)
        # Per device: rows grouped by device, in time order within it.
        g = len(self.ids)
        self.dev_last_i = _grow(self.dev_last_i, g, np.nan)
        self.dev_last_s = _grow(self.dev_last_s, g, np.nan)
        keys = self.dev_ks.keys(ti.size)
        key = sl.astype(np.uint16) if g < 1 << 16 else sl
        order = np.argsort(key, kind="stable")
        sl, ti, ts, keys = sl[order], ti[order], ts[order], keys[order]
        first = np.ones(sl.size, bool)
        first[1:] = sl[1:] != sl[:-1]
        last = np.ones(sl.size, bool)
        last[:-1] = first[1:]
        prev_i, prev_s = np.empty(ti.size), np.empty(ts.size)
        prev_i[1:], prev_s[1:] = ti[:-1], ts[:-1]
        prev_i[first], prev_s[first] = self.dev_last_i[sl[first]], self.dev_last_s[sl[first]]
        self.dev_last_i[sl[last]], self.dev_last_s[sl[last]] = ti[last], ts[last]
        self.dev_ks.k = max(5000, 4 * KS_MAX_PAIRS // max(1, g))
        self._pairs(self.dev_e, self.dev_s, self.dev_ks, sl, ti - prev_i, ts - prev_s, keys)

    @staticmethod
    def _pairs(qe: GroupQuantiles, qs: GroupQuantiles, ks: BottomK, grp: np.ndarray, e: np.ndarray,
               s: np.ndarray, keys: np.ndarray) -> None:
        fe, fs = np.isfinite(e), np.isfinite(s)
        qe.add(grp[fe], e[fe])
        qs.add(grp[fs], s[fs])
        both = fe & fs
        ks.add(keys[both], grp[both], [e[both], s[both]])

    # --- results --------------------------------------------------------------

    def _rit_section(self, e: Dist | None, s: Dist | None, ks: BottomK, group: int) -> dict[str, Any]:
        ed, sd = dist_dict(e, RIT_QUANTILES), dist_dict(s, RIT_QUANTILES)
        test = None
        if ed["n"] >= 2 and sd["n"] >= 2:
            pe, ps = ks.sample(group)
            test = ks_pairs(pe, ps, self.th.rit_slack_us) if pe.size else None
        return rit_judge(ed, sd, test, self.th)

    def behind_rps(self) -> float | None:
        """_gesneeded.behind_rate of the GE's stream."""
        if self.behind_bins <= 0 or not self.behind_n.any():
            return None
        behind = (self.behind_n > 0) & (self.behind_late == self.behind_n)
        return float(self.behind_n[behind].max()) * 1e6 / _BIN_US if behind.any() else None

    def _window_cv(self) -> float | None:
        if self.win_n.sum() < 2 * _WINDOWS:
            return None
        means = self.win_sum[self.win_n > 0] / self.win_n[self.win_n > 0]
        if means.size < 2 or means.mean() == 0:
            return None
        return float(means.std(ddof=1) / means.mean())

    def _per_second(self) -> pd.DataFrame:
        ps = self.per_sec
        if ps.lo is None:
            return pd.DataFrame(columns=["t_s", "sent", "ok", "response_mean_us"])
        sent, ok, resp = ps.cols["sent"], ps.cols["ok"], ps.cols["resp"]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(ok > 0, resp / ok, np.nan)
        return pd.DataFrame({"t_s": np.arange(ps.lo, ps.lo + sent.size), "sent": sent.astype(np.int64),
                             "ok": ok.astype(np.int64), "response_mean_us": mean})

    def finish(self) -> GeOut:
        dur_s = (self.window[1] - self.window[0]) / 1e6
        n, n_ok = self.n, self.n_ok
        target = n / dur_s if dur_s > 0 else math.nan
        achieved = self.sent_in / dur_s if dur_s > 0 else math.nan
        throughput = n_ok / dur_s if dur_s > 0 else math.nan
        rd = self.rd.total([50])
        sr, ss = float(self.sum_r.sum()), float(self.sum_s.sum())
        ge = {
            "requests": n, "ok": n_ok, "timeouts": self.n_timeout, "errors": n - n_ok - self.n_timeout,
            "never_sent": self.n_unsent,
            "error_rate": (n - n_ok) / n if n else None,
            "late_sends": self.late, "overloaded": self.overloaded, "devices": len(self.ids),
            "duration_s": dur_s,
            "target_rate": _num(target), "achieved_rate": _num(achieved),
            "rate_dev": _num((achieved - target) / target) if target and math.isfinite(target) else None,
            "throughput": _num(throughput),
            "rit": self._rit_section(self.ge_e.total(RIT_QUANTILES), self.ge_s.total(RIT_QUANTILES), self.ge_ks, 0),
            "send_lag_us": dist_dict(self.lag.total(LATENCY_QUANTILES), LATENCY_QUANTILES),
            "response_us": dist_dict(self.resp.total(LATENCY_QUANTILES), LATENCY_QUANTILES),
            "latency_intended_us": dist_dict(self.lat.total(LATENCY_QUANTILES), LATENCY_QUANTILES),
            "rd": {"mean": _num(rd.mean) if rd else None, "median": _num(rd.q[50]) if rd else None,
                   "ratio": (sr - ss) / ss if ss > 0 else None, "median_exact": rd.exact if rd else True},
            "response_window_cv": self._window_cv(),
        }
        curves = {k: self._curve(q) for k, q in (("rit_expected", self.ge_e), ("rit_submitted", self.ge_s),
                                                ("send_lag", self.lag), ("response", self.resp),
                                                ("latency_intended", self.lat))}
        return GeOut(ge, self._devices(dur_s), curves, self._per_second())

    @staticmethod
    def _curve(q: GroupQuantiles) -> np.ndarray:
        d = q.total(QGRID * 100.0)
        return np.array([d.q[x] for x in QGRID * 100.0]) if d else np.full(QGRID.size, np.nan)

    def _devices(self, dur_s: float) -> list[dict[str, Any]]:
        resp = self.resp.dists([50, 95, 99])
        lat = self.lat.dists([99])
        rd = self.rd.dists([50])
        de, ds = self.dev_e.dists(RIT_QUANTILES), self.dev_s.dists(RIT_QUANTILES)
        g = len(self.ids)
        self.dev_ks.k = max(5000, 4 * KS_MAX_PAIRS // max(1, g))

        def pad(x: list[Dist | None]) -> list[Dist | None]:
            return x + [None] * (g - len(x))    # groups without any value

        resp, lat, rd, de, ds = pad(resp), pad(lat), pad(rd), pad(de), pad(ds)
        rows = []
        for i in sorted(range(g), key=lambda i: self.ids[i]):
            n, n_ok = int(self.req[i]), int(self.okc[i])
            r, li, rdi = resp[i], lat[i], rd[i]
            rit = self._rit_section(de[i], ds[i], self.dev_ks, i)
            s = float(self.sum_s[i])
            exact = all(d is None or d.exact for d in (r, li, rdi, de[i], ds[i]))
            rows.append({
                "device_id": self.ids[i], "requests": n, "ok": n_ok, "timeouts": int(self.tmo[i]),
                "never_sent": int(self.unsent[i]),
                "error_rate": (n - n_ok) / n,
                "throughput": n_ok / dur_s if dur_s > 0 else None,
                "response_mean_us": _num(r.mean) if r else None,
                "response_p50_us": _num(r.q[50]) if r else None, "response_p95_us": _num(r.q[95]) if r else None,
                "response_p99_us": _num(r.q[99]) if r else None,
                "latency_intended_p99_us": _num(li.q[99]) if li else None,
                "rd_mean": _num(rdi.mean) if rdi else None,
                "rd_ratio": (float(self.sum_r[i]) - s) / s if s > 0 else None,
                "rd_median": _num(rdi.q[50]) if rdi else None,
                "rit_expected_mean_us": rit["expected"]["mean"], "rit_expected_p5_us": rit["expected"]["p5"],
                "rit_submitted_mean_us": rit["submitted"]["mean"], "rit_submitted_p5_us": rit["submitted"]["p5"],
                "rit_ks_d": rit["ks_d"], "rit_ok": rit["ok"], "rit_problems": rit["problems"],
                "quantiles_exact": exact,
            })
        return rows
