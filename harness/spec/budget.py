"""The pre-flight budget: what a test will cost, from its spec alone, checked
against this host before anything is generated or started.

A spec of a few lines can ask for more than a machine has: ``rit: exp:1ns``
is a billion requests per second, ``measure: 1000000h`` a trace of years,
``count: 100000`` a hundred thousand containers, ``memory: 99999g`` a limit
no host backs. Each used to pass ``plan`` and then exhaust memory or disk
half-way through a run. :func:`check` computes, per test:

- **requests**: the intended rate times the trace's length (or the
  ``workload.requests`` given), plus the CD trace and the OBS/UNOBS rows of
  ``observe``; at most ``MAX_REQUESTS``;
- **notifications** (``observe``): every observation's events over the
  trace's length, at most ``MAX_REQUESTS``; their rows in the GEs' notify
  CSVs count in the disk (``BYTES_PER_NOTIFICATION``);
- **disk**: trace, GE output and Parquet cache at ``BYTES_PER_REQUEST``
  (measured: ~45 B of trace, ~110 B of GE CSV, ~25 B of Parquet per
  request), against the free space where the results go;
- **threads**: each device's threads plus its containerd shim's
  (``THREADS_PER_CONTAINER``, measured 16.4 per 4-thread device), against
  ``kernel.threads-max`` and ``kernel.pid_max``;
- **tracegen's memory**: the trace is built in memory before it is
  written (``TRACEGEN_BYTES_PER_REQUEST``, ``TRACEGEN_BYTES_PER_DEVICE``,
  measured), at most ``HOST_SHARE`` of the host's memory; the same check
  guards ``wotbench tracegen`` (:func:`check_trace`), whose flags
  ``--devices 1000000000`` or ``--requests 1e12`` it refuses before
  anything is allocated or written;
- **memory**: no container's limit above the host's memory;
- **cpus**: no container's CPU share above the host's cores (Docker
  refuses it when the container is created, half-way through a run);
- **tests**: a spec asks for at most ``MAX_TESTS`` tests (sweep values of
  every axis multiplied, times repetitions), counted before any is built
  (:func:`check_tests`).

Over budget is a UserError (exit 2) naming the spec key and the numbers.
On a swarm the host checks are this host's: the other nodes are checked
when their containers start.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from wotbench.base.errors import UserError
from wotbench.base.units import fmt_size

if TYPE_CHECKING:                     # the spec model imports this module (check_tests)
    from wotbench.spec import Spec, WorkloadSpec

#: One test's requests at most (2^31: the GE's per-run counters and row numbers stay exact).
MAX_REQUESTS = 2**31
#: Disk per request: trace line, GE output row and Parquet cache.
BYTES_PER_REQUEST = 180
#: Disk per notification: its notify CSV row (~75 B) and the analysis's copy.
BYTES_PER_NOTIFICATION = 100
#: Disk per device: its resource file (a block) and its rows in devices.csv (measured 4.3 KiB).
BYTES_PER_DEVICE = 4608
#: tracegen's memory per request and per device (measured: 45 B per request at 1-4 M requests,
#: 3.1 KiB per device at 100-400 k devices; tracegen/_requests.py holds the trace in memory).
TRACEGEN_BYTES_PER_REQUEST = 48
TRACEGEN_BYTES_PER_DEVICE = 3300
#: Devices in one group (each a container; tracegen's --devices too: 3.1 KiB of memory and
#: 0.09 s of tracegen each).
MAX_GROUP_DEVICES = 100_000
#: Tests a spec may ask for (sweep values x repetitions): each is a run of its own.
MAX_TESTS = 1000
#: Threads a device container adds beyond its workers: its main and network threads and the shim's.
THREADS_PER_CONTAINER = 14
#: Share of the host's thread and pid limits a run may take (the rest of the host needs some).
HOST_SHARE = 0.8
#: Bytes as ``1.5 GiB`` (the one size format, wotbench.base.units).
format_size = fmt_size


@dataclass(frozen=True)
class Cost:
    """What one test will cost."""

    requests: float
    disk_bytes: float
    containers: int
    threads: int
    largest_memory_bytes: int
    largest_memory_field: str
    tracegen_bytes: float = 0.0
    """tracegen's peak memory for the test's trace."""


@dataclass(frozen=True)
class TraceCost:
    """What generating a workload's trace costs."""

    requests: float
    devices: int
    disk_bytes: float
    memory_bytes: float
    notifications: float = 0.0
    """Notifications expected of the observations (``observe``)."""


