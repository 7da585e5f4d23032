"""`make bench-harness`: how fast the harness brings up and tears down N
sleep-mode devices, where that time goes, and what each device costs.

For every N (repeated ``--reps`` times, medians reported): create the
run's networks, create N device containers in parallel, then start them
in parallel, wait until all answer CoAP, read host memory (MemTotal -
MemAvailable; noisy on a shared machine), the containerd shims' PSS,
every container's cgroup memory and the host's thread count, then remove
everything by label. Reports containers/s for bring-up (create + start +
ready) and teardown, MB and threads per device, and the phase breakdown
(``phases``: each phase's wall time and its engine calls' median / p90 /
max, from :class:`wotbench.engine.DockerBackend`'s ``times``).

``--compare N``: bring-up and teardown of N devices (no readiness, no
memory), each way of starting at the first ``--workers`` value:
``staged`` (create all, then start all; the harness's way) and
``no-network`` (staged, with no network: the A/B that isolates the network
attach); then
staged at every other ``--workers`` value; interleaved over ``--reps``
rounds, medians.

    python -m wotbench.studies.harness_bench --devices 100 400 1000 --reps 3 3 1 [--out FILE]
    python -m wotbench.studies.harness_bench --compare 60 --workers 4 2 8 --reps 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.base import results as res
from wotbench.engine import ContainerSpec, DockerBackend, Started, dockerenv
from wotbench.execution.monitor import cgroup_files, read_cgroup
from wotbench.execution.phases import device_spec
from wotbench.execution.placement import make_plan
from wotbench.spec import DeviceGroup

MODES = ("staged", "no-network")


class _NoNetwork(DockerBackend):
    """Devices with no network at all: start without the network attach."""

    def _create_node(self, spec: ContainerSpec, network: str, address: str) -> tuple[dockerenv.Container, float]:
        ct, t = self._create(spec, None, None)
        took = time.monotonic() - t
        self.times.call("create", took)
        return ct, took


def host_used_bytes() -> int:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, v = line.split(":", 1)
        info[k] = int(v.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


def _procs() -> list[Path]:
    return [p for p in Path("/proc").iterdir() if p.name.isdigit()]


def shim_pss_bytes() -> int:
    """Proportional set size of every containerd shim (one per container):
    the per-container cost outside the container's own cgroup."""
    total = 0
    for proc in _procs():
        try:
            if not (proc / "comm").read_text().startswith("containerd-shim"):
                continue
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue              # the process ended while we looked
    return total


def host_threads() -> int:
    """Threads on the host (each takes a pid: kernel.pid_max bounds them)."""
    total = 0
    for proc in _procs():
        try:
            total += int((proc / "stat").read_text().rsplit(")", 1)[1].split()[17])
        except (OSError, IndexError, ValueError):
            continue
    return total


def _backend(client: dockerenv.Client, n: int, mode: str, workers: int | None) -> DockerBackend:
    cls = _NoNetwork if mode == "no-network" else DockerBackend
    return cls(client, res.new_run_id(f"bench{n}"), workers=workers)


def _specs(n: int, resources: Path) -> list[ContainerSpec]:
    plan = make_plan(os.sched_getaffinity(0), reserve=[0], ge_instances=1, cd_enabled=False,
                     devices=n, affinity=True)
    group = DeviceGroup("bench", n, mode="sleep", threads=4)
    return [device_spec(f"dev-{i}", i, group, plan.device_cpusets[i], resources, None) for i in range(n)]


