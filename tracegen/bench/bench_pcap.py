"""Benchmark: which capture parser ``wotbench tracegen --from-pcap`` uses (issue 29, item 4).

Writes a synthetic CoAP capture (``--packets``, default 1M: CON GET
requests and their piggybacked ACKs between 100 client/server pairs,
Ethernet/IPv4/UDP, 1 ms service) to /tmp as pcap and pcapng with dpkt's
writer (test input, not a reader), then reads it with each candidate in its
own process (peak RSS from ``wait4``'s rusage of that child), median of
``--runs`` runs:

* (a) the bare read to the UDP payload: dpkt (pcap, pcapng), python-pcapng
  (pcapng; link layers decoded by dpkt, it has no decoder), scapy's
  RawPcapReader (records; link layers by dpkt) and PcapReader (scapy's own
  decode), tshark's field export (when installed);
* the CoAP decoders on the UDP payloads: aiocoap ``Message.decode`` and
  scapy's ``contrib.coap``;
* (b) the full path: ``wotbench tracegen --from-pcap`` (this package's
  reader, the matching and every file written).

The rate of a reader is timed inside its process (after the interpreter
started); the full path's is the command's wall time. Readers far slower
than the rest (scapy's decoders) read only the first ``--slow-packets``
packets; their rate is measured on those and their RSS is not comparable.
Writes ``--json`` (updated per reader, so that each reader can run under
its own lock) and prints a table.

    python tracegen/bench/bench_pcap.py --make
    python tracegen/bench/bench_pcap.py --readers dpkt-pcap,dpkt-pcapng --runs 3
    python tracegen/bench/bench_pcap.py --scale 250000,1000000,4000000 --runs 1
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

WORK = Path("/tmp/wotbench-bench-pcap")
PAIRS = 100
ALL = ("baseline", "dpkt-pcap", "dpkt-pcapng", "pcapng-lib", "scapy-raw", "scapy-full", "tshark",
       "coap-aiocoap", "coap-scapy", "full-pcap", "full-pcapng")
SLOW = ("scapy-full", "coap-scapy")


def capture_path(fmt: str, packets: int | None = None) -> Path:
    return WORK / (f"coap-1m.{fmt}" if packets is None else f"coap-{packets}.{fmt}")


def make(packets: int, formats: tuple[str, ...] = ("pcap", "pcapng"), named: bool = False) -> None:
    """The synthetic capture, as pcap and pcapng (the same packets); ``named``:
    the file names carry the packet count (``--scale``)."""
    import dpkt
    import numpy as np

    WORK.mkdir(exist_ok=True)
    rng = np.random.default_rng(1)
    n_req = packets // 2
    pair = rng.integers(0, PAIRS, n_req)
    t_req = 1_700_000_000.0 + np.cumsum(rng.exponential(1e-4, n_req))
    templates = [(_frame(dpkt, p, True), _frame(dpkt, p, False)) for p in range(PAIRS)]
    off = 14 + 20 + 8 + 2           # Ethernet, IPv4, UDP, then CoAP's first two bytes: mid, token
    for fmt in formats:
        with open(capture_path(fmt, packets if named else None), "wb") as fh:
            w = dpkt.pcap.Writer(fh) if fmt == "pcap" else dpkt.pcapng.Writer(fh)
            seq = [0] * PAIRS      # message ids and tokens count per client, as a client's do
            for p, t in zip(pair.tolist(), t_req.tolist(), strict=True):
                k = seq[p] & 0xFFFF
                seq[p] += 1
                patch = k.to_bytes(2, "big") * 2
                req, ack = templates[p]
                w.writepkt(req[:off] + patch + req[off + 4:], ts=t)
                w.writepkt(ack[:off] + patch + ack[off + 4:], ts=t + 0.001)
    print(f"bench: wrote {2 * n_req} packets as {', '.join(formats)}")


def _frame(dpkt: Any, p: int, request: bool) -> bytes:
    client = socket.inet_aton(f"10.1.{p // 200}.{p % 200 + 1}")
    server = socket.inet_aton(f"10.2.{p // 200}.{p % 200 + 1}")
    coap = (bytes([0x42, 0x01, 0, 0, 0, 0, 0xB4]) + b"temp" if request
            else bytes([0x62, 0x45, 0, 0, 0, 0, 0xFF]) + b"21.5")
    udp = dpkt.udp.UDP(sport=40000 + p if request else 5683, dport=5683 if request else 40000 + p, data=coap)
    udp.ulen = 8 + len(coap)
    ip = dpkt.ip.IP(src=client if request else server, dst=server if request else client, p=17, data=udp)
    ip.len = 20 + len(bytes(udp))
    return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, type=0x0800, data=ip))


def _udp_payloads(records: Any, limit: int) -> int:
    """Decodes each record's link layers with dpkt down to the UDP payload; returns how many."""
    import dpkt

    n = 0
    for buf in records:
        udp = dpkt.ethernet.Ethernet(buf).data.data
        assert isinstance(udp.data, bytes)
        n += 1
        if n == limit:
            break
    return n