def trace_cost(wl: WorkloadSpec, length_us: float | None = None, cd: bool = True) -> TraceCost:
    """The trace of ``wl`` (``length_us`` long, else its duration or its
    requests' span), with the CD trace when ``cd``."""
    rate = wl.aggregate_rate_per_us()
    if length_us is None:
        length_us = float(wl.duration_us) if wl.duration_us is not None else (wl.requests or 0) / rate
    requests = float(wl.requests) if wl.requests is not None else rate * length_us
    if cd:
        requests += (length_us + wl.cd_calibration_us) / wl.cd_rit_us
    requests += 2 * wl.observations()
    notifications = wl.notification_rate_per_us() * length_us + wl.observations()
    n = wl.n_devices
    return TraceCost(requests, n, requests * BYTES_PER_REQUEST + n * BYTES_PER_DEVICE
                     + notifications * BYTES_PER_NOTIFICATION,
                     requests * TRACEGEN_BYTES_PER_REQUEST + n * TRACEGEN_BYTES_PER_DEVICE, notifications)


def _length_us(hs: Spec) -> float:
    wl = hs.workload
    if wl is not None and wl.duration_us is not None:
        return float(wl.duration_us)
    return float(hs.phases.total_us) if hs.phases is not None else 0.0


def cost(hs: Spec) -> Cost:
    """The cost of the test ``hs`` (a test's spec: no sweep left)."""
    wl = hs.workload
    tc = trace_cost(wl, _length_us(hs), hs.cd.enabled) if wl is not None else TraceCost(0.0, 0, 0.0, 0.0)
    containers = hs.device_count + (1 if hs.cd.enabled else 0)
    threads = sum(g.count * (g.threads + THREADS_PER_CONTAINER) for g in hs.groups)
    mem_i = max(range(len(hs.groups)), key=lambda i: hs.groups[i].memory_bytes)
    return Cost(tc.requests, tc.disk_bytes, containers, threads,
                hs.groups[mem_i].memory_bytes, f"devices[{mem_i}].memory", tc.memory_bytes)


@dataclass(frozen=True)
class Host:
    """What this host offers (read once per command)."""

    memory_bytes: int
    threads_max: int
    pid_max: int
    cores: int = field(default_factory=lambda: os.cpu_count() or 1)
    """The CPUs Docker counts (its ``--cpus`` is at most this many)."""

    @classmethod
    def read(cls) -> Host:
        def first_int(path: str, default: int) -> int:
            try:
                return int(Path(path).read_text().split()[0])
            except (OSError, ValueError, IndexError):
                return default

        mem_kb = 0
        try:
            for line in Path("/proc/meminfo").read_text().splitlines():
                if line.startswith("MemTotal:"):
                    mem_kb = int(line.split()[1])
        except OSError:
            pass
        return cls(mem_kb * 1024 or 1 << 62, first_int("/proc/sys/kernel/threads-max", 1 << 30),
                   first_int("/proc/sys/kernel/pid_max", 1 << 22), os.cpu_count() or 1)


def _free_bytes(where: Path) -> int:
    p = where.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return 1 << 62


def _rate_field(hs: Spec) -> str:
    wl = hs.workload
    if wl is not None and wl.requests is not None:
        return "workload.requests"
    if wl is not None and wl.rit_scope == "gateway":
        return "workload.rit"
    return "devices[0].rit" if len(hs.groups) == 1 else "devices[*].rit"


def _devices_field(n_groups: int) -> str:
    return "devices[0].count" if n_groups == 1 else "devices[*].count"


def _check_trace_cost(tc: TraceCost, rate_field: str, devices_field: str, results: Path | None,
                      host: Host | None) -> Host:
    """The budget of a trace: requests, disk where it goes, tracegen's memory.
    Returns the host read (``host`` or this host)."""
    if tc.notifications > MAX_REQUESTS:
        raise UserError(f"{tc.notifications:.3g} notifications in one test (observations x events x length): "
                        f"more than {MAX_REQUESTS:,}; fewer observed resources, a longer observe.rit or shorter "
                        "phases", field=devices_field.replace("count", "observe.rit"))
    if tc.requests > MAX_REQUESTS:
        raise UserError(f"{tc.requests:.3g} requests in one test (rate x length): more than the "
                        f"{MAX_REQUESTS:,} a test may have; lower the rate or shorten the phases",
                        field=rate_field)
    heavier = devices_field if tc.devices * BYTES_PER_DEVICE > tc.requests * BYTES_PER_REQUEST else rate_field
    if results is not None and tc.disk_bytes > (free := _free_bytes(results)):
        raise UserError(f"{tc.requests:.3g} requests to {tc.devices:,} devices need about "
                        f"{fmt_size(tc.disk_bytes)} of disk for trace and results, but {results} has "
                        f"{fmt_size(free)} free", field=heavier)
    host = host or Host.read()
    if tc.memory_bytes > HOST_SHARE * host.memory_bytes:
        raise UserError(f"{tc.requests:.3g} requests to {tc.devices:,} devices: tracegen would need about "
                        f"{fmt_size(tc.memory_bytes)} of memory, more than {HOST_SHARE:.0%} of this host's "
                        f"{fmt_size(host.memory_bytes)}",
                        field=devices_field if tc.devices * TRACEGEN_BYTES_PER_DEVICE
                        > tc.requests * TRACEGEN_BYTES_PER_REQUEST else rate_field)
    return host


