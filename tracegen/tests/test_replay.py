"""The replay workload (tracegen/_replay.py): a derived capture scaled by
devices (k copies, each rotated by j*T/k), rate (times divided by r) and
map, repeated every period and cut at the test's length; observations kept
whole; empirical service times seeded; expected.json of the replayed trace."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench.spec import WorkloadSpec, load
from wotbench.tracegen import generate
from wotbench.tracegen.tests.capfiles import mixed, write
from wotbench.tracegen.tests.derived import OBS_ROWS, ROWS, write_derived

Run = Callable[..., tuple[int, str, str]]
SpecFile = Callable[..., Path]

SPEC = """
name: r
workload:
  seed: 3
  duration: {length}
  replay:
    from: {src}
{extra}
devices:
  - name: a
    count: {a}
  - name: b
    count: {b}
cd: {{rit: 100us}}
"""


def _spec(spec_file: SpecFile, src: str = "derived", length: str = "400us", a: int = 2, b: int = 2,
          extra: str = "    devices: 2\n    rate: 2") -> Path:
    return spec_file(SPEC.format(src=src, length=length, a=a, b=b, extra=extra))


def _workload(path: Path) -> WorkloadSpec:
    wl = load(path)[0].spec.workload
    assert wl is not None
    return wl


def _trace(folder: Path) -> list[list[str]]:
    return [line.split(",") for line in (folder / "trace.csv").read_text().splitlines()[1:]]


def _rule(rows: list[tuple[int, int, str, str]], sources: list[int], rate: float, length: int
          ) -> list[tuple[int, int, str, str]]:
    """REPLAY29.md's rule, written out: copy j of k_d, times / r rotated by j*T/k_d mod T, repeated, cut."""
    poll = [r for r in rows if r[2] not in ("OBS", "UNOBS")]
    span = poll[-1][1] - poll[0][1]
    period = (span + span / (len(poll) - 1)) / rate
    out = []
    for e, d in enumerate(sources):
        j, k = sources[:e].count(d), sources.count(d)
        for m in range(math.ceil(length / period) + 1):
            for dd, t, meth, p in poll:
                x = math.floor(math.fmod(t / rate + j * period / k, period) + m * period)
                if dd == d and x < length:
                    out.append((x, e, meth, p))
    return [(e, x, meth, p) for x, e, meth, p in sorted(out, key=lambda r: (r[0], r[1]))]


