"""`make bench-harness`: how fast the harness brings up and tears down N
sleep-mode devices, and what each device costs in memory.

For every N: create the run's network, start N device containers in
parallel, wait until all answer CoAP, read host memory (MemTotal -
MemAvailable; noisy on a shared machine), the containerd shims' PSS and
every container's cgroup memory, then remove everything by label. Reports
containers/s for bring-up (start + ready) and teardown, and MB per device
from the host view, the shims and the cgroups.

    python -m wotbench.bench --devices 100 400 [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from wotbench import _dockerenv as dockerenv
from wotbench import _results as res
from wotbench._monitor import cgroup_files, read_cgroup
from wotbench._plan import make_plan
from wotbench.backend import DockerBackend
from wotbench.phases._provision import device_spec
from wotbench.spec import DeviceGroup


def host_used_bytes() -> int:
    info = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, v = line.split(":", 1)
        info[k] = int(v.split()[0]) * 1024
    return info["MemTotal"] - info["MemAvailable"]


def shim_pss_bytes() -> int:
    """Proportional set size of every containerd shim (one per container):
    the per-container cost outside the container's own cgroup."""
    total = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if not (proc / "comm").read_text().startswith("containerd-shim"):
                continue
            for line in (proc / "smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue              # the process ended while we looked
    return total


def bench_one(client: Any, n: int, resources: Path, progress: bool) -> dict[str, Any]:
    backend = DockerBackend(client, res.new_run_id(f"bench{n}"))
    plan = make_plan(os.sched_getaffinity(0), reserve=[0], ge_instances=1, cd_enabled=False,
                     devices=n, affinity=True)
    group = DeviceGroup("bench", n, mode="sleep", threads=4)
    out: dict[str, Any] = {"devices": n}
    try:
        mem0, shim0 = host_used_bytes(), shim_pss_bytes()
        t0 = time.monotonic()
        n_net = backend.create_networks(n + 2)
        started = backend.start_nodes([device_spec(f"dev-{i}", i, group, plan.device_cpusets[i], resources, None)
                                       for i in range(n)], progress)
        t_started = time.monotonic()
        missing = backend.wait_ready(started, timeout_s=60 + 0.05 * n)
        t_ready = time.monotonic()
        if missing:
            raise RuntimeError(f"only {n - len(missing)} of {n} devices became ready")
        time.sleep(2.0)           # let page cache and shims settle before measuring
        mem1, shim1 = host_used_bytes(), shim_pss_bytes()
        cg = [read_cgroup(f)[1] for st in started if (f := cgroup_files(st.id)) is not None]
        out.update({
            "networks": n_net,
            "start_s": round(t_started - t0, 3),
            "ready_s": round(t_ready - t0, 3),
            "up_containers_per_s": round(n / (t_ready - t0), 2),
            "host_mb_per_device": round((mem1 - mem0) / n / 2**20, 3),
            "shim_mb_per_device": round((shim1 - shim0) / n / 2**20, 3),
            "cgroup_mb_per_device_mean": round(float(np.mean(cg)) / 2**20, 3) if cg else None,
            "cgroup_mb_per_device_max": round(float(np.max(cg)) / 2**20, 3) if cg else None,
            "cgroup_samples": len(cg),
        })
    finally:
        t1 = time.monotonic()
        removed = backend.teardown()
        out["teardown_s"] = round(time.monotonic() - t1, 3)
        out["down_containers_per_s"] = round(removed.containers / max(1e-9, out["teardown_s"]), 2)
        out["removed"] = {"containers": removed.containers, "networks": removed.networks,
                          "stuck_networks": list(removed.stuck)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wotbench.bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", type=int, nargs="+", default=[100, 400])
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    ap.add_argument("--swarm", action="store_true",
                    help="the swarm benchmark instead (wotbench._swarmbench; first --devices only)")
    ap.add_argument("--reps", type=int, default=3, help="--swarm: repetitions side by side")
    ap.add_argument("--no-lab", action="store_true", help="--swarm: the swarm this host manages, no lab")
    args = ap.parse_args(argv)
    if args.swarm:
        from wotbench._swarmbench import bench_swarm

        with tempfile.TemporaryDirectory(prefix="wotbench-bench-") as tmp:
            report = bench_swarm(args.devices[0], args.reps, not args.no_lab, Path(tmp))
        if args.out:
            res.write_json(args.out, report)
            print(f"written: {args.out}")
        return 0
    client = dockerenv.client()
    dockerenv.check_images(client, ["device"])
    rows = []
    with tempfile.TemporaryDirectory(prefix="wotbench-bench-") as tmp:
        resources = Path(tmp) / "resources.csv"
        resources.write_text("path,service_us\n/r0,1000\n")
        resources.chmod(0o644)
        Path(tmp).chmod(0o755)
        for n in args.devices:
            r = bench_one(client, n, resources, sys.stderr.isatty())
            rows.append(r)
            print(f"{n:5d} devices: up+ready {r['ready_s']:7.1f} s ({r['up_containers_per_s']:6.1f} ct/s), "
                  f"teardown {r['teardown_s']:6.1f} s ({r['down_containers_per_s']:6.1f} ct/s), "
                  f"per device: host {r['host_mb_per_device']:.2f} MB, shim {r['shim_mb_per_device']:.2f} MB, "
                  f"cgroup {r['cgroup_mb_per_device_mean']} MB", flush=True)
    report = {"format": 1, "benchmark": "harness", "host": res.host_facts(client.version()),
              "results": rows}
    if args.out:
        res.write_json(args.out, report)
        print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
