"""Synthetic run directories with known properties, for the reporting tests
and the ``make bench-report`` benchmark. Everything is generated with NumPy
and written with pyarrow in the documented formats (docs/formats.md,
docs/run-layout.md), so the analysis reads them exactly as it reads a real run.

Known properties a caller can dial in: the GE's minimum inter-send gap (a GE
that cannot keep up, paper Table 1), a contention episode (extra response
time for the CD node and the devices from a given instant), an error rate,
missing CD or monitor data, a degraded placement, 5.03 (overload) replies,
GE send errors. The harness's records come too (observed.json: every
container running to the end, GEs exiting 0; GE summaries; device --stats).

``synth_swarm_run`` writes a run across a swarm (``nodes/<hostname>/`` per
host, the swarm's manifest and observed.json), with contention on one
host, a lost node, a probe without answers or a host without monitor data
(``SwarmSynth``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.csv as pacsv

from wotbench.base.formats import DEVICE_STATS_COUNTERS, GE_OUTPUT_COLUMNS
from wotbench.base.rundir import RunDir

__all__ = ["SynthSpec", "SwarmSynth", "synth_run", "synth_swarm_run"]

_RESOURCES = 64
#: The GEs' --late-us in a synthetic run (the default late_send threshold).
LATE_US = 1000


@dataclass(frozen=True)
class SynthSpec:
    devices: int = 10
    ges: int = 1
    rit_us: float = 100_000.0
    """Mean exponential RIT per device."""
    service_us: float = 5000.0
    """Mean of the (exponentially distributed) resource service times."""
    network_us: float = 150.0
    calibration_s: float = 10.0
    warmup_s: float = 5.0
    measure_s: float = 60.0
    cooldown_s: float = 2.0
    ge_floor_us: float = 0.0
    """Minimum gap between two sends of one GE (0: the GE keeps up)."""
    contention_from_s: float | None = None
    contention_extra: float = 0.3
    """Extra response time during contention, as a fraction of S."""
    error_rate: float = 0.0
    cd: bool = True
    cd_rit_s: float = 1.0
    monitor: bool = True
    degraded: bool = False
    overload_rate: float = 0.0
    """Fraction of the requests answered 5.03 (a device's queue full)."""
    send_errors: int = 0
    """Send errors in each GE's summary."""
    records: bool = True
    """Write the harness's records: observed.json, GE summaries, device --stats."""
    seed: int = 1


def _dict(values: list[str], idx: np.ndarray) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), pa.array(values))


