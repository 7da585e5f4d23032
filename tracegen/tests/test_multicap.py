"""``wotbench tracegen --from-pcap`` of several files (tracegen/_multicap.py):
a capture split into a ring of files, and two GEs' rings interleaved in
time, give the same workload files as one capture of it all; files out of
place or not captures are refused in one line naming the file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wotbench.tracegen.tests.capfiles import ACK, CON, CONTENT, GET, NON, POST, PUT, T0, Pkt, coap, write

Run = Callable[..., tuple[int, str, str]]


def _traffic(seed: int, ge: int, n: int = 400) -> list[Pkt]:
    """One GE (client 10.0.<ge>.1) asking its three devices (10.1.<ge>.1-3):
    CON and NON requests, retransmissions, piggybacked and separate answers,
    unanswered ones, an observation with notifications; times apart from
    any other GE's (a different offset in each 3 ms slot)."""
    rng = np.random.default_rng(seed)
    cl = f"10.0.{ge}.1"
    pkts = []
    for i in range(n):
        srv = f"10.1.{ge}.{int(rng.integers(1, 4))}"
        t = T0 + i * 0.003 + ge * 0.0011
        mid, tok = (i * 7 + ge) & 0xFFFF, i.to_bytes(2, "big")
        meth = [GET, GET, POST, PUT][int(rng.integers(0, 4))]
        upath = [("a",), ("b", "c"), ("x y",)][int(rng.integers(0, 3))]
        req = coap(CON if rng.random() < 0.6 else NON, meth, mid, tok, upath,
                   payload=b"q" * int(rng.integers(0, 3)) if meth in (POST, PUT) else b"")
        pkts.append(Pkt(t, cl, 4000, srv, 5683, req))
        if rng.random() < 0.1:
            pkts.append(Pkt(t + 0.0004, cl, 4000, srv, 5683, req))
        r = rng.random()
        if r < 0.6:
            pkts.append(Pkt(t + 0.0005 + i % 7 * 1e-5, srv, 5683, cl, 4000, coap(ACK, CONTENT, mid, tok)))
        elif r < 0.9:
            pkts.append(Pkt(t + 0.0007, srv, 5683, cl, 4000, coap(NON, CONTENT, (mid + 5) & 0xFFFF, tok)))
    obs = (6, b"\x00")                                  # Observe 0: a registration
    srv = f"10.1.{ge}.1"
    pkts.append(Pkt(T0 + 0.0002 + ge * 0.0011, cl, 4001, srv, 5683, coap(CON, GET, 9, b"ob", ("o",), options=(obs,))))
    for k in range(5):
        pkts.append(Pkt(T0 + 0.0003 + ge * 0.0011 + k * 0.2, srv, 5683, cl, 4001,
                        coap(NON, CONTENT, 100 + k, b"ob", options=((6, bytes([k + 1])),))))
    pkts.sort(key=lambda p: p.t)
    return pkts


def _derive(paths: list[Path] | Path, out: Path) -> dict[str, Any]:
    from wotbench.tracegen._fromcapture import from_capture

    return from_capture(paths, out).summary


def _same_files(a: Path, b: Path) -> int:
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != "capture.json")
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != "capture.json")
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    return len(files)


def _ring(folder: Path, name: str, pkts: list[Pkt], parts: int, numbers: list[int]) -> list[Path]:
    """``pkts`` cut into ``parts`` files ``name<numbers[i]>`` (the i-th part in time)."""
    folder.mkdir(exist_ok=True)
    cut = np.array_split(np.arange(len(pkts)), parts)
    return [write(folder / f"{name}{numbers[i]}", [pkts[j] for j in c.tolist()]) for i, c in enumerate(cut)]


