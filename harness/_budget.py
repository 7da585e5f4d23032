"""The pre-flight budget: what a test will cost, from its spec alone, checked
against this host before anything is generated or started.

A spec of a few lines can ask for more than a machine has: ``rit: exp:1ns``
is a billion requests per second, ``measure: 1000000h`` a trace of years,
``count: 100000`` a hundred thousand containers, ``memory: 99999g`` a limit
no host backs. Each used to pass ``plan`` and then exhaust memory or disk
half-way through a run. :func:`check` computes, per test:

- **requests**: the intended rate times the trace's length (or the
  ``workload.requests`` given), plus the CD trace; at most
  ``MAX_REQUESTS``;
- **disk**: trace, GE output and Parquet cache at ``BYTES_PER_REQUEST``
  (measured: ~45 B of trace, ~110 B of GE CSV, ~25 B of Parquet per
  request), against the free space where the results go;
- **threads**: each device's threads plus its containerd shim's
  (``THREADS_PER_CONTAINER``, measured 16.4 per 4-thread device), against
  ``kernel.threads-max`` and ``kernel.pid_max``;
- **memory**: no container's limit above the host's memory.

Over budget is a UserError (exit 2) naming the spec key and the numbers.
On a swarm the host checks are this host's: the other nodes are checked
when their containers start.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from wotbench._errors import UserError
from wotbench.spec import Spec

#: One test's requests at most (2^31: the GE's per-run counters and row numbers stay exact).
MAX_REQUESTS = 2**31
#: Disk per request: trace line, GE output row and Parquet cache.
BYTES_PER_REQUEST = 180
#: Threads a device container adds beyond its workers: its main and network threads and the shim's.
THREADS_PER_CONTAINER = 14
#: Share of the host's thread and pid limits a run may take (the rest of the host needs some).
HOST_SHARE = 0.8


def format_size(n: float) -> str:
    """Bytes as the largest binary unit that keeps a number >= 1: ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.3g} EiB"


@dataclass(frozen=True)
class Cost:
    """What one test will cost."""

    requests: float
    disk_bytes: float
    containers: int
    threads: int
    largest_memory_bytes: int
    largest_memory_field: str


def _length_us(hs: Spec) -> float:
    wl = hs.workload
    if wl is not None and wl.duration_us is not None:
        return float(wl.duration_us)
    return float(hs.phases.total_us) if hs.phases is not None else 0.0


def cost(hs: Spec) -> Cost:
    """The cost of the test ``hs`` (a test's spec: no sweep left)."""
    wl = hs.workload
    if wl is None:
        requests = 0.0
    elif wl.requests is not None:
        requests = float(wl.requests)
    else:
        requests = wl.aggregate_rate_per_us() * _length_us(hs)
    if wl is not None and hs.cd.enabled:
        requests += (_length_us(hs) + wl.cd_calibration_us) / wl.cd_rit_us
    containers = hs.device_count + (1 if hs.cd.enabled else 0)
    threads = sum(g.count * (g.threads + THREADS_PER_CONTAINER) for g in hs.groups)
    mem_i = max(range(len(hs.groups)), key=lambda i: hs.groups[i].memory_bytes)
    return Cost(requests, requests * BYTES_PER_REQUEST, containers, threads,
                hs.groups[mem_i].memory_bytes, f"devices[{mem_i}].memory")


@dataclass(frozen=True)
class Host:
    """What this host offers (read once per command)."""

    memory_bytes: int
    threads_max: int
    pid_max: int

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
                   first_int("/proc/sys/kernel/pid_max", 1 << 22))


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


def check(hs: Spec, results: Path | None, host: Host | None = None, *, swarm: bool = False) -> Cost:
    """Raises UserError when the test ``hs`` is over budget; returns its cost."""
    c = cost(hs)
    if c.requests > MAX_REQUESTS:
        raise UserError(f"{c.requests:.3g} requests in one test (rate x length): more than the "
                        f"{MAX_REQUESTS:,} a test may have; lower the rate or shorten the phases",
                        field=_rate_field(hs))
    if results is not None and c.disk_bytes > (free := _free_bytes(results)):
        raise UserError(f"{c.requests:.3g} requests need about {format_size(c.disk_bytes)} of disk for trace "
                        f"and results, but {results} has {format_size(free)} free", field=_rate_field(hs))
    if swarm:
        return c
    host = host or Host.read()
    if c.largest_memory_bytes > host.memory_bytes:
        raise UserError(f"limit {format_size(c.largest_memory_bytes)} per container is more than this "
                        f"host's {format_size(host.memory_bytes)} of memory", field=c.largest_memory_field)
    limit = int(HOST_SHARE * min(host.threads_max, host.pid_max))
    if c.threads > limit:
        raise UserError(f"{c.containers:,} containers need about {c.threads:,} threads (workers + "
                        f"{THREADS_PER_CONTAINER} each), more than {HOST_SHARE:.0%} of this host's limit "
                        f"{min(host.threads_max, host.pid_max):,} (kernel.pid_max / threads-max)",
                        field="devices[0].count" if len(hs.groups) == 1 else "devices[*].count")
    return c
