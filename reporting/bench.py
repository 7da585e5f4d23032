"""``make bench-report``: analyse a synthetic run of N requests and report
wall time and peak memory, for the first pass (GE CSV -> Parquet) and a
second pass (Parquet cache). Each pass runs in a fresh process so that its
peak RSS is its own; the run directory is synthesized once and reused.

    python -m wotbench.reporting.bench --requests 10000000 --dir build/bench/report-run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from wotbench import layout

#: Acceptance on the 2-core build machine (docs: reporting/README.md).
LIMIT_S = 30.0
LIMIT_RSS_BYTES = 4 << 30


def _one_pass(run_dir: Path) -> None:
    from wotbench.reporting import analyze_run

    t = time.perf_counter()
    c = time.process_time()
    r = analyze_run(run_dir)
    wall = time.perf_counter() - t
    cpu = time.process_time() - c
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_rss_bytes": rss, "requests": r["measure_counts"]["requests"],
                      "verdict": r["verdict"]}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wotbench.reporting.bench")
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--devices", type=int, default=100)
    ap.add_argument("--dir", type=Path, required=True, help="where the synthetic run directory goes")
    ap.add_argument("--out", type=Path, help="JSON result file")
    ap.add_argument("--pass-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.pass_only:
        _one_pass(args.dir)
        return 0
    from wotbench.reporting._synth import SynthSpec, synth_run

    measure_s = 60.0
    duration_s = 5.0 + measure_s + 2.0
    rit_us = args.devices * duration_s * 1e6 / args.requests
    spec = SynthSpec(devices=args.devices, rit_us=rit_us, measure_s=measure_s, seed=7)
    stamp = args.dir / "synth.json"
    if not stamp.is_file() or json.loads(stamp.read_text()) != {"requests": args.requests, "devices": args.devices}:
        t = time.perf_counter()
        synth_run(args.dir, spec)
        stamp.write_text(json.dumps({"requests": args.requests, "devices": args.devices}))
        print(f"synthesized {args.dir} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    for p in args.dir.glob("**/*.parquet"):
        p.unlink()  # the first pass must convert
    results = {}
    for name in ("first pass (CSV -> Parquet)", "second pass (Parquet cache)"):
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "wotbench.reporting.bench", "--pass-only", "--dir", str(args.dir)],
                             check=True, capture_output=True, text=True)
        process_wall = time.perf_counter() - t
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
        r = results[name]
        r["process_wall_s"] = process_wall  # with interpreter start and imports
        ok = r["process_wall_s"] <= LIMIT_S and r["peak_rss_bytes"] <= LIMIT_RSS_BYTES
        r["loadavg_1min_after"] = os.getloadavg()[0]
        print(f"{name}: {r['requests']} requests in the measurement phase, {r['process_wall_s']:.1f} s wall "
              f"(analyze_run {r['wall_s']:.1f} s) "
              f"({r['cpu_s']:.1f} s CPU, load average {r['loadavg_1min_after']:.1f} on {os.cpu_count()} cores), "
              f"peak RSS {r['peak_rss_bytes'] / 2**30:.2f} GiB  [{'ok' if ok else 'OVER LIMIT'}: "
              f"<= {LIMIT_S:.0f} s, <= {LIMIT_RSS_BYTES / 2**30:.0f} GiB]")
    csv_bytes = sum(p.stat().st_size for p in (args.dir / layout.GE).glob(layout.GE_OUTPUT_GLOB))
    summary = {"requests_total": args.requests, "devices": args.devices, "csv_bytes": csv_bytes,
               "passes": results, "limits": {"wall_s": LIMIT_S, "peak_rss_bytes": LIMIT_RSS_BYTES}}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2) + "\n")
    worst = max(results.values(), key=lambda r: r["process_wall_s"])
    return 0 if worst["process_wall_s"] <= LIMIT_S and max(r["peak_rss_bytes"] for r in results.values()) <= LIMIT_RSS_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
