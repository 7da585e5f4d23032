"""A run that captures itself (``capture:``, docs/capture.md): tcpdump in
the nettools image, in a workload GE's network namespace
(``network_mode=container:<GE id>``, ``-i any``: every interface of the GE,
one per run network), so that it sees every request the GE sends and every
answer it gets, and nothing of the CD pair or of other runs. It writes a
ring of ``files`` pcap files of at most ``max_size`` each (``-C``/``-W``)
into the run folder's ``capture/`` through a bind mount, and is stopped by
SIGINT, on which tcpdump flushes its last file and prints its counts.

Hardening: NET_RAW (the packet socket) and SETUID/SETGID, which tcpdump
needs only to drop to its own unprivileged user (``tcpdump``, uid 100 in
the image) right after it opened the socket and its first file: Debian's
tcpdump always does (``-Z root`` fails as well: initgroups), and Docker
20.10 gives a non-root user no capabilities. Every other capability is
dropped; no privilege gain, a read-only root, memory and pids limits, the
run's labels (teardown and ``wotbench clean`` remove it), on the harness's
housekeeping cores.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import Any, TypedDict

import docker
import docker.errors
import requests
from docker.models.containers import Container

from wotbench.base.errors import UserError
from wotbench.engine.dockerenv import IMAGES
from wotbench.spec import RunCapture

__all__ = ["CAPTURE_ROLE", "TCPDUMP_LABEL", "TCPDUMP_UID", "TCPDUMP_GID", "CAPTURE_AT", "check_image", "tcpdump_argv",
           "capture_args", "parse_counts", "prepare_folder", "start", "wait_listening", "stop", "ring_files"]

#: The nettools image's label saying it has tcpdump (docker/nettools.Dockerfile).
TCPDUMP_LABEL = "org.wotbench.tcpdump"
#: The capture container's role label.
CAPTURE_ROLE = "capture"
#: tcpdump's own user in the nettools image (docker/nettools.Dockerfile checks it).
TCPDUMP_UID, TCPDUMP_GID = 100, 101
#: The run folder's capture/ inside the container.
CAPTURE_AT = "/capture"
#: tcpdump's limits: a packet socket, a ring buffer and its output buffer.
CAPTURE_MEMORY, CAPTURE_PIDS = 64 << 20, 8
#: Seconds tcpdump gets to say it listens, and to finish after SIGINT.
LISTEN_TIMEOUT_S, STOP_TIMEOUT_S = 15.0, 10.0
_COUNT = re.compile(r"^(\d+) packets? (captured|received by filter|dropped by kernel|dropped by interface)\s*$",
                    re.MULTILINE)
_KEYS = {"captured": "packets_captured", "received by filter": "packets_received_by_filter",
         "dropped by kernel": "packets_dropped_by_kernel", "dropped by interface": "packets_dropped_by_interface"}


class CaptureArgs(TypedDict):
    """The engine's run arguments of :func:`capture_args`."""

    cap_drop: list[str]
    cap_add: list[str]
    security_opt: list[str]
    read_only: bool
    mem_limit: int
    memswap_limit: int
    pids_limit: int
    cpuset_cpus: str
    labels: dict[str, str]
    network_mode: str
    volumes: dict[str, dict[str, str]]


def check_image(labels: dict[str, str], image: str) -> None:
    """A nettools image built before it had tcpdump is refused before anything starts."""
    if labels.get(TCPDUMP_LABEL) != "yes":
        raise UserError(f"image {image} has no tcpdump (built before capture: existed): rebuild it with "
                        "make images", field="capture")


def tcpdump_argv(cap: RunCapture, name: str) -> list[str]:
    """tcpdump writing a ring of ``cap.files`` files ``name0``, ``name1``,
    ... (tcpdump's numbering) of ``cap.file_mb`` million bytes each, UDP
    only (the GE speaks CoAP over UDP), ``snaplen`` bytes of each packet.
    ``--immediate-mode``: each packet is read as it comes; with the kernel's
    default 1 s block timeout the packets of the last second were still in
    the ring when SIGINT came, counted as received but never written
    (measured: 66 of 3276 packets of an 11 s run)."""
    return ["tcpdump", "-i", "any", "-n", "--immediate-mode", "-s", str(cap.snaplen), "-C", str(cap.file_mb),
            "-W", str(cap.files), "-w", f"{CAPTURE_AT}/{name}", "udp"]