def _nullable(x: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(np.round(x).astype(np.int64), mask=~valid)


#: Requests generated (and written) at a time, so that a 100-million-request
#: run is generated in bounded memory; a GE with fewer is generated in one
#: piece, exactly as it always was (the tests' runs keep their random stream).
SYNTH_CHUNK = 1 << 21


def _ge_tables(rng: np.random.Generator, dev_ids: np.ndarray, start_us: float, end_us: float, rit_us: float,
               svc: np.ndarray, spec: SynthSpec, uri_host: str, contended: np.ndarray | None = None,
               chunk: int = SYNTH_CHUNK) -> Iterator[pa.Table]:
    """The per-request output of one GE serving ``dev_ids`` (aggregate Poisson
    stream), ``chunk`` requests at a time; contention hits the devices in
    ``contended`` (None: all)."""
    rate = dev_ids.size / rit_us
    # Enough arrivals to pass end_us for sure, then cut: the stream covers the whole run.
    n_all = int((end_us - start_us) * rate * 1.1) + 100
    uris = [f"coap://{uri_host}{d}/r{j}" for d in dev_ids for j in range(_RESOURCES)]
    t, last_sent = start_us, None
    while True:
        m = min(n_all, chunk)
        arrivals = t + np.cumsum(rng.exponential(1.0 / rate, m))
        t = float(arrivals[-1])
        intended = np.round(arrivals)
        intended = intended[intended < end_us]
        table, last_sent = _ge_rows(rng, intended, dev_ids, svc, spec, uris, contended, last_sent)
        yield table
        if n_all <= chunk or intended.size < m:
            return


def _ge_rows(rng: np.random.Generator, intended: np.ndarray, dev_ids: np.ndarray, svc: np.ndarray,
             spec: SynthSpec, uris: list[str], contended: np.ndarray | None,
             last_sent: float | None) -> tuple[pa.Table, float | None]:
    """The rows of the requests intended at ``intended``, after a send at ``last_sent``."""
    n = intended.size
    which = rng.integers(0, dev_ids.size, n)
    res = rng.integers(0, _RESOURCES, n)
    x = intended + rng.gamma(2.0, 4.0, n)  # a few us of send jitter
    prev = -np.inf if last_sent is None else last_sent
    if spec.ge_floor_us > 0:
        # sent_i = max(x_i, sent_{i-1} + floor), vectorized: subtract i*floor, running max, add back.
        steps = np.arange(n) * spec.ge_floor_us
        first = prev + spec.ge_floor_us
        sent = np.maximum(np.maximum.accumulate(x - steps), first) + steps
    else:
        sent = np.maximum(np.maximum.accumulate(x), prev)
    sent = np.round(sent)
    service = svc[which, res]
    response = service + spec.network_us + rng.gamma(4.0, spec.network_us / 40.0, n)
    if spec.contention_from_s is not None:
        hit = intended >= spec.contention_from_s * 1e6
        if contended is not None:
            hit &= np.isin(dev_ids[which], contended)
        response[hit] += spec.contention_extra * service[hit] + spec.contention_extra * spec.service_us
    failed = rng.random(n) < spec.error_rate
    # Drawn only when asked for, so that the other runs keep their random stream.
    overload = ~failed & (rng.random(n) < spec.overload_rate) if spec.overload_rate > 0 else np.zeros(n, bool)
    ok = ~failed & ~overload
    answered = ~failed
    recv = sent + np.round(response)
    cols = {
        "device_id": pa.array(dev_ids[which].astype(np.int32)),
        "method": _dict(["GET"], np.zeros(n)),
        "uri": _dict(uris, which * _RESOURCES + res),
        "intended_us": pa.array(intended.astype(np.int64)),
        "sent_us": pa.array(sent.astype(np.int64)),
        "recv_us": _nullable(recv, answered),
        "response_us": _nullable(recv - sent, answered),
        "latency_intended_us": _nullable(recv - intended, answered),
        "send_lag_us": pa.array((sent - intended).astype(np.int64)),
        "status": _dict(["ok", "timeout", "error"], np.where(failed, 1, np.where(overload, 2, 0))),
        "code": pa.DictionaryArray.from_arrays(pa.array(overload.astype(np.int32), mask=failed),
                                               pa.array(["2.05", "5.03"])),
        "retransmissions": pa.array(np.where(failed, 4, 0).astype(np.int32)),
        "service_us": _nullable(service, ok),
    }
    assert tuple(cols) == GE_OUTPUT_COLUMNS
    return pa.table(cols), (float(sent[-1]) if n else last_sent)


def _trace_rows(t: pa.Table) -> pa.Table:   # the trace lines (docs/formats.md) of a GE output's rows
    return pa.table({"device_id": t.column("device_id"), "send_ts_us": t.column("intended_us"),
                     "method": t.column("method").cast(pa.string()), "uri": t.column("uri").cast(pa.string())})


def _write_csv(table: pa.Table | Iterable[pa.Table], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tables = [table] if isinstance(table, pa.Table) else table
    # Header unquoted, as the C programs write it.
    with path.open("wb") as fh:
        header = False
        for t in tables:
            if not header:
                fh.write((",".join(t.column_names) + "\n").encode())
                header = True
            pacsv.write_csv(t, fh, pacsv.WriteOptions(include_header=False, quoting_style="none"))


def _seq_table(t: np.ndarray, sent: np.ndarray, resp: np.ndarray, ok: np.ndarray, service_us: float,
               uri: str) -> pa.Table:
    """The output of a sequential GE to one CD node (the CD-GE, the probe): a
    request without an answer timed out after its retransmissions."""
    n = t.size
    sent = np.round(sent)
    recv = sent + np.round(resp)
    return pa.table({
        "device_id": pa.array(np.zeros(n, np.int32)), "method": _dict(["GET"], np.zeros(n)),
        "uri": _dict([uri], np.zeros(n)), "intended_us": pa.array(t.astype(np.int64)),
        "sent_us": pa.array(sent.astype(np.int64)), "recv_us": _nullable(recv, ok),
        "response_us": _nullable(recv - sent, ok), "latency_intended_us": _nullable(recv - t, ok),
        "send_lag_us": pa.array((sent - t).astype(np.int64)),
        "status": _dict(["ok", "timeout"], np.where(ok, 0, 1)),
        "code": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32), mask=~ok), pa.array(["2.05"])),
        "retransmissions": pa.array(np.where(ok, 0, 4).astype(np.int32)),
        "service_us": _nullable(np.full(n, service_us), ok)})