def _memory(started: list[Started], n: int, before: tuple[int, int, int]) -> dict[str, Any]:
    time.sleep(2.0)               # let page cache and shims settle before measuring
    mem1, shim1, thr1 = host_used_bytes(), shim_pss_bytes(), host_threads()
    cg = [read_cgroup(f)[1] for st in started if (f := cgroup_files(st.id)) is not None]
    return {
        "host_mb_per_device": round((mem1 - before[0]) / n / 2**20, 3),
        "shim_mb_per_device": round((shim1 - before[1]) / n / 2**20, 3),
        "threads_per_device": round((thr1 - before[2]) / n, 2),
        "cgroup_mb_per_device_mean": round(float(np.mean(cg)) / 2**20, 3) if cg else None,
        "cgroup_mb_per_device_max": round(float(np.max(cg)) / 2**20, 3) if cg else None,
        "cgroup_samples": len(cg),
    }


def bench_one(client: dockerenv.Client, n: int, resources: Path, progress: bool, *, mode: str = "staged",
              workers: int | None = None, ready: bool = True) -> dict[str, Any]:
    """One bring-up and teardown of ``n`` devices; with ``ready`` also the
    readiness probe and the memory and threads per device."""
    backend = _backend(client, n, mode, workers)
    out: dict[str, Any] = {"devices": n, "mode": mode, "workers": backend._pool}
    try:
        before = (host_used_bytes(), shim_pss_bytes(), host_threads()) if ready else (0, 0, 0)
        t0 = time.monotonic()
        with backend.times.wall("networks"):
            out["networks"] = backend.create_networks(n + 2)
        started = backend.start_nodes(_specs(n, resources), progress)
        out["up_s"] = round(time.monotonic() - t0, 3)
        if ready:
            missing = backend.wait_ready(started, timeout_s=60 + 0.05 * n)
            if missing:
                raise RuntimeError(f"only {n - len(missing)} of {n} devices became ready")
        out["ready_s"] = round(time.monotonic() - t0, 3)
        out["up_containers_per_s"] = round(n / out["ready_s"], 2)
        if ready:
            out.update(_memory(started, n, before))
    finally:
        t1 = time.monotonic()
        removed = backend.teardown(progress)
        out["teardown_s"] = round(time.monotonic() - t1, 3)
        out["down_containers_per_s"] = round(removed.containers / max(1e-9, out["teardown_s"]), 2)
        out["removed"] = {"containers": removed.containers, "networks": removed.networks,
                          "stuck_networks": list(removed.stuck)}
        out["phases"] = backend.times.summary()
    return out


