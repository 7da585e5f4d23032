"""Collect: the containers' states at the end of the load, then stop
everything (devices write their --stats counters as they exit), logs, the
CD-GE output on the run's clock, the monitor data, the GE output counts,
and observed.json."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wotbench.base import results as res
from wotbench.execution.monitor import Collectl
from wotbench.execution.phases._capturing import stop_captures
from wotbench.execution.phases._context import RunContext
from wotbench.execution.phases._gateway import record_end
from wotbench.execution.phases._measure import Measured


def shift_times(src: Path, dst: Path, shift_us: int) -> None:
    """Rewrites a GE output whose clock started ``shift_us`` before t0 onto t0."""
    # intended_us is whole microseconds; sent/recv carry the GE's ns precision.
    dtypes: dict[str, str | type[str]] = {"intended_us": "Int64", "sent_us": "float64", "recv_us": "float64",
                                          "code": str}
    df = pd.read_csv(src, dtype=dtypes, keep_default_na=True)
    for c in ("intended_us", "sent_us", "recv_us"):
        df[c] = df[c] - shift_us
    res.write_atomic(dst, df.to_csv(index=False, float_format="%.3f"))


def status_counts(csv: Path) -> dict[str, int]:
    """rows and the count of each status of a GE output (rows 0 when missing)."""
    if not csv.exists():
        return {"rows": 0}
    st = pd.read_csv(csv, usecols=["status"])["status"].value_counts()
    return {"rows": int(st.sum()), **{str(k): int(v) for k, v in st.items()}}


def keep_partials(folder: Path) -> dict[str, int]:
    """What a GE or CD-GE killed before its end left in ``folder``: its
    output written so far (``<name>.tmp.<pid>``, renamed only at a clean
    exit) kept as ``<name>.partial`` (never analysed: the run is invalid
    anyway, and the rows say how far it got), a half-written summary
    removed. Returns the rows of each kept file, by its new name."""
    kept: dict[str, int] = {}
    if not folder.is_dir():
        return kept
    for tmp in sorted(folder.glob("*.tmp.*")):
        name, _, pid = tmp.name.rpartition(".tmp.")
        if not pid.isdigit() or not name:
            continue
        if not name.endswith(".csv"):
            tmp.unlink(missing_ok=True)
            continue
        dst = tmp.with_name(name + ".partial")
        tmp.replace(dst)
        with dst.open("rb") as fh:
            kept[dst.name] = max(0, sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b"")) - 1)
    return kept


def _host_files(ctx: RunContext, m: Measured) -> None:
    """Every host's CD-GE output shifted onto t0, and its monitor samples
    (a remote host's collectl on its own clock, corrected by its offset)."""
    remote = dict(m.monitors)
    for hd in ctx.run.hosts():
        if hd.cd_raw.exists():
            shift_times(hd.cd_raw, hd.cd_csv, m.calibration_us)
            hd.cd_raw.unlink()
        if hd.hostname in remote:
            hd.monitor_dir.mkdir(parents=True, exist_ok=True)
            frame = Collectl(hd.collectl_dir, ()).frame(m.t0_epoch_us + ctx.clock_us(hd.hostname))
            res.write_csv(hd.host_monitor, frame)
        elif ctx.collectl and ctx.collectl.workdir == hd.collectl_dir:
            res.write_csv(hd.host_monitor, ctx.collectl.frame(m.t0_epoch_us))


def _outputs(ctx: RunContext, m: Measured) -> None:
    run = ctx.run
    run.monitor_dir.mkdir(exist_ok=True)
    partial = {}
    for folder in {run.ge_dir, *(hd.cd_raw.parent for hd in run.hosts())}:
        partial.update(keep_partials(folder))
    if partial:
        ctx.observed.partial = partial
    _host_files(ctx, m)
    ctx.sampler.write_csv(run.containers_monitor, m.t0_epoch_us)
    res.write_csv(run.harness_monitor, ctx.self_sampler.frame(m.t0_epoch_us))
    for st, csv in m.outputs:
        counts = status_counts(csv)
        ctx.observed.ge(st.key, rows=counts.pop("rows"), statuses=counts)


def collect(ctx: RunContext, m: Measured) -> None:
    stop_captures(ctx)               # before anything stops: the load is over, the last files whole
    states = ctx.backend.states()
    ctx.observed.states(states)
    record_end(ctx, states)          # gateway.json: before anything is stopped
    nodes = ctx.backend.node_states()
    ctx.sampler.stop()
    if ctx.collectl:
        ctx.collectl.stop()
    ctx.backend.stop_all()
    missing = ctx.backend.fetch()
    ctx.backend.save_logs(ctx.run.log)
    if nodes:
        ctx.observed.nodes = {h: {"state": s, "lost": h in ctx.backend.lost, "reason": ctx.backend.lost.get(h)}
                              for h, s in nodes.items()}
        if missing:
            ctx.manifest["not_fetched"] = missing
    _outputs(ctx, m)
    ctx.manifest["workload_sha256"] = res.sha256_tree(ctx.run.workload)
    ctx.manifest["ge_exit"] = {k: g.get("exit_code") if not g.get("killed") else "killed: did not finish in time"
                               for k, g in ctx.observed.ges.items()}
    ctx.observed.write(ctx.run)
