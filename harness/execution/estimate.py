"""`wotbench plan`'s estimate: whether a test can be valid on this host and
how long it takes, from the spec, its placement plan and what this host
has measured (docs/spec.md, "plan").

- **GE load**: the offered rate per workload GE against one GE's measured
  capacity at ``validity.max_send_lag_p99`` (``wotbench calibrate-ge``,
  :mod:`wotbench.host.gecap`); without a calibration it says how to get one.
- **Device cores**: the devices' CPU demand, rate x (the device's own cost
  per request + the mean service time of ``busy``-mode groups) + containers
  x the CPU an idle device container takes, as a share of the device cores.
- **Time**: bring-up (containers / the engine's start rate + readiness),
  the test (the GEs' start, CD calibration, phases, drain, collect and
  verdict), teardown.

The start rate is the median of the last runs' measured ``startup``
(manifest.json), cached by :func:`remember_startup` in
``$XDG_CACHE_HOME/wotbench/startup.json``; before any run, a typical rate
(harness/README.md). Every number is an estimate and says so; a warning is
printed only in clear cases (over :data:`WARN_SHARE` of a capacity, or a
GE whose core also runs :data:`MANY_DEVICES`+ devices), never a refusal.
"""

from __future__ import annotations

import contextlib
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wotbench.base.errors import UserError
from wotbench.base.results import write_atomic
from wotbench.base.units import fmt_duration_us, fmt_num, plural
from wotbench.execution.placement import ClusterPlan, Plan
from wotbench.host.gecap import CalibrationSetup, GeCapacity, cache_path, cached, fingerprint
from wotbench.spec import Spec

__all__ = ["Estimate", "StartRate", "estimate", "of_plan", "typical_start", "load_start", "remember_startup",
           "calibration",
           "DEVICE_CPU_US_PER_REQ", "IDLE_CPU_PER_CONTAINER", "WARN_SHARE", "MANY_DEVICES"]

#: The device's own CPU per request (device/README.md, "Benchmark": 3.4-4.2 us; the high end).
DEVICE_CPU_US_PER_REQ = 4.2
#: CPU of one idle device container, in cores: scale-1000 on this 2-core host
#: (1,000 sleep-mode devices at 0.2 req/s each, monitor/containers.csv over the
#: measurement: 0.0002 cores each, 0.2 cores for 1,000).
IDLE_CPU_PER_CONTAINER = 0.0002
#: Typical engine rates on a 2-core host (harness/README.md, "1,000 devices"):
#: containers started and removed per second, and readiness per container.
TYPICAL_START_PER_S = 5.0
TYPICAL_DOWN_PER_S = 8.0
TYPICAL_READY_S_PER_CONTAINER = 0.002
#: Seconds between the devices' readiness and the CD-GE's start: the GE
#: containers start, then a lead (phases/_measure.py START_LEAD_S and 1.5 x
#: the slowest container start seen per GE): 7 s with one GE on this 2-core
#: host (scale-1000 --scale ci, 2026-11-26).
START_LEAD_S = 7.0
#: Seconds after the GEs finish: collect, the summary and its verdict, and
#: stopping the containers (12 s in the same run).
COLLECT_S = 12.0
#: The wait after the last send: the GEs stop once every answer is in, so a
#: healthy test drains in about a round trip (a CON timeout, phases/_ge.py
#: drain_us, is the worst case, not the estimate); then collect and summarize.
DRAIN_S = 1.0
#: A warning past this share of a capacity (the GE's, the device cores').
WARN_SHARE = 0.8
#: A GE that shares its core with this many devices or more gets a warning:
#: their containers' background work lands on the core whose schedule is
#: the measurement (on 2 cores the GE keeps a core and 1,000 devices stay valid).
MANY_DEVICES = 100
#: Runs kept in the start-rate cache (their median is taken).
KEEP_RUNS = 5
CACHE_FORMAT = 1


@dataclass(frozen=True)
class StartRate:
    """The engine's start rate and where it comes from."""

    per_s: float
    ready_s_per_container: float
    source: str            # "measured: median of N runs" or "typical"


def typical_start() -> StartRate:
    return StartRate(TYPICAL_START_PER_S, TYPICAL_READY_S_PER_CONTAINER,
                     "typical of a 2-core host, harness/README.md")


def calibration(layout: Plan | ClusterPlan) -> GeCapacity | None:
    """This host's cached GE calibration for the plan's GE scheduler, or
    None (never measured, or no GE binary built yet)."""
    plan = layout if isinstance(layout, Plan) else layout.nodes[0].plan
    try:
        return cached(fingerprint(CalibrationSetup(0, 0).ge_bin, plan.scheduler), cache_path())
    except UserError:
        return None


