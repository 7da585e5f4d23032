"""``wotbench tracegen --from-pcap``: captures built with dpkt's writers turned
into the trace, the resources with their median service times, the
samples and capture.json; bad captures as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from wotbench.tracegen._capture import read_capture
from wotbench.tracegen._pairs import match
from wotbench.tracegen.tests.capfiles import ACK, CON, CONTENT, GET, NON, T0, Pkt, coap, mixed, write

Run = Callable[..., tuple[int, str, str]]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def test_mixed_capture_to_workload(run_cli: Run, tmp_path: Path) -> None:
    cap = write(tmp_path / "cap.pcap", mixed())
    rc, out, err = run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl")
    assert rc == 0, err
    assert "4 requests to 2 devices" in out and "retransmissions" in out
    wl = tmp_path / "wl"
    assert _lines(wl / "trace.csv") == [
        "device_id,send_ts_us,method,uri,payload",
        "0,0,GET,coap://dev-0/sensors/temp,",
        "1,10000,POST,coap://dev-1/act,xxx",
        "0,20000,GET,coap://dev-0/sensors/temp,",       # the retransmission at 22000 is not a row
        "0,30000,GET,coap://dev-0/sensors/hum,"]
    # /sensors/temp: samples 2000 and 8000 (from the first transmission); /sensors/hum has
    # none and takes the device's median.
    assert _lines(wl / "resources" / "dev-0.csv") == ["path,service_us", "/sensors/hum,5000", "/sensors/temp,5000"]
    assert _lines(wl / "resources" / "dev-1.csv") == ["path,service_us", "/act,5000"]
    assert _lines(wl / "service" / "dev-0.csv") == ["path,service_us", "/sensors/temp,2000", "/sensors/temp,8000"]
    assert _lines(wl / "devices.csv")[1:] == ["0,capture,dev-0,resources/dev-0.csv",
                                               "1,capture,dev-1,resources/dev-1.csv"]
    s = json.loads((wl / "capture.json").read_text())
    assert (s["packets"], s["coap_messages"], s["requests"], s["responses"], s["devices"]) == (14, 9, 4, 4, 2)
    assert s["matched"] == {"requests_answered": 3, "requests_unanswered": 1, "responses_matched": 3,
                            "responses_extra": 0, "responses_unmatched": 1, "piggybacked": 2, "separate": 1}
    assert s["retransmissions"] == 1 and s["types"] == {"CON": 3, "NON": 1}
    assert s["methods"] == {"GET": 3, "POST": 1} and s["payload_bytes"]["max"] == 3
    assert s["skipped"] == {"not_udp": 1, "fragment": 1, "truncated": 1, "malformed": 0, "not_coap": 1,
                            "malformed_coap": 1, "cut_last_record": 0}
    assert [d["endpoint"] for d in s["device_stats"]] == ["10.0.0.2:5683", "10.0.0.3:7000"]
    assert s["resources"] == 3 and s["resources_without_samples"] == 1
    assert s["service"]["p50_us"] == 5000 and "next to the devices" in s["service"]["note"]
    assert not (wl / "expected.json").exists()


@pytest.mark.parametrize("link", ["ethernet", "sll", "sll2", "raw"])
@pytest.mark.parametrize("fmt", ["pcap", "pcapng"])
def test_links_formats_and_ipv6(tmp_path: Path, link: str, fmt: str) -> None:
    c, s = "fd00::1", "fd00::2"
    pkts = [Pkt(T0, c, 1234, s, 61616, coap(CON, GET, 7, b"ab", ("a", "b"))),
            Pkt(T0 + 0.0005, s, 61616, c, 1234, coap(ACK, CONTENT, 7, b"ab", payload=b"1")),
            Pkt(T0 + 0.001, "10.1.1.1", 9, "10.1.1.2", 5683, coap(NON, GET, 8, b"", ("v4",))),
            Pkt(T0 + 0.0012, "10.1.1.2", 5683, "10.1.1.1", 9, coap(NON, CONTENT, 50, b"")),
            Pkt(T0 + 0.002, c, 1234, s, 61616, coap(NON, GET, 9, b"", ("f",)), fragment=True)]
    reader, m = read_capture(write(tmp_path / f"c.{fmt}", pkts, link=link, fmt=fmt))
    assert (reader.format, reader.packets, m.size, reader.skipped["fragment"]) == (fmt, 5, 4, 1)
    assert reader.endpoints == ["[fd00::1]:1234", "[fd00::2]:61616", "10.1.1.1:9", "10.1.1.2:5683"]
    assert reader.paths == ["/a/b", "/v4"]
    p = match(m)
    assert p.service_us.tolist() == [500, 200]       # an empty token matches an empty token
    assert m.t_us.tolist()[0] == round(T0 * 1e6)


def test_cut_last_record_is_skipped(tmp_path: Path) -> None:
    good = write(tmp_path / "a.pcap", mixed()).read_bytes()
    for fmt, cut in (("pcap", 9), ("pcap", len(good) - 24 - 3), ("pcapng", 5)):
        cap = write(tmp_path / f"b.{fmt}", mixed(), fmt=fmt)
        data = cap.read_bytes()
        cap.write_bytes(data[:-cut] if cut < len(data) - 24 else data[:24 + 3])
        reader, m = read_capture(cap)
        assert reader.skipped["cut_last_record"] == 1, (fmt, cut)
        if cut < 100:
            assert reader.packets in (13, 14) and m.size == 8      # the unmatched last ACK is gone


def test_record_length_beyond_any_packet_is_an_error(run_cli: Run, tmp_path: Path) -> None:
    cap = write(tmp_path / "c.pcap", mixed()[:3])
    data = bytearray(cap.read_bytes())
    first_len = struct.unpack_from("<I", data, 24 + 8)[0]
    struct.pack_into("<I", data, 24 + 16 + first_len + 8, 10**9)     # the second record's caplen
    cap.write_bytes(bytes(data))
    rc, out, err = run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl")
    assert rc == 2 and err.count("\n") == 1 and out == ""
    assert f"{cap}:packet 2: record: a record of 1000000000 bytes" in err
    assert not (tmp_path / "wl").exists()


@pytest.mark.parametrize("case", ["text", "empty", "no_coap", "linktype", "folder"])
def test_bad_captures(run_cli: Run, tmp_path: Path, case: str) -> None:
    cap = tmp_path / "cap.pcap"
    want = {"text": "format: not a pcap or pcapng capture", "empty": "format: not a pcap or pcapng capture",
            "no_coap": "capture: no CoAP request", "linktype": "linktype: link type 105 is not read",
            "folder": "not a regular file"}[case]
    if case == "text":
        cap.write_text("device_id,send_ts_us\n" * 40)
    elif case == "empty":
        cap.write_bytes(b"")
    elif case == "no_coap":
        write(cap, [p for p in mixed() if p.dport not in (5683, 7000) and p.sport not in (5683, 7000)])
    elif case == "linktype":
        write(cap, mixed(), linktype=105)
    else:
        cap.mkdir()
    rc, out, err = run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "sub" / "wl")
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith("error: ") and want in err
    assert not (tmp_path / "sub").exists()


@pytest.mark.parametrize("flag", [["--spec", "x.yaml"], ["--devices", "3"], ["--seed", "2"], ["--per-device-traces"]])
def test_from_pcap_excludes_the_other_forms(run_cli: Run, tmp_path: Path, flag: list[str]) -> None:
    cap = write(tmp_path / "cap.pcap", mixed())
    rc, out, err = run_cli("tracegen", "--from-pcap", cap, *flag, "--out", tmp_path / "wl")
    assert rc == 2 and err.count("\n") == 1
    assert f"error: {flag[0]}: cannot be combined with --from-pcap" in err
    assert not (tmp_path / "wl").exists()


def test_force_replaces_only_a_tracegen_folder(run_cli: Run, tmp_path: Path) -> None:
    cap = write(tmp_path / "cap.pcap", mixed())
    assert run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl")[0] == 0
    rc, _, err = run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl")
    assert rc == 2 and "not empty" in err
    assert run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl", "--force")[0] == 0
    # either form of tracegen's folder replaces the other, nothing else
    gen = ["tracegen", "--devices", "2", "--duration", "2s", "--rit", "exp:100ms", "--service", "exp:5ms"]
    assert run_cli(*gen, "--out", tmp_path / "wl", "--force")[0] == 0
    assert not (tmp_path / "wl" / "capture.json").exists() and (tmp_path / "wl" / "expected.json").exists()
    assert run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl", "--force")[0] == 0
    (tmp_path / "wl" / "mine.txt").write_text("x")
    rc, _, err = run_cli("tracegen", "--from-pcap", cap, "--out", tmp_path / "wl", "--force")
    assert rc == 2 and (tmp_path / "wl" / "mine.txt").read_text() == "x"


def test_paths_the_device_cannot_serve_are_mapped(tmp_path: Path) -> None:
    pkts = [Pkt(T0 + i * 0.001, "10.0.0.1", 1000, "10.0.0.2", 5683, coap(NON, GET, i, b"", path))
            for i, path in enumerate([("ok",), (), ("a,b",), (".well-known", "core"), ("sp ace",), ("x/y",)])]
    cap = write(tmp_path / "c.pcap", pkts)
    from wotbench.tracegen._fromcapture import from_capture

    s = from_capture(cap, tmp_path / "wl").summary
    uris = [line.split(",")[3] for line in _lines(tmp_path / "wl" / "trace.csv")[1:]]
    assert uris == ["coap://dev-0/ok"] + [f"coap://dev-0/_p/{i}" for i in range(1, 6)]
    assert s["paths_mapped_count"] == 5
    mapped = s["paths_mapped"]
    assert isinstance(mapped, dict) and mapped["/_p/2"] == "/a,b" and mapped["/_p/5"] == "('x/y',)"


def test_matching_is_vectorised_per_key(tmp_path: Path) -> None:
    """Seven clients, answers overlapping other clients' requests, tokens reused
    in turn, half the answers separate: each goes to its own client's request."""
    rng = np.random.default_rng(3)
    pkts, want = [], []
    for i in range(200):
        cl = f"10.0.1.{i % 7 + 1}"
        t = T0 + i * 0.01
        svc = int(rng.integers(100, 30000))
        want.append(svc)
        tok = bytes([i % 3])
        pkts.append(Pkt(t, cl, 4000, "10.0.0.9", 5683, coap(CON if i % 2 else NON, GET, i, tok, ("r",))))
        answer = coap(ACK, CONTENT, i, tok) if i % 2 else coap(NON, CONTENT, 1000 + i, tok)
        pkts.append(Pkt(t + svc / 1e6, "10.0.0.9", 5683, cl, 4000, answer))
    pkts.sort(key=lambda p: p.t)
    _, m = read_capture(write(tmp_path / "c.pcap", pkts))
    p = match(m)
    assert p.retransmissions == 0 and p.responses_matched == 200 and p.responses_unmatched == 0
    assert p.separate == 100 and p.piggybacked == 100
    # Capture times are whole microseconds: each sample within 1 us of what was built.
    assert np.abs(p.service_us - np.array(want)).max() <= 1