def check_trace(wl: WorkloadSpec, out: Path | None, host: Host | None = None) -> TraceCost:
    """Raises UserError when generating the trace of ``wl`` into ``out``
    (``wotbench tracegen``) is over budget; fields are the spec's."""
    for i, g in enumerate(wl.groups):
        if g.count > MAX_GROUP_DEVICES:
            raise UserError(f"{g.count:,} devices in one group: more than the {MAX_GROUP_DEVICES:,} a group "
                            "may have", field=f"devices[{i}].count")
    tc = trace_cost(wl)
    if wl.requests is not None:
        rate_field = "workload.requests"
    else:
        rate_field = "workload.rit" if wl.rit_scope == "gateway" else (
            "devices[0].rit" if len(wl.groups) == 1 else "devices[*].rit")
    _check_trace_cost(tc, rate_field, _devices_field(len(wl.groups)), out, host)
    return tc


def check_tests(n_tests: int, how: str) -> None:
    """Raises UserError when a spec asks for more than MAX_TESTS tests
    (``how``: the product that gave ``n_tests``, e.g. "100 x 100 sweep values")."""
    if n_tests > MAX_TESTS:
        raise UserError(f"{how} = {n_tests:,} tests: more than the {MAX_TESTS:,} a spec may ask for "
                        "(run the sweep in parts, or fewer values or repetitions)")


def check(hs: Spec, results: Path | None, host: Host | None = None, *, swarm: bool = False) -> Cost:
    """Raises UserError when the test ``hs`` is over budget; returns its cost."""
    c = cost(hs)
    if hs.workload is not None:
        tc = TraceCost(c.requests, hs.device_count, c.disk_bytes, c.tracegen_bytes,
                       trace_cost(hs.workload, _length_us(hs), hs.cd.enabled).notifications)
        host = _check_trace_cost(tc, _rate_field(hs), _devices_field(len(hs.groups)), results, host)
    if hs.capture is not None and results is not None:
        _check_capture(hs, c, results)
    if swarm:
        return c
    host = host or Host.read()
    if c.largest_memory_bytes > host.memory_bytes:
        raise UserError(f"limit {fmt_size(c.largest_memory_bytes)} per container is more than this "
                        f"host's {fmt_size(host.memory_bytes)} of memory", field=c.largest_memory_field)
    _check_cpus(hs, host)
    limit = int(HOST_SHARE * min(host.threads_max, host.pid_max))
    if c.threads > limit:
        raise UserError(f"{c.containers:,} containers need about {c.threads:,} threads (workers + "
                        f"{THREADS_PER_CONTAINER} each), more than {HOST_SHARE:.0%} of this host's limit "
                        f"{min(host.threads_max, host.pid_max):,} (kernel.pid_max / threads-max)",
                        field=_devices_field(len(hs.groups)))
    return c


def _check_capture(hs: Spec, c: Cost, results: Path) -> None:
    """A run that captures itself (``capture:``) needs room for every GE's
    whole ring of files beside the trace and results."""
    assert hs.capture is not None
    ring = hs.capture.total_bytes * hs.gateway.instances
    if c.disk_bytes + ring > (free := _free_bytes(results)):
        raise UserError(f"a capture ring of {hs.capture.files} x {hs.capture.file_mb} MB per GE "
                        f"({hs.gateway.instances} GE(s)) needs up to {fmt_size(ring)} of disk beside the run's "
                        f"{fmt_size(c.disk_bytes)}, but {results} has {fmt_size(free)} free", field="capture.max_size")


def _check_cpus(hs: Spec, host: Host) -> None:
    """Docker refuses a CPU share above the host's cores when it creates the container."""
    for i, g in enumerate(hs.groups):
        if g.nano_cpus is not None and g.nano_cpus > host.cores * 10**9:
            raise UserError(f"{g.nano_cpus / 1e9:g} CPUs per container, more than this host's "
                            f"{host.cores} core{'s' if host.cores != 1 else ''}", field=f"devices[{i}].cpus")
