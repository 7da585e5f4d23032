"""`wotbench capacity SPEC`: the largest number of devices, or the highest
per-device request rate, this host can emulate with trustworthy results.

The paper leaves automating its deployment process (section 5: raise the
load until contention shows) as future work; this is it. A spec names what
to vary and the objective under ``capacity:``::

    capacity:
      vary: devices[0].count      # or devices[0].rate (requests/s per device)
      start: 1                    # first probe
      max: 64                     # never probe above this
      resolution: 1               # stop when the pass/fail bracket is this narrow
      max_probes: 12              # hard bound on the number of test runs
      objective: {p95: 50ms}      # response time of the devices' requests
                                  # (mean, p50, p90, p95, p99; all must hold)

Each probe is one ordinary ``wotbench run`` of the spec with the varied key
set (any ``sweep`` is not allowed with ``capacity``). A probe passes when
the run's verdict is valid (which includes: no contention detected by the
CD module, RITs as intended, few errors) and every objective holds over the
measurement phase. With a gateway under test (``gateway_under_test:``) a
probe gives two answers apart and passes only when both do: the testbed
was valid (the verdict, its reasons), and the gateway met the objective
(over the GEs' end-to-end response times through it) with no gateway
answer against it (summary.json's ``gateway.answer``: errors through the
gateway, its exit, floods, held connections, ...; without that object,
the gateway's errors and timeouts against ``validity.max_error_rate``) and
every request routed to the device it names (:func:`judge`, pure).
capacity.json keeps both apart per probe (``verdict``, ``reasons``;
``gateway_met``, ``gateway_reasons``) and the table says which failed.
The search doubles from ``start`` until a probe fails or ``max`` passes,
then bisects between the last pass and the first failure (:func:`search`,
pure, testable with a fake probe).

Results: ``<results>/<capacity-run-id>/`` with ``capacity.json`` (the
answer and every probe's evidence: verdict, reasons, objective values,
R_d of devices and CD node, contention status, run dir), ``capacity.png``
and the probes' run dirs under ``probes/``. ``capacity.json`` is rewritten
(atomically) after every probe, with ``complete: false`` until the end.

Caveat: a probe near the capacity can pass once and fail once on a noisy
host; bisection assumes monotonicity and reports the bracket it ended with.
Use ``repetitions:`` in the spec to make each probe require all repetitions
to pass.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.engine import dockerenv
from wotbench.execution.runner import RunFailed, RunOptions, preflight, run_spec
from wotbench.reporting import load_run
from wotbench.spec import CapacitySpec, Objective, RunSpec, load

__all__ = ["CapacitySpec", "Objective", "SearchResult", "ProbeResult", "Judgement", "search", "probe_runs",
           "judge", "run_capacity", "fmt_value", "evidence_text", "failed_by"]


# --- the search (pure) ----------------------------------------------------------

@dataclass(frozen=True)
class SearchResult:
    answer: float | None
    """Largest value that passed (None: even ``start`` failed)."""
    first_fail: float | None
    """Smallest value that failed above the answer (None: ``max`` passed)."""
    probes: tuple[tuple[float, bool], ...]
    """(value, passed) in the order they were run."""
    capped: bool
    """``max`` passed: the real capacity may be higher."""
    exhausted: bool
    """Stopped by ``max_probes`` before the bracket was narrow enough."""


def search(passes: Callable[[float], bool], start: float, maximum: float, resolution: float,
           integer: bool, max_probes: int = 12) -> SearchResult:
    """Doubling from ``start`` until a failure or ``maximum``, then bisection
    between the last pass and the first failure until they are at most
    ``resolution`` apart. Each value is probed at most once."""
    tried: list[tuple[float, bool]] = []

    def probe(x: float) -> bool:
        ok = passes(x)
        tried.append((x, ok))
        return ok

    lo: float | None = None
    hi: float | None = None
    x = start
    while len(tried) < max_probes:
        if not probe(x):
            hi = x
            break
        lo = x
        if x >= maximum:
            break
        x = min(x * 2, maximum)
    while lo is not None and hi is not None and hi - lo > resolution and len(tried) < max_probes:
        mid = (lo + hi) // 2 if integer else (lo + hi) / 2
        if mid in (lo, hi):
            break
        if probe(mid):
            lo = mid
        else:
            hi = mid
    narrow = lo is None or hi is None or hi - lo <= resolution or (integer and hi - lo <= 1)
    capped = lo is not None and hi is None and lo >= maximum
    return SearchResult(lo, hi, tuple(tried), capped, exhausted=not (narrow or capped))


# --- probes -------------------------------------------------------------------------

@dataclass
class ProbeResult:
    value: float
    passed: bool
    verdict: str
    reasons: list[str]
    objectives: dict[str, float | None]      # stat -> measured value, us
    objectives_ok: bool
    rd_devices: float | None                  # mean per-device (sum R - sum S) / sum S
    rd_cd: float | None                       # CD node mean R_d in the measurement phase
    rd_cd_baseline: float | None              # ... and in calibration
    contention: str | None                    # cd-module status
    requests: int | None
    run_dirs: list[str] = field(default_factory=list)
    gateway_met: bool | None = None
    """With a gateway under test: the gateway's answer (None: no gateway)."""
    gateway_reasons: list[str] = field(default_factory=list)
    """Every way the gateway missed (empty when it met the objective)."""


