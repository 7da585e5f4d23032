"""make bench-device: the device's maximum request rate on one core.

The device is pinned to one core and devload (closed loop, a fixed window
of requests in flight) to another, so the rate is what the device
sustains. Writes JSON to --out and prints it. Numbers depend on the
machine and on whatever else runs on it: the summary says how many cores
there were and the load average before the run."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEVICE = ROOT / "build" / "bin" / "wotbench-device"
DEVLOAD = ROOT / "build" / "bin" / "devload"

CASES = [
    # name, path, service_us, mode, threads, window, con
    ("zero_non", "a", 0, "sleep", 4, 64, False),
    ("zero_con", "a", 0, "sleep", 4, 64, True),
    ("1ms_sleep_4threads", "b", 1000, "sleep", 4, 256, False),
    ("1ms_busy_1thread", "b", 1000, "busy", 1, 64, False),
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_case(resources: Path, case: tuple, seconds: float, dev_core: int, load_core: int) -> dict:
    name, path, service_us, mode, threads, window, con = case
    port = free_port()
    dev = subprocess.Popen(["taskset", "-c", str(dev_core), str(DEVICE), "--listen",
                            f"127.0.0.1:{port}", "--resources", str(resources), "--mode", mode,
                            "--threads", str(threads)], stderr=subprocess.PIPE, text=True)
    try:
        assert dev.stderr is not None and " resources on " in dev.stderr.readline()
        cmd = ["taskset", "-c", str(load_core), str(DEVLOAD), "-p", str(port), "-P", path,
               "-w", str(window), "-s", str(seconds)] + (["-c"] if con else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        result = json.loads(out.stdout)
    finally:
        dev.terminate()
        _, err = dev.communicate(timeout=5)
    result.update(name=name, service_us=service_us, mode=mode, threads=threads,
                  device_counts=err.strip().splitlines()[-1])
    if service_us:
        result["capacity_bound"] = threads * 1e6 / service_us
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "bench" / "device.json")
    args = ap.parse_args(argv)
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        print("error: bench-device needs two cores (device and load apart)", file=sys.stderr)
        return 2
    summary = {"format": 1, "cores": len(cores), "loadavg_before": os.getloadavg()[0],
               "device_core": cores[0], "load_core": cores[-1], "cases": []}
    with tempfile.TemporaryDirectory() as tmp:
        res = Path(tmp) / "r.csv"
        res.write_text("path,service_us\n/a,0\n/b,1000\n")
        for case in CASES:
            summary["cases"].append(run_case(res, case, args.seconds, cores[0], cores[-1]))
            time.sleep(0.2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = args.out.with_suffix(".tmp")
    tmp_out.write_text(json.dumps(summary, indent=2) + "\n")
    tmp_out.replace(args.out)
    for c in summary["cases"]:
        print(f"{c['name']:>22}: {c['rate']:>8.0f} req/s  (lost {c['lost']}, window {c['window']})")
    print(f"written {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