_MEDIAN_KEYS = ("up_s", "ready_s", "up_containers_per_s", "teardown_s", "down_containers_per_s",
                "host_mb_per_device", "shim_mb_per_device", "threads_per_device",
                "cgroup_mb_per_device_mean", "cgroup_mb_per_device_max")


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median of every figure over repetitions, and of each phase's wall
    and call median."""
    out: dict[str, Any] = {"devices": runs[0]["devices"], "mode": runs[0]["mode"],
                           "workers": runs[0]["workers"], "reps": len(runs)}
    for k in _MEDIAN_KEYS:
        xs = [r[k] for r in runs if r.get(k) is not None]
        if xs:
            out[k] = round(statistics.median(xs), 3)
    phases: dict[str, dict[str, float]] = {}
    for name in dict.fromkeys(p for r in runs for p in r["phases"]):
        rows = [r["phases"][name] for r in runs if name in r["phases"]]
        phases[name] = {k: round(statistics.median(row[k] for row in rows), 3)
                        for k in rows[0] if all(k in row for row in rows)}
    out["phases"] = phases
    return out


def compare(client: dockerenv.Client, n: int, workers: list[int], reps: int, resources: Path) -> list[dict[str, Any]]:
    """Every way of starting at the first of ``workers``, and the staged way at
    each other parallelism, at ``n`` devices, interleaved over ``reps`` rounds."""
    configs = [(m, workers[0]) for m in MODES] + [("staged", w) for w in workers[1:]]
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {c: [] for c in configs}
    for rep in range(reps):
        for mode, w in configs:
            r = bench_one(client, n, resources, False, mode=mode, workers=w, ready=False)
            runs[(mode, w)].append(r)
            print(f"rep {rep + 1}/{reps} {mode:10s} workers {w:2d}: up {r['up_s']:6.1f} s "
                  f"({n / r['up_s']:5.1f}/s), down {r['teardown_s']:6.1f} s ({r['down_containers_per_s']:5.1f}/s)",
                  flush=True)
    return [medians(runs[c]) for c in configs]


def _row_line(r: dict[str, Any]) -> str:
    ph = r["phases"]
    calls = ", ".join(f"{k} {ph[k].get('wall_s', 0):.1f} s (call median {ph[k]['call_median_ms']:.0f} ms)"
                      for k in ("create", "start", "ready", "remove") if k in ph and "call_median_ms" in ph[k])
    return (f"{r['devices']:5d} devices x{r['reps']}: up+ready {r['ready_s']:7.1f} s "
            f"({r['up_containers_per_s']:6.1f} ct/s), teardown {r['teardown_s']:6.1f} s "
            f"({r['down_containers_per_s']:6.1f} ct/s), per device: host {r.get('host_mb_per_device', 0):.2f} MB, "
            f"shim {r.get('shim_mb_per_device', 0):.2f} MB, cgroup {r.get('cgroup_mb_per_device_mean')} MB, "
            f"{r.get('threads_per_device', 0):.1f} threads; {calls}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wotbench.studies.harness_bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, nargs="+", default=[100, 400, 1000])
    ap.add_argument("--reps", type=int, nargs="+", default=[1],
                    help="repetitions per --devices value (one value: for all); --swarm, --compare: rounds")
    ap.add_argument("--compare", type=int, metavar="N",
                    help="compare the ways of starting and the --workers at N devices instead")
    ap.add_argument("--workers", type=int, nargs="+", default=[dockerenv.WORKERS],
                    help="--compare: parallel engine calls to try")
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    ap.add_argument("--swarm", action="store_true",
                    help="the swarm benchmark instead (wotbench.studies.swarmbench; first --devices only)")
    ap.add_argument("--no-lab", action="store_true", help="--swarm: the swarm this host manages, no lab")
    args = ap.parse_args(argv)
    if len(args.reps) not in (1, len(args.devices)):
        ap.error("--reps takes one value or one per --devices value")
    report = _swarm_report(args) if args.swarm else _harness_report(args)
    if args.out:
        res.write_json(args.out, report)
        print(f"written: {args.out}")
    return 0


def _swarm_report(args: argparse.Namespace) -> dict[str, Any]:
    from wotbench.studies.swarmbench import bench_swarm

    with tempfile.TemporaryDirectory(prefix="wotbench-bench-") as tmp:
        return bench_swarm(args.devices[0], args.reps[0], not args.no_lab, Path(tmp))


def _harness_report(args: argparse.Namespace) -> dict[str, Any]:
    client = dockerenv.client(max([*args.workers, dockerenv.WORKERS]))
    dockerenv.check_images(client, ["device"])
    report: dict[str, Any] = {"format": 2, "benchmark": "harness", "host": res.host_facts(client.version())}
    with tempfile.TemporaryDirectory(prefix="wotbench-bench-") as tmp:
        resources = Path(tmp) / "resources.csv"
        resources.write_text("path,service_us\n/r0,1000\n")
        resources.chmod(0o644)
        Path(tmp).chmod(0o755)
        if args.compare:
            report["compare"] = compare(client, args.compare, args.workers, args.reps[0], resources)
        else:
            reps = args.reps * len(args.devices) if len(args.reps) == 1 else args.reps
            report["results"] = []
            for n, k in zip(args.devices, reps, strict=True):
                runs = [bench_one(client, n, resources, sys.stderr.isatty()) for _ in range(k)]
                row = {**medians(runs), "runs": runs}
                report["results"].append(row)
                print(_row_line(row), flush=True)
    return report


if __name__ == "__main__":
    sys.exit(main())
