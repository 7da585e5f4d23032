"""`wotbench run`: one experiment spec -> one or more tests, each a fresh
testbed of containers that is always torn down (paper sections 4.2 and 5).

A test is the phases of :mod:`wotbench.execution.phases` in order (plan, provision,
impair, measure, collect, summarize) on a :class:`wotbench.engine.Backend`;
this module runs them inside the run folder's life cycle: INCOMPLETE until
summary.json is written, teardown on success, error, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import subprocess
import traceback
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import requests

from wotbench.base import results as res
from wotbench.base.errors import UserError
from wotbench.base.rundir import RunDir
from wotbench.engine import Backend, DockerBackend, SwarmBackend, dockerenv, reaper
from wotbench.engine.inventory import Inventory, read_inventory
from wotbench.execution import estimate, phases
from wotbench.execution.phases import Preflight, RunContext, RunOptions, plan_for
from wotbench.execution.placement import Plan
from wotbench.host import coreclaim
from wotbench.reporting import catalogue
from wotbench.spec import budget, load

if TYPE_CHECKING:
    from wotbench.spec import RunSpec, Spec

__all__ = ["RunFailed", "Interrupted", "RunOptions", "Run", "plan_for", "preflight", "run_spec", "run", "claimed_cores"]


class RunFailed(Exception):
    """A test failed for a reason other than bad input; its results dir
    keeps INCOMPLETE with the traceback (``details``), unless it failed
    before the folder was made (then ``details`` is None)."""

    def __init__(self, run_dir: Path, cause: Exception) -> None:
        super().__init__(describe(cause))
        self.run_dir = run_dir
        self.cause = cause
        incomplete = RunDir(run_dir).incomplete
        self.details: Path | None = incomplete if incomplete.is_file() else None


def describe(exc: BaseException) -> str:
    """What went wrong, in one line; a lost engine connection says so."""
    what = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"the Docker engine stopped answering during the run (restarted or stopped?): {what}"
    return what


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) arrived: unwind so that teardown runs."""


def _raise_interrupted(signum: int, _frame: Any) -> None:
    raise Interrupted(signal.Signals(signum).name)


@contextlib.contextmanager
def _signals(handler: Any) -> Iterator[None]:
    """SIGINT and SIGTERM go to ``handler`` inside the block: ``_raise_interrupted``
    unwinds so that teardown runs; ``SIG_IGN`` lets teardown finish (a second
    Ctrl-C does not cut it short)."""
    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _pinned(cores: Sequence[int]) -> Iterator[None]:
    """The harness (and the monitor it starts) keeps to the reserved cores."""
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cores))
    try:
        yield
    finally:
        os.sched_setaffinity(0, own)


def backend_for(client: dockerenv.Client, run_id: str, inventory: Inventory) -> Backend:
    """The swarm's nodes on a swarm manager, else this host's engine."""
    return SwarmBackend(client, run_id, inventory) if inventory.swarm else DockerBackend(client, run_id)


def preflight(hs: Spec, client: dockerenv.Client, inventory: Inventory | None = None) -> phases.Preflight:
    """(layout, image ids, netem available) on this host or the swarm it
    manages, or a UserError."""
    inventory = inventory or read_inventory(client)
    return phases.preflight(hs, backend_for(client, "preflight", inventory), inventory)


class Run:
    """One test of the testbed; :meth:`execute` returns its results dir."""

    def __init__(self, rs: RunSpec, opts: RunOptions, client: dockerenv.Client, inventory: Inventory) -> None:
        run_id = res.new_run_id(rs.spec.name)
        self.inventory = inventory
        self.ctx = RunContext(rs, opts, backend_for(client, run_id, inventory),
                              RunDir(opts.results_root / run_id))
        self.dir = self.ctx.run.root
        self.torn_down = False
        self.reaper: subprocess.Popen[bytes] | None = None

    def execute(self) -> Path:
        ctx = self.ctx
        pre = phases.preflight(ctx.hs, ctx.backend, self.inventory)
        phases.adopt(ctx, pre)                    # gateway.instances: auto decided
        ctx.say(f"run {ctx.run_id} {ctx.rs.label}".rstrip())
        ctx.say(pre.layout.render(ctx.hs.group_of(), [g.name for g in ctx.hs.groups]))
        ctx.say(estimate.of_plan(ctx.hs, pre.layout.cluster or pre.layout.parts[0].plan,
                                 pre.auto.calibration if pre.auto is not None else None).render())
        self.dir.mkdir(parents=True)
        res.mark_incomplete(self.dir, "running")
        res.write_atomic(ctx.run.spec, ctx.rs.yaml())
        atexit.register(self.teardown)
        self.reaper = reaper.start(ctx.run_id, self.dir)     # tears down if this process is killed
        phases.start_manifest(ctx, pre)
        try:
            with _signals(_raise_interrupted):
                self._phases(pre)
        except BaseException as exc:
            why = (f"interrupted by {exc}" if isinstance(exc, KeyboardInterrupt)
                   else f"error: {describe(exc)}")
            res.mark_incomplete(self.dir, why + "\n" + "".join(traceback.format_exception(exc)))
            phases.finish_manifest(ctx, why)
            with contextlib.suppress(OSError):
                ctx.observed.write(ctx.run)
            raise
        finally:
            with _signals(signal.SIG_IGN):
                self.teardown()
            atexit.unregister(self.teardown)
        return self.dir

    def _phases(self, pre: Preflight) -> None:
        ctx = self.ctx
        wl = phases.prepare(ctx)          # offline work before anything starts: all cores
        lay = pre.layout
        with _pinned(lay.reserve if lay.swarm else lay.parts[0].plan.reserved):
            nodes = phases.provision(ctx, lay, wl)
            if lay.swarm:
                phases.cross_host(ctx, lay, nodes, wl)
            phases.impair(ctx, nodes, pre.netem, wl)
            measured = phases.measure(ctx, lay, wl, nodes)
            phases.collect(ctx, measured)
            phases.record_interference(ctx, measured.hogs, measured.t0_epoch_us)
            phases.summarize(ctx, lay)

    def teardown(self) -> None:
        if not self.torn_down:
            self.torn_down = True
            phases.teardown(self.ctx)
            reaper.stop(self.reaper)
            # The measured start rate, for the next plan's estimate.
            estimate.remember_startup(self.ctx.manifest.get("startup"), self.ctx.run_id)