# --- the probe decision (pure) ------------------------------------------------------

@dataclass(frozen=True)
class Judgement:
    """One run's two answers, apart: the testbed's and the gateway's."""

    testbed_valid: bool
    testbed_reasons: tuple[str, ...]
    objectives_ok: bool
    gateway_met: bool | None          # None: the run had no gateway under test
    gateway_reasons: tuple[str, ...]

    @property
    def passed(self) -> bool:
        if self.gateway_met is None:
            return self.testbed_valid and self.objectives_ok
        return self.testbed_valid and self.gateway_met


def judge(summary: dict[str, Any], cap: CapacitySpec, values: dict[str, float | None]) -> Judgement:
    """The decision of one probe run from its summary.json and the
    objective's measured values (µs, over the run's answered requests: with
    a gateway, its end-to-end response times through it)."""
    testbed_reasons = tuple(str(r) for r in summary.get("reasons") or ())
    missed = [f"{o.stat}: no answered request" if (v := values.get(o.stat)) is None
              else f"{o.stat} {_ms(v)} above the objective {o.limit_us / 1e3:g} ms"
              for o in cap.objectives if (v := values.get(o.stat)) is None or v > o.limit_us]
    section = summary.get("gateway")
    if not isinstance(section, dict):
        return Judgement(str(summary.get("verdict")) == "valid", testbed_reasons, not missed, None, ())
    more = _gateway_reasons(section, summary.get("thresholds") or {})
    answer = section.get("answer")
    met = not missed and not more and (not isinstance(answer, dict) or answer.get("met") is True)
    return Judgement(str(summary.get("verdict")) == "valid", testbed_reasons, not missed, met,
                     tuple(missed + more))


