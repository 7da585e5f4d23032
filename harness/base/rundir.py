"""The run folder (docs/run-layout.md) as a contract: the name of every file
in it, used by the harness that writes it and by reporting that reads it.
No other module spells a run-folder file name.

    run = RunDir(Path("results/20260101-120000-quickstart-abc123"))
    run.summary                      # .../summary.json
    run.ge_csv(0)                    # .../ge/ge-0.csv
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import overload

__all__ = [
    "INCOMPLETE", "SPEC", "MANIFEST", "PHASES", "OBSERVED", "SUMMARY", "GATEWAY", "WORKLOAD", "GE", "CD", "MONITOR",
    "LOGS", "DEVICES", "REPORT", "PUMBA_LOG", "HOSTS", "CD_OUTPUT", "CD_RAW", "CD_SUMMARY", "HOST_MONITOR",
    "CONTAINERS_MONITOR", "HARNESS_MONITOR", "CONTAINERS_SPOOL", "COLLECTL", "DEVICE_STATS", "REPORT_HTML", "REPORT_MD",
    "FIGURES", "CAPTURE",
    "GE_OUTPUT_GLOB", "ge_output", "ge_summary", "ge_rto", "ge_notify", "ge_devices", "ge_trace", "ge_index",
    "RunDir",
    "NODES", "PROBE", "TRACE", "CD_HOSTS", "PROBE_OUTPUT", "PROBE_SUMMARY", "HostDir",
]

# --- top level -------------------------------------------------------------
INCOMPLETE = "INCOMPLETE"         # present until summary.json is written
SPEC = "spec.yaml"
MANIFEST = "manifest.json"
PHASES = "phases.json"
OBSERVED = "observed.json"        # what the harness saw; reporting judges it
SUMMARY = "summary.json"          # written last
INTERFERENCE = "interference.json"  # the noisy neighbours, planned and observed (interference:)
GATEWAY = "gateway.json"          # the gateway under test's end state (gateway_under_test:)
PUMBA_LOG = "pumba.log"
CAPTURE = "capture"               # capture/: the pcap files of a run with capture: (docs/capture.md)

# --- folders ---------------------------------------------------------------
WORKLOAD = "workload"             # tracegen output (its own file names) + per-GE traces
GE = "ge"
CD = "cd"
MONITOR = "monitor"
LOGS = "logs"
DEVICES = "devices"               # devices/<container>/: each device's writable folder
REPORT = "report"                 # wotbench report's output
NODES = "nodes"                   # nodes/<hostname>/: per-host files of a run across a swarm
PROBE = "probe"                   # probe/: inputs and raw output of the GE node's probes (swarm)

# --- inside the folders ------------------------------------------------------
TRACE = "trace.csv"               # workload/: the whole trace (tracegen's name)
HOSTS = "hosts.csv"               # ge/: trace host -> address, for every GE
CD_OUTPUT = "cd-ge.csv"           # cd/: CD-GE output on the run's clock (t0)
CD_RAW = "cd-ge.raw.csv"          # cd/: as the CD-GE wrote it (its own t0), removed once shifted
CD_SUMMARY = "cd-ge.summary.json"
CD_HOSTS = "hosts.csv"            # cd/: the CD-GE's --hosts (its host's CD node)
HOST_MONITOR = "host.csv"         # monitor/
CONTAINERS_MONITOR = "containers.csv"
HARNESS_MONITOR = "harness.csv"    # monitor/: the harness process's own RSS
CONTAINERS_SPOOL = "containers.csv.partial"   # monitor/: the cgroup samples while the run goes on
COLLECTL = "collectl"             # monitor/collectl/: collectl's raw plot files
DEVICE_STATS = "stats.json"       # devices/<container>/: wotbench-device --stats
PROBE_OUTPUT = "probe.csv"        # nodes/<hostname>/: the GE node's probe of that host's CD node
PROBE_SUMMARY = "probe.summary.json"
REPORT_HTML = "index.html"        # report/ (and a sweep report folder)
REPORT_MD = "summary.md"
FIGURES = "figures"

GE_OUTPUT_GLOB = "ge-*.csv"
_GE_OUTPUT = re.compile(r"ge-(\d+)\.csv")


def ge_output(k: int) -> str:
    """Per-request output of workload GE k (docs/formats.md)."""
    return f"ge-{k}.csv"


def ge_summary(k: int) -> str:
    return f"ge-{k}.summary.json"


def ge_rto(k: int) -> str:
    """The per-exchange RTO log of workload GE k (its --rto-out; docs/formats.md)."""
    return f"rto-{k}.csv"


def ge_notify(k: int) -> str:
    """Notifications GE k received (``--notify-out``; Observe runs only). Not a
    ``GE_OUTPUT_GLOB`` match: it is not a per-request output."""
    return f"notify-{k}.csv"


def ge_devices(k: int) -> str:
    """device_id,group,container,address of the devices GE k serves."""
    return f"devices-{k}.csv"


def ge_trace(k: int) -> str:
    """workload/: the lines of the trace for GE k (several GEs only)."""
    return f"trace-ge-{k}.csv"


def ge_index(path: Path | str) -> int | None:
    """k of a ``ge-<k>.csv`` file name, else None."""
    m = _GE_OUTPUT.fullmatch(Path(path).name)
    return int(m.group(1)) if m else None


class _At:
    """A RunDir or HostDir property: the path ``parts`` below its root."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts
        self.__doc__ = "/".join(parts)

    @overload
    def __get__(self, folder: None, owner: type) -> _At: ...
    @overload
    def __get__(self, folder: RunDir | HostDir, owner: type | None = None) -> Path: ...

    def __get__(self, folder: RunDir | HostDir | None, owner: type | None = None) -> Path | _At:
        return self if folder is None else folder.root.joinpath(*self.parts)