def _cache(path: Path | None) -> Path:
    return path if path is not None else cache_path().with_name("startup.json")


def _runs(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    runs = data.get("runs") if isinstance(data, dict) and data.get("format") == CACHE_FORMAT else None
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def load_start(path: Path | None = None) -> StartRate | None:
    """The median of the cached runs' start rates, or None before any run."""
    runs = [r for r in _runs(_cache(path))
            if isinstance(r.get("per_s"), (int, float)) and r["per_s"] > 0
            and isinstance(r.get("ready_s_per_container"), (int, float))]
    if not runs:
        return None
    return StartRate(statistics.median(float(r["per_s"]) for r in runs),
                     statistics.median(float(r["ready_s_per_container"]) for r in runs),
                     f"measured here: median of the last {plural(len(runs), 'run')}")


def remember_startup(startup: Mapping[str, Any] | None, run_id: str, path: Path | None = None) -> None:
    """Adds a run's measured start-up (manifest.json ``startup``) to the
    cache; a start-up of too few containers to time is skipped."""
    if not startup:
        return
    n, up = startup.get("containers"), startup.get("seconds")
    ready = startup.get("ready_seconds")
    if not isinstance(n, int) or n < 10 or not isinstance(up, (int, float)) or up <= 0:
        return
    entry = {"run_id": run_id, "containers": n, "per_s": round(n / up, 3),
             "ready_s_per_container": round(max(0.0, float(ready or up) - up) / n, 5)}
    path = _cache(path)
    runs = (_runs(path) + [entry])[-KEEP_RUNS:]
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"format": CACHE_FORMAT, "runs": runs}, indent=1) + "\n")


@dataclass(frozen=True)
class Estimate:
    """The estimate of one test (all times in seconds)."""

    rate_per_s: float               # the workload's mean offered rate, all GEs together
    ges: int
    ge_capacity: float | None       # one GE's capacity at the send-lag limit; None: not calibrated
    lag_limit_us: float
    device_cores: int
    device_demand: float            # cores
    containers: int
    shared: bool                    # a workload GE shares its core with devices
    start: StartRate
    bringup_s: float
    test_s: float
    teardown_s: float
    warnings: tuple[str, ...]
    rate_known: bool = True
    """False: a replay of a capture file not derived yet (its rate is known when the test is prepared)."""

    @property
    def total_s(self) -> float:
        return self.bringup_s + self.test_s + self.teardown_s

    def render(self) -> str:
        per_ge = self.rate_per_s / max(1, self.ges)
        if self.ge_capacity is None:
            ge = (f"{_rps(per_ge)} per GE; its capacity on this host is not calibrated "
                  "(run `wotbench calibrate-ge`)")
        else:
            ge = (f"{_rps(per_ge)} per GE, {_pct(per_ge, self.ge_capacity)} of one GE's "
                  f"{_rps(self.ge_capacity)} (p99 send lag within "
                  f"{fmt_duration_us(self.lag_limit_us)})")
        devices = (f"{_share(self.device_demand)} of {plural(self.device_cores, 'core')} busy "
                   f"({_pct(self.device_demand, self.device_cores)}; {plural(self.containers, 'container')})")
        if not self.rate_known:
            ge, devices = f"known once the capture is derived ({UNKNOWN_RATE})", "known once the capture is derived"
        lines = [
            "estimate (typical on this host class, not a measurement):",
            f"  load: {ge}",
            f"  device cores: {devices}",
            f"  time: bring-up {fmt_duration_us(self.bringup_s * 1e6)} (at {self.start.per_s:.1f} containers/s, "
            f"{self.start.source}), test {fmt_duration_us(self.test_s * 1e6)}, teardown "
            f"{fmt_duration_us(self.teardown_s * 1e6)}: about {fmt_duration_us(self.total_s * 1e6)} in all",
        ]
        lines += [f"  WARNING: this run is unlikely to be valid: {w}" for w in self.warnings]
        return "\n".join(lines)


#: Why a replay of a capture file has no rate in the plan.
UNKNOWN_RATE = ("when the test is prepared; `wotbench tracegen --from-pcap` it and replay that folder to "
                "see it here")


def _rps(x: float) -> str:
    return f"{fmt_num(x)} req/s"