def run_spec(runs: Sequence[RunSpec], opts: RunOptions) -> list[Path]:
    """Runs every test of an expanded spec in order; returns their dirs.
    Every test passes its preflight before the first one starts."""
    with _signals(_raise_interrupted):           # SIGTERM between tests unwinds like Ctrl-C
        return _run_all(runs, opts)


def claimed_cores(plan: Plan) -> set[int]:
    """The cores a run claims host-wide (wotbench.host.coreclaim): its GEs'
    and its gateway under test's, never shared with another run."""
    return set(plan.ge_cores) | set(plan.gateway_cores)


def _refuse_busy_ge_cores(cores: Sequence[int], busy: dict[int, str]) -> None:
    """Two runs' GEs (or a GE and a gateway under test) on one core each
    measure the other: refused before anything starts (run after run, or
    give them other cores with --cpus / placement)."""
    clash = sorted(c for c in set(cores) if c in busy)
    if clash:
        raise UserError(f"core(s) {', '.join(map(str, clash))} already run the GE or gateway under test of run "
                        f"{busy[clash[0]]}, still running: wait for it, or plan this run's GEs elsewhere",
                        field="placement")


def _run_all(runs: Sequence[RunSpec], opts: RunOptions) -> list[Path]:
    res.check_results_root(opts.results_root)
    for rs in runs:                              # what needs no engine is refused before one is asked
        try:
            budget.check(rs.spec, opts.results_root, swarm=True)
        except UserError as err:
            raise phases.locate(err, rs) from None
    client = dockerenv.client()
    inventory = read_inventory(client)
    for rs in runs:
        try:
            budget.check(rs.spec, opts.results_root, swarm=inventory.swarm)
        except UserError as err:
            raise phases.locate(err, rs) from None
    dead, n_ct, n_net, stuck = dockerenv.clean_dead_runs(client)
    if dead:
        opts.say(f"removed what {len(dead)} run(s) whose harness died left behind ({n_ct} container(s), "
                 f"{n_net} network(s)): {', '.join(dead[:5])}{' ...' if len(dead) > 5 else ''}"
                 + (f"; not removable (moby#42119, restart dockerd): {', '.join(stuck)}" if stuck else ""))
    ge_cores: set[int] = set()
    for rs in runs:
        try:
            pre = preflight(rs.spec, client, inventory)
        except UserError as err:
            raise phases.locate(err, rs) from None
        if not pre.layout.swarm:
            ge_cores.update(claimed_cores(pre.layout.parts[0].plan))
    # Claimed first (atomic across this host's harnesses), then checked
    # against GE containers still running without a harness.
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(coreclaim.claim_ge_cores(ge_cores, f"run of {runs[0].spec.name}"))
            _refuse_busy_ge_cores(sorted(ge_cores), dockerenv.busy_ge_cores(client))
        except UserError as err:
            raise phases.locate(err, runs[0]) from None
        return _run_each(runs, opts, client, inventory)


def _catalogue(opts: RunOptions, run_dir: Path) -> None:
    """The run, its summary written, in its results folder's catalogue and
    index (wotbench.reporting.catalogue); a failure to write them is a
    warning, never a failed run."""
    try:
        catalogue.add(opts.results_root, run_dir)
    except Exception as exc:
        opts.say(f"warning: the results catalogue was not updated for {run_dir.name} ({describe(exc)}); "
                 f"`wotbench runs --rebuild --results {opts.results_root}` makes it anew")


def _run_each(runs: Sequence[RunSpec], opts: RunOptions, client: dockerenv.Client, inventory: Inventory) -> list[Path]:
    dirs = []
    for i, rs in enumerate(runs, 1):
        if len(runs) > 1:
            opts.say(f"== test {i}/{len(runs)}: {rs.label}")
        run = Run(rs, opts, client, inventory)
        try:
            dirs.append(run.execute())
        except Exception as exc:
            raise RunFailed(run.dir, exc) from exc
        _catalogue(opts, run.dir)
        summary = json.loads(run.ctx.run.summary.read_text())
        opts.say(f"results: {run.dir} (verdict: {summary['verdict']}"
                 + (f"; {'; '.join(summary['reasons'][:3])}" if summary["reasons"] else "") + ")")
    return dirs


def run(spec: str | os.PathLike[str], results: str | os.PathLike[str] = "results",
        progress: bool = True, scale: str | None = None) -> list[Path]:
    """Loads, validates and runs an experiment spec; returns the results
    directory of every test (one per sweep value and repetition)."""
    return run_spec(load(Path(spec), scale), RunOptions(results_root=Path(results), progress=progress))
