"""The congestion study (experiments/congestion.yaml, docs/congestion.md)
without Docker: the real GE and real devices on this host's loopback, each
device behind a UDP relay that applies the study's link conditions, the
GE's files analysed by the report's congestion part. For a host whose
Docker engine is not available; it has no CD pair, no monitor and no
verdict (it is not a run of the testbed), and the relay (one Python
thread) adds tens of microseconds per datagram.

Conditions, as the harness applies them (harness/engine/netimpair.py):
``loss:P`` drops each direction independently with p = 1 - sqrt(1 - P)
(a pseudo-random generator seeded per device, so a rerun loses the same
datagrams in the same order); ``rate:BPS`` is a token bucket on the
device's replies counted on Ethernet frames (payload + 42 bytes), a
reply that would wait more than 1 s dropped (tbf ``latency 1000ms``).

    python -m wotbench.reporting.bench.congestion_loopback --condition loss:0.2 --out build/cc-study \\
        [--strategies rfc7252,cocoa,...] [--devices 10] [--rit-ms 40] [--measure-s 16]

writes ``OUT/<condition>-<strategy>/`` (ge/, devices/, phases.json) per
strategy and prints one JSON line per run: the congestion part of it."""

from __future__ import annotations

import argparse
import heapq
import json
import math
import random
import selectors
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.reporting._analyze import analyze
from wotbench.reporting._congestion import ORDER

BIN = Path(__file__).resolve().parents[2] / "build" / "bin"
#: Ethernet + IPv4 + UDP headers counted by tbf on the wire (bytes).
FRAME_OVERHEAD = 42
#: tbf's latency: a reply that would queue longer is dropped.
MAX_QUEUE_S = 1.0


@dataclass
class Link:
    """One direction-aware condition: loss per direction, a rate on replies."""

    loss: float = 0.0
    rate_bps: float | None = None

    @property
    def p_dir(self) -> float:
        return 1.0 - math.sqrt(1.0 - self.loss)

    @classmethod
    def parse(cls, text: str) -> Link:
        kind, _, value = text.partition(":")
        if kind == "none":
            return cls()
        if kind == "loss":
            return cls(loss=float(value))
        if kind == "rate":
            return cls(rate_bps=float(value))
        raise SystemExit(f"error: --condition: expected none, loss:P or rate:BPS, got {text!r}")


@dataclass
class Relay:
    """GE <-> 127.0.0.1:port <-> the device, under ``link``."""

    device_port: int
    link: Link
    seed: int
    front: socket.socket = field(init=False)
    back: socket.socket = field(init=False)
    port: int = field(init=False)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.front.bind(("127.0.0.1", 0))
        self.back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.back.bind(("127.0.0.1", 0))
        self.port = self.front.getsockname()[1]
        self.rng = random.Random(self.seed)
        self.client: tuple[str, int] | None = None
        self.free_at = 0.0                       # the bucket's link is busy until then
        self.queue: list[tuple[float, int, bytes]] = []
        self.dropped = {"requests": 0, "replies": 0, "queue": 0}
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _reply(self, data: bytes, now: float) -> None:
        if self.link.rate_bps is None:
            if self.client:
                self.front.sendto(data, self.client)
            return
        start = max(now, self.free_at)
        if start - now > MAX_QUEUE_S:
            self.dropped["queue"] += 1
            return
        self.free_at = start + (len(data) + FRAME_OVERHEAD) * 8 / self.link.rate_bps
        heapq.heappush(self.queue, (self.free_at, id(data), data))

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        sel.register(self.front, selectors.EVENT_READ)
        sel.register(self.back, selectors.EVENT_READ)
        p = self.link.p_dir
        while not self.stop.is_set():
            now = time.monotonic()
            while self.queue and self.queue[0][0] <= now:
                _, _, data = heapq.heappop(self.queue)
                if self.client:
                    self.front.sendto(data, self.client)
            wait = min(0.05, max(0.0, self.queue[0][0] - now)) if self.queue else 0.05
            for key, _ in sel.select(wait):
                sock: socket.socket = key.fileobj  # type: ignore[assignment]
                data, addr = sock.recvfrom(4096)
                if sock is self.front:
                    self.client = addr
                    if self.rng.random() < p:
                        self.dropped["requests"] += 1
                    else:
                        self.back.sendto(data, ("127.0.0.1", self.device_port))
                elif self.rng.random() < p:
                    self.dropped["replies"] += 1
                else:
                    self._reply(data, time.monotonic())


