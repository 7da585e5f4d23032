"""`wotbench run`: one experiment spec -> one or more tests, each a fresh
testbed of containers that is always torn down (paper sections 4.2 and 5).

A test goes: check images and impairment support, plan placement, generate
the workload, create the run's networks, start the CD node and devices in
parallel, wait until every one answers CoAP, apply impairment, start the
monitor, start the CD-GE and the GEs at common instants, wait for the GEs,
collect outputs/monitor/logs, analyse, write summary.json last. Teardown
(label based) runs on success, error, Ctrl-C and SIGTERM.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import requests

from wotbench._errors import UserError
from wotbench import _dockerenv as dockerenv, _impair as impair, _probe as probe
from wotbench import _results as res
from wotbench._monitor import Collectl, ContainerSampler
from wotbench._plan import Plan, make_plan
from wotbench.spec import RunSpec, Spec as HarnessSpec, parse_key_path
from wotbench._testbed import COAP_PORT, Node, Testbed

#: Seconds between starting the GE containers and the CD-GE's start instant.
START_LEAD_S = 2.0
#: Extra seconds the GEs get past trace end + timeout before being killed.
FINISH_SLACK_S = 20.0


class RunFailed(Exception):
    """A test failed for a reason other than bad input; its results dir
    keeps INCOMPLETE with the traceback."""

    def __init__(self, run_dir: Path, cause: Exception) -> None:
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.run_dir = run_dir
        self.cause = cause


class Interrupted(KeyboardInterrupt):
    """SIGTERM (or SIGINT) arrived: unwind so that teardown runs."""


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    def handler(signum: int, _frame: Any) -> None:
        raise Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    """Teardown must finish: a second Ctrl-C does not cut it short."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@dataclass
class RunOptions:
    results_root: Path = Path("results")
    progress: bool = True
    keep_workload: bool = True
    log: Any = field(default=sys.stderr)

    def say(self, msg: str) -> None:
        print(msg, file=self.log, flush=True)


def plan_for(hs: HarnessSpec, cores: Sequence[int] | None = None) -> Plan:
    available = sorted(os.sched_getaffinity(0)) if cores is None else list(cores)
    try:
        return make_plan(available, reserve=hs.placement.reserve,
                         ge_instances=hs.gateway.instances, cd_enabled=hs.cd.enabled,
                         devices=hs.device_count, affinity=hs.placement.affinity)
    except UserError as err:
        err.field = err.field or "placement"
        raise


def drain_us(hs: HarnessSpec) -> int:
    """Longest a GE may still wait for answers after its last send: a CON
    request times out only after every retransmission (RFC 7252 4.8:
    ACK_TIMEOUT x 1.5 x (2^(MAX_RETRANSMIT+1) - 1), 93 s with the defaults),
    and a separate response gets the request timeout on top."""
    gw = hs.gateway
    ack = gw.ack_timeout_us if gw.ack_timeout_us is not None else 2_000_000
    n = gw.max_retransmit if gw.max_retransmit is not None else 4
    return int(ack * 1.5 * (2 ** (n + 1) - 1)) + gw.timeout_us


def split_devices(device_ids: Sequence[int], instances: int) -> list[np.ndarray]:
    """Contiguous, near-equal blocks of device ids, one per GE."""
    return [a for a in np.array_split(np.asarray(sorted(device_ids), dtype=np.int64), instances)]


def _generate_workload(rs: RunSpec, outdir: Path) -> Any:
    from wotbench.tracegen._generate import generate
    from wotbench.spec._expand import workload_of as from_source

    return generate(from_source(rs.source), outdir)


def _has_header(trace: Path) -> bool:
    with trace.open() as fh:
        for line in fh:
            if line.strip() and not line.startswith("#"):
                return line.split(",")[0].strip() == "device_id"
    return False