@dataclass(frozen=True)
class HostDir:
    """The per-host files of one host: the run folder itself on one host,
    ``nodes/<hostname>/`` in a run across a swarm (docs/run-layout.md)."""

    root: Path
    hostname: str | None = None       # None: the single host of a one-host run

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    cd_dir = _At(CD)
    cd_csv = _At(CD, CD_OUTPUT)
    cd_raw = _At(CD, CD_RAW)
    cd_summary = _At(CD, CD_SUMMARY)
    cd_hosts = _At(CD, CD_HOSTS)
    monitor_dir = _At(MONITOR)
    host_monitor = _At(MONITOR, HOST_MONITOR)
    collectl_dir = _At(MONITOR, COLLECTL)
    probe_csv = _At(PROBE_OUTPUT)
    probe_summary = _At(PROBE_SUMMARY)


@dataclass(frozen=True)
class RunDir:
    """The paths of one run folder."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def name(self) -> str:
        return self.root.name

    incomplete = _At(INCOMPLETE)
    spec = _At(SPEC)
    manifest = _At(MANIFEST)
    phases = _At(PHASES)
    observed = _At(OBSERVED)
    summary = _At(SUMMARY)
    interference = _At(INTERFERENCE)
    gateway = _At(GATEWAY)
    pumba_log = _At(PUMBA_LOG)
    capture_dir = _At(CAPTURE)
    workload = _At(WORKLOAD)
    trace = _At(WORKLOAD, TRACE)
    ge_dir = _At(GE)
    cd_dir = _At(CD)
    monitor_dir = _At(MONITOR)
    logs_dir = _At(LOGS)
    devices_dir = _At(DEVICES)
    report_dir = _At(REPORT)
    ge_hosts = _At(GE, HOSTS)
    cd_csv = _At(CD, CD_OUTPUT)
    cd_raw = _At(CD, CD_RAW)
    cd_summary = _At(CD, CD_SUMMARY)
    host_monitor = _At(MONITOR, HOST_MONITOR)
    containers_monitor = _At(MONITOR, CONTAINERS_MONITOR)
    harness_monitor = _At(MONITOR, HARNESS_MONITOR)
    containers_spool = _At(MONITOR, CONTAINERS_SPOOL)
    collectl_dir = _At(MONITOR, COLLECTL)

    def ge_csv(self, k: int) -> Path:
        return self.root / GE / ge_output(k)

    def ge_summary(self, k: int) -> Path:
        return self.root / GE / ge_summary(k)

    def ge_devices(self, k: int) -> Path:
        return self.root / GE / ge_devices(k)

    def ge_rto(self, k: int) -> Path:
        return self.root / GE / ge_rto(k)

    def ge_notify(self, k: int) -> Path:
        return self.root / GE / ge_notify(k)

    def ge_trace(self, k: int) -> Path:
        return self.root / WORKLOAD / ge_trace(k)

    def device_dir(self, container: str) -> Path:
        return self.root / DEVICES / container

    def device_stats(self, container: str) -> Path:
        return self.device_dir(container) / DEVICE_STATS

    def log(self, container: str) -> Path:
        return self.root / LOGS / f"{container}.log"

    nodes_dir = _At(NODES)
    probe_dir = _At(PROBE)

    def host(self, hostname: str | None) -> HostDir:
        """Per-host files: ``nodes/<hostname>/``, or the run folder itself
        (``None``, a run on one host)."""
        if hostname is None:
            return HostDir(self.root)
        if not hostname or "/" in hostname or hostname in (".", ".."):
            raise ValueError(f"not a usable host folder name: {hostname!r}")
        return HostDir(self.root / NODES / hostname, hostname)

    def hosts(self) -> list[HostDir]:
        """Every host's files: ``nodes/*/`` sorted by name when the run went
        across a swarm, else the run folder itself."""
        if self.nodes_dir.is_dir():
            return [HostDir(p, p.name) for p in sorted(self.nodes_dir.iterdir()) if p.is_dir()]
        return [HostDir(self.root)]