def capture_args(labels: dict[str, str], target_id: str, folder: Path, cpuset: str) -> CaptureArgs:
    """How the capture runs (module docstring): in ``target_id``'s network
    namespace, ``folder`` at CAPTURE_AT, on ``cpuset``."""
    return {"cap_drop": ["ALL"], "cap_add": ["NET_RAW", "SETUID", "SETGID"],
            "security_opt": ["no-new-privileges"], "read_only": True,
            "mem_limit": CAPTURE_MEMORY, "memswap_limit": CAPTURE_MEMORY, "pids_limit": CAPTURE_PIDS,
            "cpuset_cpus": cpuset, "labels": labels, "network_mode": f"container:{target_id}",
            "volumes": {str(folder.resolve()): {"bind": CAPTURE_AT, "mode": "rw"}}}


def prepare_folder(folder: Path) -> None:
    """``folder``, writable by tcpdump's user after it dropped root (it
    opens each next file of the ring then): owned by it when the harness
    may chown, else world-writable."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        os.chown(folder, TCPDUMP_UID, TCPDUMP_GID)
    except PermissionError:
        folder.chmod(0o777)


def parse_counts(log: str) -> dict[str, int]:
    """tcpdump's closing counts (``N packets captured``, ``... received by
    filter``, ``... dropped by kernel``) as packets_* keys; {} if it never
    printed them (killed)."""
    return {_KEYS[what]: int(n) for n, what in _COUNT.findall(log)}


def start(c: docker.DockerClient, name: str, argv: list[str], args: CaptureArgs) -> Container:
    """Creates and starts the capture container (detached)."""
    return c.containers.run(IMAGES["nettools"], argv, name=name, detach=True, **args)


def _logs(ct: Container) -> str:
    return bytes(ct.logs(stdout=True, stderr=True)).decode(errors="replace")


def wait_listening(ct: Container, timeout_s: float = LISTEN_TIMEOUT_S) -> float:
    """Waits until tcpdump says it listens; returns when (epoch seconds).
    A tcpdump that exits first, or never says it, is a RuntimeError with
    its log."""
    deadline = time.monotonic() + timeout_s
    while True:
        log = _logs(ct)
        if "listening on" in log:
            return time.time()
        ct.reload()
        if ct.status not in ("created", "running") or time.monotonic() > deadline:
            why = "exited" if ct.status not in ("created", "running") else f"did not listen within {timeout_s:.0f} s"
            raise RuntimeError(f"capture {ct.name}: tcpdump {why}: {log.strip()[-400:]!r}")
        time.sleep(0.05)


def stop(ct: Container, timeout_s: float = STOP_TIMEOUT_S) -> dict[str, Any]:
    """SIGINT (tcpdump flushes and closes its file, prints its counts),
    the wait for its exit, then the counts; ``stopped`` says whether it
    ended by itself in time (else it was killed: its last file may be cut)."""
    with contextlib.suppress(docker.errors.APIError):      # already gone
        ct.kill(signal="SIGINT")
    try:
        code: int | None = int(ct.wait(timeout=timeout_s)["StatusCode"])
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
        with contextlib.suppress(docker.errors.APIError):
            ct.kill()
        code = None
    return {"exit_code": code, "stopped": code is not None, **parse_counts(_logs(ct))}


def ring_files(folder: Path, name: str) -> list[dict[str, Any]]:
    """The files of one ring (``name`` and tcpdump's number), oldest first
    by modification time, with their sizes."""
    found = [p for p in folder.glob(f"{name}*") if p.name[len(name):].isdigit()]
    found.sort(key=lambda p: (p.stat().st_mtime_ns, p.name))
    return [{"file": p.name, "bytes": p.stat().st_size} for p in found]
