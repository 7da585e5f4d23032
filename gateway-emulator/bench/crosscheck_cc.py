"""crosscheck-cc: the GE's congestion control beside Californium's, on the
wire (issue 26, item 5; docs/congestion.md, "Cross-check with Californium").

For each device service time, one real wotbench-device sits behind the
scripted-loss relay (tests/lossrelay.py), and each client in turn sends the
same open-loop schedule through it: N confirmable GETs, GAP apart, to one
resource, ACK_TIMEOUT, ACK_RANDOM_FACTOR and MAX_RETRANSMIT the same. The
clients: wotbench-ge with `--congestion cocoa` and with `rfc7252`, and a
Californium 3.14.0 CoapEndpoint (bench/californium, built with Maven) with
CONGESTION_CONTROL_ALGORITHM COCOA and NULL (plain RFC 7252), NSTART high
enough for its schedule to stay open loop like the GE's (unlimited). The
relay is the one observer for all: per request, the transmissions and the
gaps between them (the timers; the first gap is the exchange's first timer,
seen wherever the script makes the first transmission go unanswered),
the backoff factors (ratios of successive gaps) and the outcome. Prints a
Markdown table per service time and writes the per-request records as JSON.
A bench tool (`make crosscheck-cc`), not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "gateway-emulator" / "tests"))

from lossrelay import LossScript, Relay  # noqa: E402

GE = ROOT / "build" / "bin" / "wotbench-ge"
DEVICE = ROOT / "build" / "bin" / "wotbench-device"
CF_DIR = ROOT / "build" / "crosscheck-cc"
CF_POM = ROOT / "gateway-emulator" / "bench" / "californium" / "pom.xml"
CF_MAIN = "wotbench.crosscheck.CfClient"

#: (label, client, GE --congestion or Californium CONGESTION_CONTROL_ALGORITHM,
#: NSTART: 0 unlimited, the GE's default; Californium's endpoint then gets N)
CLIENTS = [("GE cocoa", "ge", "cocoa", 0), ("Cf COCOA", "cf", "cocoa", 0),
           ("GE cocoa NSTART 1", "ge", "cocoa", 1), ("Cf COCOA NSTART 1", "cf", "cocoa", 1),
           ("GE rfc7252", "ge", "rfc7252", 0), ("Cf NULL", "cf", "null", 0)]


def loss_script(n: int) -> LossScript:
    """Every 4th request loses its first transmission; three lose two, one
    three; three lose the device's first answer (the device has served it:
    the retransmission is answered again from its duplicate cache)."""
    req = {i: 1 for i in range(n) if i % 4 == 3}
    req |= {i: 2 for i in (10, 22) if i < n} | {i: 3 for i in (5,) if i < n}
    resp = {i: 1 for i in (6, 18, 26) if i < n}
    return LossScript(req, resp)


@dataclass
class Request:
    idx: int
    status: str
    transmissions: int          # seen by the relay
    client_retransmissions: int  # what the client itself counted
    gaps_ms: list[float]        # between successive transmissions
    completion_ms: float | None  # first transmission -> the answer the client got


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_device(tmp: Path, service_ms: int) -> tuple[subprocess.Popen[str], int]:
    res = tmp / "res.csv"
    res.write_text(f"path,service_us\n/s0,{service_ms * 1000}\n")
    port = free_port()
    proc = subprocess.Popen([str(DEVICE), "--listen", f"127.0.0.1:{port}", "--resources", str(res),
                             "--threads", "8", "--stats", str(tmp / "device.json")],
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stderr is not None
    first = proc.stderr.readline()  # printed once the socket is bound
    if " resources on " not in first:
        proc.kill()
        sys.exit(f"error: wotbench-device did not start: {first.strip()}")
    return proc, port


def stop_device(proc: subprocess.Popen[str], tmp: Path) -> dict[str, Any]:
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    stats: dict[str, Any] = json.loads((tmp / "device.json").read_text())
    return stats


def run_ge(tmp: Path, uri: str, strategy: str, nstart: int,
           a: argparse.Namespace) -> tuple[list[str], list[int], Any]:
    trace = tmp / "trace.csv"
    trace.write_text("device_id,send_ts_us,method,uri\n"
                     + "".join(f"0,{i * a.gap_ms * 1000},GET,{uri}\n" for i in range(a.n)))
    cmd = [str(GE), "--trace", str(trace), "--out", str(tmp / "ge.csv"), "--summary", str(tmp / "ge.json"),
           "--quiet", "--congestion", strategy, "--ack-timeout-ms", str(a.ack_timeout_ms),
           "--ack-random-factor", str(a.ack_random_factor), "--max-retransmit", str(a.max_retransmit),
           # held requests (NSTART) wait as long as Californium's queue lets them
           "--timeout-ms", "600000", "--nstart", str(nstart) if nstart else "unlimited"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"error: wotbench-ge exited {proc.returncode}: {proc.stderr.strip()}")
    lines = (tmp / "ge.csv").read_text().splitlines()
    head = lines[0].split(",")
    rows = [dict(zip(head, ln.split(","), strict=True)) for ln in lines[1:]]
    summary = json.loads((tmp / "ge.json").read_text())
    return [r["status"] for r in rows], [int(r["retransmissions"]) for r in rows], summary["congestion"]


def cf_classpath() -> str:
    cp = CF_DIR / "classpath.txt"
    if not cp.exists():
        sys.exit(f"error: {cp}: missing: build the client first (mvn -q -f {CF_POM} package)")
    return f"{CF_DIR / 'classes'}{os.pathsep}{cp.read_text().strip()}"


def run_cf(uri: str, mode: str, nstart: int, a: argparse.Namespace) -> tuple[list[str], list[int], None]:
    cmd = ["java", "-cp", cf_classpath(), CF_MAIN, "--uri", uri, "--n", str(a.n), "--gap-ms", str(a.gap_ms),
           "--cc", mode, "--ack-timeout-ms", str(a.ack_timeout_ms),
           "--ack-random-factor", str(a.ack_random_factor), "--max-retransmit", str(a.max_retransmit),
           "--nstart", str(nstart or a.n)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        sys.exit(f"error: the Californium client exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    rows = [ln.split(",") for ln in proc.stdout.strip().splitlines()[1:]]
    return [r[1] for r in rows], [int(r[2]) for r in rows], None


def records(relay: Relay, status: list[str], retrans: list[int]) -> list[Request]:
    led = relay.ledger
    out = []
    for i, st in enumerate(status):
        seen = led.seen.get(i, [])
        answers = led.answers.get(i, [])
        got = answers[led.script.responses.get(i, 0):]  # the first answer let through
        out.append(Request(
            i, st, len(seen), retrans[i],
            [(b - a) / 1e6 for a, b in zip(seen, seen[1:], strict=False)],
            (got[0] - seen[0]) / 1e6 if got and seen else None))
    return out


def one_run(service_ms: int, client: str, mode: str, nstart: int, a: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="crosscheck-cc-") as d:
        tmp = Path(d)
        dev, port = start_device(tmp, service_ms)
        relay = Relay(port, loss_script(a.n))
        try:
            uri = f"coap://127.0.0.1:{relay.port}/s0"
            if client == "ge":
                status, retrans, cc = run_ge(tmp, uri, mode, nstart, a)
            else:
                status, retrans, cc = run_cf(uri, mode, nstart, a)
            time.sleep(0.2)  # late answers reach the relay's record
        finally:
            relay.close()
            stats = stop_device(dev, tmp)
        reqs = records(relay, status, retrans)
    return {"requests": [asdict(r) for r in reqs], "ge_congestion": cc,
            "device": {k: stats.get(k) for k in ("requests", "served", "duplicates", "dup_replies")}}


def quantiles(xs: Sequence[float]) -> str:
    if not xs:
        return "–"
    if len(xs) == 1:
        return f"{xs[0]:.0f}"
    q = statistics.quantiles(xs, n=10, method="inclusive")
    return f"{q[0]:.0f} / {statistics.median(xs):.0f} / {q[8]:.0f} ({min(xs):.0f}–{max(xs):.0f})"


def summarize(run: dict[str, Any]) -> dict[str, str]:
    reqs = run["requests"]
    retx = [r["transmissions"] - 1 for r in reqs]
    dist = Counter(retx)
    first = [r["gaps_ms"][0] for r in reqs if r["gaps_ms"]]
    factors = [b / a for r in reqs for a, b in zip(r["gaps_ms"], r["gaps_ms"][1:], strict=False)]
    fac = Counter(f"{f:.2f}" for f in factors)
    comp = [r["completion_ms"] for r in reqs if r["completion_ms"] is not None]
    agree = all(r["client_retransmissions"] == r["transmissions"] - 1 for r in reqs)
    return {
        "retransmissions (wire)": f"{sum(retx)}" + ("" if agree else " (client counted otherwise)"),
        "per request: 0/1/2/3/4": "/".join(str(dist.get(k, 0)) for k in range(5)),
        "first timer ms p10/p50/p90 (min–max)": quantiles(first),
        "first timer ms, each exchange seen": " ".join(f"{x:.0f}" for x in first),
        "backoff factors seen (count)": ", ".join(f"{k}×{v}" for k, v in sorted(fac.items())) or "–",
        "timeouts": str(sum(r["status"] == "timeout" for r in reqs)),
        "not ok": str(sum(r["status"] not in ("ok", "timeout") for r in reqs)),
        "completion ms p10/p50/p90 (min–max)": quantiles(comp),
        "device: duplicates / answered again": f"{run['device']['duplicates']} / {run['device']['dup_replies']}",
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    labels = [lab for lab, *_ in CLIENTS]
    sums = {lab: summarize(results[lab]) for lab in labels}
    lines = ["| | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for key in sums[labels[0]]:
        lines.append(f"| {key} | " + " | ".join(sums[lab][key] for lab in labels) + " |")
    ge_t0 = [results[lab]["ge_congestion"] for lab in labels if results[lab]["ge_congestion"]]
    extra = "; ".join(f"{lab}: T0 p50 {cc['timer0_us']['p50'] / 1000:.0f} ms, final RTO "
                      f"{cc['peers'][0]['rto_us'] / 1000:.0f} ms"
                      for lab, cc in zip([lab for lab in labels if results[lab]["ge_congestion"]], ge_t0,
                                         strict=True))
    return "\n".join(lines) + f"\n\nThe GE's own record over all {len(results[labels[0]]['requests'])} " \
        f"exchanges: {extra}.\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=30, help="requests per run")
    p.add_argument("--gap-ms", type=int, default=500, help="between requests")
    p.add_argument("--service-ms", type=int, nargs="+", default=[400, 0], help="device service times")
    p.add_argument("--ack-timeout-ms", type=int, default=2000)
    p.add_argument("--ack-random-factor", type=float, default=1.5)
    p.add_argument("--max-retransmit", type=int, default=4)
    p.add_argument("--json", type=Path, default=ROOT / "build" / "bench" / "crosscheck-cc.json")
    a = p.parse_args(argv)
    for b in (GE, DEVICE):
        if not b.exists():
            sys.exit(f"error: {b}: missing: make build")
    cf_classpath()
    script = loss_script(a.n)
    print(f"# crosscheck-cc {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: N={a.n} gap={a.gap_ms} ms "
          f"ACK_TIMEOUT={a.ack_timeout_ms} ms ACK_RANDOM_FACTOR={a.ack_random_factor} "
          f"MAX_RETRANSMIT={a.max_retransmit}; request drops {dict(script.requests)}, "
          f"answer drops {dict(script.responses)}\n")
    out: dict[str, Any] = {"args": {k: str(v) for k, v in vars(a).items()},
                           "script": {"requests": script.requests, "responses": script.responses}, "runs": {}}
    for s in a.service_ms:
        results = {}
        for label, client, mode, nstart in CLIENTS:
            results[label] = one_run(s, client, mode, nstart, a)
            print(f"  done: service {s} ms, {label}", file=sys.stderr)
        out["runs"][str(s)] = results
        print(f"## service {s} ms\n\n{table(results)}", flush=True)
    a.json.parent.mkdir(parents=True, exist_ok=True)
    a.json.write_text(json.dumps(out, indent=1))
    print(f"records: {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