def _share(cores: float) -> str:
    return f"{cores:.2f}" if cores >= 0.005 else "under 0.01"


def _pct(x: float, of: float) -> str:
    if of <= 0:
        return "-"
    return f"{100 * x / of:.0f} %" if x >= 0.005 * of else "under 1 %"


def _device_parts(layout: Plan | ClusterPlan) -> tuple[int, bool]:
    """(cores the devices may use, whether a workload GE shares its core
    with devices: the case shared cores cannot be trusted with many)."""
    plans = [layout] if isinstance(layout, Plan) else [n.plan for n in layout.nodes]
    cores = sum(len(set(p.device_cores)) for p in plans if p.device_cpusets or p.cd_node_cpuset is not None)
    ge = {c for p in plans for c in p.ge_cores}
    dev = {c for p in plans if p.device_cpusets for c in p.device_cores}
    return max(1, cores), bool(ge & dev)


def _device_demand(hs: Spec, containers: int) -> float:
    """Cores the devices keep busy: their own cost per request, the busy
    loop of ``busy``-mode groups, and the idle cost of every container."""
    assert hs.workload is not None
    rates = hs.workload.device_rate_per_us()
    us_per_s = 0.0
    for g, per_us in zip(hs.groups, rates, strict=True):
        rate = per_us * 1e6 * g.count
        busy = 0.0
        if g.mode == "busy" and g.workload is not None:     # a replay: the capture's mean service time
            busy = hs.workload.mean_service_us() if hs.workload.replay is not None else g.workload.resource_mean_us
        us_per_s += rate * (DEVICE_CPU_US_PER_REQ + busy)
    return us_per_s / 1e6 + containers * IDLE_CPU_PER_CONTAINER


def _warnings(e: Estimate, devices: int) -> list[str]:
    out = []
    per_ge = e.rate_per_s / max(1, e.ges)
    if e.ge_capacity is not None and per_ge > WARN_SHARE * e.ge_capacity:
        out.append(f"each GE would send {_pct(per_ge, e.ge_capacity)} of what it keeps on schedule here; "
                   "add GEs (gateway.instances: auto) or lower the rate")
    if e.device_demand > WARN_SHARE * e.device_cores:
        out.append(f"the devices would keep {_pct(e.device_demand, e.device_cores)} of their cores busy; "
                   "give them more cores, fewer devices or a lower rate")
    if e.shared and devices >= MANY_DEVICES:
        out.append(f"the GE shares its core with {plural(devices, 'device')}: their containers' work delays "
                   "its sends; run on a host with more cores, or a smaller scale (--scale)")
    return out


def estimate(hs: Spec, layout: Plan | ClusterPlan, gecap: GeCapacity | None,
             start: StartRate | None = None) -> Estimate:
    """The estimate of one test of ``hs`` on ``layout``; ``gecap`` is this
    host's GE calibration (None: not calibrated), ``start`` the engine's
    start rate (None: typical)."""
    start = start or typical_start()
    wl = hs.workload
    assert wl is not None
    rate = wl.aggregate_rate_per_us() * 1e6
    containers = hs.device_count + (1 if hs.cd.enabled else 0)
    cores, shared = _device_parts(layout)
    lag = hs.validity.send_lag_p99_max_us
    cal = hs.cd.calibration_us if hs.cd.enabled else 0
    length = hs.phases.total_us if hs.phases is not None else (wl.duration_us or 0)
    e = Estimate(
        rate_per_s=rate, ges=hs.gateway.instances,
        ge_capacity=gecap.capacity(lag) if gecap is not None else None, lag_limit_us=lag,
        device_cores=cores, device_demand=_device_demand(hs, containers), containers=containers,
        shared=shared, start=start,
        bringup_s=containers / start.per_s + containers * start.ready_s_per_container,
        test_s=START_LEAD_S + (cal + length) / 1e6 + DRAIN_S + COLLECT_S,
        teardown_s=containers / TYPICAL_DOWN_PER_S, warnings=(),
        rate_known=wl.replay is None or wl.replay.rate_per_us() is not None)
    return replace(e, warnings=tuple(_warnings(e, hs.device_count)))


def of_plan(hs: Spec, layout: Plan | ClusterPlan, gecap: GeCapacity | None = None) -> Estimate:
    """:func:`estimate` with what this host knows: ``gecap`` (the calibration
    ``gateway.instances: auto`` just used) or the cached one, and the
    cached start rate (`wotbench plan` and `wotbench run` print it)."""
    return estimate(hs, layout, gecap or calibration(layout), load_start())