def _gateway_reasons(section: dict[str, Any], thresholds: dict[str, Any]) -> list[str]:
    """The gateway's own answer's reasons (``answer`` {met, reasons}, K3's
    reporting/_gatewayanswer.py) when the summary has one; else what the
    section shows: gateway errors and timeouts above the error-rate
    threshold. Misrouting in both cases."""
    out: list[str] = []
    answer = section.get("answer")
    if isinstance(answer, dict):
        out += [str(r) for r in answer.get("reasons") or ()]
        if answer.get("met") is not True and not out:
            out.append("no evidence: the gateway answer could not be given")
    else:
        requests = int(section.get("requests") or 0)
        errors = dict(section.get("gateway_errors") or {})
        bad = sum(int(n) for n in errors.values()) + int(section.get("timeouts") or 0)
        limit = float(thresholds.get("max_error_rate", 0.01))
        if requests == 0:
            out.append("no request through the gateway in the measurement phase")
        elif bad / requests > limit:
            codes = ", ".join(f"{c}: {n}" for c, n in errors.items() if n)
            out.append(f"gateway error rate {100 * bad / requests:.2f} % above {100 * limit:g} % "
                       f"({codes + ', ' if codes else ''}{int(section.get('timeouts') or 0)} timeouts "
                       f"of {requests} requests)")
    r = section.get("routing")
    if isinstance(r, dict) and r.get("served_more") and not any("MISROUTED" in x for x in out):
        b = r.get("busiest") or {}
        out.append(f"MISROUTED: {r['served_more']} of {r.get('devices')} devices served more requests than "
                   f"were sent to them (device {b.get('device_id')}: {b.get('served')} served, "
                   f"{b.get('sent')} sent)")
    return out


def probe_runs(runs: Sequence[RunSpec], cap: CapacitySpec, value: float) -> list[RunSpec]:
    """The tests of one probe: the spec's tests (its repetitions) with the
    varied key set; an invalid value is reported at ``capacity.vary``."""
    return [rs.with_value(cap.path, cap.probe_value(rs.spec.groups[cap.group], value), ("capacity", "vary"))
            for rs in runs]


def evaluate(run_dir: Path, cap: CapacitySpec) -> ProbeResult:
    """The evidence of one finished probe run."""
    # Imported on use: `wotbench --help` loads this module (see register).

    summary = json.loads((run_dir / layout.SUMMARY).read_text())
    measure = load_run(run_dir).requests
    ok = measure[measure["status"] == "ok"]
    resp = ok["response_us"].to_numpy(dtype=np.float64)
    values = {o.stat: o.value_us(resp) for o in cap.objectives}
    j = judge(summary, cap, values)
    cd = summary.get("cd") or {}
    cont = cd.get("contention") or {}
    ds = summary.get("device_summary") or {}
    verdict = str(summary.get("verdict"))
    return ProbeResult(
        value=0, passed=j.passed, verdict=verdict,
        reasons=list(j.testbed_reasons), objectives=values, objectives_ok=j.objectives_ok,
        rd_devices=ds.get("rd_ratio_mean"),
        rd_cd=(cont.get("measure") or {}).get("mean"),
        rd_cd_baseline=(cont.get("baseline") or {}).get("mean"),
        contention=cont.get("status"), requests=int(len(measure)),
        run_dirs=[os.fspath(run_dir)], gateway_met=j.gateway_met, gateway_reasons=list(j.gateway_reasons))


def _combine(value: float, results: Sequence[ProbeResult]) -> ProbeResult:
    """Repetitions of one probe: it passes only if every repetition does."""
    def mean(xs: list[float | None]) -> float | None:
        v = [x for x in xs if x is not None]
        return float(np.mean(v)) if v else None

    def worst_of(stat: str) -> float | None:
        v = [x for r in results if (x := r.objectives[stat]) is not None]
        return max(v) if v else None

    worst = {o: worst_of(o) for o in results[0].objectives}
    return ProbeResult(
        value=value, passed=all(r.passed for r in results),
        verdict="valid" if all(r.verdict == "valid" for r in results) else "invalid",
        reasons=sorted({x for r in results for x in r.reasons}), objectives=worst,
        objectives_ok=all(r.objectives_ok for r in results),
        rd_devices=mean([r.rd_devices for r in results]), rd_cd=mean([r.rd_cd for r in results]),
        rd_cd_baseline=mean([r.rd_cd_baseline for r in results]),
        contention=("contention" if any(r.contention == "contention" for r in results)
                    else results[0].contention),
        requests=sum(r.requests or 0 for r in results),
        run_dirs=[d for r in results for d in r.run_dirs],
        gateway_met=None if results[0].gateway_met is None else all(r.gateway_met for r in results),
        gateway_reasons=sorted({x for r in results for x in r.gateway_reasons}))


