"""make bench-device: the device at zero service time, on one core.

The device is pinned to one core (``--cpus``) and the load to the other
(``taskset`` / the GE's ``--cpu``); every point starts a fresh device and
repetitions are interleaved (repetition outermost), medians reported.

1. closed loop (``devload``: a window of requests in flight, a new one per
   reply) per worker-thread count: the rate at which the device saturates;
2. open loop (``devrate``: a fixed rate, replies timed from the intended
   send instant) per worker-thread count, stepping the rate up through
   fractions of the closed-loop median until a step fails: the highest
   rate at which >= 99.9 % of the scheduled requests were answered within
   the bound (5 ms) is the maximum sustained rate;
3. the GE (``wotbench-ge``, Poisson trace, CON) at 200k and 250k req/s
   offered: what it achieved and what the device did with it;
4. service time > 0 (closed loop), where worker threads do the work.

Every point also records the CPU time of the device's network thread and
of its workers (``/proc/PID/task/*/schedstat``), the load generator's CPU
time (``RUSAGE_CHILDREN``) and the host's UDP receive-buffer drops
(``/proc/net/snmp``), so it says which side was the bottleneck.
JSON to --out (atomic), a table of medians on stdout."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wotbench.base.results import write_atomic
from wotbench.host import loopback

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "bin"
DEVICE, DEVLOAD, DEVRATE, GE = (BIN / n for n in ("wotbench-device", "devload", "devrate", "wotbench-ge"))
COUNTS = re.compile(r"^wotbench-device:((?: \w+=\d+)+)$", re.M)
# Open-loop steps as fractions of the closed-loop median; the walk stops
# at the first failing step.
STEP_FRACTIONS = (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2, 1.3, 1.4, 1.5)
# Service time > 0: (name, service_us, mode, threads, window); capacity threads / S.
SERVICE_CASES = (("1ms_sleep_4threads", 1000, "sleep", 4, 256), ("1ms_busy_1thread", 1000, "busy", 1, 64))
#: One measurement (a closed-loop point, an open-loop step, a GE point) as
#: the load tool's JSON plus what was measured around it.
Point = dict[str, Any]


@dataclass(frozen=True)
class Setup:
    device_cpu: int
    load_cpu: int
    threads: tuple[int, ...]
    repetitions: int
    closed_seconds: float
    window: int
    step_ms: int
    bound_us: int
    need: float
    ge_rates: tuple[int, ...]
    ge_seconds: float
    ge_threads: int
    type: str


class Device:
    """One wotbench-device on a free loopback port, pinned to one core."""

    def __init__(self, work: Path, setup: Setup, threads: int, service_us: int = 0, mode: str = "sleep"):
        res = work / "res.csv"
        res.write_text(f"path,service_us\n/a,{service_us}\n")
        self.port = loopback.free_port()
        self.proc = subprocess.Popen(
            [str(DEVICE), "--listen", f"127.0.0.1:{self.port}", "--resources", str(res), "--mode", mode,
             "--threads", str(threads), "--cpus", str(setup.device_cpu)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline()
        if " resources on " not in line:
            self.proc.kill()
            self.proc.wait()
            sys.exit(f"bench-device: wotbench-device did not start: {line.strip()}")
        self.counts: dict[str, int] = {}

    def cpu_ns(self) -> tuple[int, int]:
        """CPU time so far of the network (main) thread and of all workers."""
        net = workers = 0
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            ns = int((task / "schedstat").read_text().split()[0])
            if int(task.name) == self.proc.pid:
                net = ns
            else:
                workers += ns
        return net, workers

    def stop(self) -> dict[str, int]:
        if self.proc.poll() is None:
            self.proc.terminate()
        _, err = self.proc.communicate(timeout=10)
        m = COUNTS.search(err)
        self.counts = {k: int(v) for k, v in (p.split("=") for p in m.group(1).split())} if m else {}
        return self.counts


@contextmanager
def device(work: Path, setup: Setup, threads: int, service_us: int = 0, mode: str = "sleep") -> Iterator[Device]:
    dev = Device(work, setup, threads, service_us, mode)
    try:
        yield dev
    finally:
        dev.stop()


def children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def udp_rcvbuf_errors() -> int:
    """The host's UDP datagrams dropped for a full receive buffer (all sockets)."""
    lines = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines() if ln.startswith("Udp:")]
    return int(lines[1][lines[0].index("RcvbufErrors")])