def split_trace(trace: Path, blocks: list[np.ndarray], outdir: Path, total_lines: int,
                chunk_rows: int = 1_000_000) -> list[tuple[Path, int]]:
    """One trace per GE holding its devices' lines in the original order;
    returns (path, lines) per GE. Streams the trace in chunks so that a
    10-million-line trace never sits in memory whole."""
    if len(blocks) == 1:
        return [(trace, total_lines)]
    ge_of = np.full(int(max(b.max() for b in blocks if b.size)) + 1, -1, dtype=np.int64)
    for k, b in enumerate(blocks):
        ge_of[b] = k
    header = _has_header(trace)
    paths = [outdir / f"trace-ge-{k}.csv" for k in range(len(blocks))]
    counts = [0] * len(blocks)
    files = [p.open("w") for p in paths]
    try:
        if header:
            with trace.open() as fh:
                first = next(line for line in fh if line.strip() and not line.startswith("#"))
            for f in files:
                f.write(first)
        reader = pd.read_csv(trace, comment="#", dtype=str, keep_default_na=False, header=None,
                             skiprows=1 if header else 0, chunksize=chunk_rows)
        for chunk in reader:
            ids = chunk.iloc[:, 0].str.strip().astype(np.int64).to_numpy()
            ks = ge_of[ids]
            for k, f in enumerate(files):
                part = chunk[ks == k]
                counts[k] += len(part)
                part.to_csv(f, header=False, index=False)
    finally:
        for f in files:
            f.close()
    return list(zip(paths, counts))


def _shift_times(src: Path, dst: Path, shift_us: int) -> None:
    """Rewrites a GE output whose clock started ``shift_us`` before t0 onto t0."""
    # intended_us is whole microseconds; sent/recv carry the GE's ns precision.
    df = pd.read_csv(src, dtype={"intended_us": "Int64", "sent_us": "float64", "recv_us": "float64",
                                 "code": str}, keep_default_na=True)
    for c in ("intended_us", "sent_us", "recv_us"):
        df[c] = df[c] - shift_us
    res.write_atomic(dst, df.to_csv(index=False, float_format="%.3f"))


def _ge_counts(csv: Path) -> dict[str, int]:
    if not csv.exists():
        return {"rows": 0}
    st = pd.read_csv(csv, usecols=["status"])["status"].value_counts()
    return {"rows": int(st.sum()), **{k: int(v) for k, v in st.items()}}


