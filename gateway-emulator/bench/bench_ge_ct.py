"""bench-ge in containers: p99 send lag of a wotbench-ge container (pinned
to one core) against one wotbench-device container (another core) on a
bridge network made for the bench, at 10k..200k requests/s, under the
normal scheduler and under SCHED_FIFO inside an RT budget (the way a run
starts its GE: --sched fifo --rt-budget, the container's
--cpu-rt-runtime, uid 65534 with no capability, SCHED_FIFO given from
the host before its --start-at), each without and with a CPU hog on
the GE's core (a hardened nettools container running a shell busy loop).
Repetitions are interleaved (every configuration once per round), and
the table gives medians. Every container and the network carry a bench
run label and are removed at the end, also on error.

    flock /tmp/wotbench-docker.lock flock /tmp/wotbench-cpu.lock \\
        .venv/bin/python gateway-emulator/bench/bench_ge_ct.py
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import docker

from wotbench.engine.dockerenv import IMAGES, LABEL_OWNER, LABEL_RUN, hardening
from wotbench.host import loopback, rt

ROOT = Path(__file__).resolve().parents[2]
RATES = (10_000, 50_000, 100_000, 150_000, 200_000)
#: The GE's RT budget: what a one-GE run gets on this host (wotbench.host.rt).
BUDGET = (895_000, 1_000_000)
#: Under fifo the GE starts this long after its container (it waits for FIFO to be given).
START_LEAD_S = 1.0


def write_trace(path: Path, rate: int, duration_s: float, address: str, seed: int) -> None:
    """Poisson at ``rate`` to the device container, 20 ms after the start instant."""
    loopback.poisson_trace(path, rate, duration_s, f"coap://{address}:5683/a", seed, offset_us=20_000)


class Bench:
    def __init__(self, ge_core: int, dev_core: int) -> None:
        self.c = docker.from_env()
        self.label = {LABEL_RUN: f"bench-ge-{secrets.token_hex(3)}", LABEL_OWNER: "bench-ge"}
        self.ge_core, self.dev_core = str(ge_core), str(dev_core)
        self.objects: list[Any] = []

    def up(self, work: Path) -> str:
        net = self.c.networks.create(self.label[LABEL_RUN], driver="bridge", internal=True, labels=self.label)
        self.objects.append(net)
        self.net = net.name
        (work / "res.csv").write_text("path,service_us\n/a,0\n")
        dev = self.c.containers.run(
            IMAGES["device"], ["--listen", "0.0.0.0:5683", "--resources", "/res.csv", "--threads", "1"],
            detach=True, cpuset_cpus=self.dev_core, network=self.net, labels=self.label,
            volumes={str(work / "res.csv"): {"bind": "/res.csv", "mode": "ro"}},
            **hardening(memory_bytes=64 << 20, pids=32))
        self.objects.append(dev)
        dev.reload()
        address: str = dev.attrs["NetworkSettings"]["Networks"][self.net]["IPAddress"]
        return address

    def hog(self) -> Any:
        ct = self.c.containers.run(IMAGES["nettools"], ["sh", "-c", "while :; do :; done"], detach=True,
                                   cpuset_cpus=self.ge_core, network_mode="none", labels=self.label,
                                   user="65534:65534", **hardening(memory_bytes=32 << 20, pids=8))
        self.objects.append(ct)
        return ct

    def ge(self, work: Path, trace: Path, fifo: bool) -> dict[str, Any]:
        argv = ["--trace", f"/io/{trace.name}", "--out", "/io/out.csv", "--summary", "/io/s.json",
                "--type", "con", "--ack-timeout-ms", "300", "--max-retransmit", "0", "--timeout-ms", "500",
                "--cpu", self.ge_core, "--quiet"]
        # the RT budget of a GE under fifo; None (docker-py's default) gives none
        rt_runtime, rt_period = BUDGET if fifo else (None, None)
        if fifo:
            argv += ["--sched", "fifo", "--rt-prio", str(rt.RT_PRIO), "--rt-budget", f"{BUDGET[0]}/{BUDGET[1]}",
                     "--start-at", str(int(time.time() * 1e6 + START_LEAD_S * 1e6))]
        os.chown(work, 65534, 65534)
        ct = self.c.containers.run(IMAGES["ge"], argv, detach=True, cpuset_cpus=self.ge_core, network=self.net,
                                   labels=self.label, user="65534:65534",
                                   volumes={str(work): {"bind": "/io", "mode": "rw"}},
                                   cpu_rt_runtime=rt_runtime, cpu_rt_period=rt_period,
                                   **hardening(memory_bytes=1 << 30, pids=16))
        self.objects.append(ct)
        if fifo:
            ct.reload()
            why = rt.give_fifo(int(ct.attrs["State"]["Pid"]) or None)
            if why:
                raise RuntimeError(f"could not give the GE SCHED_FIFO: {why}")
        rc = ct.wait(timeout=120)["StatusCode"]
        if rc != 0:
            raise RuntimeError(f"wotbench-ge exited {rc}: {ct.logs().decode()[-500:]}")
        self.remove(ct)
        summary: dict[str, Any] = json.loads((work / "s.json").read_text())
        return summary

    def remove(self, obj: Any) -> None:
        try:
            obj.remove(force=True) if hasattr(obj, "kill") else obj.remove()
        except docker.errors.NotFound:
            pass
        if obj in self.objects:
            self.objects.remove(obj)

    def down(self) -> None:
        for obj in reversed(list(self.objects)):
            self.remove(obj)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default=",".join(map(str, RATES)))
    ap.add_argument("--duration-s", type=float, default=2.0)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--ge-core", type=int, default=1)
    ap.add_argument("--device-core", type=int, default=0)
    ap.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "bench-ge-containers.json")
    args = ap.parse_args(argv)
    rates = [int(r) for r in args.rates.split(",")]
    b = Bench(args.ge_core, args.device_core)
    runs: list[dict[str, Any]] = []
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-ge-ct-") as tmp:
        work = Path(tmp)
        work.chmod(0o777)
        try:
            address = b.up(work)
            write_trace(work / "warm.csv", 1000, 0.5, address, 0)
            b.ge(work, work / "warm.csv", False)          # the device answers; nothing recorded
            for rep in range(args.repetitions):
                for hog in (False, True):
                    h = b.hog() if hog else None
                    for rate in rates:
                        trace = work / "t.csv"
                        write_trace(trace, rate, args.duration_s, address, seed=rep * 1000 + rate)
                        for fifo in (False, True):
                            s = b.ge(work, trace, fifo)
                            r = {"rate": rate, "sched": "fifo" if fifo else "normal", "hog": hog, "rep": rep,
                                 "achieved_rps": s["achieved_rate_rps"], "ok": s["ok"],
                                 "send_lag_p50_us": s["send_lag_us"]["p50"],
                                 "send_lag_p99_us": s["send_lag_us"]["p99"],
                                 "send_lag_max_us": s["send_lag_us"]["max"], "sched_record": s["sched"]}
                            runs.append(r)
                            print(json.dumps(r), flush=True)
                    if h is not None:
                        b.remove(h)
        finally:
            b.down()
    table = median_table(runs, rates)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"runs": runs, "duration_s": args.duration_s, "budget": BUDGET,
                                     "wall_s": round(time.monotonic() - t_start, 1)}, indent=1))
    print(table)
    return 0


def median_table(runs: list[dict[str, Any]], rates: list[int]) -> str:
    cols = [(s, h) for h in (False, True) for s in ("normal", "fifo")]
    lines = ["| rate | " + " | ".join(f"{s}{' + hog' if h else ''}" for s, h in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for rate in rates:
        cells = []
        for s, h in cols:
            rs = [r for r in runs if r["rate"] == rate and r["sched"] == s and r["hog"] == h]
            p99 = statistics.median(r["send_lag_p99_us"] for r in rs)
            y = statistics.median(r["sched_record"]["yields"] for r in rs)
            st = statistics.median(r["sched_record"]["stalls"] for r in rs)
            cells.append(f"{p99:,.0f} µs" + (f" ({y:,.0f} yields, {st:.0f} stalls)" if s == "fifo" else ""))
        lines.append(f"| {rate:,}/s | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
