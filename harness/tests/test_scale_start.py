"""Bringing many devices up and down (issue W2 4/5): the phase times the
backend records, the batched readiness probe (real UDP servers on
loopback), staged start-up over several networks and the
teardown with real Docker (small counts, no timing assertions), and the
1,000-device experiment's ci scale end to end."""

from __future__ import annotations

import json
import re
import socket
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from wotbench.engine import readiness as probe
from wotbench.engine._timing import PhaseTimes

REPO = Path(__file__).resolve().parents[2]


# --- phase times (pure) ---------------------------------------------------------

def test_phase_times_summarize_calls_and_walls():
    pt = PhaseTimes()
    for s in (0.010, 0.020, 0.030, 0.040, 1.0):
        pt.call("create", s)
    pt.walls["create"] = 2.0                     # the wall the calls ran in
    assert pt.timed("remove", lambda a, b: a + b, 2, 3) == 5
    got = pt.summary()
    assert list(got) == ["create", "remove"]
    c = got["create"]
    assert c["calls"] == 5 and c["call_median_ms"] == 30.0 and c["call_max_ms"] == 1000.0
    assert c["call_p90_ms"] == pytest.approx(616.0) and c["wall_s"] == 2.0 and c["per_s"] == 2.5
    assert got["remove"]["calls"] == 1 and "wall_s" not in got["remove"] and "per_s" not in got["remove"]


def test_phase_times_wall_adds_up_and_survives_an_error():
    pt = PhaseTimes()
    with pytest.raises(ValueError), pt.wall("start"):
        raise ValueError
    first = pt.walls["start"]                    # recorded although the phase failed
    with pt.wall("start"):
        pass
    assert pt.walls["start"] >= first and pt.summary()["start"] == {"wall_s": round(pt.walls["start"], 3)}


# --- the readiness probe on loopback ----------------------------------------------

def _server(shift: int = 0) -> Iterator[tuple[str, int]]:
    """A UDP server on loopback that answers every CoAP GET with 2.05 and the
    request's message id plus ``shift`` (0: a correct device)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data, addr = sock.recvfrom(2048)
            except TimeoutError:
                continue
            mid = (struct.unpack_from("!H", data, 2)[0] + shift) & 0xFFFF
            sock.sendto(struct.pack("!BBH", 0x60, 0x45, mid), addr)    # ACK 2.05

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        yield sock.getsockname()
    finally:
        stop.set()
        th.join()
        sock.close()


@pytest.fixture
def servers() -> Iterator[list[tuple[str, int]]]:
    gens = [_server(), _server(), _server(shift=1)]
    try:
        yield [next(g) for g in gens]
    finally:
        for g in gens:
            next(g, None)


def test_probe_counts_only_answers_from_the_probed_address(servers):
    good1, good2, liar = servers
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        silent = s.getsockname()                 # closed at once: never answers
    ready = probe.wait_ready([good1, good2, liar, silent], timeout_s=1.5, retry_s=0.05)
    # The liar answers with the id sent to another target (or none of ours):
    # it never counts, nor does a target that never answers.
    assert set(ready) == {good1, good2}
    assert all(isinstance(t, float) for t in ready.values())


# --- real Docker: staged start over two networks, teardown --------------------------

@pytest.mark.docker
def test_start_over_two_networks_then_teardown(docker_client, tmp_path, monkeypatch):
    from wotbench.base import results as res
    from wotbench.engine import DockerBackend, _docker
    from wotbench.execution.phases._provision import device_spec
    from wotbench.spec import DeviceGroup

    monkeypatch.setattr(_docker, "NET_CAPACITY", 14)          # 6 nodes per network
    resources = tmp_path / "r.csv"
    resources.write_text("path,service_us\n/r0,1000\n")
    resources.chmod(0o644)
    tmp_path.chmod(0o755)
    n = 9
    group = DeviceGroup("g", n, mode="sleep", threads=1)
    backend = DockerBackend(docker_client, res.new_run_id("scaletest"), workers=3)
    try:
        assert backend.create_networks(n) == 2
        started = backend.start_nodes([device_spec(f"dev-{i}", i, group, "0", resources, None)
                                       for i in range(n)], progress=False)
        assert [s.key for s in started] == [f"dev-{i}" for i in range(n)]
        assert all(s.address is not None for s in started)
        assert len({str(s.address).rsplit(".", 1)[0] for s in started}) == 2     # both subnets used
        assert backend.wait_ready(started, timeout_s=30) == []
        for st in started:                       # the handles name real containers without an inspect
            assert docker_client.containers.get(st.id).name == st.name
        phases = backend.times.summary()
        for phase in ("create", "start"):
            assert phases[phase]["wall_s"] > 0
        assert phases["create"]["calls"] == phases["start"]["calls"] == n and phases["ready"]["wall_s"] >= 0
        assert backend.slowest_start_s > 0
    finally:
        removed = backend.teardown(progress=False)
    assert (removed.containers, removed.networks, removed.stuck) == (n, 2, ())
    assert backend.times.summary()["remove"]["calls"] == n
    flt = {"label": f"org.wotbench.run={backend.run_id}"}
    assert not docker_client.containers.list(all=True, filters=flt) and not docker_client.networks.list(filters=flt)


# --- the 1,000-device experiment at its ci scale ---------------------------------------

@pytest.mark.docker
@pytest.mark.slow
def test_scale_1000_ci_scale_runs_and_records_where_startup_time_went(docker_client, tmp_path, wotbench_cli):
    spec = REPO / "experiments" / "scale-1000.yaml"
    r = wotbench_cli("run", str(spec), "--scale", "ci", "--results", str(tmp_path), "--no-progress", timeout=400)
    assert r.returncode == 0, r.stderr[-3000:]
    [run_dir] = [Path(line) for line in r.stdout.split()]
    manifest = json.loads((run_dir / "manifest.json").read_text())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] and summary["verdict"] in ("valid", "invalid")
    startup = manifest["startup"]
    assert startup["containers"] == 21 and startup["networks"] == 1      # 20 devices + the CD node
    assert startup["ready_seconds"] >= startup["seconds"] > 0
    for phase in ("create", "start"):
        assert startup["phases"][phase]["calls"] == 21
    assert startup["phases"]["ready"]["wall_s"] >= 0
    # The host-wide ARP table holds 4 entries per container (harness/host/neigh.py): raised here or large enough.
    from wotbench.host import neigh as _neigh
    arp = startup["host_changes"].get("neigh")
    assert arp is None or arp["after"][0] >= _neigh.needed(21)
    assert int((_neigh.NEIGH_DIR / "gc_thresh2").read_text()) >= _neigh.needed(21)
    primed = json.loads((run_dir / "observed.json").read_text())["ges"]["ge-0"]["primed"]
    assert primed["nodes"] == 21 and "skipped" not in primed and primed["answered"] == 21
    m = re.search(r"teardown: removed (\d+) container\(s\), 1 network\(s\) in ", r.stderr)
    assert m and int(m.group(1)) >= 23                # + the GE, the CD-GE (and the monitor)