def _free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def _trace(devices: int, rit_us: float, end_us: float, seed: int) -> str:
    """device_id,send_ts_us,method,uri: exponential gaps per device, 64 resources."""
    rng = np.random.default_rng(seed)
    rows: list[tuple[int, int, int]] = []
    for d in range(devices):
        t = np.cumsum(rng.exponential(rit_us, int(end_us / rit_us * 1.5) + 50))
        t = t[t < end_us].astype(np.int64)
        rows += [(int(x), d, int(r)) for x, r in zip(t, rng.integers(0, 64, t.size), strict=True)]
    rows.sort()
    return "device_id,send_ts_us,method,uri\n" + "".join(f"{d},{t},GET,coap://dev-{d}/r{r}\n" for t, d, r in rows)


def run_one(out: Path, link: Link, strategy: str, a: argparse.Namespace) -> dict[str, Any]:
    """One strategy under one condition: the GE's files and the devices' stats
    in ``out``, and the congestion part of their analysis."""
    (out / "ge").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    res = "path,service_us\n" + "".join(f"/r{i},{int(v)}\n" for i, v in enumerate(rng.exponential(5000.0, 64)))
    (out / "res.csv").write_text(res)
    end_us = (a.warmup_s + a.measure_s + a.cooldown_s) * 1e6
    (out / "trace.csv").write_text(_trace(a.devices, a.rit_ms * 1000.0, end_us, a.seed))
    procs, relays, hosts = [], [], ["host,address"]
    for d in range(a.devices):
        port = _free_port()
        (out / "devices" / f"dev-{d}").mkdir(parents=True, exist_ok=True)
        procs.append(subprocess.Popen([str(BIN / "wotbench-device"), "--listen", f"127.0.0.1:{port}", "--resources",
                                       str(out / "res.csv"), "--threads", "4", "--stats",
                                       str(out / "devices" / f"dev-{d}" / "stats.json")], stderr=subprocess.DEVNULL))
        relays.append(Relay(port, link, a.seed * 1000 + d))
        hosts.append(f"dev-{d},127.0.0.1:{relays[-1].port}")
    (out / "hosts.csv").write_text("\n".join(hosts) + "\n")
    time.sleep(0.5)
    w, m = a.warmup_s * 1e6, a.measure_s * 1e6
    (out / "phases.json").write_text(json.dumps({"t0_epoch_us": None, "calibration": [0, 0], "warmup": [0, w],
                                                 "measure": [w, w + m], "cooldown": [w + m, end_us]}))
    try:
        ge = subprocess.run([str(BIN / "wotbench-ge"), "--trace", str(out / "trace.csv"), "--hosts",
                             str(out / "hosts.csv"), "--out", str(out / "ge" / "ge-0.csv"), "--summary",
                             str(out / "ge" / "ge-0.summary.json"), "--rto-out", str(out / "ge" / "rto-0.csv"),
                             "--congestion", strategy, "--nstart", a.nstart, "--timeout-ms", "5000",
                             "--late-us", "1000", "--quiet"], capture_output=True, text=True, timeout=900)
    finally:
        for r in relays:
            r.stop.set()
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
    if ge.returncode != 0:
        raise SystemExit(f"wotbench-ge exited {ge.returncode}: {ge.stderr.strip()[-500:]}")
    c: dict[str, Any] = analyze(out).result["congestion"]
    c["relay_dropped"] = {k: sum(r.dropped[k] for r in relays) for k in ("requests", "replies", "queue")}
    return c


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--condition", required=True, help="none, loss:P (0..1) or rate:BPS (bit/s)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--strategies", default=",".join(ORDER))
    p.add_argument("--devices", type=int, default=10)
    p.add_argument("--rit-ms", type=float, default=40.0)
    p.add_argument("--warmup-s", type=float, default=2.0)
    p.add_argument("--measure-s", type=float, default=16.0)
    p.add_argument("--cooldown-s", type=float, default=1.0)
    p.add_argument("--nstart", default="unlimited")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    link = Link.parse(a.condition)
    for s in a.strategies.split(","):
        c = run_one(a.out / f"{a.condition.replace(':', '-')}-{s}", link, s, a)
        keep = ("strategy", "nstart", "requests", "ok", "completion_ratio", "response_us", "transmissions_per_request",
                "retransmissions", "retransmission_shares", "spurious_retransmissions", "device_duplicates",
                "throughput_ok_per_s", "complete", "problems", "relay_dropped")
        rto = c.get("rto") or {}
        print(json.dumps({"condition": a.condition, **{k: c.get(k) for k in keep},
                          "rto_median_us": [q["rto_median_us"] for q in rto.get("per_peer", [])]}), flush=True)


if __name__ == "__main__":
    main()