def _cd_table(rng: np.random.Generator, spec: SynthSpec, end_s: float, contended: bool = True) -> pa.Table:
    """The CD-GE's output: deterministic RIT, calibration before t0."""
    t = np.arange(-spec.calibration_s * 1e6, end_s * 1e6, spec.cd_rit_s * 1e6)
    sent = t + rng.gamma(2.0, 4.0, t.size)
    resp = spec.service_us + spec.network_us + rng.gamma(4.0, spec.network_us / 40.0, t.size)
    if spec.contention_from_s is not None and contended:
        resp[t >= spec.contention_from_s * 1e6] += 2 * spec.contention_extra * spec.service_us
    return _seq_table(t, sent, resp, np.ones(t.size, bool), spec.service_us, "coap://cd-node/cd")


def _monitor_table(rng: np.random.Generator, spec: SynthSpec, end_s: float) -> pa.Table:
    ts = np.arange(-spec.calibration_s, end_s + 1.0)
    load = 100.0 * min(1.0, spec.devices * spec.service_us / spec.rit_us / 2.0)
    cols = {"t_us": (ts * 1e6).astype(np.int64)}
    for c in range(2):
        busy = np.clip(np.where(ts >= 0, load, 2.0) + rng.normal(0, 2.0, ts.size), 0, 100)
        cols[f"cpu{c}_user"] = np.round(busy * 0.8, 1)
        cols[f"cpu{c}_sys"] = np.round(busy * 0.2, 1)
        cols[f"cpu{c}_idle"] = np.round(100.0 - busy, 1)
    return pa.table(cols)


def _count(table: pa.Table, column: str, value: str) -> int:
    return int(pa.compute.sum(pa.compute.equal(table.column(column).cast(pa.string()), value)).as_py() or 0)


