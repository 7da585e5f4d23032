"""bench-ge-stream: does streaming keep the GE's memory flat, and at what
cost in send precision?

Two wotbench-ge binaries side by side in one run, `--old` (e.g. built from
the commit before streaming in a `git worktree`) and `--new` (this tree),
each against the same wotbench-device on loopback (zero service time,
pinned to `--device-cpu`), the GE pinned with `--cpu`:

1. Peak RSS against trace length: the same Poisson (or, `--rss-schedule
   regular`, evenly spaced) trace of N requests at `--rss-rate` for every
   N of `--rss-requests`, old and new one after the
   other, under the normal scheduler (runs longer than the real-time
   budget). Peak RSS is the GE's own, from `/usr/bin/time -f %M`, the same
   measure for both binaries (the new one also reports it in its summary).
2. Send lag at `--lag-rates`: short Poisson points (`--lag-duration-s`,
   under the RT budget) under SCHED_FIFO as bench-ge does, old and new
   interleaved (order alternating) on the same trace per repetition;
   medians per binary and their ratio.

One JSON line per run, then summary lines; everything also goes to
`--json` (build/bench/ge-stream.json), written atomically.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from wotbench.host import loopback

ROOT = Path(__file__).resolve().parents[2]
DEVICE = ROOT / "build" / "bin" / "wotbench-device"


def run_ge(ge: Path, trace: Path, args: argparse.Namespace, sched: str) -> dict[str, Any]:
    out, summ = trace.with_suffix(".out.csv"), trace.with_suffix(".json")
    # /usr/bin/time reports the GE's own peak RSS (%M): wait4's ru_maxrss
    # would carry this Python process's size across fork + exec.
    cmd = [*loopback.sched_prefix(sched), "/usr/bin/time", "-f", "maxrss_kb=%M", str(ge), "--trace", str(trace),
           "--out", str(out), "--summary", str(summ), "--cpu", str(args.ge_cpu), "--type", "non",
           "--timeout-ms", "1000", "--quiet"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    _, status, _ = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read() if proc.stderr else ""
    maxrss_kb = int(err.rsplit("maxrss_kb=", 1)[1].split()[0])
    if proc.returncode != 0:
        sys.exit(f"bench-ge-stream: {ge} failed: {err}")
    s = json.loads(summ.read_text())
    out_bytes = out.stat().st_size
    out.unlink()
    summ.unlink()
    lag = s["send_lag_us"]
    return {"requests": s["requests"], "ok": s["ok"], "timeouts": s["timeouts"],
            "achieved_rps": round(s["achieved_rate_rps"], 1),
            "send_lag_p50_us": lag["p50"], "send_lag_p99_us": lag["p99"], "send_lag_max_us": lag["max"],
            "late_sends": s["late_sends"], "duration_s": s["duration_s"],
            "maxrss_bytes": maxrss_kb * 1024, "summary_peak_rss_bytes": s.get("peak_rss_bytes"),
            "memory": s.get("memory"), "csv_bytes": out_bytes}


def rss_part(work: Path, args: argparse.Namespace, port: int, bins: dict[str, Path]) -> list[dict[str, Any]]:
    lines = []
    for n in [int(x) for x in args.rss_requests.split(",")]:
        trace = work / f"rss-{n}.csv"
        loopback.poisson_trace(trace, args.rss_rate, n / args.rss_rate, f"coap://127.0.0.1:{port}/a", seed=n,
                               regular=args.rss_schedule == "regular")
        for name, ge in bins.items():
            r = {"part": "rss", "binary": name, "target_requests": n, "rate": args.rss_rate,
                 "schedule": args.rss_schedule,
                 **run_ge(ge, trace, args, "other")}
            print(json.dumps(r), flush=True)
            lines.append(r)
        trace.unlink()
    return lines


def lag_part(work: Path, args: argparse.Namespace, port: int, bins: dict[str, Path]) -> list[dict[str, Any]]:
    lines = []
    names = list(bins)
    for rate in [float(x) for x in args.lag_rates.split(",")]:
        runs: dict[str, list[dict[str, Any]]] = {k: [] for k in names}
        for rep in range(args.repetitions):
            trace = work / f"lag-{int(rate)}-{rep}.csv"
            loopback.poisson_trace(trace, rate, args.lag_duration_s, f"coap://127.0.0.1:{port}/a",
                                   seed=rep * 7919 + int(rate))
            order = names if rep % 2 == 0 else names[::-1]
            for name in order:
                r = {"part": "lag", "binary": name, "rate": rate, "rep": rep,
                     **run_ge(bins[name], trace, args, args.sched)}
                r.pop("memory")
                print(json.dumps(r), flush=True)
                runs[name].append(r)
                lines.append(r)
            trace.unlink()
        med = {name: {k: statistics.median(r[k] for r in runs[name])
                      for k in ("achieved_rps", "send_lag_p50_us", "send_lag_p99_us", "send_lag_max_us")}
               for name in names}
        m = {"part": "lag", "kind": "median", "rate": rate, "repetitions": args.repetitions,
             "sched": args.sched, **{name: med[name] for name in names}}
        if "old" in med and "new" in med and med["old"]["send_lag_p99_us"] > 0:
            m["p99_ratio_new_over_old"] = round(med["new"]["send_lag_p99_us"] / med["old"]["send_lag_p99_us"], 3)
        print(json.dumps(m), flush=True)
        lines.append(m)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", type=Path, required=True, help="the wotbench-ge before streaming")
    ap.add_argument("--new", type=Path, default=ROOT / "build" / "bin" / "wotbench-ge")
    ap.add_argument("--rss-requests", default="1000000,10000000")
    ap.add_argument("--rss-rate", type=float, default=150_000)
    ap.add_argument("--rss-schedule", choices=["poisson", "regular"], default="poisson",
                    help="regular: every RIT 1/rate (fewest gaps for the output: a GE at its ceiling)")
    ap.add_argument("--lag-rates", default="100000,150000")
    ap.add_argument("--lag-duration-s", type=float, default=0.7)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--sched", choices=["fifo", "other"], default="fifo")
    ap.add_argument("--ge-cpu", type=int, default=0)
    ap.add_argument("--device-cpu", type=int, default=1)
    ap.add_argument("--parts", default="rss,lag")
    ap.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "ge-stream.json")
    args = ap.parse_args(argv)
    bins = {"old": args.old, "new": args.new}
    lines: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ge-stream-") as tmp:
        work = Path(tmp)
        dev, port = loopback.start_device(DEVICE, work, cpu=args.device_cpu, threads=1, policy=args.sched)
        try:
            if "lag" in args.parts:
                lines += lag_part(work, args, port, bins)
            if "rss" in args.parts:
                lines += rss_part(work, args, port, bins)
        finally:
            dev.terminate()
            dev.communicate(timeout=10)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    tmp_json = args.json.with_suffix(f".tmp.{os.getpid()}")
    tmp_json.write_text(json.dumps({"tool": "bench-ge-stream", "args": vars(args) | {
        "old": str(args.old), "new": str(args.new), "json": str(args.json)}, "lines": lines}, indent=1))
    tmp_json.replace(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