# --- the command ----------------------------------------------------------------------

def fmt_value(cap: CapacitySpec, x: float | None) -> str:
    if x is None:
        return "-"
    return str(int(x)) if cap.integer else f"{x:.4g}"


def run_capacity(spec: str | Path, results: Path, scale: str | None = None,
                 progress: bool = False, log: TextIO = sys.stderr) -> Path:
    """Runs the capacity search of a spec; returns its results folder."""
    runs = load(spec, scale)
    whole = runs[0].experiment
    cap = whole.capacity if whole is not None else None
    if cap is None:
        raise runs[0].locate(UserError("missing: the section saying what to vary and the objective "
                                       "(docs/spec.md)", field="capacity"))
    # Every value the search may probe is valid before anything starts: the
    # extremes stand for the rest (only the varied key changes).
    # Images, impairment support and placement too (as `wotbench run` does).
    res.check_results_root(results)      # a bad --results is refused before anything starts
    client = dockerenv.client()
    for x in (cap.start, cap.maximum):
        for rs in probe_runs(runs, cap, x):
            preflight(rs.spec, client)
    out = results / res.new_run_id(f"capacity-{runs[0].spec.name}")
    (out / "probes").mkdir(parents=True)
    opts = RunOptions(results_root=out / "probes", progress=progress, log=log)
    evidence: list[ProbeResult] = []
    started = time.time()

    def report(final: SearchResult | None) -> None:
        doc = {
            "format": 1, "spec": os.fspath(spec), "scale": runs[0].scale, "capacity": asdict(cap),
            "complete": final is not None, "started_epoch_s": started, "elapsed_s": time.time() - started,
            "answer": final.answer if final else None,
            "first_fail": final.first_fail if final else None,
            "capped": final.capped if final else None, "exhausted": final.exhausted if final else None,
            "probes": [asdict(p) for p in evidence],
        }
        res.write_json(out / "capacity.json", doc)

    def passes(x: float) -> bool:
        print(f"capacity: probe {len(evidence) + 1}: {cap.vary.split('.')[-1]} = {fmt_value(cap, x)}",
              file=log, flush=True)
        try:
            dirs = run_spec(probe_runs(runs, cap, x), opts)
        except RunFailed as exc:
            if isinstance(exc.cause, UserError):
                raise exc.cause from None
            raise
        p = _combine(x, [evaluate(d, cap) for d in dirs])
        evidence.append(p)
        report(None)
        print(f"capacity: {fmt_value(cap, x)} -> {'PASS' if p.passed else 'FAIL'} ({evidence_text(cap, p)})",
              file=log, flush=True)
        return p.passed

    found = search(passes, cap.start, cap.maximum, cap.resolution, cap.integer, cap.max_probes)
    report(found)
    res.write_atomic(out / "capacity.png", plot(cap, evidence, found))
    return out


def failed_by(p: ProbeResult) -> str:
    """Which answer failed a probe: "" (it passed), "testbed", "gateway",
    "testbed and gateway", or "objective" (no gateway under test)."""
    testbed = p.verdict != "valid"
    other = (not p.objectives_ok) if p.gateway_met is None else not p.gateway_met
    name = "objective" if p.gateway_met is None else "gateway"
    return " and ".join(n for n, bad in (("testbed", testbed), (name, other)) if bad)


