"""`make bench-swarm`: what spreading a run over a swarm costs and gains,
on a real two-node swarm (the Swarm lab on this machine, or the swarm this
host manages with ``--no-lab``).

1. Start-up rate: N sleep-mode devices started (create, files put, start)
   on one node (the manager; the worker) and on both (N/2 each), in
   repetitions run side by side, interleaved; teardown time and what is
   left on every engine after each (must be 0).
2. The cross-host path: ``experiments/quickstart-swarm.yaml --scale ci``,
   its probe of the worker's CD node from the GE node (R - S across
   hosts) against the same host's CD-GE (R - S within the host), and the
   run's verdict.

Medians of the repetitions; the 2-node / 1-node ratio of the rates.

    python -m wotbench.studies.harness_bench --swarm --devices 40 --reps 3 [--out FILE]
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from wotbench.base import results as res
from wotbench.engine import SwarmBackend, dockerenv
from wotbench.engine.inventory import Inventory, read_inventory
from wotbench.execution.phases import device_spec
from wotbench.spec import DeviceGroup

__all__ = ["bench_swarm"]

REPO = Path(__file__).resolve().parents[2]


def _leftovers(backend: SwarmBackend, run_id: str) -> int:
    flt: dict[str, str | list[str] | bool] = {"label": f"{dockerenv.LABEL_RUN}={run_id}"}
    return sum(len(c.containers.list(all=True, filters=flt)) + len(c.volumes.list(filters=flt))
               + len(c.networks.list(filters=flt)) for c in backend.engines.values())


def start_once(client: Any, inv: Inventory, nodes: Sequence[str], n: int, resources: Path) -> dict[str, Any]:
    """N devices over ``nodes`` (round robin), each on its node's last core."""
    run_id = res.new_run_id(f"bench-swarm{len(nodes)}")
    backend = SwarmBackend(client, run_id, inv)
    backend.connect(nodes)
    cores = {h.hostname: h.cores[-1] for h in inv.nodes}
    group = DeviceGroup("bench", n, mode="sleep", threads=2)
    specs = [replace(device_spec(f"dev-{i}", i, group, str(cores[nodes[i % len(nodes)]]), resources, None),
                     node=nodes[i % len(nodes)]) for i in range(n)]
    out: dict[str, Any] = {"nodes": list(nodes), "devices": n}
    try:
        backend.create_networks(n)
        t = time.monotonic()
        backend.start_nodes(specs, progress=False)
        out["start_s"] = time.monotonic() - t
        out["up_per_s"] = n / out["start_s"]
    finally:
        t = time.monotonic()
        removed = backend.teardown()
        out["teardown_s"] = time.monotonic() - t
        out["down_per_s"] = removed.containers / max(1e-9, out["teardown_s"])
        out["left"] = _leftovers(backend, run_id)
    return out


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(float(r[key]) for r in rows))


def startup(client: Any, n: int, reps: int) -> list[dict[str, Any]]:
    inv = read_inventory(client)
    if not inv.swarm or len(inv.nodes) < 2:
        raise RuntimeError("the start-up benchmark needs a swarm of at least two nodes")
    manager = inv.local.hostname
    worker = next(h.hostname for h in inv.nodes if not h.local)
    configs = [("manager", [manager]), ("worker", [worker]), ("both", [manager, worker])]
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in configs}
    with tempfile.TemporaryDirectory(prefix="wotbench-bench-") as tmp:
        resources = Path(tmp) / "resources.csv"
        resources.write_text("path,service_us\n/r0,1000\n")
        resources.chmod(0o644)
        Path(tmp).chmod(0o755)
        for _ in range(reps):                    # side by side: every configuration each repetition
            for name, nodes in configs:
                rows[name].append(start_once(client, inv, nodes, n, resources))
    out = []
    for name, nodes in configs:
        r = rows[name]
        out.append({"config": name, "nodes": nodes, "devices": n, "reps": len(r),
                    "up_per_s_median": round(_median(r, "up_per_s"), 2),
                    "start_s_median": round(_median(r, "start_s"), 2),
                    "teardown_s_median": round(_median(r, "teardown_s"), 2),
                    "left_total": sum(x["left"] for x in r)})
    return out


def cross_host(results: Path) -> dict[str, Any]:
    """The quickstart across both nodes; the worker's probe against its CD-GE."""
    import json

    from wotbench.execution.runner import run

    (run_dir,) = run(REPO / "experiments" / "quickstart-swarm.yaml", results, progress=False, scale="ci")
    summary = json.loads((run_dir / "summary.json").read_text())
    hosts = {h: v for h, v in summary["hosts"].items() if v.get("cross_host")}
    out: dict[str, Any] = {"run": str(run_dir), "verdict": summary["verdict"], "reasons": summary["reasons"]}
    for host, v in hosts.items():
        x = v["cross_host"]
        out[host] = {"probe_r_minus_s_us": x["probe"]["r_minus_s_us"],
                     "same_host_r_minus_s_us": x["same_host_r_minus_s_us"], "extra_us": x["extra_us"],
                     "clock": v["clock"]}
    return out


def bench_swarm(n: int, reps: int, lab: bool, results: Path) -> dict[str, Any]:
    client = dockerenv.client()
    if lab:
        from wotbench.engine.swarmlab import SwarmLab

        with SwarmLab(workers=1, node_cpus="0").up():
            return _measure(client, n, reps, results)
    return _measure(client, n, reps, results)


def _measure(client: Any, n: int, reps: int, results: Path) -> dict[str, Any]:
    rows = startup(client, n, reps)
    by = {r["config"]: r for r in rows}
    one = max(by["manager"]["up_per_s_median"], by["worker"]["up_per_s_median"])
    for r in rows:
        print(f"  start {n} devices on {r['config']:8s}: {r['up_per_s_median']:6.2f} ct/s "
              f"(median {r['start_s_median']:.2f} s of {r['reps']}), teardown {r['teardown_s_median']:.2f} s, "
              f"left {r['left_total']}", flush=True)
    ratio = by["both"]["up_per_s_median"] / one
    print(f"  2 nodes / best single node: {ratio:.2f}x", flush=True)
    xh = cross_host(results)
    for host, v in xh.items():
        if isinstance(v, dict) and "extra_us" in v:
            p, s = v["probe_r_minus_s_us"], v["same_host_r_minus_s_us"]
            print(f"  R - S to {host}: across hosts p50 {p['p50']:.0f} us p99 {p['p99']:.0f} us; same host "
                  f"p50 {s['p50']:.0f} us p99 {s['p99']:.0f} us; the path adds {v['extra_us']:.0f} us "
                  f"(clock offset {v['clock']['offset_us']:.0f} ± {v['clock']['uncertainty_us']:.0f} us)")
    print(f"  quickstart-swarm ci: {xh['verdict']}", flush=True)
    return {"format": 1, "benchmark": "swarm", "host": res.host_facts(client.version()), "startup": rows,
            "two_vs_one_node": round(ratio, 3), "cross_host": xh}
