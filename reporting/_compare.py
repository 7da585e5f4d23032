"""`wotbench compare A B`: what two runs measured, metric by metric, as the
difference B - A with a confidence interval and a verdict (improved,
regressed, no significant change) at the user's thresholds.

Only the measurement phase counts (the requests intended inside
``phases.measure``, as ``load_run(path).requests``). A run is read a row
group at a time: exact counts (requests, answered, answered per second),
and a uniform random sample of at most ``cap`` response times and send
lags (bottom-k by a seeded random key, so any run fits in bounded memory;
below the cap every value is used). The Hodges-Lehmann shift uses at most
HL_CAP values of each sample (a seeded subsample). The statistics are in
:mod:`wotbench.reporting._comparestats`.

Two runs are compared only when they ran the same workload: the SHA-256 of
their workload/ files (the trace and the expected RITs, docs/run-layout.md;
the per-GE split of the trace left out when the whole trace is there).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir
from wotbench.reporting._comparestats import Estimate, hl_shift, mean_diff, proportion_diff, quantile_diff
from wotbench.reporting._host import cd_series
from wotbench.reporting._integrity import GeArrays
from wotbench.reporting._load import ANALYSIS_COLUMNS, find_files, ge_data, read_phases, read_summary

__all__ = ["Metric", "METRICS", "Threshold", "parse_threshold", "thresholds", "RunSample", "sample_run",
           "workload_hash", "Row", "verdict_row", "missing_row", "compare", "CAP", "HL_CAP", "IMPROVED", "REGRESSED",
           "NO_CHANGE", "NOT_COMPARED"]

#: The most response times (and send lags) of one run sampled by default.
CAP = 200_000
#: The most values of each side the Hodges-Lehmann shift takes.
HL_CAP = 50_000
#: Rows read at a time (the peak memory of the pass does not grow with the run).
BATCH = 1 << 18

IMPROVED, REGRESSED, NO_CHANGE, NOT_COMPARED = "improved", "regressed", "no significant change", "not compared"


@dataclass(frozen=True)
class Threshold:
    """The smallest change that counts: relative to A's value, or absolute in the metric's unit."""

    value: float
    relative: bool

    def met(self, diff: float, base: float) -> bool:
        if self.relative:
            if base == 0:
                return diff != 0
            return abs(diff) / abs(base) >= self.value
        return abs(diff) >= self.value

    def text(self, unit: str) -> str:
        return f"{self.value * 100:g} %" if self.relative else f"{self.value:g} {unit}".strip()


@dataclass(frozen=True)
class Metric:
    key: str
    """The name a --threshold gives it."""
    label: str
    unit: str
    higher_better: bool
    default: Threshold


METRICS: tuple[Metric, ...] = (
    Metric("throughput", "throughput (answered/s)", "req/s", True, Threshold(0.05, True)),
    Metric("response", "response time (HL shift)", "us", False, Threshold(0.05, True)),
    Metric("p50", "response time p50", "us", False, Threshold(0.05, True)),
    Metric("p95", "response time p95", "us", False, Threshold(0.05, True)),
    Metric("p99", "response time p99", "us", False, Threshold(0.05, True)),
    Metric("send_lag_p99", "send lag p99", "us", False, Threshold(0.05, True)),
    Metric("errors", "error rate", "", False, Threshold(0.001, False)),
    Metric("rd", "R_d (HL shift)", "", False, Threshold(0.05, False)),
)
_BY_KEY = {m.key: m for m in METRICS}
_THRESHOLD = re.compile(r"([a-z_0-9]+)=([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)(%?)")


def parse_threshold(text: str) -> tuple[str, Threshold]:
    """``NAME=X%`` (relative to A) or ``NAME=X`` (absolute, the metric's unit)."""
    m = _THRESHOLD.fullmatch(text.strip())
    if m is None:
        raise UserError(f"{text!r}: expected NAME=X% (relative) or NAME=X (absolute), e.g. p99=5%",
                        field="--threshold")
    name, num, pct = m.groups()
    if name not in _BY_KEY:
        raise UserError(f"{name!r} is no metric; one of {', '.join(_BY_KEY)}", field="--threshold")
    v = float(num) / 100 if pct else float(num)
    if not math.isfinite(v):
        raise UserError(f"{text!r}: not a finite number", field="--threshold")
    return name, Threshold(v, bool(pct))


def thresholds(items: Sequence[str]) -> dict[str, Threshold]:
    """Every metric's threshold: the defaults, then each --threshold given."""
    out = {m.key: m.default for m in METRICS}
    out.update(parse_threshold(t) for t in items)
    return out


# --- one run --------------------------------------------------------------------

class _Reservoir:
    """A uniform random sample of at most ``cap`` values of a stream: the
    values with the ``cap`` smallest random keys (bottom-k sampling)."""

    def __init__(self, cap: int, rng: np.random.Generator) -> None:
        self.cap, self.rng = cap, rng
        self.values: np.ndarray = np.zeros(0)
        self.keys: np.ndarray = np.zeros(0)
        self.seen = 0

    def add(self, v: np.ndarray) -> None:
        self.seen += v.size
        new = self.rng.random(v.size)
        if self.values.size >= self.cap:         # full: only a key below the largest kept one gets in
            take = new < self.keys.max()
            v, new = v[take], new[take]
        values = np.concatenate([self.values, v])
        keys = np.concatenate([self.keys, new])
        if values.size > self.cap:
            keep = np.argpartition(keys, self.cap - 1)[:self.cap]
            values, keys = values[keep], keys[keep]
        self.values, self.keys = values, keys


@dataclass
class RunSample:
    """What compare needs of one run: exact counts of its measurement phase
    and samples of its per-request values."""

    path: Path
    run_id: str
    verdict: str | None
    """summary.json's verdict ("valid", "invalid"); None without one."""
    reasons: tuple[str, ...]
    measure_s: float
    requests: int
    ok: int
    ok_per_s: np.ndarray
    """Answered requests per whole second of the measurement phase (intended time)."""
    response: np.ndarray
    """A sample of the answered requests' response times (us)."""
    response_rows: int
    lag: np.ndarray
    """A sample of every request's send lag (us)."""
    lag_rows: int
    rd: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """R_d of every CD request of the measurement phase (every CD host's)."""

    @property
    def sampled(self) -> bool:
        return self.response.size < self.response_rows or self.lag.size < self.lag_rows


def _rd(cd_csvs: Sequence[Path], measure: tuple[float, float]) -> np.ndarray:
    parts = []
    for p in cd_csvs:
        t, _, rd = cd_series(p)
        keep = (t.intended >= measure[0]) & (t.intended < measure[1]) & np.isfinite(rd)
        parts.append(rd[keep])
    return np.concatenate(parts) if parts else np.zeros(0)


def sample_run(path: Path, cap: int = CAP, seed: int = 1) -> RunSample:
    """Read one run's measurement phase (bounded memory: see the module)."""
    files = find_files(path)
    ges = ge_data(files)
    phases = read_phases(files, ges)
    a, b = phases.measure
    windows = max(1, int((b - a) // 1e6))
    per_s = np.zeros(windows, np.int64)
    rng = np.random.default_rng(seed)
    resp, lag = _Reservoir(cap, rng), _Reservoir(cap, rng)
    requests = ok_n = 0
    for g in ges:
        for batch in g.batches(ANALYSIS_COLUMNS, batch_size=BATCH):
            t = GeArrays.from_table(pa.Table.from_batches([batch]))
            t = t.select((t.intended >= a) & (t.intended < b) & ~t.observe)
            requests += len(t)
            ok_n += int(np.count_nonzero(t.ok))
            sec = ((t.intended[t.ok] - a) // 1e6).astype(np.int64)
            per_s += np.bincount(sec[sec < windows], minlength=windows)
            resp.add(t.response[t.ok & np.isfinite(t.response)])
            lag.add(t.send_lag[np.isfinite(t.send_lag)])
    cds: list[Path] = [files.cd_csv] if files.cd_csv else [h.cd_csv for h in files.hosts if h.cd_csv]
    summary = read_summary(files.summary) if files.summary else None
    return RunSample(path=files.root, run_id=summary.run_id if summary else files.root.name,
                     verdict=summary.verdict if summary else None, reasons=summary.reasons if summary else (),
                     measure_s=(b - a) / 1e6, requests=requests, ok=ok_n, ok_per_s=per_s.astype(np.float64),
                     response=resp.values, response_rows=resp.seen, lag=lag.values, lag_rows=lag.seen,
                     rd=_rd(cds, (a, b)))


# --- the workload ----------------------------------------------------------------

def _workload_files(run: RunDir) -> list[Path]:
    """The regular files of workload/ (not following symlinks), sorted; the
    per-GE split of the trace left out when the whole trace is there."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(run.workload):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath, name)
            if stat.S_ISREG(os.lstat(p).st_mode):
                found.append(p)
    whole = run.trace.is_file()
    split = re.compile(layout.ge_trace(0).replace("0", "[0-9]+").replace(".", r"\."))
    return [p for p in found if not (whole and p.parent == run.workload and split.fullmatch(p.name))]


def workload_hash(path: Path) -> str | None:
    """SHA-256 of a run's workload/ files (names and contents); None when it has none."""
    run = RunDir(Path(path))
    if not run.workload.is_dir():
        return None
    files = _workload_files(run)
    if not files:
        return None
    h = hashlib.sha256()
    for p in files:
        rel = p.relative_to(run.workload).as_posix()
        h.update(f"{rel}\0{p.stat().st_size}\0".encode())
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


# --- the comparison ---------------------------------------------------------------

@dataclass(frozen=True)
class Row:
    """One metric compared."""

    metric: Metric
    a: float | None
    b: float | None
    est: Estimate | None
    verdict: str
    method: str
    note: str = ""

    @property
    def relative(self) -> float | None:
        if self.est is None or self.a is None:
            return None
        if self.a == 0:
            return 0.0 if self.est.diff == 0 else math.copysign(math.inf, self.est.diff)
        return self.est.diff / abs(self.a)


def _verdict(m: Metric, est: Estimate, base: float, th: Threshold) -> tuple[str, str]:
    if not est.significant:
        return NO_CHANGE, ""
    if not th.met(est.diff, base):
        return NO_CHANGE, f"significant, below the {th.text(m.unit)} threshold"
    better = (est.diff > 0) == m.higher_better
    return (IMPROVED if better else REGRESSED), ""


def verdict_row(m: Metric, a: float, b: float, est: Estimate, th: Threshold, method: str) -> Row:
    verdict, note = _verdict(m, est, a, th)
    return Row(m, a, b, est, verdict, method, note)


def missing_row(m: Metric, why: str) -> Row:
    return Row(m, None, None, None, NOT_COMPARED, "", why)


def _subsample(x: np.ndarray, cap: int, rng: np.random.Generator) -> np.ndarray:
    return x if x.size <= cap else rng.choice(x, cap, replace=False)


def _hl_row(m: Metric, x: np.ndarray, y: np.ndarray, th: Threshold, alpha: float,
            rng: np.random.Generator, what: str) -> Row:
    if x.size == 0 or y.size == 0:
        return missing_row(m, f"no {what} in {'A' if x.size == 0 else 'B'}")
    xs, ys = _subsample(x, HL_CAP, rng), _subsample(y, HL_CAP, rng)
    est = hl_shift(xs, ys, alpha)
    method = f"Hodges-Lehmann, Mann-Whitney p={est.p_value:.2g}"
    if xs.size < x.size or ys.size < y.size:
        method += f" ({min(xs.size, ys.size):,}+ sampled)"
    return verdict_row(m, float(np.median(x)), float(np.median(y)), est, th, method)


def _quantile_row(m: Metric, q: float, x: np.ndarray, y: np.ndarray, th: Threshold, alpha: float,
                  rng: np.random.Generator, what: str) -> Row:
    if x.size == 0 or y.size == 0:
        return missing_row(m, f"no {what} in {'A' if x.size == 0 else 'B'}")
    qa, qb, est = quantile_diff(x, y, q, alpha, rng)
    return verdict_row(m, qa, qb, est, th, "bootstrap")


def compare(a: RunSample, b: RunSample, th: dict[str, Threshold], alpha: float, seed: int = 1) -> list[Row]:
    """Every metric of METRICS compared, B - A, in METRICS' order."""
    rng = np.random.default_rng(seed)
    rows: dict[str, Callable[[Metric], Row]] = {
        "throughput": lambda m: verdict_row(m, float(a.ok_per_s.mean()), float(b.ok_per_s.mean()),
                                            mean_diff(a.ok_per_s, b.ok_per_s, alpha), th[m.key],
                                            "Welch, per-second counts"),
        "response": lambda m: _hl_row(m, a.response, b.response, th[m.key], alpha, rng, "answered request"),
        "p50": lambda m: _quantile_row(m, 0.50, a.response, b.response, th[m.key], alpha, rng, "answered request"),
        "p95": lambda m: _quantile_row(m, 0.95, a.response, b.response, th[m.key], alpha, rng, "answered request"),
        "p99": lambda m: _quantile_row(m, 0.99, a.response, b.response, th[m.key], alpha, rng, "answered request"),
        "send_lag_p99": lambda m: _quantile_row(m, 0.99, a.lag, b.lag, th[m.key], alpha, rng, "request"),
        "errors": lambda m: _errors_row(m, a, b, th[m.key], alpha, rng),
        "rd": lambda m: _hl_row(m, a.rd, b.rd, th[m.key], alpha, rng, "CD request (no CD-GE output)"),
    }
    return [rows[m.key](m) for m in METRICS]


def _errors_row(m: Metric, a: RunSample, b: RunSample, th: Threshold, alpha: float,
                rng: np.random.Generator) -> Row:
    if a.requests == 0 or b.requests == 0:
        return missing_row(m, f"no request in {'A' if a.requests == 0 else 'B'}'s measurement phase")
    est = proportion_diff(a.requests - a.ok, a.requests, b.requests - b.ok, b.requests, alpha, rng)
    return verdict_row(m, 1 - a.ok / a.requests, 1 - b.ok / b.requests, est, th, "bootstrap (binomial)")