def evidence_text(cap: CapacitySpec, p: ProbeResult) -> str:
    objs = ", ".join(f"{o.stat} {_ms(p.objectives[o.stat])} (limit {o.limit_us / 1e3:g} ms)"
                     for o in cap.objectives)
    rd = f"R_d devices {_num(p.rd_devices)}, CD {_num(p.rd_cd)} (baseline {_num(p.rd_cd_baseline)})"
    failed = f"failed: {why}; " if (why := failed_by(p)) else ""
    if p.gateway_met is None:
        reasons = f"; {'; '.join(p.reasons[:2])}" if p.reasons else ""
        return f"{failed}{p.verdict}; {objs}; {rd}; contention {p.contention}{reasons}"
    testbed = "testbed valid" if p.verdict == "valid" else f"testbed NOT valid ({'; '.join(p.reasons[:2])})"
    gateway = ("gateway met the objective" if p.gateway_met
               else f"gateway did NOT meet it ({'; '.join(p.gateway_reasons[:3])})")
    return f"{failed}{testbed}; {gateway}; {objs}; {rd}; contention {p.contention}"


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1e3:.2f} ms"


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def plot(cap: CapacitySpec, probes: Sequence[ProbeResult], found: SearchResult) -> bytes:
    """Objective statistic and R_d of every probe against the varied value."""
    import matplotlib  # on use: `wotbench --help` loads this module

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7.5, 6.4), sharex=True, constrained_layout=True)
    xs = np.array([p.value for p in probes], dtype=float)
    ok = np.array([p.passed for p in probes], dtype=bool)
    # a colour per objective: a spec has at most one per statistic, five, often fewer
    for o, color in zip(cap.objectives, ("C0", "C1", "C2", "C3", "C4"), strict=False):
        ys = np.array([np.nan if (y := p.objectives[o.stat]) is None else y / 1e3 for p in probes])
        order = np.argsort(xs)
        ax1.plot(xs[order], ys[order], "-", color=color, alpha=0.5)
        ax1.scatter(xs[ok], ys[ok], marker="o", color=color, label=f"{o.stat} (pass)", zorder=3)
        ax1.scatter(xs[~ok], ys[~ok], marker="x", s=60, color=color, label=f"{o.stat} (fail)", zorder=3)
        ax1.axhline(o.limit_us / 1e3, color=color, ls=":", label=f"{o.stat} objective")
    for i, p in enumerate(probes, 1):
        y = next((p.objectives[o.stat] for o in cap.objectives if p.objectives[o.stat] is not None), None)
        if y is not None:
            ax1.annotate(str(i), (p.value, y / 1e3), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax1.set_ylabel("device response time (ms)")
    ax1.set_ylim(bottom=0)
    ax1.legend(fontsize=7, ncol=2)
    title = (f"capacity: {fmt_value(cap, found.answer)} {cap.unit}" if found.answer is not None
             else f"capacity: none (even {fmt_value(cap, cap.start)} failed)")
    if found.capped:
        title += " (the maximum probed; may be higher)"
    ax1.set_title(title)
    order = np.argsort(xs)
    for attr, mk, label in (("rd_devices", "o", "devices R_d"), ("rd_cd", "s", "CD node R_d"),
                            ("rd_cd_baseline", "", "CD node baseline R_d")):
        ys = np.array([np.nan if getattr(p, attr) is None else getattr(p, attr) for p in probes])
        ax2.plot(xs[order], ys[order], (mk + "-") if mk else ":", label=label)
    bad = [p for p in probes if p.contention == "contention"]
    if bad:
        ax2.scatter([p.value for p in bad], [p.rd_cd if p.rd_cd is not None else np.nan for p in bad],
                    s=160, facecolors="none", edgecolors="red", lw=2, label="contention detected", zorder=5)
    inv = [p for p in probes if p.verdict != "valid"]
    if inv:
        ax2.scatter([p.value for p in inv], [0] * len(inv), marker="v", color="red", label="verdict invalid")
    for ax in (ax1, ax2):
        if found.answer is not None:
            ax.axvline(found.answer, color="green", lw=1)
        if found.first_fail is not None:
            ax.axvline(found.first_fail, color="red", lw=1, ls="--")
    if cap.integer:
        from matplotlib.ticker import MaxNLocator

        ax2.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax2.set_ylabel("R_d = (R - S) / S")
    ax2.set_xlabel(cap.vary.replace(".rate", ".rate (requests/s per device)"))
    ax2.legend(fontsize=7)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()