def measured(dev: Device, cmd: list[str]) -> tuple[str, dict[str, float]]:
    """Runs one load command; returns its stdout and what the device, the
    load and the host spent meanwhile."""
    net0, wk0 = dev.cpu_ns()
    load0, drops0, t0 = children_cpu_s(), udp_rcvbuf_errors(), time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode != 0:
        tool = next(Path(c).name for c in cmd if c.startswith("/"))
        sys.exit(f"bench-device: {tool} failed (exit {p.returncode}): {p.stderr.strip()}")
    net1, wk1 = dev.cpu_ns()
    return p.stdout, {"device_net_cpu_s": (net1 - net0) / 1e9, "device_workers_cpu_s": (wk1 - wk0) / 1e9,
                      "load_cpu_s": children_cpu_s() - load0, "wall_s": wall,
                      "udp_rcvbuf_errors": udp_rcvbuf_errors() - drops0}


def closed_point(work: Path, setup: Setup, threads: int, rep: int, service_us: int = 0, mode: str = "sleep",
                 window: int | None = None) -> Point:
    with device(work, setup, threads, service_us, mode) as dev:
        out, cost = measured(dev, ["taskset", "-c", str(setup.load_cpu), str(DEVLOAD), "-p", str(dev.port),
                                   "-w", str(window or setup.window), "-s", str(setup.closed_seconds)]
                             + (["-c"] if setup.type == "con" else []))
    r: Point = json.loads(out)
    r.update(cost, rep=rep, threads=threads, service_us=service_us, mode=mode, device_counts=dev.counts,
             device_net_util=cost["device_net_cpu_s"] / r["seconds"],
             load_util=cost["load_cpu_s"] / r["seconds"],
             device_us_per_request=1e6 * cost["device_net_cpu_s"] / max(r["responses"], 1),
             # what the device would answer with its network thread 100 % busy
             device_bound_rps=r["rate"] / cost["device_net_cpu_s"] * r["seconds"] if cost["device_net_cpu_s"] else None)
    return r


def open_step(dev: Device, setup: Setup, rate: int) -> Point:
    out, cost = measured(dev, ["taskset", "-c", str(setup.load_cpu), str(DEVRATE), "-p", str(dev.port),
                               "-r", str(rate), "-d", str(setup.step_ms), "-b", str(setup.bound_us)]
                         + (["-c"] if setup.type == "con" else []))
    r: Point = json.loads(out)
    r.update(cost, passed=r["within_bound_fraction"] >= setup.need,
             device_net_util=cost["device_net_cpu_s"] / r["duration_s"],
             device_us_per_request=1e6 * cost["device_net_cpu_s"] / max(r["answered"], 1))
    return r


def open_sweep(work: Path, setup: Setup, threads: int, rep: int, grid: list[int]) -> tuple[list[Point], int | None]:
    """Steps up the grid until a step fails; returns the steps and the
    highest passing rate (None when the first step failed)."""
    steps: list[Point] = []
    best = None
    with device(work, setup, threads) as dev:
        for rate in grid:
            s = open_step(dev, setup, rate)
            s.update(rep=rep, threads=threads)
            steps.append(s)
            print(f"  open  rep {rep} threads {threads}: {rate:>7} req/s offered, "
                  f"{100 * s['within_bound_fraction']:7.3f} % within {setup.bound_us} us, "
                  f"p99.9 {s['response_us']['p999']} us, device busy {s['device_net_util']:.2f}", flush=True)
            if not s["passed"]:
                break
            best = rate
    return steps, best