def one(reader: str, limit: int) -> dict[str, float]:
    """Runs one reader in this process: the packets (or messages) it handled."""
    if reader == "baseline":
        for name in ("dpkt", "numpy", "aiocoap.message"):     # what every reader imports
            importlib.import_module(name)
        return {"packets": 0}
    if reader in ("dpkt-pcap", "dpkt-pcapng"):
        import dpkt

        fmt = reader.split("-")[1]
        with open(capture_path(fmt), "rb") as fh:
            r = dpkt.pcap.Reader(fh) if fmt == "pcap" else dpkt.pcapng.Reader(fh)
            return {"packets": _udp_payloads((buf for _, buf in r), limit)}
    if reader == "pcapng-lib":
        from pcapng import FileScanner
        from pcapng.blocks import EnhancedPacket

        with open(capture_path("pcapng"), "rb") as fh:
            blocks = FileScanner(fh)
            return {"packets": _udp_payloads((b.packet_data for b in blocks if isinstance(b, EnhancedPacket)),
                                             limit)}
    if reader.startswith("scapy"):
        return {"packets": _scapy(reader, limit)}
    if reader.startswith("coap-"):
        return _coap(reader, limit)
    raise SystemExit(f"bench: unknown reader {reader}")


def _scapy(reader: str, limit: int) -> int:
    from scapy.layers.inet import UDP
    from scapy.utils import PcapReader, RawPcapReader

    if reader == "scapy-raw":
        with RawPcapReader(str(capture_path("pcap"))) as r:
            return _udp_payloads((buf for buf, _ in r), limit)
    n = 0
    with PcapReader(str(capture_path("pcap"))) as r:
        for pkt in r:
            assert isinstance(bytes(pkt[UDP].payload), bytes)
            n += 1
            if n == limit:
                break
    return n


def _coap(reader: str, limit: int) -> dict[str, float]:
    """Decodes the CoAP message of the first ``limit`` packets (read with dpkt first, not timed apart)."""
    import dpkt

    payloads = []
    with open(capture_path("pcap"), "rb") as fh:
        for _, buf in dpkt.pcap.Reader(fh):
            payloads.append(dpkt.ethernet.Ethernet(buf).data.data.data)
            if len(payloads) == limit:
                break
    start = time.perf_counter()
    if reader == "coap-aiocoap":
        from aiocoap.message import Message

        for p in payloads:
            m = Message.decode(p)
            assert m.mid >= 0 and m.opt.uri_path is not None
    else:
        from scapy.contrib.coap import CoAP

        for p in payloads:
            c = CoAP(p)
            assert c.msg_id >= 0 and c.options is not None
    return {"packets": len(payloads), "decode_s": time.perf_counter() - start}


def _tshark_cmd() -> list[str] | None:
    exe = shutil.which("tshark")
    if exe is None:
        return None
    fields = ["frame.time_epoch", "ip.src", "udp.srcport", "ip.dst", "udp.dstport", "coap.type", "coap.code",
              "coap.mid", "coap.token", "coap.opt.uri_path"]
    cmd = [exe, "-r", str(capture_path("pcap")), "-n", "-T", "fields", "-E", "separator=,", "-Y", "coap",
           "-d", "udp.port==5683,coap"]
    for f in fields:
        cmd += ["-e", f]
    return cmd


