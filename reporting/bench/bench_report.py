"""``make bench-report``: the report of synthetic runs of 10 and 100 million
requests, out of core. Per size, each step in a fresh process (its peak RSS
is its own):

1. synthesize the run (once; ``synth.json`` says which; chunked, bounded memory),
2. convert the GE CSVs to Parquet (the one-time cost, timed alone),
3. analyse from the Parquet cache (``analyze``: the whole report's numbers),
   ``--repeat`` times, interleaved with the code before this change when
   ``--old`` names it (a PYTHONPATH root whose ``wotbench`` is the old code;
   ``--old-sizes`` which sizes: it holds whole columns in memory).

Medians are reported; rows/s are the GE rows of the run over the analysis
process's wall time (interpreter start and imports included).

    python -m wotbench.reporting.bench.bench_report --requests 10000000 100000000 --dir build/bench/report-runs \\
        --out build/bench/report.json [--old /tmp/report-old-site]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

#: Acceptance (reporting/README.md): the largest run analysed in at most
#: this peak RSS, at least this many rows per second.
LIMIT_RSS_BYTES = 2 << 30
MIN_ROWS_PER_S = 2_000_000
DEVICES = 100
MEASURE_S = 60.0

# The old code's pass: analyze_run from whatever `wotbench` PYTHONPATH gives.
_OLD = """
import json, resource, sys, time
import wotbench.reporting as R
from wotbench.reporting import analyze_run
t = time.perf_counter(); c = time.process_time()
r = analyze_run(sys.argv[1])
print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "requests": r["measure_counts"]["requests"], "verdict": r["verdict"], "code": R.__file__}))
"""


def _stats() -> dict[str, Any]:
    return {"peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _synth_only(run: Path, requests: int, devices: int) -> None:
    from wotbench.reporting.bench.synth import SynthSpec, synth_run

    duration_s = 5.0 + MEASURE_S + 2.0
    spec = SynthSpec(devices=devices, rit_us=devices * duration_s * 1e6 / requests, measure_s=MEASURE_S, seed=7)
    t = time.perf_counter()
    synth_run(run, spec)
    print(json.dumps({"wall_s": time.perf_counter() - t, **_stats()}))


def _convert_only(run: Path) -> None:
    from wotbench.reporting._load import find_files, ge_data

    t = time.perf_counter()
    c = time.process_time()
    data = ge_data(find_files(run))
    print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                      "rows": sum(g.num_rows for g in data), **_stats()}))


def _pass_only(run: Path) -> None:
    import wotbench.reporting as R
    from wotbench.reporting import analyze

    t = time.perf_counter()
    c = time.process_time()
    an = analyze(run)
    r = an.result
    print(json.dumps({"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c, **_stats(),
                      "timing": an.timing, "requests": r["measure_counts"]["requests"], "verdict": r["verdict"],
                      "code": R.__file__}))


def _child(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    t = time.perf_counter()
    out = subprocess.run(args, check=True, capture_output=True, text=True, env=env)
    r: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    r["process_wall_s"] = time.perf_counter() - t
    r["loadavg_1min_after"] = os.getloadavg()[0]
    return r


def _me(*args: str) -> list[str]:
    return [sys.executable, "-m", "wotbench.reporting.bench.bench_report", *args]


def _drop_caches(run: Path) -> None:
    for p in run.glob("**/*.parquet"):
        p.unlink()


def _median(runs: list[dict[str, Any]]) -> dict[str, float]:
    return {k: statistics.median(r[k] for r in runs) for k in ("process_wall_s", "wall_s", "cpu_s", "peak_rss_bytes")}


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB"


def bench_size(root: Path, requests: int, devices: int, repeat: int, old: Path | None) -> dict[str, Any]:
    run = root / f"run-{requests}"
    want = {"requests": requests, "devices": devices, "generator": 2}
    stamp = run / "synth.json"
    out: dict[str, Any] = {"requests_total": requests, "devices": devices}
    if not stamp.is_file() or json.loads(stamp.read_text()) != want:
        shutil.rmtree(run, ignore_errors=True)
        out["synth"] = _child(_me("--synth-only", "--dir", str(run), "--requests", str(requests),
                                  "--devices", str(devices)))
        stamp.write_text(json.dumps(want))
        print(f"{requests:,}: synthesized in {out['synth']['wall_s']:.1f} s, peak RSS "
              f"{_gib(out['synth']['peak_rss_bytes'])}", file=sys.stderr)
    out["csv_bytes"] = sum(p.stat().st_size for p in run.glob("ge/ge-*.csv"))
    if old is not None:
        env = {**os.environ, "PYTHONPATH": str(old)}
        _drop_caches(run)
        first = _child([sys.executable, "-c", _OLD, str(run)], env)
        print(f"{requests:,}: old code, first pass (CSV): {first['process_wall_s']:.1f} s, "
              f"{_gib(first['peak_rss_bytes'])}", file=sys.stderr)
        out["old_first_pass"] = first
    _drop_caches(run)
    conv = out["convert"] = _child(_me("--convert-only", "--dir", str(run)))
    rows = conv["rows"]
    print(f"{requests:,}: CSV -> Parquet {conv['process_wall_s']:.1f} s wall, {_gib(conv['peak_rss_bytes'])}",
          file=sys.stderr)
    new_runs, old_runs = [], []
    for i in range(repeat):   # interleaved: old and new see the same machine
        if old is not None:
            old_runs.append(_child([sys.executable, "-c", _OLD, str(run)], env))
        new_runs.append(_child(_me("--pass-only", "--dir", str(run))))
        print(f"{requests:,}: pass {i + 1}: new {new_runs[-1]['process_wall_s']:.1f} s"
              + (f", old {old_runs[-1]['process_wall_s']:.1f} s" if old_runs else ""), file=sys.stderr)
    out["analysis"] = new_runs
    med = out["analysis_median"] = _median(new_runs)
    out["rows"] = rows
    out["rows_per_s"] = rows / med["process_wall_s"]
    if old_runs:
        out["old_analysis"] = old_runs
        om = out["old_analysis_median"] = _median(old_runs)
        out["old_over_new_wall"] = om["process_wall_s"] / med["process_wall_s"]
        out["old_code"] = old_runs[0]["code"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wotbench.reporting.bench.bench_report")
    ap.add_argument("--requests", type=int, nargs="+", default=[10_000_000, 100_000_000])
    ap.add_argument("--devices", type=int, default=DEVICES)
    ap.add_argument("--dir", type=Path, required=True, help="where the synthetic run directories go")
    ap.add_argument("--out", type=Path, help="JSON result file")
    ap.add_argument("--repeat", type=int, default=3, help="analysis passes per size (medians)")
    ap.add_argument("--old", type=Path, help="PYTHONPATH root of the code to compare with")
    ap.add_argument("--old-sizes", type=int, nargs="*", default=[10_000_000])
    ap.add_argument("--synth-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--convert-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--pass-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.synth_only:
        _synth_only(args.dir, args.requests[0], args.devices)
        return 0
    if args.convert_only:
        _convert_only(args.dir)
        return 0
    if args.pass_only:
        _pass_only(args.dir)
        return 0
    sizes = {}
    for n in args.requests:
        sizes[str(n)] = bench_size(args.dir, n, args.devices, args.repeat,
                                   args.old if n in args.old_sizes else None)
    ok = True
    for n, r in sizes.items():
        m = r["analysis_median"]
        line = (f"{int(n):,} requests ({r['csv_bytes'] / 1e9:.2f} GB CSV): "
                f"convert {r['convert']['process_wall_s']:.1f} s ({_gib(r['convert']['peak_rss_bytes'])}); "
                f"analysis median {m['process_wall_s']:.1f} s "
                f"(analyze {m['wall_s']:.1f} s, {m['cpu_s']:.1f} s CPU), peak RSS {_gib(m['peak_rss_bytes'])}, "
                f"{r['rows_per_s'] / 1e6:.2f} M rows/s")
        if "old_analysis_median" in r:
            o = r["old_analysis_median"]
            line += (f"; before: first pass {r['old_first_pass']['process_wall_s']:.1f} s "
                     f"({_gib(r['old_first_pass']['peak_rss_bytes'])}), cached {o['process_wall_s']:.1f} s "
                     f"({_gib(o['peak_rss_bytes'])}): old/new {r['old_over_new_wall']:.2f}x")
        print(line)
    big = sizes[str(max(args.requests))]
    ok = big["analysis_median"]["peak_rss_bytes"] <= LIMIT_RSS_BYTES and big["rows_per_s"] >= MIN_ROWS_PER_S
    print(f"acceptance ({max(args.requests):,}): <= {_gib(LIMIT_RSS_BYTES)}, >= {MIN_ROWS_PER_S / 1e6:.0f} M rows/s: "
          f"{'ok' if ok else 'NOT MET'}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(json.dumps({"sizes": sizes, "limits": {"peak_rss_bytes": LIMIT_RSS_BYTES,
                                                              "min_rows_per_s": MIN_ROWS_PER_S}}, indent=2) + "\n")
        os.replace(tmp, args.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
