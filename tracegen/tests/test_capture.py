"""``wotbench tracegen --from-pcap``: captures built with dpkt's writers turned
into the trace, the resources with their median service times, the
samples and capture.json; bad captures as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wotbench.tracegen._capture import read_capture
from wotbench.tracegen._pairs import match
from wotbench.tracegen.tests.capfiles import ACK, CON, CONTENT, GET, NON, POST, PUT, S1, T0, C, Pkt, coap, mixed, write

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
            "folder": "a folder without capture files"}[case]
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
    from wotbench.tracegen.tests.capfiles import write_interfaces

    goods = [write(tmp_path / f"g.{f}", mixed(), fmt=f).read_bytes() for f in ("pcap", "pcapng")]
    goods.append(write_interfaces(tmp_path / "g2.pcapng", [(i % 2, p) for i, p in enumerate(mixed())],
                                  ["ethernet", "sll"], ns=(1,)).read_bytes())
    for i in range(180):
        bad = bytearray(goods[i % 3])
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


def _random_capture(path: Path, seed: int, n: int = 600) -> Path:
    """Five clients, three servers: CON and NON requests of four methods,
    retransmissions, piggybacked, separate and duplicate answers, answers to
    nobody, unanswered requests, payloads."""
    rng = np.random.default_rng(seed)
    pkts = []
    for i in range(n):
        cl, srv = f"10.0.1.{i % 5 + 1}", f"10.0.0.{int(rng.integers(1, 4))}"
        t = T0 + i * 0.003 + float(rng.random()) * 0.001
        mid, tok = (i * 7 + int(rng.integers(0, 3))) & 0xFFFF, bytes([int(rng.integers(0, 4))])
        meth = [GET, GET, POST, PUT, 5][int(rng.integers(0, 5))]
        upath = [("a",), ("b", "c"), ("x y",), ()][int(rng.integers(0, 4))]
        pay = b"q" * int(rng.integers(0, 3)) if meth in (POST, PUT) else b""
        req = coap(CON if rng.random() < 0.6 else NON, meth, mid, tok, upath, payload=pay)
        pkts.append(Pkt(t, cl, 4000, srv, 5683, req))
        if rng.random() < 0.1:
            pkts.append(Pkt(t + 0.0005, cl, 4000, srv, 5683, req))
        r, svc = rng.random(), float(rng.exponential(0.004))
        if r < 0.5:
            pkts.append(Pkt(t + svc, srv, 5683, cl, 4000, coap(ACK, CONTENT, mid, tok)))
        elif r < 0.8:
            pkts.append(Pkt(t + svc, srv, 5683, cl, 4000, coap(NON, CONTENT, int(rng.integers(0, 999)), tok)))
            if rng.random() < 0.2:
                pkts.append(Pkt(t + svc + 0.001, srv, 5683, cl, 4000, coap(NON, CONTENT, 5, tok)))
        elif r < 0.85:
            pkts.append(Pkt(t + svc, srv, 5683, "10.9.9.9", 4000, coap(ACK, CONTENT, mid, tok)))
    pkts.sort(key=lambda p: p.t)
    return write(path, pkts)


def test_streaming_in_small_windows_is_the_whole_capture_result(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded memory: chunks of 37 messages and a window of 64 requests
    write the same files as one pass over the whole capture (the former
    whole-capture path), whose service samples are those of match() over
    all messages at once."""
    from wotbench.tracegen import _capture, _pairs
    from wotbench.tracegen._fromcapture import from_capture

    cap = _random_capture(tmp_path / "c.pcap", 1)
    whole: dict[str, Any] = from_capture(cap, tmp_path / "whole").summary
    monkeypatch.setattr(_capture, "CHUNK", 37)
    monkeypatch.setattr(_pairs, "CHUNK", 37)
    small: dict[str, Any] = from_capture(cap, tmp_path / "small", window_requests=64).summary
    files = sorted(p.relative_to(tmp_path / "whole") for p in (tmp_path / "whole").rglob("*") if p.is_file())
    assert len(files) == 10
    for f in files:
        if f.name != "capture.json":
            assert (tmp_path / "whole" / f).read_bytes() == (tmp_path / "small" / f).read_bytes(), f
    assert whole["window"] == {"requests_max": 1 << 17, "settled_early": 0, "shortest_us": None}
    # The window was full (its oldest requests settled early) but spanned more than any exchange.
    assert small["window"]["requests_max"] == 64 and small["window"]["settled_early"] > 400
    assert {k: v for k, v in whole.items() if k != "window"} == {k: v for k, v in small.items() if k != "window"}
    _, m = read_capture(cap)
    p = match(m)
    assert whole["retransmissions"] == p.retransmissions > 0 and whole["requests"] == p.requests.size
    answered = p.service_us[(p.service_us >= 0) & np.isin(m.code[p.requests], [1, 2, 3, 4])]
    samples = [int(line.split(",")[1]) for d in range(3) for line in _lines(tmp_path / "whole" / "service"
                                                                            / f"dev-{d}.csv")[1:]]
    assert sorted(samples) == sorted(answered.tolist()) and len(samples) > 300
    assert whole["matched"]["responses_extra"] == p.responses_extra > 0
    assert whole["matched"]["responses_unmatched"] == p.responses_unmatched > 0


