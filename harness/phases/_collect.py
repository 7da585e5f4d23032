"""Collect: the containers' states at the end of the load, then stop
everything (devices write their --stats counters as they exit), logs, the
CD-GE output on the run's clock, the monitor data, the GE output counts,
and observed.json."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wotbench import _results as res
from wotbench.phases._context import RunContext
from wotbench.phases._measure import Measured


def shift_times(src: Path, dst: Path, shift_us: int) -> None:
    """Rewrites a GE output whose clock started ``shift_us`` before t0 onto t0."""
    # intended_us is whole microseconds; sent/recv carry the GE's ns precision.
    df = pd.read_csv(src, dtype={"intended_us": "Int64", "sent_us": "float64", "recv_us": "float64",
                                 "code": str}, keep_default_na=True)
    for c in ("intended_us", "sent_us", "recv_us"):
        df[c] = df[c] - shift_us
    res.write_atomic(dst, df.to_csv(index=False, float_format="%.3f"))


def status_counts(csv: Path) -> dict[str, int]:
    """rows and the count of each status of a GE output (rows 0 when missing)."""
    if not csv.exists():
        return {"rows": 0}
    st = pd.read_csv(csv, usecols=["status"])["status"].value_counts()
    return {"rows": int(st.sum()), **{str(k): int(v) for k, v in st.items()}}


def _outputs(ctx: RunContext, m: Measured) -> None:
    run = ctx.run
    if ctx.hs.cd.enabled and run.cd_raw.exists():
        shift_times(run.cd_raw, run.cd_csv, m.calibration_us)
        run.cd_raw.unlink()
    run.monitor_dir.mkdir(exist_ok=True)
    if ctx.collectl:
        res.write_csv(run.host_monitor, ctx.collectl.frame(m.t0_epoch_us))
    res.write_csv(run.containers_monitor, ctx.sampler.frame(m.t0_epoch_us))
    for st, csv in m.outputs:
        counts = status_counts(csv)
        ctx.observed.ge(st.key, rows=counts.pop("rows"), statuses=counts)


def collect(ctx: RunContext, m: Measured) -> None:
    ctx.observed.states(ctx.backend.states())
    ctx.sampler.stop()
    if ctx.collectl:
        ctx.collectl.stop()
    ctx.backend.stop_all()
    ctx.backend.save_logs(ctx.run.log)
    _outputs(ctx, m)
    ctx.manifest["workload_sha256"] = res.sha256_tree(ctx.run.workload)
    ctx.manifest["ge_exit"] = {k: g.get("exit_code") if not g.get("killed") else "killed: did not finish in time"
                               for k, g in ctx.observed.ges.items()}
    ctx.observed.write(ctx.run)
