"""Which engine for the report's per-request pass (reporting/README.md,
"Scale"): one part of the report's work on a GE's Parquet cache, by DuckDB
and by Polars (lazy/streaming), against this package's whole streaming pass.
The part: per device, in the measurement phase, the number of requests,
the mean and the exact p50/p95/p99 of the response time of the answered
ones, and the p5 of the expected RIT (the intended send times' differences
in file order: a LAG over the row number). Each engine runs in a fresh
process (2 threads, as the machine has); wall time and peak RSS.

    PYTHONPATH=<dir with duckdb and polars> python -m wotbench.reporting.bench.bench_engines RUN_DIR [--out JSON]

Neither engine is a dependency: install them into a separate folder
(``pip install --target DIR duckdb polars``) to run this.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ENGINES = ("streaming", "duckdb", "polars")


def _duckdb(pq: str, a: float, b: float) -> int:
    import duckdb  # type: ignore[import-not-found]  # optional, not a dependency (see above)

    con = duckdb.connect()
    con.execute("SET threads = 2")
    con.execute("SET memory_limit = '2GB'")
    rows = con.execute(f"""
        WITH m AS (
          SELECT device_id, response_us, status,
                 intended_us - lag(intended_us) OVER (PARTITION BY device_id ORDER BY file_row_number) AS rit_e
          FROM read_parquet('{pq}', file_row_number = true)
          WHERE intended_us >= {a} AND intended_us < {b} AND sent_us IS NOT NULL)
        SELECT device_id, count(*), avg(response_us) FILTER (WHERE status = 'ok'),
               quantile_cont(response_us, [0.5, 0.95, 0.99]) FILTER (WHERE status = 'ok'),
               quantile_cont(rit_e, 0.05)
        FROM m GROUP BY device_id""").fetchall()
    return len(rows)


def _polars(pq: str, a: float, b: float) -> int:
    import polars as pl  # type: ignore[import-not-found]  # optional, not a dependency (see above)

    m = (pl.scan_parquet(pq).with_row_index("row")
         .filter((pl.col("intended_us") >= a) & (pl.col("intended_us") < b) & pl.col("sent_us").is_not_null())
         .with_columns(rit_e=(pl.col("intended_us") - pl.col("intended_us").shift(1)).over("device_id",
                                                                                           order_by="row")))
    ok = pl.col("status") == "ok"
    out = m.group_by("device_id").agg(
        pl.len(), pl.col("response_us").filter(ok).mean().alias("mean"),
        *[pl.col("response_us").filter(ok).quantile(q, "linear").alias(f"p{q}") for q in (0.5, 0.95, 0.99)],
        pl.col("rit_e").quantile(0.05, "linear").alias("rit_p5"))
    return int(out.collect(engine="streaming").height)


def _streaming(run: str) -> int:
    from wotbench.reporting import analyze_run

    return len(analyze_run(Path(run))["devices"])


def _one(engine: str, run: Path) -> None:
    from wotbench.reporting._load import find_files, ge_data, read_phases

    files = find_files(run)
    ge = ge_data(files)
    a, b = read_phases(files, ge).measure
    t = time.perf_counter()
    n = _streaming(str(run)) if engine == "streaming" else {"duckdb": _duckdb, "polars": _polars}[engine](
        str(ge[0].parquet), a, b)
    print(json.dumps({"engine": engine, "wall_s": time.perf_counter() - t, "devices": n,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wotbench.reporting.bench.bench_engines")
    ap.add_argument("run", type=Path)
    ap.add_argument("--engine", choices=ENGINES, help=argparse.SUPPRESS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.engine:
        _one(args.engine, args.run)
        return 0
    res: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for _ in range(args.repeat):   # interleaved
        for e in ENGINES:
            p = subprocess.run([sys.executable, "-m", "wotbench.reporting.bench.bench_engines", str(args.run),
                                "--engine", e], capture_output=True, text=True)
            if p.returncode:
                res[e].append({"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed"})
            else:
                res[e].append(json.loads(p.stdout.strip().splitlines()[-1]))
    for e, runs in res.items():
        ok = [r for r in runs if "wall_s" in r]
        if ok:
            walls = sorted(r["wall_s"] for r in ok)
            print(f"{e}: median {walls[len(walls) // 2]:.1f} s, peak RSS "
                  f"{max(r['peak_rss_bytes'] for r in ok) / 2**30:.2f} GiB ({len(ok)} runs)")
        else:
            print(f"{e}: {runs[0].get('error')}")
    if args.out:
        args.out.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