def test_a_full_window_settles_its_oldest_requests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A window of 2 requests: a response 10 ms late finds its request gone
    (unmatched, counted as settled early); the rest as before."""
    from wotbench.tracegen import _capture, _pairs
    from wotbench.tracegen._fromcapture import from_capture

    pkts = [Pkt(T0 + i * 0.001, C, 4000, S1, 5683, coap(NON, GET, i, bytes([i]), ("r",))) for i in range(6)]
    pkts.append(Pkt(T0 + 0.0105, S1, 5683, C, 4000, coap(NON, CONTENT, 99, b"\x00")))      # answers request 0
    pkts.append(Pkt(T0 + 0.0106, S1, 5683, C, 4000, coap(NON, CONTENT, 98, b"\x05")))      # answers request 5
    cap = write(tmp_path / "c.pcap", pkts)
    monkeypatch.setattr(_capture, "CHUNK", 2)
    monkeypatch.setattr(_pairs, "CHUNK", 2)
    s: dict[str, Any] = from_capture(cap, tmp_path / "wl", window_requests=2).summary
    assert s["window"] == {"requests_max": 2, "settled_early": 4, "shortest_us": 1000}
    assert s["matched"]["requests_answered"] == 1 and s["matched"]["responses_unmatched"] == 1
    assert _lines(tmp_path / "wl" / "service" / "dev-0.csv") == ["path,service_us", "/r,5600"]
    whole: dict[str, Any] = from_capture(cap, tmp_path / "w2").summary
    assert whole["matched"]["requests_answered"] == 2


def test_quantiles_exact_then_within_the_stated_bound() -> None:
    from wotbench.tracegen._quantiles import EXACT_SAMPLES, SUB_BITS, Quantiles

    rng = np.random.default_rng(5)
    v = rng.lognormal(8, 2, 3 * EXACT_SAMPLES).astype(np.int64)
    q = Quantiles()
    q.add(np.zeros(EXACT_SAMPLES, np.int64), v[:EXACT_SAMPLES])
    assert q.exact(0) and q.percentiles(0, [5, 50, 95]) == np.percentile(v[:EXACT_SAMPLES], [5, 50, 95]).tolist()
    for part in np.array_split(v[EXACT_SAMPLES:], 7):
        q.add(np.zeros(part.size, np.int64), part)
    assert not q.exact(0) and (q.count, q.total) == (v.size, int(v.sum()))
    for want, got in zip(np.percentile(v, [1, 5, 50, 95, 99.9]).tolist(), q.percentiles(0, [1, 5, 50, 95, 99.9]),
                         strict=True):
        assert abs(got - want) <= want * 2.0 ** -(SUB_BITS + 1) + 0.5, (want, got)


def test_uri_queries_are_kept(tmp_path: Path) -> None:
    """Uri-Query options become the trace URI's ?query (joined by '&', as the
    GE splits it again); one the GE could not send back as captured is dropped."""
    from wotbench.tracegen._fromcapture import from_capture

    queries = [(b"k=v", b"x"), (), (b"a&b",), (b"u=1",)]
    pkts = [Pkt(T0 + i * 0.001, C, 1000, S1, 5683, coap(NON, GET, i, b"", ("s",), options=tuple((15, q) for q in qs)))
            for i, qs in enumerate(queries)]
    s: dict[str, Any] = from_capture(write(tmp_path / "c.pcap", pkts), tmp_path / "wl").summary
    assert [line.split(",")[3] for line in _lines(tmp_path / "wl" / "trace.csv")[1:]] == [
        "coap://dev-0/s?k=v&x", "coap://dev-0/s", "coap://dev-0/s", "coap://dev-0/s?u=1"]
    assert (s["requests_with_query"], s["queries_dropped"], s["resources"]) == (3, 1, 1)
    assert _lines(tmp_path / "wl" / "resources" / "dev-0.csv")[1:] == ["/s,0"]


def _obs(n: int | None) -> tuple[tuple[int, bytes], ...]:
    """The Observe option (6) with value n (0 is the empty value), or none."""
    return () if n is None else ((6, n.to_bytes(1, "big") if n else b""),)


def test_observations_become_obs_and_unobs_rows(tmp_path: Path) -> None:
    """Registrations are OBS rows, closed by a deregistration (GET Observe 1),
    an RST to a notification or the end of the capture; notifications are
    counted, never rows, and give the resources their observe columns."""
    from wotbench.tracegen._fromcapture import from_capture

    c0, c1, c2 = 4000, 4001, 4002
    a, b, c, d = b"\xa1", b"\xb2", b"\xc3", b"\xd4"
    q = ((15, b"x=1"),)

    def to_dev(t: float, port: int, msg: bytes) -> Pkt:
        return Pkt(T0 + t, C, port, S1, 5683, msg)

    def to_cl(t: float, port: int, msg: bytes) -> Pkt:
        return Pkt(T0 + t, S1, 5683, C, port, msg)

    pkts = [to_dev(0, c0, coap(CON, GET, 1, a, ("temp",), options=_obs(0))),
            to_cl(0.002, c0, coap(ACK, CONTENT, 1, a, options=_obs(5))),
            *[to_cl(k + 0.002, c0, coap(NON, CONTENT, 100 + k, a, options=_obs(5 + k))) for k in (1, 2, 3)],
            to_dev(1.5, c0, coap(CON, GET, 2, b"\x01", ("hum",))),
            to_cl(1.501, c0, coap(ACK, CONTENT, 2, b"\x01")),
            to_dev(3.5, c0, coap(CON, GET, 3, a, ("temp",), options=_obs(1))),
            to_cl(3.501, c0, coap(ACK, CONTENT, 3, a)),
            to_dev(4, c1, coap(NON, GET, 4, b, ("temp",), options=_obs(0) + q)),
            to_cl(4.002, c1, coap(NON, CONTENT, 200, b, options=_obs(1))),
            to_cl(4.5, c1, coap(CON, CONTENT, 300, b, options=_obs(2))),
            to_dev(4.5005, c1, coap(ACK, 0, 300)),
            to_cl(5.0, c1, coap(CON, CONTENT, 301, b, options=_obs(3))),
            to_dev(5.001, c1, coap(3, 0, 301)),                                    # RST: deregisters
            to_dev(6, c0, coap(CON, GET, 5, c, ("hum",), options=_obs(0))),
            to_cl(6.001, c0, coap(ACK, CONTENT, 5, c, options=_obs(1))),
            to_cl(6.2, c0, coap(NON, CONTENT, 400, c, options=_obs(2))),
            to_dev(6.5, c2, coap(CON, GET, 6, d, ("hum",), options=_obs(0))),         # overlapping: no row
            to_dev(6.6, c0, coap(CON, GET, 7, c, ("hum",), options=_obs(0))),         # re-registration
            to_cl(6.7, c2, coap(NON, CONTENT, 500, b"\xee", options=_obs(9))),        # nobody's
            to_dev(7, c0, coap(CON, GET, 8, b"\x02", ("hum",))),
            to_cl(7.001, c0, coap(ACK, CONTENT, 8, b"\x02"))]
    s: dict[str, Any] = from_capture(write(tmp_path / "c.pcap", pkts), tmp_path / "wl").summary
    assert _lines(tmp_path / "wl" / "trace.csv") == [
        "device_id,send_ts_us,method,uri",
        "0,0,OBS,coap://dev-0/temp", "0,1500000,GET,coap://dev-0/hum", "0,3500000,UNOBS,coap://dev-0/temp",
        "0,4000000,OBS,coap://dev-0/temp?x=1", "0,5001000,UNOBS,coap://dev-0/temp?x=1",
        "0,6000000,OBS,coap://dev-0/hum", "0,7000000,GET,coap://dev-0/hum", "0,7001000,UNOBS,coap://dev-0/hum"]
    # /temp: intervals 1 s (three) and 0.498, 0.5 s; three NON and two CON events. /hum: one, NON.
    assert _lines(tmp_path / "wl" / "resources" / "dev-0.csv") == [
        "path,service_us,observe_rit,notify_type,max_age,observe_seed",
        "/hum,1000,det:199000,non,,", "/temp,2000,det:1000000,non:3,,"]
    assert s["observe"] == {"observations": 3, "reregistrations": 1, "overlapping": 1, "over_limit": 0,
                            "closed_by": {"deregister": 1, "rst": 1, "capture_end": 1}, "notifications": 9,
                            "notifications_unmatched": 1, "resources": 2}
    assert s["methods"] == {"GET": 2, "OBS": 3, "UNOBS": 3} and s["requests"] == 8
    assert (s["requests_in_trace"], s["trace_rows"]) == (2, 8)


def test_pcapng_interfaces_each_with_its_link_type(tmp_path: Path) -> None:
    """A pcapng of two interfaces, Ethernet (us stamps) and Linux cooked (ns
    stamps): each packet decoded by its own interface's link type and clock."""
    from wotbench.tracegen.tests.capfiles import write_interfaces

    pkts = [(0, Pkt(T0, C, 1000, S1, 5683, coap(CON, GET, 1, b"\x01", ("e",)))),
            (1, Pkt(T0 + 0.000250, S1, 5683, C, 1000, coap(ACK, CONTENT, 1, b"\x01"))),
            (1, Pkt(T0 + 0.001, C, 1001, S1, 5683, coap(NON, GET, 2, b"\x02", ("s",)))),
            (0, Pkt(T0 + 0.0015, S1, 5683, C, 1001, coap(NON, CONTENT, 9, b"\x02")))]
    cap = write_interfaces(tmp_path / "c.pcapng", pkts, ["ethernet", "sll"], ns=(1,))
    reader, m = read_capture(cap)
    assert (reader.format, reader.linktype, reader.linktypes) == ("pcapng", 1, [1, 113])
    assert (reader.packets, m.size, sum(reader.skipped.values())) == (4, 4, 0)
    assert reader.paths == ["/e", "/s"]
    assert match(m).service_us.tolist() == [250, 500]
    # dpkt's own reader would take the cooked packets for Ethernet frames
    import dpkt

    with open(cap, "rb") as fh:
        assert [dpkt.ethernet.Ethernet(b).type for _, b in dpkt.pcapng.Reader(fh)][1] != 0x0800


def test_trace_times_never_go_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request captured out of time order after its successor was settled
    is written at the previous row's time (counted), never before it."""
    from wotbench.tracegen import _capture, _pairs
    from wotbench.tracegen._fromcapture import from_capture

    pkts = [Pkt(T0 + t, C, 4000, S1, 5683, coap(NON, GET, i, b"", ("r",))) for i, t in enumerate((0, 0.003, 0.001))]
    cap = write(tmp_path / "c.pcap", pkts)
    monkeypatch.setattr(_capture, "CHUNK", 1)
    monkeypatch.setattr(_pairs, "CHUNK", 1)
    s: dict[str, Any] = from_capture(cap, tmp_path / "wl", window_requests=1).summary
    assert [line.split(",")[1] for line in _lines(tmp_path / "wl" / "trace.csv")[1:]] == ["0", "3000", "3000"]
    assert s["rows_reordered"] == 1