def measure(reader: str, limit: int, capture: Path | None = None) -> dict[str, Any]:
    """One run of ``reader`` in a child process: wall time, packets per second,
    peak RSS (``capture``: the file the full path reads instead of the 1M one)."""
    out = None
    if reader == "tshark":
        cmd = _tshark_cmd()
        if cmd is None:
            return {"skipped": "tshark not installed"}
    elif reader.startswith("full-"):
        out = Path(tempfile.mkdtemp(prefix="wl-", dir=WORK)) / "wl"
        cmd = [sys.executable, "-m", "wotbench.commands.main", "tracegen", "--from-pcap",
               str(capture or capture_path(reader.split("-")[1])), "--out", str(out)]
    else:
        cmd = [sys.executable, __file__, "--one", reader, "--limit", str(limit)]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    lines = 0
    last = b""
    for line in proc.stdout:        # tshark's rows are counted, not kept
        lines += 1
        last = line
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        if out is not None:             # the folder this bench made, not left behind
            shutil.rmtree(out.parent)
        raise SystemExit(f"bench: {reader} failed: {err.decode(errors='replace')[-500:]}")
    row: dict[str, Any] = {"wall_s": wall, "peak_rss_mib": usage.ru_maxrss / 1024,
                           "cpu_s": usage.ru_utime + usage.ru_stime}
    if reader == "tshark":
        row["packets"] = lines
    elif out is not None:
        summary = json.loads((out / "capture.json").read_text())
        row["packets"] = summary["packets"]
        row["requests"] = summary["requests_in_trace"]
        row["settled_early"] = summary["window"]["settled_early"]
        row["devices"], row["skipped"] = summary.get("devices"), summary.get("skipped")
        shutil.rmtree(out.parent)
    else:
        got = json.loads(last)          # timed in the child: no interpreter start, no imports before
        row["packets"] = got["packets"]
        row["wall_s"] = got.get("decode_s", got["read_s"])
    row["per_s"] = row["packets"] / row["wall_s"] if row["wall_s"] > 0 else None
    return row


def median_row(runs: list[dict[str, Any]]) -> dict[str, Any]:
    if "skipped" in runs[0]:
        return runs[0]
    keys = ("wall_s", "per_s", "peak_rss_mib", "cpu_s")
    out = {k: statistics.median(r[k] for r in runs) for k in keys}
    out["packets"] = runs[0]["packets"]
    if "requests" in runs[0]:
        out["requests"] = runs[0]["requests"]
    out["runs"] = runs
    return out


def table(results: dict[str, Any]) -> str:
    from tabulate import tabulate

    base = results.get("baseline", {}).get("peak_rss_mib")
    rows = []
    for name in ALL:
        r = results.get(name)
        if r is None:
            continue
        if "skipped" in r:
            rows.append((name, "-", "-", "-", "-", r["skipped"]))
            continue
        extra = ""
        if name.startswith("full-") and base is not None and r.get("requests"):
            extra = f"{(r['peak_rss_mib'] - base) * 1024 * 1024 / r['packets']:.0f} B/packet above baseline"
        rows.append((name, r["packets"], f"{r['per_s']:,.0f}" if r["per_s"] else "-", f"{r['wall_s']:.2f}",
                     f"{r['peak_rss_mib']:.0f}", extra))
    return tabulate(rows, headers=("reader", "packets", "per s (median)", "s", "peak RSS MiB", ""),
                    tablefmt="github")


def scale(sizes: list[int], runs: int, path: Path) -> str:
    """The full path on captures of each size (pcap, written then removed):
    peak RSS must not grow with the packets (bounded memory)."""
    from tabulate import tabulate

    results = json.loads(path.read_text()) if path.exists() else {}
    for n in sizes:
        # Written by a child: a child exec'd from this process would count this
        # process's peak (Linux keeps the RSS high-water mark across exec).
        subprocess.run([sys.executable, __file__, "--make", "--named", "--packets", str(n)], check=True)
        try:
            results[f"scale-{n}"] = median_row([measure("full-pcap", 0, capture_path("pcap", n))
                                                for _ in range(runs)])
        finally:
            capture_path("pcap", n).unlink()
        path.write_text(json.dumps(results, indent=1) + "\n")
    rows = [(r["packets"], f"{r['per_s']:,.0f}", f"{r['wall_s']:.1f}", f"{r['peak_rss_mib']:.0f}",
             r["runs"][0].get("settled_early", "-"))
            for k, r in results.items() if k.startswith("scale-")]
    return tabulate(sorted(rows), headers=("packets", "packets/s", "s", "peak RSS MiB", "settled early"),
                    tablefmt="github")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--make", action="store_true", help="write the synthetic captures")
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--readers", default=",".join(ALL))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--slow-packets", type=int, default=100_000)
    ap.add_argument("--json", type=Path, default=WORK / "bench_pcap.json")
    ap.add_argument("--scale", help="packet counts (250000,1000000,4000000): the full path's peak RSS per size")
    ap.add_argument("--named", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        start = time.perf_counter()
        got = one(args.one, args.limit or -1)
        print(json.dumps({"read_s": time.perf_counter() - start, **got}))
        return 0
    if args.make:
        make(args.packets, ("pcap",) if args.named else ("pcap", "pcapng"), named=args.named)
        return 0
    if args.scale:
        print(scale([int(n) for n in args.scale.split(",")], args.runs, args.json))
        return 0
    results = json.loads(args.json.read_text()) if args.json.exists() else {}
    for reader in args.readers.split(","):
        limit = args.slow_packets if reader in SLOW else 0
        results[reader] = median_row([measure(reader, limit) for _ in range(args.runs)])
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
