"""bench-ge, HTTP points: wotbench-ge --north http (open loop) beside wrk
(closed loop) against one trivial keep-alive HTTP server.

The server is bench/httpd.c (build/bench/ge-httpd: one thread, epoll, "200
ok" to every request), pinned to --server-cpu (SCHED_OTHER). For each
target rate the GE, pinned to --ge-cpu, sends a Poisson trace to it over --conns keep-alive
connections and reports the achieved rate and its send lag (p50/p99/max:
the lag includes any wait for a free connection, as wrk2 counts it), the
response time and the pool waits. Then wrk (Debian's `wrk`) runs closed
loop on the same core with the same connection count against the same
server: its rate is the server's ceiling on this host, and its latency is
what a closed-loop tool reports at that ceiling. One JSON line per run,
medians per point, and a Markdown table (docs/bench-ge.md).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wotbench.host import loopback

ROOT = Path(__file__).resolve().parents[2]
GE = ROOT / "build" / "bin" / "wotbench-ge"
HTTPD = ROOT / "build" / "bench" / "ge-httpd"
URI = "coap://127.0.0.1:5683/a"  # named in the request target; nothing listens there
UNITS_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


def start_server(cpu: int, sched: str) -> tuple[subprocess.Popen[str], str]:
    p = subprocess.Popen([*loopback.sched_prefix(sched), "taskset", "-c", str(cpu), str(HTTPD), "0"],
                         stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    line = p.stderr.readline()
    m = re.search(r"listening on (\S+)", line)
    if not m:
        p.kill()
        sys.exit(f"bench-ge-http: the server did not start: {line}")
    return p, m.group(1)


def ge_run(work: Path, rate: float, args: argparse.Namespace, addr: str, rep: int) -> dict[str, Any]:
    trace = work / f"t-{rate}-{rep}.csv"
    n = loopback.poisson_trace(trace, rate, args.duration_s, URI, seed=rep * 1000 + int(rate))
    out, summ = trace.with_suffix(".out.csv"), trace.with_suffix(".json")
    p = subprocess.run([*loopback.sched_prefix(args.sched), str(GE), "--trace", str(trace), "--out", str(out),
                        "--summary", str(summ), "--cpu", str(args.ge_cpu), "--quiet", "--gateway", addr,
                        "--north", "http", "--http-conns", str(args.conns), "--timeout-ms", "1000"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-ge-http: wotbench-ge failed: {p.stderr}")
    s = json.loads(summ.read_text())
    for f in (trace, out, summ):
        f.unlink()
    resp = s["response_us"] or {}
    return {
        "tool": "wotbench-ge", "target_rps": rate, "rep": rep, "requests": n, "conns": args.conns,
        "sched": args.sched, "achieved_rps": round(s["achieved_rate_rps"], 1),
        "ok": s["ok"], "errors": s["errors"], "timeouts": s["timeouts"],
        "send_lag_p50_us": s["send_lag_us"]["p50"], "send_lag_p99_us": s["send_lag_us"]["p99"],
        "send_lag_max_us": s["send_lag_us"]["max"],
        "response_p50_us": resp.get("p50"), "response_p99_us": resp.get("p99"),
        "pool_waits": s["http"]["pool_waits"], "pool_wait_max_us": s["http"]["pool_wait_max_us"],
        "connects": s["http"]["connects"],
        # the GE's own loop held up (preempted, or RT-throttled): replies
        # not read in time keep connections busy, and requests wait
        "ge_stalls": s["sched"]["stalls"], "ge_stall_max_us": s["sched"]["stall_max_us"],
    }


def wrk_run(args: argparse.Namespace, addr: str, rep: int) -> dict[str, Any]:
    seconds = max(1, round(args.duration_s))
    url = f"http://{addr}/proxy/{URI}"
    p = subprocess.run([*loopback.sched_prefix(args.sched), "taskset", "-c", str(args.ge_cpu), "wrk", "-t1",
                        f"-c{args.conns}", f"-d{seconds}s", "--latency", url],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench-ge-http: wrk failed: {p.stderr}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", p.stdout)
    lat = {q: re.search(rf"^\s+{q}%\s+([\d.]+)(us|ms|s)\s*$", p.stdout, re.M) for q in ("50", "99")}
    if not rate or not all(lat.values()):
        sys.exit(f"bench-ge-http: cannot read wrk's output:\n{p.stdout}")
    us = {q: float(m.group(1)) * UNITS_US[m.group(2)] for q, m in lat.items() if m}
    return {"tool": "wrk", "rep": rep, "conns": args.conns, "sched": args.sched, "seconds": seconds,
            "achieved_rps": float(rate.group(1)), "latency_p50_us": us["50"], "latency_p99_us": us["99"]}


def median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k, v in runs[0].items() if isinstance(v, (int, float)) and k != "rep"]
    med = {k: statistics.median(r[k] for r in runs if r[k] is not None) for k in keys}
    med.update(kind="median", tool=runs[0]["tool"], repetitions=len(runs))
    return med


def table(ge: list[dict[str, Any]], wrk: dict[str, Any]) -> str:
    lines = ["| tool | loop | target req/s | achieved req/s | p99 send lag µs | p99 response µs "
             "| pool waits |", "|---|---|---:|---:|---:|---:|---:|"]
    for m in ge:
        lines.append(f"| wotbench-ge --north http | open | {m['target_rps']:.0f} | {m['achieved_rps']:.0f} "
                     f"| {m['send_lag_p99_us']:.0f} | {m['response_p99_us']:.0f} | {m['pool_waits']:.0f} |")
    lines.append(f"| wrk -t1 -c{wrk['conns']:.0f} | closed | — | {wrk['achieved_rps']:.0f} | — "
                 f"| {wrk['latency_p99_us']:.0f} (p50 {wrk['latency_p50_us']:.0f}) | — |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="10000,50000,100000", help="comma-separated target rates, req/s")
    ap.add_argument("--duration-s", type=float, default=0.7,
                    help="trace length per point (keep < 0.9 s with --sched fifo; wrk runs whole seconds, >= 1)")
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--conns", type=int, default=32, help="connections of the GE's pool and of wrk")
    ap.add_argument("--sched", choices=["fifo", "other"], default="fifo")
    ap.add_argument("--ge-cpu", type=int, default=0, help="the GE's core, and wrk's")
    ap.add_argument("--server-cpu", type=int, default=1)
    ap.add_argument("--server-sched", choices=["fifo", "other"], default="other",
                    help="the server's policy (default other: wrk keeps it busy for a whole second, past the "
                         "kernel's RT budget of 950 ms per second, and a throttled server would stall the "
                         "next points)")
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        sys.exit("bench-ge-http: wrk is missing (apt-get install wrk; .ci/setup.sh installs it)")
    rates = [float(r) for r in args.rates.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-ge-http-") as tmp:
        server, addr = start_server(args.server_cpu, args.server_sched)
        try:
            ge_runs: dict[float, list[dict[str, Any]]] = {r: [] for r in rates}
            wrk_runs = []
            for rep in range(args.repetitions):
                for rate in rates:  # side by side: every point and wrk once per repetition
                    ge_runs[rate].append(ge_run(Path(tmp), rate, args, addr, rep))
                    print(json.dumps(ge_runs[rate][-1]), flush=True)
                wrk_runs.append(wrk_run(args, addr, rep))
                print(json.dumps(wrk_runs[-1]), flush=True)
                time.sleep(1.0)  # wrk ran FIFO for a whole second: let the RT budget refill
        finally:
            server.terminate()
            server.communicate(timeout=10)
    meds = [median(ge_runs[r]) for r in rates]
    wrk = median(wrk_runs)
    for m in [*meds, wrk]:
        print(json.dumps(m), flush=True)
    print("\n" + table(meds, wrk))
    return 0


if __name__ == "__main__":
    sys.exit(main())