@pytest.mark.parametrize("chunk", [None, 29])
def test_a_ring_of_three_files_is_the_whole_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    chunk: int | None) -> None:
    """A wrapped ring (pcap1 oldest, pcap0 newest), named in any order or as
    its folder: byte-identical files to the capture written whole."""
    from wotbench.tracegen import _capture

    if chunk is not None:
        monkeypatch.setattr(_capture, "CHUNK", chunk)
    pkts = _traffic(1, 0)
    whole = _derive(write(tmp_path / "whole.pcap", pkts), tmp_path / "w")
    files = _ring(tmp_path / "cap", "ge-0.pcap", pkts, 3, [1, 2, 0])
    split = _derive([files[2], files[0], files[1]], tmp_path / "s")
    assert _same_files(tmp_path / "w", tmp_path / "s") == 9
    folder = _derive(tmp_path / "cap", tmp_path / "f")
    assert _same_files(tmp_path / "w", tmp_path / "f") == 9
    assert [f["file"] for f in split["files"]] == ["ge-0.pcap1", "ge-0.pcap2", "ge-0.pcap0"]
    assert split["files"] == folder["files"]
    assert sum(f["packets"] for f in folder["files"]) == whole["packets"] == len(pkts)
    for k in ("requests", "requests_in_trace", "devices", "matched", "service", "observe", "skipped", "linktypes"):
        if k != "linktypes":
            assert split[k] == whole[k], k
    assert split["linktypes"] == [1, 1, 1] and whole["requests_in_trace"] > 350
    assert whole["observe"]["observations"] == 1


def test_two_ges_rings_interleaved_are_one_capture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    run_cli: Run) -> None:
    """Two GEs' rings (2 and 3 files, one of them Linux cooked), merged in
    time order with chunks of 23 messages: the workload of one capture of
    both, every device once; the printed summary counts the files."""
    from wotbench.tracegen import _capture

    monkeypatch.setattr(_capture, "CHUNK", 23)
    a, b = _traffic(2, 0), _traffic(3, 1, 300)
    both = sorted(a + b, key=lambda p: p.t)
    _derive(write(tmp_path / "whole.pcap", both), tmp_path / "w")
    _ring(tmp_path / "cap", "ge-0.pcap", a, 2, [0, 1])
    cut = np.array_split(np.arange(len(b)), 3)
    for i, c in enumerate(cut):
        write(tmp_path / "cap" / f"ge-1.pcap{i}", [b[j] for j in c.tolist()], link="sll")
    (tmp_path / "cap" / "tcpdump.log").write_text("not a capture, not read\n")
    rc, out, err = run_cli("tracegen", "--from-pcap", tmp_path / "cap", "--out", tmp_path / "m")
    assert rc == 0, err
    assert _same_files(tmp_path / "w", tmp_path / "m") == 15
    s = json.loads((tmp_path / "m" / "capture.json").read_text())
    w = json.loads((tmp_path / "w" / "capture.json").read_text())
    assert s["devices"] == w["devices"] == 6 and s["requests"] == w["requests"] > 650
    assert s["linktypes"] == [1, 1, 113, 113, 113] and s["file"] == "cap"
    assert [f["file"] for f in s["files"]] == ["ge-0.pcap0", "ge-0.pcap1", "ge-1.pcap0", "ge-1.pcap1", "ge-1.pcap2"]
    assert "cap: 5 files" in out and "observations / dropped" in out and "queries dropped" in out


def test_a_file_out_of_place_in_its_ring(tmp_path: Path, run_cli: Run) -> None:
    """Two files of one ring whose times interleave: refused, naming the later one."""
    pkts = _traffic(4, 0, 100)
    (tmp_path / "cap").mkdir()
    write(tmp_path / "cap" / "ge-0.pcap0", pkts[0::2])
    write(tmp_path / "cap" / "ge-0.pcap1", pkts[1::2])
    rc, out, err = run_cli("tracegen", "--from-pcap", tmp_path / "cap", "--out", tmp_path / "o")
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: {tmp_path / 'cap' / 'ge-0.pcap1'}: --from-pcap: out of place: ") and \
        "before the end of ge-0.pcap0" in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("case", ["text", "twice", "folder"])
def test_bad_files_among_several(tmp_path: Path, run_cli: Run, case: str) -> None:
    pkts = _traffic(5, 0, 50)
    good = write(tmp_path / "ge-0.pcap0", pkts)
    other = tmp_path / "ge-0.pcap1"
    if case == "text":
        other.write_text("device_id,send_ts_us\n" * 40)
        want = f"error: {other}: format: not a pcap or pcapng capture"
    elif case == "twice":
        other = good
        want = f"error: {good}: --from-pcap: named twice"
    else:
        other = tmp_path
        want = f"error: {tmp_path}: --from-pcap: a folder among several files"
    rc, out, err = run_cli("tracegen", "--from-pcap", good, other, "--out", tmp_path / "o")
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(want), err
    assert not (tmp_path / "o").exists()
