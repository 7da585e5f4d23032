"""Benchmark: ``wotbench tracegen --from-pcap`` on a capture of many
gigabytes (issue 29, item 5: "a capture of 10 GB ... bounded memory").

Writes a pcap of ``--gb`` GB (default 10) to ``--dir``: full-size frames
(``--frame`` bytes, default 1,400) of which every ``--every``-th pair is a
CoAP CON GET and its piggybacked 2.05 ACK between 100 client/server pairs
(message ids and tokens counting up, 1 ms service), and the rest non-CoAP
UDP datagrams (first byte 0: CoAP version 0), the kind of traffic a
capture taken on a busy link holds. The records are built with NumPy in
blocks (test input, not a reader), so writing is bound by the disk.
Both the writing and the command run in child processes (a child
inherits its parent's peak RSS across fork and exec), and the command's
wall time, packets per second, peak RSS (``wait4``) and what it found are
printed; the capture is removed at the end unless ``--keep``.

    python tracegen/bench/bench_bigcap.py --gb 10 --dir /var/tmp
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wotbench.tracegen.bench import bench_pcap

PAIRS = 100
#: pcap record header: ts_sec, ts_usec, incl_len, orig_len (little-endian).
_REC = np.dtype([("sec", "<u4"), ("usec", "<u4"), ("incl", "<u4"), ("orig", "<u4")])
_GAP_US = 10          # between two records


def _frames(frame: int) -> tuple[bytes, bytes, bytes]:
    """Ethernet/IPv4/UDP frames of ``frame`` bytes: a request, its ACK, filler.
    Their per-record fields (ports, addresses, MID, token) are patched in blocks."""
    import dpkt

    def build(payload: bytes, sport: int, dport: int, src: str, dst: str) -> bytes:
        udp = dpkt.udp.UDP(sport=sport, dport=dport, data=payload)
        udp.ulen = len(udp)
        ip = dpkt.ip.IP(src=socket.inet_aton(src), dst=socket.inet_aton(dst), p=dpkt.ip.IP_PROTO_UDP, data=udp)
        ip.len = len(ip)
        return bytes(dpkt.ethernet.Ethernet(src=b"\x02" * 6, dst=b"\x04" * 6, data=ip))

    room = frame - 14 - 20 - 8
    # CON GET, token length 2, MID 0, token 0, Uri-Path "r" + payload marker and padding.
    req = bytes([0x42, 0x01, 0, 0, 0, 0, 0xB1]) + b"r" + b"\xff" + b"x" * (room - 9)
    ack = bytes([0x62, 0x45, 0, 0, 0, 0]) + b"\xff" + b"y" * (room - 7)
    fill = b"\x00" * room
    return (build(req, 40000, 5683, "10.0.0.1", "10.0.1.1"), build(ack, 5683, 40000, "10.0.1.1", "10.0.0.1"),
            build(fill, 9999, 9999, "10.0.2.1", "10.0.2.2"))


def _block(n: int, first: int, frame: int, every: int, tmpl: tuple[bytes, bytes, bytes]) -> bytes:
    """Records ``first .. first + n - 1`` as bytes: record i is a request
    when i % (2 * every) == 0, its ACK at the next index, filler otherwise."""
    size = _REC.itemsize + frame
    out = np.empty((n, size), dtype=np.uint8)
    i = np.arange(first, first + n, dtype=np.int64)
    t = i * _GAP_US
    hdr = out[:, :_REC.itemsize].view(_REC).reshape(n)
    hdr["sec"], hdr["usec"], hdr["incl"], hdr["orig"] = t // 1_000_000, t % 1_000_000, frame, frame
    body = out[:, _REC.itemsize:]
    phase = i % (2 * every)
    kind = np.where(phase == 0, 0, np.where(phase == 1, 1, 2))
    for k in range(3):
        body[kind == k] = np.frombuffer(tmpl[k], dtype=np.uint8)
    coap = kind < 2
    ex = (i[coap] // (2 * every))                   # exchange number
    pair = ex % PAIRS
    mid, tok = (ex // PAIRS) % 65536, ex % 65536
    rows = body[coap]
    udp, cp = 14 + 20, 14 + 20 + 8
    client, is_req = (40000 + pair).astype(np.uint16), kind[coap] == 0
    port = np.where(is_req, client, 5683).astype(">u2").view(np.uint8).reshape(-1, 2)
    dport = np.where(is_req, 5683, client).astype(">u2").view(np.uint8).reshape(-1, 2)
    rows[:, udp:udp + 2], rows[:, udp + 2:udp + 4] = port, dport
    rows[:, udp + 6:udp + 8] = 0                    # no UDP checksum
    host = (pair + 1).astype(np.uint8)
    rows[:, 14 + 15] = host                          # src 10.0.x.<pair+1>
    rows[:, 14 + 19] = host                          # dst 10.0.y.<pair+1>
    rows[:, 14 + 10:14 + 12] = 0                     # no IP checksum (dpkt does not check it)
    rows[:, cp + 2:cp + 4] = mid.astype(">u2").view(np.uint8).reshape(-1, 2)
    rows[:, cp + 4:cp + 6] = tok.astype(">u2").view(np.uint8).reshape(-1, 2)
    body[coap] = rows
    return out.tobytes()


def write(path: Path, gb: float, frame: int, every: int) -> int:
    """The capture; returns its record count."""
    total = int(gb * 1e9) // (_REC.itemsize + frame)
    tmpl = _frames(frame)
    step = max(1, (256 << 20) // (_REC.itemsize + frame))
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for first in range(0, total, step):
            fh.write(_block(min(step, total - first), first, frame, every, tmpl))
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gb", type=float, default=10.0)
    ap.add_argument("--frame", type=int, default=1400)
    ap.add_argument("--every", type=int, default=5, help="one request/ACK pair every N pairs of records")
    ap.add_argument("--dir", type=Path, default=Path("/var/tmp"))
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--write", type=Path, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.write is not None:
        print(write(a.write, a.gb, a.frame, a.every))
        return 0
    work = Path(tempfile.mkdtemp(prefix="wotbench-bigcap-", dir=a.dir))
    try:
        cap = work / "big.pcap"
        t0 = time.monotonic()
        # Written by a child process: the kernel would carry this process's
        # peak RSS (the blocks) into the command's ru_maxrss across fork and exec.
        n = int(subprocess.run([sys.executable, __file__, "--write", str(cap), "--gb", str(a.gb), "--frame",
                                str(a.frame), "--every", str(a.every)], check=True, capture_output=True,
                               text=True).stdout)
        made = time.monotonic() - t0
        bench_pcap.WORK.mkdir(parents=True, exist_ok=True)
        r = bench_pcap.measure("full-pcap", 0, cap)      # the command in a child: wall time, wait4's peak RSS
        print(json.dumps({"bytes": cap.stat().st_size, "packets": n, "write_s": round(made, 1),
                          "wall_s": round(r["wall_s"], 1), "packets_per_s": round(n / r["wall_s"]),
                          "peak_rss_mib": round(r["peak_rss_mib"], 1),
                          "requests": r["requests"], "devices": r["devices"], "skipped": r["skipped"]}, indent=1))
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