class Run:
    """One test of the testbed; :meth:`execute` returns its results dir."""

    def __init__(self, rs: RunSpec, opts: RunOptions, client: Any) -> None:
        self.rs, self.hs, self.opts, self.client = rs, rs.harness, opts, client
        self.run_id = res.new_run_id(self.hs.name)
        self.dir = opts.results_root / self.run_id
        self.bed = Testbed(client, self.run_id)
        self.sampler = ContainerSampler()
        self.collectl: Collectl | None = None
        self.pumba: list[Any] = []
        self.torn_down = False
        self.reasons: list[str] = []
        self.manifest: dict[str, Any] = {}
        self.ge_names: set[str] = set()

    # --- checks before anything starts -----------------------------------

    def preflight(self) -> tuple[Plan, dict[str, str], bool]:
        return preflight(self.hs, self.client)

    # --- the run ---------------------------------------------------------

    def execute(self) -> Path:
        plan, images, netem = self.preflight()
        say = self.opts.say
        say(f"run {self.run_id} {self.rs.label}".rstrip())
        say(plan.render())
        self.dir.mkdir(parents=True)
        res.mark_incomplete(self.dir, "running")
        res.write_atomic(self.dir / "spec.yaml", self.rs.yaml())
        atexit.register(self.teardown)
        t_start = time.time()
        self.manifest = {
            "format": res.FORMAT, "run_id": self.run_id, "label": self.rs.label,
            "scale": self.rs.scale, **res.host_facts(self.client.version()), "images": images,
            "placement": plan.to_dict(), "cores_shared": plan.cores_shared,
            "start_epoch_us": int(t_start * 1e6),
        }
        try:
            with _signals_raise():
                self._run(plan, netem)
        except BaseException as exc:
            why = (f"interrupted by {exc}" if isinstance(exc, (Interrupted, KeyboardInterrupt))
                   else f"error: {type(exc).__name__}: {exc}")
            res.mark_incomplete(self.dir, why + "\n" + "".join(traceback.format_exception(exc)))
            self._finish_manifest(incomplete=why)
            raise
        finally:
            with _signals_ignored():
                self.teardown()
            atexit.unregister(self.teardown)
        return self.dir

    def _run(self, plan: Plan, netem: bool) -> None:
        # Generation is offline work, done before anything starts: all cores.
        self.opts.say("generating workload")
        gen = _generate_workload(self.rs, self.dir / "workload")
        group_of = self.hs.group_of()
        names = tuple(self.hs.groups[gi].name for gi in group_of)
        if tuple(gen.device_group) != names:
            raise RuntimeError("tracegen numbered the devices differently from the spec's groups")
        # From here on the harness (and the monitor it starts) keeps to the
        # reserved cores.
        own_affinity = os.sched_getaffinity(0)
        os.sched_setaffinity(0, set(plan.reserved))
        try:
            self._run_pinned(plan, netem, gen, group_of)
        finally:
            os.sched_setaffinity(0, own_affinity)

    def _run_pinned(self, plan: Plan, netem: bool, gen: Any, group_of: list[int]) -> None:
        hs, say, d = self.hs, self.opts.say, self.dir
        wl = d / "workload"
        trace = gen.trace
        cd_dir = gen.cd_trace.parent

        # Nodes: the CD node first (it takes the first placement slot), then devices.
        n_nodes = len(group_of) + (1 if hs.cd.enabled else 0)
        self.bed.create_networks(n_nodes)
        addrs = self.bed.addresses(n_nodes)
        nodes: list[tuple[Node, Any, str]] = []
        if hs.cd.enabled:
            net, ip = addrs.pop(0)
            nodes.append((Node("cd-node", None, "cd", f"wb-{self.bed.short}-cd-node", net, ip,
                               plan.cd_node_cpuset or "", cd_dir / "resources.csv"), None, "cd-node"))
        for dev_id, gi in enumerate(group_of):
            net, ip = addrs[dev_id]
            g = hs.groups[gi]
            nodes.append((Node(f"dev-{dev_id}", dev_id, g.name, f"wb-{self.bed.short}-dev-{dev_id}",
                               net, ip, plan.device_cpusets[dev_id],
                               wl / "resources" / f"dev-{dev_id}.csv"), g, "device"))
        for node, _g, _role in nodes:
            if not node.resources.exists():
                raise RuntimeError(f"tracegen wrote no resource file {node.resources}")

        self.bed.on_started = lambda ct, name, role: self.sampler.add(ct.id, name, role)
        say(f"starting {len(nodes)} containers on {len(self.bed.networks)} network(s)")
        t = time.monotonic()
        self.bed.start_nodes(nodes, self.opts.progress)
        say(f"  started in {time.monotonic() - t:.1f} s; waiting for CoAP readiness")
        targets = {(n.address, COAP_PORT): n for n, _, _ in nodes}
        ready = probe.wait_ready(targets, timeout_s=30 + 0.05 * len(targets))
        if len(ready) != len(targets):
            missing = sorted(targets[tg].key for tg in set(targets) - ready)
            raise RuntimeError(f"{len(missing)} device(s) never answered GET /.well-known/core: "
                               + ", ".join(missing[:10]))
        say(f"  all {len(targets)} ready after {time.monotonic() - t:.1f} s")

        # Impairment per group.
        imp_targets = [(self.bed.containers[n.name].id, g.impairment, n.name, gi_name)
                       for n, g, role in nodes if role == "device" and g.impairment is not None
                       for gi_name in [g.name]]
        impairment_how = None
        if imp_targets:
            if impair.pumba_on_path():
                by_group: dict[str, tuple[list[str], Any]] = {}
                for _cid, imp, name, gname in imp_targets:
                    by_group.setdefault(gname, ([], imp))[0].append(name)
                # Pumba undoes its rules after --duration: cover the whole test.
                total_s = int((gen.duration_us + hs.cd.calibration_us + drain_us(hs)) / 1e6) + 60
                with open(d / "pumba.log", "wb") as logf:   # the children keep their own fd
                    applied = impair.apply_pumba(list(by_group.values()), total_s, netem, logf)
                self.pumba = applied.processes
            else:
                applied = impair.apply_sidecars(self.client, self.run_id,
                                                [(cid, imp) for cid, imp, _, _ in imp_targets], netem)
            impairment_how = {"how": applied.how, "containers": applied.containers}
            say(f"  impairment: {applied.how} on {applied.containers} device(s)")

        # GE inputs: hosts file and per-GE traces.
        ge_dir = d / "ge"
        ge_dir.mkdir()
        hosts = pd.DataFrame({"host": [n.key for n, _, _ in nodes],
                              "address": [n.address for n, _, _ in nodes]})
        res.write_csv(ge_dir / "hosts.csv", hosts)
        blocks = split_devices(range(len(group_of)), hs.gateway.instances)
        traces = split_trace(trace, blocks, wl, int(gen.requests))
        for k, block in enumerate(blocks):
            members = set(block.tolist())
            rows = [x for x in nodes if x[0].device_id in members]
            res.write_csv(ge_dir / f"devices-{k}.csv", pd.DataFrame({
                "device_id": [n.device_id for n, _, _ in rows], "group": [n.group for n, _, _ in rows],
                "container": [n.name for n, _, _ in rows], "address": [n.address for n, _, _ in rows]}))

        # Monitor for the whole test, on the reserved cores.
        if Collectl.available():
            self.collectl = Collectl(d / "monitor" / "collectl", plan.reserved)
            self.collectl.start()
        else:
            self.reasons.append("collectl is not installed: no host monitor data")
        self.sampler.start()

        # Timeline: the CD pair calibrates alone, then every GE starts at t0.
        cal_us = hs.cd.calibration_us if hs.cd.enabled else 0
        trace_end_us = int(gen.duration_us)
        # Every GE container must be up before its start instant: allow for
        # the slowest container start seen so far, per GE, on this host now.
        n_ge = hs.gateway.instances + (1 if hs.cd.enabled else 0)
        lead_us = int((START_LEAD_S + 1.5 * n_ge * self.bed.slowest_start_s) * 1e6)
        t0 = time.time_ns() // 1000 + lead_us + cal_us
        ges = []
        con_args = []
        if hs.gateway.ack_timeout_us is not None:
            con_args += ["--ack-timeout-ms", str(max(1, hs.gateway.ack_timeout_us // 1000))]
        if hs.gateway.max_retransmit is not None:
            con_args += ["--max-retransmit", str(hs.gateway.max_retransmit)]
        ge_common = ["--type", hs.gateway.type,
                     "--timeout-ms", str(max(1, hs.gateway.timeout_us // 1000)), *con_args]
        net_slots = [(net.name, i) for i, net in enumerate(self.bed.networks)]
        if hs.cd.enabled:
            cd_out = d / "cd"
            cd_out.mkdir()
            cmd = ["--trace", "/in/trace.csv", "--hosts", "/hosts/hosts.csv",
                   "--out", "/out/cd-ge.raw.csv", "--summary", "/out/cd-ge.summary.json",
                   "--type", "con", "--timeout-ms", str(max(1, hs.gateway.timeout_us // 1000)),
                   *con_args, "--start-at", str(t0 - cal_us),
                   # Its requests are cd.rit apart (1 s): spinning between
                   # them would only take CPU from whatever shares its core
                   # (the devices, on a small host), i.e. cause contention.
                   "--spin-us", "2000"]
            if plan.cd_ge_cpuset and plan.cd_ge_cpuset.isdigit():
                cmd += ["--cpu", plan.cd_ge_cpuset]
            ges.append(("cd-ge", self.bed.start_ge(
                f"wb-{self.bed.short}-cd-ge", "cd-ge", cmd, plan.cd_ge_cpuset or "",
                {str(cd_dir.resolve()): {"bind": "/in", "mode": "ro"},
                 str(ge_dir.resolve()): {"bind": "/hosts", "mode": "ro"},
                 str(cd_out.resolve()): {"bind": "/out", "mode": "rw"}},
                [(n, self.bed.ge_address(i, 0)) for n, i in net_slots])))
        for k, (tpath, _lines) in enumerate(traces):
            cmd = ["--trace", f"/in/{tpath.relative_to(wl)}", "--hosts", "/out/hosts.csv",
                   "--out", f"/out/ge-{k}.csv", "--summary", f"/out/ge-{k}.summary.json",
                   *ge_common, "--start-at", str(t0), "--cpu", str(plan.ge_cores[k])]
            ges.append((f"ge-{k}", self.bed.start_ge(
                f"wb-{self.bed.short}-ge-{k}", "ge", cmd, str(plan.ge_cores[k]),
                {str(wl.resolve()): {"bind": "/in", "mode": "ro"},
                 str(ge_dir.resolve()): {"bind": "/out", "mode": "rw"}},
                [(n, self.bed.ge_address(i, k + 1)) for n, i in net_slots])))
        if time.time_ns() // 1000 > t0 - cal_us:
            self.reasons.append("the GE containers were not all up at their start instant "
                                "(the host was too slow starting containers)")
        windows = hs.phases.windows() if hs.phases else {
            "warmup": [0, 0], "measure": [0, trace_end_us], "cooldown": [trace_end_us, trace_end_us]}
        phases = {"t0_epoch_us": t0, "calibration": [-cal_us, 0], **windows}
        res.write_json(d / "phases.json", phases)
        say(f"test starts at t0 = {time.strftime('%H:%M:%S', time.gmtime(t0 / 1e6))} UTC"
            + (f" after {cal_us / 1e6:.0f} s of CD calibration" if cal_us else "")
            + f"; load for {trace_end_us / 1e6:.0f} s")

        # Wait for every GE, then collect.
        deadline = (t0 + trace_end_us + drain_us(hs)) / 1e6 + FINISH_SLACK_S
        ge_exit: dict[str, Any] = {}
        for name, ct in ges:
            left = max(1.0, deadline - time.time())
            try:
                ge_exit[name] = ct.wait(timeout=left)["StatusCode"]
            except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
                ct.kill()
                ge_exit[name] = "killed: did not finish in time"
        states = self.bed.states()
        self.ge_names = {ct.name for _, ct in ges}
        for name, code in ge_exit.items():
            if code != 0:
                self.reasons.append(f"{name} exited with {code} (see logs/)")
        for n, _, role in nodes:
            st = states.get(n.name, {})
            if st.get("status") != "running":
                self.reasons.append(
                    f"{role} {n.key} (container {n.name}) was not running at the end of the test "
                    f"(status {st.get('status')}, exit code {st.get('exit_code')}"
                    + (", OOM-killed" if st.get("oom_killed") else "") + ")")
        self.sampler.stop()
        if self.collectl:
            self.collectl.stop()
        self.bed.stop_all()
        self.bed.save_logs(d / "logs")
        if hs.cd.enabled and (d / "cd" / "cd-ge.raw.csv").exists():
            _shift_times(d / "cd" / "cd-ge.raw.csv", d / "cd" / "cd-ge.csv", cal_us)
            (d / "cd" / "cd-ge.raw.csv").unlink()
        mon = d / "monitor"
        mon.mkdir(exist_ok=True)
        if self.collectl:
            res.write_csv(mon / "host.csv", self.collectl.frame(t0))
        res.write_csv(mon / "containers.csv", self.sampler.frame(t0))

        counts: dict[str, Any] = {}
        for k, (_tpath, lines) in enumerate(traces):
            c = _ge_counts(ge_dir / f"ge-{k}.csv")
            c["trace_lines"] = lines
            counts[f"ge-{k}"] = c
            if c["rows"] != lines:
                self.reasons.append(f"ge-{k}: {c['rows']} output rows for {lines} trace lines")
        if hs.cd.enabled:
            counts["cd-ge"] = _ge_counts(d / "cd" / "cd-ge.csv")
        self.manifest["impairment"] = impairment_how
        self.manifest["workload_sha256"] = res.sha256_tree(wl)
        self.manifest["ge_exit"] = ge_exit
        self._finish_manifest(incomplete=None)
        self._write_summary(counts, states, plan)
        (d / "INCOMPLETE").unlink()

    # --- results ------------------------------------------------------------

    def _finish_manifest(self, incomplete: str | None) -> None:
        self.manifest["end_epoch_us"] = time.time_ns() // 1000
        self.manifest["complete"] = incomplete is None
        if incomplete:
            self.manifest["incomplete_reason"] = incomplete
        with contextlib.suppress(OSError):
            res.write_json(self.dir / "manifest.json", self.manifest)

    def _write_summary(self, counts: dict[str, Any], states: dict[str, Any], plan: Plan) -> None:
        analysis: dict[str, Any] = {}
        try:
            from wotbench.reporting import analyze_run

            analysis = dict(analyze_run(self.dir))
        except ImportError as exc:
            self.reasons.append(f"analysis unavailable: {exc}")
        except Exception as exc:      # the run's data stay; the summary says why
            self.reasons.append(f"analysis failed: {type(exc).__name__}: {exc}")
        reasons = list(self.reasons) + [r for r in analysis.get("reasons", []) if r not in self.reasons]
        verdict = "valid" if not reasons and analysis.get("verdict", "valid") == "valid" else "invalid"
        if verdict == "invalid" and not reasons:
            reasons.append("analysis verdict invalid")
        notes = [f"cores are shared: {n}" for n in plan.notes] if plan.cores_shared else []
        summary = {
            "format": res.FORMAT, "run_id": self.run_id, "label": self.rs.label, "complete": True,
            "scale": self.rs.scale,
            "counts": counts, "cores_shared": plan.cores_shared, "notes": notes,
            "containers": {"total": len(states),
                           "nodes_not_running_at_end": sorted(
                               k for k, v in states.items()
                               if v.get("status") != "running" and k not in self.ge_names)},
            **{k: v for k, v in analysis.items() if k not in ("verdict", "reasons")},
            "verdict": verdict, "reasons": reasons,
        }
        res.write_json(self.dir / "summary.json", summary)

    # --- teardown -------------------------------------------------------------

    def teardown(self) -> None:
        if self.torn_down:
            return
        self.torn_down = True
        for p in self.pumba:
            if p.poll() is None:
                p.terminate()
                with contextlib.suppress(Exception):
                    p.wait(timeout=5)
        self.sampler.stop()
        if self.collectl:
            self.collectl.stop(grace_s=2.0)    # only an interrupted run still has it running
        n_ct, n_net, stuck = self.bed.teardown()
        self.opts.say(f"teardown: removed {n_ct} container(s), {n_net} network(s)")
        if stuck:
            self.opts.say(f"warning: the Docker engine keeps a stale endpoint on {', '.join(stuck)} "
                          "(moby#42119); `wotbench clean` retries, restarting dockerd frees it")


def preflight(hs: HarnessSpec, client: Any) -> tuple[Plan, dict[str, str], bool]:
    """What must hold before anything starts: a placement, the images, and
    kernel support for the impairment asked for. Returns (plan, image ids,
    netem available)."""
    plan = plan_for(hs)
    roles = ["device", "ge"]
    imps = [(f"devices[{i}].impairment", g.impairment) for i, g in enumerate(hs.groups)
            if g.impairment is not None]
    if imps:
        roles.append("nettools")
    images = dockerenv.check_images(client, roles)
    netem = False
    if imps:
        if any(imp.needs_netem for _, imp in imps):
            netem = impair.netem_available(client, "preflight")
        impair.check_supported(imps, netem, impair.pumba_on_path())
    return plan, images, netem


def run_spec(runs: Sequence[RunSpec], opts: RunOptions) -> list[Path]:
    """Runs every test of an expanded spec in order; returns their dirs.
    Every test passes its preflight before the first one starts."""
    with _signals_raise():           # SIGTERM between tests unwinds like Ctrl-C
        return _run_all(runs, opts)


def _run_all(runs: Sequence[RunSpec], opts: RunOptions) -> list[Path]:
    client = dockerenv.client()
    for rs in runs:
        try:
            preflight(rs.harness, client)
        except UserError as err:
            if err.file is None:         # point at the spec line of the key
                err.file = rs.source.name
                err.line = rs.source.line(*(parse_key_path(err.field or "") or ()))
            raise
    dirs = []
    for i, rs in enumerate(runs, 1):
        if len(runs) > 1:
            opts.say(f"== test {i}/{len(runs)}: {rs.label}")
        run = Run(rs, opts, client)
        try:
            dirs.append(run.execute())
        except Exception as exc:
            raise RunFailed(run.dir, exc) from exc
        summary = json.loads((run.dir / "summary.json").read_text())
        opts.say(f"results: {run.dir} (verdict: {summary['verdict']}"
                 + (f"; {'; '.join(summary['reasons'][:3])}" if summary["reasons"] else "") + ")")
    return dirs


def run(spec: str | os.PathLike[str], results: str | os.PathLike[str] = "results",
        progress: bool = True, scale: str | None = None) -> list[Path]:
    """Loads, validates and runs an experiment spec; returns the results
    directory of every test (one per sweep value and repetition)."""
    from wotbench.spec import load

    return run_spec(load(spec, scale), RunOptions(results_root=Path(results), progress=progress))
