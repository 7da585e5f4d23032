"""Priming the GE's neighbour (ARP) entries before the load starts.

The first datagram from the GE to a device needs an ARP request, a
broadcast that the Linux bridge copies to every port: with 1,000 devices
on one bridge that is ~1,000 frames processed in softirq on the CPU that
sent it, the GE's own core. Measured here with 1,000 devices (SCHED_FIFO
GE at 200 requests/s): sends to a device for the first time were late by
more than 200 us 17 % of the time (others 4 %), p99 send lag 2 ms, and
the late sends followed the first contacts over time. So before the CD
calibration and the load, the harness sends one CoAP ping (an empty CON,
RFC 7252 4.3: the device answers RST) to every node from a socket in the
GE container's network namespace, a batch at a time, from the harness's
reserved core: the broadcasts are made and answered there, and each
device learns the GE's address from the request it answered. The kernel
then keeps the entries (a used entry is re-confirmed by unicast probes;
host/neigh.py keeps the table large enough not to evict them).

Needs CAP_SYS_ADMIN (setns); without it, or on a swarm, priming is
skipped and the run says so.
"""

from __future__ import annotations

import ctypes
import errno
import os
import select
import socket
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
#: Pings in flight at once: each may flood the bridge; the per-CPU backlog holds 1,000 frames.
BATCH = 16
#: How long a batch waits for its RSTs before the next one goes.
BATCH_WAIT_S = 0.05
#: Time the run allows for priming, per node, on top of a fixed half second.
PER_NODE_S = 0.003


def budget_s(nodes: int) -> float:
    """Seconds to add to the GEs' start lead for priming ``nodes`` nodes."""
    return 0.5 + PER_NODE_S * nodes if nodes else 0.0


@dataclass(frozen=True)
class Primed:
    nodes: int
    answered: int
    seconds: float
    skipped: str | None = None       # why nothing was primed

    def as_dict(self) -> dict[str, object]:
        return {"nodes": self.nodes, "answered": self.answered, "seconds": round(self.seconds, 3),
                **({"skipped": self.skipped} if self.skipped else {})}


def socket_in_netns(pid: int) -> socket.socket:
    """A UDP socket in the network namespace of process ``pid``: made by a
    short-lived thread that enters the namespace (setns moves only the
    calling thread) and ends there; the socket stays in that namespace."""
    made: list[socket.socket] = []
    failed: list[OSError] = []

    def enter() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            with open(f"/proc/{pid}/ns/net", "rb") as ns:
                if libc.setns(ns.fileno(), CLONE_NEWNET) != 0:
                    e = ctypes.get_errno()
                    raise OSError(e, f"setns into the network namespace of pid {pid}: {os.strerror(e)}")
            made.append(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        except OSError as err:
            failed.append(err)

    t = threading.Thread(target=enter, name="netns")
    t.start()
    t.join()
    if failed:
        raise failed[0]
    return made[0]


def _ping(mid: int) -> bytes:
    return bytes((0x40, 0x00, mid >> 8, mid & 0xFF))


def prime(sock: socket.socket, targets: Sequence[tuple[str, int]], deadline: float) -> int:
    """Pings every target in batches (one retry round for the silent ones),
    until every one answered or ``deadline`` (time.monotonic()); returns
    how many answered."""
    sock.setblocking(False)
    waiting = {t: i for i, t in enumerate(targets)}      # target -> message id
    for _round in range(2):
        todo = list(waiting)
        for k in range(0, len(todo), BATCH):
            if time.monotonic() >= deadline:
                return len(targets) - len(waiting)
            batch = todo[k:k + BATCH]
            _send_batch(sock, batch, waiting)
            _await_batch(sock, batch, waiting, min(deadline, time.monotonic() + BATCH_WAIT_S))
        if not waiting:
            break
    return len(targets) - len(waiting)


def _send_batch(sock: socket.socket, batch: Sequence[tuple[str, int]], waiting: dict[tuple[str, int], int]) -> None:
    """A ping to every target of ``batch``; one the kernel cannot send now
    (a full buffer, no route yet) stays silent for the retry round."""
    for t in batch:
        try:
            sock.sendto(_ping(waiting[t] & 0xFFFF), t)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.ENOBUFS, errno.EHOSTUNREACH):
                raise


def _await_batch(sock: socket.socket, batch: Sequence[tuple[str, int]], waiting: dict[tuple[str, int], int],
                 end: float) -> None:
    """Takes the answers until every target of ``batch`` answered or ``end``
    (time.monotonic()); each one that answered leaves ``waiting``."""
    pending = {t for t in batch if t in waiting}
    while pending and (left := end - time.monotonic()) > 0:
        if not select.select([sock], [], [], left)[0]:
            break
        _take_answers(sock, waiting, pending)


def _take_answers(sock: socket.socket, waiting: dict[tuple[str, int], int], pending: set[tuple[str, int]]) -> None:
    """Every datagram queued on ``sock``: an RST from a waiting target
    removes it from ``waiting`` and ``pending``."""
    while True:
        try:
            data, src = sock.recvfrom(64)
        except BlockingIOError:
            return
        if len(data) >= 4 and data[0] >> 4 & 3 == 3 and src in waiting:   # RST
            del waiting[src]
            pending.discard(src)


def prime_from(pid: int | None, targets: Sequence[tuple[str, int]], deadline: float) -> Primed:
    """Primes ``targets`` from the namespace of ``pid`` (None: not on this host)."""
    t = time.monotonic()
    if pid is None:
        return Primed(len(targets), 0, 0.0, "the GE is not on this host")
    try:
        sock = socket_in_netns(pid)
    except OSError as err:
        return Primed(len(targets), 0, time.monotonic() - t, str(err))
    with sock:
        answered = prime(sock, targets, deadline)
    return Primed(len(targets), answered, time.monotonic() - t)