def test_random_datagrams_and_corrupt_files_never_crash(tmp_path: Path) -> None:
    """Outside input: any UDP payload is a message or a counted skip, any
    corrupt capture is read or refused with a UserError (never another exception)."""
    from wotbench.base.errors import UserError
    from wotbench.tracegen._capture import _coap_of

    rng = np.random.default_rng(7)
    for n in rng.integers(0, 40, 1000).tolist():
        data = bytes([0x40 | int(rng.integers(0, 64))]) + rng.bytes(n) if n % 2 else rng.bytes(n)
        msg, why = _coap_of(data)
        assert (msg is None) != (why == "")
    goods = [write(tmp_path / f"g.{f}", mixed(), fmt=f).read_bytes() for f in ("pcap", "pcapng")]
    for i in range(120):
        bad = bytearray(goods[i % 2])
        for at in rng.integers(0, len(bad), 1 + i % 4).tolist():
            bad[at] = int(rng.integers(0, 256))
        cap = tmp_path / "bad.pcap"
        cap.write_bytes(bytes(bad[:len(bad) - int(rng.integers(0, 30))]))
        try:
            reader, m = read_capture(cap)
        except UserError:
            continue
        assert reader.packets + sum(reader.skipped.values()) >= m.size


def test_max_packets_reads_the_first_records(run_cli: Run, tmp_path: Path) -> None:
    cap = write(tmp_path / "cap.pcap", mixed())
    rc, out, err = run_cli("tracegen", "--from-pcap", cap, "--max-packets", "4", "--out", tmp_path / "wl")
    assert rc == 0, err
    assert "stopped at --max-packets" in out
    s = json.loads((tmp_path / "wl" / "capture.json").read_text())
    assert (s["packets"], s["stopped_early"], s["requests"], s["retransmissions"]) == (4, True, 2, 0)
    rc, _, err = run_cli("tracegen", "--from-pcap", cap, "--max-packets", "0", "--out", tmp_path / "w2")
    assert rc == 2 and "--max-packets" in err and not (tmp_path / "w2").exists()
    rc, _, err = run_cli("tracegen", "--devices", "1", "--max-packets", "9", "--out", tmp_path / "w3")
    assert rc == 2 and "error: --max-packets: only with --from-pcap" in err