class _GeCounts:
    """What a GE's summary and its devices' --stats count, over its chunks."""

    def __init__(self) -> None:
        self.rows = self.ok = self.timeouts = self.late = 0
        self.per_dev: dict[int, list[int]] = {}   # device -> [requests, 5.03 replies]

    def add(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        self.ok += _count(table, "status", "ok")
        self.timeouts += _count(table, "status", "timeout")
        self.late += int(np.count_nonzero(table.column("send_lag_us").to_numpy() > LATE_US))
        dev = table.column("device_id").to_numpy()
        over = dev[table.column("code").cast(pa.string()).to_numpy(zero_copy_only=False) == "5.03"]
        ids, n = np.unique(dev, return_counts=True)
        n_over = np.bincount(np.searchsorted(ids, over), minlength=ids.size)
        for d, c, o in zip(ids.tolist(), n.tolist(), n_over.tolist(), strict=True):
            acc = self.per_dev.setdefault(d, [0, 0])
            acc[0] += c
            acc[1] += o


def _ge_summary(c: _GeCounts, spec: SynthSpec) -> dict[str, Any]:
    """The counters of the GE summary JSON the checks read."""
    return {"format": 1, "tool": "wotbench-ge", "config": {"late_us": LATE_US}, "requests": c.rows,
            "ok": c.ok, "timeouts": c.timeouts, "send_errors": spec.send_errors, "late_sends": c.late,
            "garbage": {"truncated": 0, "unparseable": 0, "total": 0},
            "sched": {"policy": "other", "requested": "other", "set_by": None, "priority": None, "error": None,
                      "budget_us": None, "period_us": None, "duty_max": 0.0, "yields": 0, "yield_us": 0,
                      "stalls": 0, "stall_max_us": 0, "stall_total_us": 0, "holds": 0, "hold_max_us": 0,
                      "hold_total_us": 0, "majflt": 0}}


def _ge_records(run: RunDir, k: int, c: _GeCounts, spec: SynthSpec) -> dict[str, dict[str, Any]]:
    """GE k's summary and its devices' --stats; returns their containers for observed.json."""
    _write_json(run.ge_summary(k), _ge_summary(c, spec))
    containers: dict[str, dict[str, Any]] = {}
    for d in sorted(c.per_dev):
        name = f"wb-synth-dev-{d}"
        containers[name] = {"key": f"dev-{d}", "role": "device", "status": "running", "exit_code": 0,
                            "oom_killed": False}
        n, over = c.per_dev[d]
        counts = dict.fromkeys(DEVICE_STATS_COUNTERS, 0)
        counts.update(requests=n, served=n, overflow=over)
        _write_json(run.device_stats(name), {"format": 1, "cpus": "0", **counts})
    return containers


def _observed(spec: SynthSpec, rows: list[int], containers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """observed.json of a run in which everything ran to the end."""
    ges = {f"ge-{k}": {"container": f"wb-synth-ge-{k}", "exit_code": 0, "killed": False, "trace_lines": n,
                       "rows": n} for k, n in enumerate(rows)}
    return {"format": 1, "containers": containers, "ges": ges, "start": {"late_us": 0},
            "impairment": None, "collectl": True}


def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def _write_phases(run: RunDir, spec: SynthSpec) -> float:
    """phases.json; returns the end of the load (s from t0)."""
    end_s = spec.warmup_s + spec.measure_s + spec.cooldown_s
    _write_json(run.phases, {"t0_epoch_us": 1_700_000_000_000_000,
                             "calibration": [-spec.calibration_s * 1e6, 0.0], "warmup": [0.0, spec.warmup_s * 1e6],
                             "measure": [spec.warmup_s * 1e6, (spec.warmup_s + spec.measure_s) * 1e6],
                             "cooldown": [(spec.warmup_s + spec.measure_s) * 1e6, end_s * 1e6]})
    return end_s


def _write_ges(run: RunDir, rng: np.random.Generator, spec: SynthSpec, end_s: float,
               contended: np.ndarray | None = None) -> tuple[list[int], dict[str, dict[str, Any]]]:
    """Every workload GE's output (and records), generated and written
    SYNTH_CHUNK requests at a time: their row counts and the device containers."""
    svc = np.round(rng.exponential(spec.service_us, (spec.devices, _RESOURCES)))
    rows: list[int] = []
    containers: dict[str, dict[str, Any]] = {}
    for k in range(spec.ges):
        ids = np.arange(k, spec.devices, spec.ges)
        counts = _GeCounts()
        traced: list[pa.Table] = []

        def counted(tables: Iterator[pa.Table], counts: _GeCounts = counts,
                    traced: list[pa.Table] = traced) -> Iterator[pa.Table]:
            for t in tables:
                counts.add(t)
                traced.extend([_trace_rows(t)] if spec.records else [])
                yield t

        _write_csv(counted(_ge_tables(rng, ids, 0.0, end_s * 1e6, spec.rit_us, svc[ids], spec, "dev-", contended)),
                   run.ge_csv(k))
        if spec.records:      # the trace the GE ran: workload/trace.csv, or one per GE
            _write_csv(traced, run.trace if spec.ges == 1 else run.ge_trace(k))
            containers.update(_ge_records(run, k, counts, spec))
        rows.append(counts.rows)
    return rows, containers


def _plan(spec: SynthSpec) -> dict[str, Any]:
    return {"degraded": spec.degraded, "notes": ["2 cores: GE and devices share cores"] if spec.degraded else []}


def synth_run(root: Path, spec: SynthSpec = SynthSpec()) -> Path:
    """Write a run directory at ``root`` and return it."""
    rng = np.random.default_rng(spec.seed)
    run = RunDir(Path(root))
    end_s = _write_phases(run, spec)
    rows, containers = _write_ges(run, rng, spec, end_s)
    if spec.cd:
        _write_csv(_cd_table(rng, spec, end_s), run.cd_csv)
    if spec.monitor:
        _write_csv(_monitor_table(rng, spec, end_s), run.host_monitor)
    if spec.records:
        _write_json(run.observed, _observed(spec, rows, containers))
    _write_json(run.manifest, {"format": 1, "run_id": run.name, "placement": _plan(spec)})
    return run.root


# --- a run across a swarm --------------------------------------------------------

@dataclass(frozen=True)
class SwarmSynth:
    """A run across a swarm (docs/run-layout.md, "Runs across a swarm"): its
    hosts, and what goes wrong on which. SynthSpec's contention episode
    happens on ``contention_host`` only (its CD pair and its devices)."""

    device_hosts: tuple[str, ...] = ("node-a", "node-b")
    """Device i runs on device_hosts[i % len]; each has a CD pair and a probe."""
    ge_node: str = "node-a"
    """Runs the workload GEs (a device host too when listed in device_hosts)."""
    contention_host: str | None = None
    lost_node: str | None = None
    """A node that went down mid-run (its containers' state unknown)."""
    failed_probe: str | None = None
    """A host whose probe got no answers."""
    no_monitor: str | None = None
    """A host without monitor data (collectl missing there)."""
    cross_host_us: float = 200.0
    """Extra latency of the path from the GE node to another host."""
    clock_offset_us: float = -350.0
    """Every other host's clock minus the GE node's."""
    probe_requests: int = 50

    @property
    def hosts(self) -> tuple[str, ...]:
        return (self.ge_node, *(h for h in self.device_hosts if h != self.ge_node))


def _probe_table(rng: np.random.Generator, spec: SynthSpec, sw: SwarmSynth, host: str) -> pa.Table:
    """The GE node's probe of ``host``'s CD node: 10 ms apart from the probe's own start."""
    t = np.arange(sw.probe_requests) * 10_000.0
    sent = t + rng.gamma(2.0, 4.0, t.size)
    path = sw.cross_host_us if host != sw.ge_node else 0.0
    resp = spec.service_us + spec.network_us + path + rng.gamma(4.0, spec.network_us / 40.0, t.size)
    ok = np.full(t.size, host != sw.failed_probe)
    return _seq_table(t, sent, resp, ok, spec.service_us, f"coap://cd-node-{host}/cd")


def _swarm_manifest(run: RunDir, spec: SynthSpec, sw: SwarmSynth, ids: dict[str, list[int]]) -> dict[str, Any]:
    nodes, plans = [], []
    for i, h in enumerate(sw.hosts):
        ge = spec.ges if h == sw.ge_node else 0
        dev = h in sw.device_hosts
        roles = (([f"{ge} GEs" if ge > 1 else "GE"] if ge else [])
                 + (["CD pair", f"{len(ids[h])} devices"] if dev else []))
        remote = h != sw.ge_node
        nodes.append({"hostname": h, "id": f"id{i}", "role": "worker" if remote else "manager", "local": not remote,
                      "engine_version": "24.0.7", "kernel": "6.1.0", "cores": [0, 1], "labels": {},
                      "platform": "linux/x86_64", "addr": f"10.0.9.{i + 2}", "roles": roles,
                      "device_ids": ids.get(h, []),
                      "clock": {"offset_us": sw.clock_offset_us if remote else 0.0,
                                "uncertainty_us": 80.0 if remote else 0.0,
                                "how": "engine SystemTime at the midpoint of the call"}})
        plans.append({"hostname": h, "id": f"id{i}", "ge_instances": ge, "device_ids": ids.get(h, []),
                      "plan": {**_plan(spec), "cd_node_cpuset": "1" if dev else None}})
    return {"format": 1, "run_id": run.name, "swarm": True, "ge_node": sw.ge_node, "nodes": nodes,
            "placement": {"spread": "even", "why": ["devices spread evenly over the device hosts"], "nodes": plans}}


def _swarm_observed(spec: SynthSpec, sw: SwarmSynth, rows: list[int], containers: dict[str, dict[str, Any]],
                    cd_rows: dict[str, int], probe: dict[str, pa.Table]) -> dict[str, Any]:
    doc = _observed(spec, rows, containers)
    for g in doc["ges"].values():
        g["node"] = sw.ge_node
    for i, h in enumerate(sw.device_hosts):
        doc["ges"][f"cd-ge-{i}"] = {"container": f"wb-synth-cd-ge-{i}", "exit_code": 0, "killed": False,
                                    "trace_lines": cd_rows[h], "rows": cd_rows[h], "node": h}
        for role in ("cd-node", "cd-ge"):
            containers[f"wb-synth-{role}-{i}"] = {"key": f"{role}-{i}", "role": role, "status": "running",
                                                  "exit_code": 0, "oom_killed": False, "node": h}
    doc["nodes"] = {h: {"state": "ready", "lost": False, "reason": None} for h in sw.hosts}
    if sw.lost_node is not None:
        doc["nodes"][sw.lost_node] = {"state": "down", "lost": True,
                                      "reason": "node down at t=20s: its engine stopped answering"}
        for c in containers.values():
            if c["node"] == sw.lost_node:
                c.update(status="unknown", exit_code=None)
    doc["probe"] = {h: {"rows": t.num_rows, "ok": _count(t, "status", "ok"), "exit_code": 0} for h, t in probe.items()}
    doc["collectl"] = {h: h != sw.no_monitor for h in sw.hosts}
    return doc


def synth_swarm_run(root: Path, spec: SynthSpec = SynthSpec(), sw: SwarmSynth = SwarmSynth()) -> Path:
    """Write a run folder of a run across a swarm at ``root`` and return it:
    the GE output at the top, ``nodes/<hostname>/`` per host, the swarm's
    manifest and observed.json."""
    rng = np.random.default_rng(spec.seed)
    run = RunDir(Path(root))
    end_s = _write_phases(run, spec)
    host_of = [sw.device_hosts[i % len(sw.device_hosts)] for i in range(spec.devices)]
    ids = {h: [i for i, x in enumerate(host_of) if x == h] for h in sw.device_hosts}
    contended = np.array(ids.get(sw.contention_host, []) if sw.contention_host else [], dtype=np.int32)
    rows, containers = _write_ges(run, rng, spec, end_s, contended)
    for c in containers.values():
        c["node"] = host_of[int(c["key"].removeprefix("dev-"))]
    cd_rows, probe = {}, {}
    for h in sw.hosts:
        host = run.host(h)
        if h in sw.device_hosts:
            table = _cd_table(rng, spec, end_s, contended=h == sw.contention_host)
            _write_csv(table, host.cd_csv)
            cd_rows[h] = table.num_rows
            probe[h] = _probe_table(rng, spec, sw, h)
            _write_csv(probe[h], host.probe_csv)
        if h != sw.no_monitor:
            _write_csv(_monitor_table(rng, spec, end_s), host.host_monitor)
    if spec.records:
        _write_json(run.observed, _swarm_observed(spec, sw, rows, containers, cd_rows, probe))
    _write_json(run.manifest, _swarm_manifest(run, spec, sw, ids))
    return run.root
