"""Synthetic run directories with known properties, for the reporting tests
and the ``make bench-report`` benchmark. Everything is generated with NumPy
and written with pyarrow in the documented formats (docs/formats.md,
docs/run-layout.md), so the analysis reads them exactly as it reads a real run.

Known properties a caller can dial in: the GE's minimum inter-send gap (a GE
that cannot keep up, paper Table 1), a contention episode (extra response
time for the CD node and the devices from a given instant), an error rate,
missing CD or monitor data, a degraded placement.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from wotbench.formats import GE_OUTPUT_COLUMNS

__all__ = ["SynthSpec", "synth_run"]

_RESOURCES = 64


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
    seed: int = 1


def _dict(values: list[str], idx: np.ndarray) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(idx.astype(np.int32)), pa.array(values))


def _nullable(x: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(np.round(x).astype(np.int64), mask=~valid)


def _ge_table(rng: np.random.Generator, dev_ids: np.ndarray, start_us: float, end_us: float, rit_us: float,
              svc: np.ndarray, spec: SynthSpec, uri_host: str) -> pa.Table:
    """The per-request output of one GE serving ``dev_ids`` (aggregate Poisson stream)."""
    rate = dev_ids.size / rit_us
    # Enough arrivals to pass end_us for sure, then cut: the stream covers the whole run.
    n = int((end_us - start_us) * rate * 1.1) + 100
    intended = np.round(start_us + np.cumsum(rng.exponential(1.0 / rate, n)))
    intended = intended[intended < end_us]
    n = intended.size
    which = rng.integers(0, dev_ids.size, n)
    res = rng.integers(0, _RESOURCES, n)
    x = intended + rng.gamma(2.0, 4.0, n)  # a few us of send jitter
    if spec.ge_floor_us > 0:
        # sent_i = max(x_i, sent_{i-1} + floor), vectorized: subtract i*floor, running max, add back.
        steps = np.arange(n) * spec.ge_floor_us
        sent = np.maximum.accumulate(x - steps) + steps
    else:
        sent = np.maximum.accumulate(x)
    sent = np.round(sent)
    service = svc[which, res]
    response = service + spec.network_us + rng.gamma(4.0, spec.network_us / 40.0, n)
    if spec.contention_from_s is not None:
        hit = intended >= spec.contention_from_s * 1e6
        response[hit] += spec.contention_extra * service[hit] + spec.contention_extra * spec.service_us
    failed = rng.random(n) < spec.error_rate
    ok = ~failed
    recv = sent + np.round(response)
    uris = [f"coap://{uri_host}{d}/r{j}" for d in dev_ids for j in range(_RESOURCES)]
    cols = {
        "device_id": pa.array(dev_ids[which].astype(np.int32)),
        "method": _dict(["GET"], np.zeros(n)),
        "uri": _dict(uris, which * _RESOURCES + res),
        "intended_us": pa.array(intended.astype(np.int64)),
        "sent_us": pa.array(sent.astype(np.int64)),
        "recv_us": _nullable(recv, ok),
        "response_us": _nullable(recv - sent, ok),
        "latency_intended_us": _nullable(recv - intended, ok),
        "send_lag_us": pa.array((sent - intended).astype(np.int64)),
        "status": _dict(["ok", "timeout"], failed.astype(np.int32)),
        "code": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32), mask=failed), pa.array(["2.05"])),
        "retransmissions": pa.array(np.where(failed, 4, 0).astype(np.int32)),
        "service_us": _nullable(service, ok),
    }
    assert tuple(cols) == GE_OUTPUT_COLUMNS
    return pa.table(cols)


def _write_csv(table: pa.Table, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Header unquoted, as the C programs write it.
    with path.open("wb") as fh:
        fh.write((",".join(table.column_names) + "\n").encode())
        pacsv.write_csv(table, fh, pacsv.WriteOptions(include_header=False, quoting_style="none"))


def synth_run(root: Path, spec: SynthSpec = SynthSpec()) -> Path:
    """Write a run directory at ``root`` and return it."""
    rng = np.random.default_rng(spec.seed)
    root = Path(root)
    end_s = spec.warmup_s + spec.measure_s + spec.cooldown_s
    phases = {"t0_epoch_us": 1_700_000_000_000_000,
              "calibration": [-spec.calibration_s * 1e6, 0.0], "warmup": [0.0, spec.warmup_s * 1e6],
              "measure": [spec.warmup_s * 1e6, (spec.warmup_s + spec.measure_s) * 1e6],
              "cooldown": [(spec.warmup_s + spec.measure_s) * 1e6, end_s * 1e6]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "phases.json").write_text(json.dumps(phases))
    svc = np.round(rng.exponential(spec.service_us, (spec.devices, _RESOURCES)))
    for k in range(spec.ges):
        ids = np.arange(k, spec.devices, spec.ges)
        table = _ge_table(rng, ids, 0.0, end_s * 1e6, spec.rit_us, svc[ids], spec, "dev-")
        _write_csv(table, root / "ge" / f"ge-{k}.csv")
    if spec.cd:
        t = np.arange(-spec.calibration_s * 1e6, end_s * 1e6, spec.cd_rit_s * 1e6)
        sent = t + rng.gamma(2.0, 4.0, t.size)
        resp = spec.service_us + spec.network_us + rng.gamma(4.0, spec.network_us / 40.0, t.size)
        if spec.contention_from_s is not None:
            resp[t >= spec.contention_from_s * 1e6] += 2 * spec.contention_extra * spec.service_us
        n = t.size
        ok = np.ones(n, bool)
        recv = np.round(sent) + np.round(resp)
        cd = pa.table({
            "device_id": pa.array(np.zeros(n, np.int32)), "method": _dict(["GET"], np.zeros(n)),
            "uri": _dict(["coap://cd-node/cd"], np.zeros(n)), "intended_us": pa.array(t.astype(np.int64)),
            "sent_us": pa.array(np.round(sent).astype(np.int64)), "recv_us": _nullable(recv, ok),
            "response_us": _nullable(recv - np.round(sent), ok), "latency_intended_us": _nullable(recv - t, ok),
            "send_lag_us": pa.array((np.round(sent) - t).astype(np.int64)),
            "status": _dict(["ok"], np.zeros(n)), "code": _dict(["2.05"], np.zeros(n)),
            "retransmissions": pa.array(np.zeros(n, np.int32)),
            "service_us": _nullable(np.full(n, spec.service_us), ok)})
        _write_csv(cd, root / "cd" / "cd-ge.csv")
    if spec.monitor:
        ts = np.arange(-spec.calibration_s, end_s + 1.0)
        load = 100.0 * min(1.0, spec.devices * spec.service_us / spec.rit_us / 2.0)
        cols = {"t_us": (ts * 1e6).astype(np.int64)}
        for c in range(2):
            busy = np.clip(np.where(ts >= 0, load, 2.0) + rng.normal(0, 2.0, ts.size), 0, 100)
            cols[f"cpu{c}_user"] = np.round(busy * 0.8, 1)
            cols[f"cpu{c}_sys"] = np.round(busy * 0.2, 1)
            cols[f"cpu{c}_idle"] = np.round(100.0 - busy, 1)
        _write_csv(pa.table(cols), root / "monitor" / "host.csv")
    manifest = {"format": 1, "run_id": root.name,
                "placement": {"degraded": spec.degraded,
                              "notes": ["2 cores: GE and devices share cores"] if spec.degraded else []}}
    (root / "manifest.json").write_text(json.dumps(manifest))
    return root