def ge_point(work: Path, setup: Setup, rate: int, rep: int) -> Point:
    trace = work / f"ge-{rate}-{rep}.csv"
    out, summ = trace.with_suffix(".out.csv"), trace.with_suffix(".json")
    with device(work, setup, setup.ge_threads) as dev:
        n = loopback.poisson_trace(trace, rate, setup.ge_seconds, f"coap://127.0.0.1:{dev.port}/a",
                                   seed=1000 * rep + rate // 1000)
        _, cost = measured(dev, [str(GE), "--trace", str(trace), "--out", str(out), "--summary", str(summ),
                                 "--cpu", str(setup.load_cpu), "--type", setup.type, "--quiet"])
    s = json.loads(summ.read_text())
    rows = pd.read_csv(out, usecols=["status", "latency_intended_us"])
    within = int(((rows.status == "ok") & (rows.latency_intended_us <= setup.bound_us)).sum())
    for f in (trace, out, summ):
        f.unlink()
    span = s["send_span_s"] or float("nan")
    return {
        "rep": rep, "offered_rps": rate, "requests": n, "achieved_rps": s["achieved_rate_rps"],
        "ok": s["ok"], "timeouts": s["timeouts"], "errors": s["errors"], "late_sends": s["late_sends"],
        "within_bound_fraction": within / n,
        "send_lag_us": s["send_lag_us"], "response_us": s["response_us"],
        "latency_intended_us": s["latency_intended_us"],
        "device_requests": dev.counts.get("requests"), "device_served": dev.counts.get("served"),
        "lost_before_device": n - dev.counts.get("requests", 0),
        "device_net_util": cost["device_net_cpu_s"] / span,
        "device_us_per_request": 1e6 * cost["device_net_cpu_s"] / max(dev.counts.get("served", 0), 1),
        **{k: cost[k] for k in ("device_net_cpu_s", "load_cpu_s", "udp_rcvbuf_errors")},
    }


def med(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return float(statistics.median(vals)) if vals else None


def summarize(setup: Setup, closed: list[Point], sustained: list[Point], ge: list[Point],
              service: list[Point]) -> dict[str, Any]:
    table = []
    for t in setup.threads:
        c = [r for r in closed if r["threads"] == t]
        o = [r["rate"] for r in sustained if r["threads"] == t]
        rate = med(o)
        table.append({
            "threads": t,
            "closed_loop_rps": med([r["rate"] for r in c]),
            "closed_loop_device_busy": med([r["device_net_util"] for r in c]),
            "closed_loop_load_busy": med([r["load_util"] for r in c]),
            "device_us_per_request": med([r["device_us_per_request"] for r in c]),
            "device_bound_rps": med([r["device_bound_rps"] for r in c]),
            "workers_cpu_s": med([r["device_workers_cpu_s"] for r in c]),
            "sustained_rps": rate,
            "sustained_per_thread_rps": None if rate is None else rate / t,
            "sustained_runs": o,
        })
    ge_rows = []
    for rate in setup.ge_rates:
        g = [r for r in ge if r["offered_rps"] == rate]
        ge_rows.append({
            "offered_rps": rate,
            "achieved_rps": med([r["achieved_rps"] for r in g]),
            "within_bound_fraction": med([r["within_bound_fraction"] for r in g]),
            "timeouts": med([r["timeouts"] for r in g]),
            "lost_before_device": med([r["lost_before_device"] for r in g]),
            "send_lag_p99_us": med([r["send_lag_us"]["p99"] for r in g]),
            "response_p50_us": med([r["response_us"]["p50"] for r in g if r["response_us"]]),
            "response_p99_us": med([r["response_us"]["p99"] for r in g if r["response_us"]]),
            "device_busy": med([r["device_net_util"] for r in g]),
            "device_us_per_request": med([r["device_us_per_request"] for r in g]),
        })
    svc = [{"name": name, "capacity_bound_rps": threads * 1e6 / s_us,
            "rate": med([r["rate"] for r in service if r["name"] == name])}
           for name, s_us, _, threads, _ in SERVICE_CASES]
    rates = [r["rate"] for r in sustained if r["rate"] is not None]
    # Worker threads do not change an S = 0 rate (answered inline), so the
    # sweeps of all thread counts are repetitions of one measurement.
    pooled = {"sustained_rps": med(rates), "sweeps": len(sustained),
              "first_step_failed": sum(r["rate"] is None for r in sustained),
              "min_rps": min(rates, default=None), "max_rps": max(rates, default=None)}
    return {"threads": table, "pooled": pooled, "ge": ge_rows, "service_time": svc}


def print_tables(setup: Setup, m: dict[str, Any]) -> None:
    def f(v: float | None, fmt: str = ",.0f") -> str:
        return "-" if v is None else format(v, fmt)

    print(f"\nS = 0, device on core {setup.device_cpu}, load on core {setup.load_cpu}, "
          f"{setup.type.upper()}, medians of {setup.repetitions}:")
    print("| worker threads | closed loop | device busy | load busy | device µs/req | rate / device busy "
          "| max sustained (open loop) | per worker thread |")
    print("|---|---|---|---|---|---|---|---|")
    for r in m["threads"]:
        print(f"| {r['threads']} | {f(r['closed_loop_rps'])}/s | {f(r['closed_loop_device_busy'], '.2f')} "
              f"| {f(r['closed_loop_load_busy'], '.2f')} | {f(r['device_us_per_request'], '.2f')} "
              f"| {f(r['device_bound_rps'])}/s | {f(r['sustained_rps'])}/s | {f(r['sustained_per_thread_rps'])}/s |")
    pool = m["pooled"]
    print(f"Max sustained over all {pool['sweeps']} sweeps (thread counts pooled): median "
          f"{f(pool['sustained_rps'])}/s, range {f(pool['min_rps'])}-{f(pool['max_rps'])}/s; "
          f"{pool['first_step_failed']} sweeps failed already at the first step (not in the medians: "
          "read their device busy and send lag in the JSON)")
    print(f"\nThe GE (Poisson, {setup.ge_seconds} s, device {setup.ge_threads} threads):")
    print("| offered | GE achieved | within bound | lost before device | GE send lag p99 | response p50 / p99 "
          "| device busy |")
    print("|---|---|---|---|---|---|---|")
    for r in m["ge"]:
        print(f"| {f(r['offered_rps'])}/s | {f(r['achieved_rps'])}/s | {f(100 * r['within_bound_fraction'], '.3f')} % "
              f"| {f(r['lost_before_device'])} | {f(r['send_lag_p99_us'])} µs "
              f"| {f(r['response_p50_us'])} / {f(r['response_p99_us'])} µs | {f(r['device_busy'], '.2f')} |")
    for r in m["service_time"]:
        print(f"service time {r['name']}: {f(r['rate'])}/s (bound {f(r['capacity_bound_rps'])}/s)")


def parse_args(argv: list[str] | None) -> tuple[Setup, Path, bool]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device-cpu", type=int, default=1)
    ap.add_argument("--load-cpu", type=int, default=0)
    ap.add_argument("--threads", default="1,2,4,8", help="worker-thread counts, comma-separated")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--closed-seconds", type=float, default=2.0)
    ap.add_argument("--window", type=int, default=64)
    ap.add_argument("--step-ms", type=int, default=1500, help="length of one open-loop step")
    ap.add_argument("--bound-us", type=int, default=5000)
    ap.add_argument("--need", type=float, default=0.999, help="fraction answered within the bound")
    ap.add_argument("--ge-rates", default="200000,250000")
    ap.add_argument("--ge-seconds", type=float, default=1.5)
    ap.add_argument("--ge-threads", type=int, default=4)
    ap.add_argument("--type", choices=["con", "non"], default="con")
    ap.add_argument("--no-service-time", action="store_true", help="skip the S > 0 cases")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "device.json")
    a = ap.parse_args(argv)
    try:
        threads = tuple(int(t) for t in a.threads.split(","))
        ge_rates = tuple(int(r) for r in a.ge_rates.split(",") if r)
    except ValueError as err:
        ap.error(f"--threads/--ge-rates: {err}")
    if a.repetitions < 1 or not threads or min(threads) < 1 or not 0 < a.need <= 1:
        ap.error("--repetitions >= 1, --threads >= 1, 0 < --need <= 1")
    if a.device_cpu == a.load_cpu or not {a.device_cpu, a.load_cpu} <= os.sched_getaffinity(0):
        ap.error(f"--device-cpu and --load-cpu: two different cores of {sorted(os.sched_getaffinity(0))}")
    setup = Setup(a.device_cpu, a.load_cpu, threads, a.repetitions, a.closed_seconds, a.window, a.step_ms,
                  a.bound_us, a.need, ge_rates, a.ge_seconds, a.ge_threads, a.type)
    return setup, a.out, a.no_service_time


def main(argv: list[str] | None = None) -> int:
    setup, out, no_service = parse_args(argv)
    for b in (DEVICE, DEVLOAD, DEVRATE, GE):
        if not b.exists():
            print(f"error: {b} is missing (make build {BIN}/devload {BIN}/devrate)", file=sys.stderr)
            return 2
    host = {"cores": os.cpu_count(), "kernel": platform.release(), "loadavg_before": os.getloadavg()}
    closed: list[Point] = []
    steps: list[Point] = []
    sustained: list[Point] = []
    ge: list[Point] = []
    service: list[Point] = []
    with tempfile.TemporaryDirectory(prefix="bench-device-") as tmp:
        work = Path(tmp)
        for rep in range(setup.repetitions):
            for t in setup.threads:
                closed.append(closed_point(work, setup, t, rep))
                c = closed[-1]
                print(f"  closed rep {rep} threads {t}: {c['rate']:,.0f} req/s, device busy "
                      f"{c['device_net_util']:.2f}, load busy {c['load_util']:.2f}", flush=True)
        capacity = float(np.median([r["rate"] for r in closed]))
        grid = [max(1000, int(round(capacity * f, -3))) for f in STEP_FRACTIONS]
        for rep in range(setup.repetitions):
            for t in setup.threads:
                s, best = open_sweep(work, setup, t, rep, grid)
                steps += s
                # The top step passed: the rate is only a lower bound.
                sustained.append({"rep": rep, "threads": t, "rate": best, "lower_bound": best == grid[-1]})
            for rate in setup.ge_rates:
                ge.append(ge_point(work, setup, rate, rep))
                g = ge[-1]
                print(f"  GE    rep {rep}: {rate:>7} offered, {g['achieved_rps']:,.0f} achieved, "
                      f"{100 * g['within_bound_fraction']:.3f} % within bound, device busy "
                      f"{g['device_net_util']:.2f}", flush=True)
            if not no_service:
                for name, s_us, mode, threads, window in SERVICE_CASES:
                    r = closed_point(work, setup, threads, rep, s_us, mode, window)
                    r["name"] = name
                    service.append(r)
    host["loadavg_after"] = os.getloadavg()
    m = summarize(setup, closed, sustained, ge, service)
    doc = {"format": 2, "host": host, "setup": asdict(setup),
           "criterion": f">= {setup.need:.1%} of scheduled requests answered within {setup.bound_us} us "
                        "of their intended send time",
           "open_loop_grid": grid, "medians": m, "closed_loop": closed, "open_loop_steps": steps,
           "sustained": sustained, "ge": ge, "service_time": service}
    write_atomic(out, json.dumps(doc, indent=1) + "\n")
    print_tables(setup, m)
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
