"""A generated workload is accepted and served by the real wotbench-device and wotbench-ge.

Runs the C binaries on loopback (build them with ``make build``). Skips only
when they are absent and CI is not set.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wotbench.base.formats import GE_OUTPUT_COLUMNS
from wotbench.spec import WorkloadSpec
from wotbench.tracegen._generate import generate

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "build" / "bin"
DEVICE, GE = BIN / "wotbench-device", BIN / "wotbench-ge"


@pytest.fixture(scope="module")
def binaries() -> tuple[Path, Path]:
    if not (DEVICE.exists() and GE.exists()):
        if os.environ.get("CI"):
            pytest.fail(f"{DEVICE} / {GE} missing (run make build)")
        pytest.skip("wotbench-device / wotbench-ge not built (make build)")
    return DEVICE, GE


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def devices(binaries: tuple[Path, Path]) -> Iterator[Callable[[Path], int]]:
    """start(resource_file) -> UDP port of a running wotbench-device; all stopped afterwards."""
    procs: list[subprocess.Popen[str]] = []

    def start(resources: Path) -> int:
        port = _free_udp_port()
        p = subprocess.Popen([str(binaries[0]), "--listen", f"127.0.0.1:{port}", "--resources",
                              str(resources), "--threads", "2"], stderr=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stderr is not None
        first = p.stderr.readline()  # the device prints this once its socket is bound
        assert " resources on " in first, first + p.stderr.read()
        return port

    yield start
    for p in procs:
        if p.poll() is None:
            p.terminate()
        try:
            p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()


def _run_ge(ge: Path, trace: Path, hosts: Path, out: Path) -> dict[str, object]:
    summary = out.with_suffix(".summary.json")
    proc = subprocess.run([str(ge), "--trace", str(trace), "--hosts", str(hosts), "--out", str(out),
                           "--summary", str(summary), "--timeout-ms", "3000", "--quiet"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, object] = json.loads(summary.read_text())
    return doc


def test_ge_and_devices_accept_and_serve_the_workload(
        load_spec: Callable[[str], WorkloadSpec], devices: Callable[[Path], int],
        binaries: tuple[Path, Path], tmp_path: Path) -> None:
    spec = load_spec("""
        workload: {seed: 3, duration: 2s}
        devices:
          - {name: s, count: 2, rit: exp:40ms, service: exp:2ms, resources: 8,
             methods: {GET: 0.6, PUT: 0.2, POST: 0.1, DELETE: 0.1}, payload_bytes: 10}
          - {name: t, count: 1, rit: det:100ms, service: "uniform:1ms,3ms", resources: 4}
        cd: {rit: 200ms, calibration: 0s}
    """)
    wl = generate(spec, tmp_path / "wl")
    ports = {d: devices(path) for d, path in wl.resources.items()}
    ports[wl.cd_device_id] = devices(wl.cd_resource)
    hosts = tmp_path / "hosts.csv"
    hosts.write_text("host,address\n" + "".join(
        f"{wl.host(d) if d != wl.cd_device_id else wl.cd_host},127.0.0.1:{p}\n" for d, p in ports.items()))

    out = tmp_path / "ge.csv"
    _run_ge(binaries[1], wl.trace, hosts, out)
    res = pd.read_csv(out, keep_default_na=False)
    trace = pd.read_csv(wl.trace)
    assert list(res.columns) == list(GE_OUTPUT_COLUMNS)
    assert len(res) == len(trace) == wl.requests
    assert (res.status == "ok").all(), res[res.status != "ok"].head()
    assert list(res.device_id) == list(trace.device_id) and list(res.uri) == list(trace.uri)
    assert list(res["method"]) == list(trace["method"])
    # The service time each response carries (option 65000) is the one tracegen assigned.
    table = {d: pd.read_csv(p).set_index("path").service_us for d, p in wl.resources.items()}
    want = [table[d]["/" + u.split("/", 3)[3]] for d, u in zip(trace.device_id, trace.uri, strict=True)]
    assert list(res.service_us.astype(int)) == want
    assert (res.response_us.astype(int) >= res.service_us.astype(int)).all()  # R >= S by construction
    codes = dict(zip(["GET", "PUT", "POST", "DELETE"], ["2.05", "2.04", "2.04", "2.02"], strict=True))
    assert list(res.code.astype(str)) == [codes[m] for m in trace["method"]]

    cd_out = tmp_path / "cd.csv"
    _run_ge(binaries[1], wl.cd_trace, hosts, cd_out)
    cd = pd.read_csv(cd_out, keep_default_na=False)
    assert len(cd) == 10 and (cd.status == "ok").all()
    assert (cd.service_us.astype(int) == wl.cd_service_us).all()
    assert np.all(np.diff(cd.intended_us.astype(int)) == 200_000)