def test_devices_and_rate_follow_the_rule(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    out = generate(_workload(_spec(spec_file)), tmp_path / "wl")
    want = _rule(ROWS, [0, 1, 0, 1], 2.0, 400)
    assert _trace(tmp_path / "wl") == [[str(e), str(t), m, f"coap://dev-{e}{p}", "xxx" if m == "PUT" else ""]
                                       for e, t, m, p in want]
    assert out.requests == len(want) and out.device_group == ("a", "a", "b", "b")
    # copy 1 of each device is rotated by half the period: not in step with copy 0
    assert {t for e, t, *_ in want if e == 0} != {t for e, t, *_ in want if e == 2}
    assert (tmp_path / "wl" / "resources" / "dev-2.csv").read_bytes() == \
        (tmp_path / "derived" / "resources" / "dev-0.csv").read_bytes()
    doc = json.loads(out.expected.read_text())
    info = doc["replay"]
    assert info["map"] == [0, 1, 0, 1] and info["captured_devices"] == 2 and info["rate"] == 2
    assert info["sha256"] == hashlib.sha256((tmp_path / "derived" / "trace.csv").read_bytes()).hexdigest()
    assert doc["requests"] == doc["aggregate"]["requests"] == len(want)
    assert [d["requests"] for d in doc["device_stats"]] == [sum(r[0] == e for r in want) for e in range(4)]
    svc = {"/a": 100, "/c": 300, "/b": 1000}
    mean = sum(svc[p] for *_, p in want) / len(want)
    assert doc["aggregate"]["service"]["mean_us"] == pytest.approx(mean)
    assert out.cd_service_us == round(mean) and doc["cd"]["service_us"] == round(mean)
    assert (tmp_path / "wl" / "capture.json").is_file()


def test_map_replays_chosen_devices(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    out = generate(_workload(_spec(spec_file, a=2, b=1, extra="    map: [1, 1, 0]")), tmp_path / "wl")
    want = _rule(ROWS, [1, 1, 0], 1.0, 400)
    assert [(int(e), int(t)) for e, t, *_ in _trace(tmp_path / "wl")] == [(e, t) for e, t, *_ in want]
    assert json.loads(out.expected.read_text())["replay"]["map"] == [1, 1, 0]


def test_a_long_test_repeats_the_stream(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    out = generate(_workload(_spec(spec_file, length="10ms", a=1, b=1, extra="")), tmp_path / "wl")
    # period 312.5 us: 10 ms holds 32 periods of 5 requests
    assert out.requests == len(_rule(ROWS, [0, 1], 1.0, 10_000)) and 155 <= out.requests <= 165


def _closed(trace: list[list[str]]) -> tuple[int, bool]:
    """Observations of a trace, and whether each OBS of a (device, uri) is closed before the next."""
    open_: set[tuple[str, str]] = set()
    n, ok = 0, True
    for d, _, m, uri, *_ in trace:
        if m == "OBS":
            ok &= (d, uri) not in open_
            open_.add((d, uri))
            n += 1
        elif m == "UNOBS":
            ok &= (d, uri) in open_
            open_.discard((d, uri))
    return n, ok and not open_


@pytest.mark.parametrize("length", ["400us", "1ms", "1130us"])
def test_observations_stay_closed(spec_file: SpecFile, tmp_path: Path, length: str) -> None:
    write_derived(tmp_path / "derived", ROWS + OBS_ROWS)
    out = generate(_workload(_spec(spec_file, length=length)), tmp_path / "wl")
    n, ok = _closed(_trace(tmp_path / "wl"))
    info = json.loads(out.expected.read_text())["replay"]
    assert ok and n == info["observations"] == out.observations and n > 0
    # dev 1 observes 100 us of a 156.25 us period (rate 2): one crossing the end is cut, none dropped
    reps = math.ceil(int(length[:-2]) * (1000 if length.endswith("ms") else 1) / 156.25) + 1
    assert n <= 2 * reps and info["observations_dropped"] == 0


def test_an_observation_at_an_edge_is_cut(spec_file: SpecFile, tmp_path: Path) -> None:
    """An observation crossing the test's end is deregistered at its last microsecond; one
    reaching into its own next repetition a microsecond before that one registers; counted."""
    write_derived(tmp_path / "derived", ROWS + OBS_ROWS)
    out = generate(_workload(_spec(spec_file, length="1130us")), tmp_path / "wl")
    info = json.loads(out.expected.read_text())["replay"]
    # copy 0 of dev 1 (emulated 1): OBS at 10 + 156.25 m for 50 us; the one at 1103 is cut at 1129
    assert [live for d, live in _observations(_trace(tmp_path / "wl")) if d == 1] == [50] * 7 + [26]
    assert info["observations_cut"] == 1 and info["observations_dropped"] == 0
    # an observation of 400 us in a 312.5 us period: each cut before the next; the previous
    # repetition's tail, registered at 0 as the next one is, has nothing left: dropped
    write_derived(tmp_path / "long", ROWS + [(1, 0, "OBS", "/o"), (1, 400, "UNOBS", "/o")])
    out = generate(_workload(_spec(spec_file, src="long", length="1ms", a=1, b=1, extra="")), tmp_path / "w2")
    trace = _trace(tmp_path / "w2")
    spans = [(int(t), m) for d, t, m, *_ in trace if d == "1" and m in ("OBS", "UNOBS")]
    assert spans == [(0, "OBS"), (311, "UNOBS"), (312, "OBS"), (624, "UNOBS"), (625, "OBS"), (936, "UNOBS"),
                     (937, "OBS"), (999, "UNOBS")] and _closed(trace)[1]
    info = json.loads(out.expected.read_text())["replay"]
    assert info["observations"] == 4 and info["observations_cut"] == 4 and info["observations_dropped"] == 1


def test_empirical_service_is_seeded(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    spec = _spec(spec_file, extra="    devices: 2\n    service: empirical")
    generate(_workload(spec), tmp_path / "w1")
    generate(_workload(spec), tmp_path / "w2")
    assert (tmp_path / "w1" / "trace.csv").read_bytes() == (tmp_path / "w2" / "trace.csv").read_bytes()
    res = (tmp_path / "w1" / "resources" / "dev-0.csv").read_text().splitlines()
    assert res == ["path,service_us", "/a,100", "/c,300", "/a/_e0,50", "/a/_e1,100", "/a/_e2,150"]
    uris = {row[3] for row in _trace(tmp_path / "w1") if row[0] == "0"}
    assert uris <= {"coap://dev-0/a/_e0", "coap://dev-0/a/_e1", "coap://dev-0/a/_e2", "coap://dev-0/c"}
    assert len(uris) >= 3
    spec.write_text(spec.read_text().replace("seed: 3", "seed: 4"))
    generate(_workload(spec), tmp_path / "w3")
    assert (tmp_path / "w3" / "trace.csv").read_bytes() != (tmp_path / "w1" / "trace.csv").read_bytes()


def test_a_count_mismatch_is_one_line(run_cli: Run, spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    rc, _, err = run_cli("tracegen", "--spec", _spec(spec_file, a=2, b=1), "--out", tmp_path / "wl")
    assert rc == 2 and err.count("\n") == 1 and "sum to 3" in err and "= 4" in err and "exp.yaml:" in err
    assert not (tmp_path / "wl").exists()


def test_a_capture_file_is_derived_first(run_cli: Run, spec_file: SpecFile, tmp_path: Path) -> None:
    write(tmp_path / "cap.pcap", mixed())
    spec = _spec(spec_file, src="cap.pcap", a=1, b=1, extra="    rate: 4")
    rc, out, err = run_cli("tracegen", "--spec", spec, "--out", tmp_path / "out" / "wl")
    assert rc == 0, err
    rows = _trace(tmp_path / "out" / "wl")
    assert {r[3] for r in rows} <= {"coap://dev-0/sensors/temp", "coap://dev-1/act", "coap://dev-0/sensors/hum"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["wl"]      # the derived folder is gone
    kept = tmp_path / "out" / "wl" / "source"       # but kept in the output, the capture itself not
    assert (kept / "capture.json").is_file() and (kept / "trace.csv").is_file() and not list(kept.glob("*.pcap"))
    info = json.loads((tmp_path / "out" / "wl" / "expected.json").read_text())["replay"]
    assert info["capture"] is True
    assert info["sha256"] == hashlib.sha256((tmp_path / "cap.pcap").read_bytes()).hexdigest()
    (tmp_path / "cap.pcap").write_bytes(b"not a capture at all")
    rc, _, err = run_cli("tracegen", "--spec", spec, "--out", tmp_path / "out2" / "wl")
    assert rc == 2 and "not a pcap or pcapng capture" in err and err.count("\n") == 1
    assert not (tmp_path / "out2").exists()


def test_a_stream_without_span_is_played_once(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived", [(0, 0, "GET", "/a"), (1, 0, "GET", "/b")])
    out = generate(_workload(_spec(spec_file, length="1ms", a=2, b=2, extra="    devices: 2")), tmp_path / "wl")
    # copy 1 of each device at half the test's length
    assert [(int(e), int(t)) for e, t, *_ in _trace(tmp_path / "wl")] == [(0, 0), (1, 0), (2, 500), (3, 500)]
    assert out.requests == 4


def _observations(trace: list[list[str]]) -> list[tuple[int, int]]:
    """(emulated device, live us) of each observation of a trace (OBS to its UNOBS)."""
    start: dict[tuple[str, str], int] = {}
    out = []
    for d, t, m, uri, *_ in trace:
        if m == "OBS":
            start[(d, uri)] = int(t)
        elif m == "UNOBS":
            out.append((int(d), int(t) - start.pop((d, uri))))
    return out


def test_observations_are_expected(spec_file: SpecFile, tmp_path: Path) -> None:
    """expected.json's observe (what the report's observe check judges by): per group, the
    observations of the replayed trace and their events, live time / mean + the registration's."""
    write_derived(tmp_path / "derived", ROWS + OBS_ROWS, observe_rit="det:1000")
    out = generate(_workload(_spec(spec_file, length="1ms")), tmp_path / "wl")
    doc = json.loads(out.expected.read_text())
    obs = _observations(_trace(tmp_path / "wl"))
    assert doc["observe"]["observations"] == len(obs) == doc["replay"]["observations"] > 0
    for name, devs in (("a", (0, 1)), ("b", (2, 3))):
        g = next(x for x in doc["observe"]["groups"] if x["group"] == name)
        mine = [live for d, live in obs if d in devs]
        assert g["observations"] == len(mine) and g["device_rit"] == "det:1000" and g["max_age_s"] == 60
        assert g["expected_events"] == pytest.approx(sum(live / 1000 + 1 for live in mine), abs=1e-3)
    total = doc["observe"]
    assert total["expected_events"] == pytest.approx(sum(live / 1000 + 1 for _, live in obs), abs=1e-3)
    assert total["registration_us"][0] >= 0 and total["deregistration_us"][1] < 1000
    # a resource the capture never saw notify (no observe_rit): no process to judge by, said so
    write_derived(tmp_path / "plain", ROWS + OBS_ROWS)
    out = generate(_workload(_spec(spec_file, src="plain", length="1ms")), tmp_path / "wl2")
    groups = json.loads(out.expected.read_text())["observe"]["groups"]
    assert groups and all(g["device_rit"] is None and g["expected_events"] is None for g in groups)


def test_the_source_is_kept(spec_file: SpecFile, tmp_path: Path) -> None:
    """The output holds the derived folder it replayed (a run folder stands alone): replaying
    that copy gives the same workload."""
    write_derived(tmp_path / "derived")
    generate(_workload(_spec(spec_file)), tmp_path / "w1")
    kept = tmp_path / "w1" / "source"
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        p.name for p in (tmp_path / "derived").iterdir())
    generate(_workload(_spec(spec_file, src=str(kept))), tmp_path / "w2")
    assert (tmp_path / "w1" / "trace.csv").read_bytes() == (tmp_path / "w2" / "trace.csv").read_bytes()


def _edit(path: Path, line: int, text: str) -> None:
    """Line ``line`` (1 = the header) of ``path`` replaced by ``text``."""
    lines = path.read_text().splitlines()
    lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n")


SECRET = "s3cr3t"


@pytest.mark.parametrize(("name", "line", "text", "where"), [
    ("trace.csv", 3, f"{SECRET},50,PUT,coap://dev-1/b,xxx", "trace.csv:3: device_id: not an integer 0..1"),
    ("trace.csv", 3, "7,50,PUT,coap://dev-1/b,xxx", "trace.csv:3: device_id: not an integer 0..1"),
    ("trace.csv", 3, f"\n# {SECRET}\n9,50,PUT,coap://dev-1/b,xxx", "trace.csv:5: device_id: not an integer"),
    ("trace.csv", 4, f"0,{SECRET},GET,coap://dev-0/a,", "trace.csv:4: send_ts_us: not an integer"),
    ("trace.csv", 4, "0,10,GET,coap://dev-0/a,", "trace.csv:4: send_ts_us: earlier than the line before"),
    ("trace.csv", 2, f"0,0,{SECRET},coap://dev-0/a,", "trace.csv:2: method: not GET"),
    ("trace.csv", 4, "0,100", "trace.csv:4: method: not GET"),
    ("trace.csv", 5, f"0,200,GET,http://{SECRET}/c,", "trace.csv:5: uri: not coap://HOST/path[?query]"),
    ("trace.csv", 5, f"0,200,GET,coap://dev-0/c,x,{SECRET}", "trace.csv:5: line: not a CSV line"),
    ("trace.csv", 1, f"device_id,send_ts_us,{SECRET},uri", "trace.csv:1: header: not device_id,send_ts_us"),
    ("resources/dev-1.csv", 2, f"/b,{SECRET}", "resources/dev-1.csv:2: service_us: not an integer 0..1000000000"),
    ("resources/dev-1.csv", 3, f"{SECRET},10", "resources/dev-1.csv:3: path: not a path starting with '/'"),
    ("resources/dev-0.csv", 3, "/a,10", "resources/dev-0.csv:3: path: not a path starting with '/', at most"),
    ("resources/dev-0.csv", 1, f"path,{SECRET}", "resources/dev-0.csv:1: header: not path,service_us"),
    ("resources/dev-0.csv", 2, f"/a,1,{SECRET}", "resources/dev-0.csv:2: line: more than the header's 2 fields"),
    ("resources/dev-1.csv", 0, "", "resources/dev-1.csv: file: missing or not a regular file"),
    ("trace.csv", 0, "", "trace.csv: file: missing or not a regular file"),
    ("service/dev-0.csv", 3, f"/a,{SECRET}", "service/dev-0.csv:3: service_us: not an integer 0..1000000000"),
])
def test_a_bad_derived_file_is_one_line(run_cli: Run, spec_file: SpecFile, tmp_path: Path, name: str, line: int,
                                        text: str, where: str) -> None:
    """A derived folder is outside input (a user may edit it): a bad file, line or cell is one
    line naming the file, the line and the field, never the file's content; nothing written."""
    write_derived(tmp_path / "derived")
    f = tmp_path / "derived" / name
    if line:
        _edit(f, line, text)
    else:
        f.unlink()
    spec = _spec(spec_file, extra="    devices: 2\n    service: empirical")
    rc, _, err = run_cli("tracegen", "--spec", spec, "--out", tmp_path / "wl")
    assert rc == 2 and err.count("\n") == 1 and SECRET not in err, err
    assert f"{tmp_path}/derived/{where}" in err, err
    assert not (tmp_path / "wl").exists()


def test_a_query_stays_after_the_bin(spec_file: SpecFile, tmp_path: Path) -> None:
    """URIs with a query (path?query): the resource is the path (its median, its bins); the bin's
    ``/_e<j>`` goes on the path, the query after it; an observation is of its path?query."""
    rows = [(d, t, m, p.replace("/a", "/a?x=1&y") if t % 200 == 0 else p) for d, t, m, p in ROWS]
    write_derived(tmp_path / "derived", rows + [(1, 20, "OBS", "/o?k=v"), (1, 120, "UNOBS", "/o?k=v")],
                  observe_rit="det:1000")
    med = generate(_workload(_spec(spec_file, length="1ms")), tmp_path / "w1")
    trace = _trace(tmp_path / "w1")
    assert {r[3] for r in trace if r[0] == "0"} == {"coap://dev-0/a?x=1&y", "coap://dev-0/a", "coap://dev-0/c"}
    assert {r[2] for r in trace if r[3].endswith("/o?k=v")} == {"OBS", "UNOBS"} and _closed(trace)[1]
    doc = json.loads(med.expected.read_text())
    assert doc["device_stats"][0]["service"]["p5_us"] == 100          # /a?x=1&y is /a's 100 us, not 0
    assert doc["observe"]["groups"][0]["device_rit"] == "det:1000"   # /o?k=v observes /o
    extra = "    devices: 2\n    rate: 2\n    service: empirical"
    emp = generate(_workload(_spec(spec_file, length="1ms", extra=extra)), tmp_path / "w2")
    uris = {r[3] for r in _trace(tmp_path / "w2") if r[0] == "0"}
    assert uris <= {f"coap://dev-0/a/_e{j}{q}" for j in range(3) for q in ("", "?x=1&y")} | {"coap://dev-0/c"}
    assert any(u.endswith("?x=1&y") for u in uris) and emp.requests == med.requests
    res = (tmp_path / "w2" / "resources" / "dev-0.csv").read_text()
    assert "/a/_e1,100" in res and "?" not in res
