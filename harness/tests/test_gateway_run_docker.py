"""A gateway under test end to end on real Docker: experiments/gateway.yaml
at ci scale through the shipped aiocoap forward proxy (wotbench/gw-aiocoap,
make images-gateways), each other shipped gateway (libcoap with Proxy-Uri,
Node-RED over HTTP) in a shorter run of the same spec (5 devices, 4 s of
measurement: what it proves is the path, not a number), and bad gateways. The run's every workload request
goes to the gateway and reaches the device it names (the GE's summary names it, the codes of every row
are the gateway's answers), the gateway's container has its own cores and
the hardening of every container, and nothing of the run is left behind.
A missing image is refused before anything starts; a gateway that never
gets ready (silent, or exiting) ends the run with one line naming why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import docker.errors
import pytest

from wotbench.engine import dockerenv
from wotbench.execution.placement import cpu_ids

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
EXPERIMENT = REPO / "experiments" / "gateway.yaml"
AIOCOAP = dockerenv.GATEWAY_IMAGE.format(name="aiocoap")
ROLE = f"{dockerenv.LABEL_ROLE}=gateway"


def _cli(*args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wotbench.commands.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def _left(c: Any, run_id: str) -> tuple[list[Any], list[Any]]:
    flt = {"label": f"{dockerenv.LABEL_RUN}={run_id}"}
    return c.containers.list(all=True, filters=flt, ignore_removed=True), c.networks.list(filters=flt)


class GatewayWatch:
    """Inspects the gateway container of a run while it runs (it is gone
    after the teardown): its HostConfig and labels, once."""

    def __init__(self, c: Any, name: str) -> None:
        self.c, self.name = c, name
        self.seen: dict[str, Any] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(0.2) and self.seen is None:
            for ct in self.c.api.containers(filters={"label": [ROLE]}):
                run = (ct.get("Labels") or {}).get(dockerenv.LABEL_RUN, "")
                if f"-{self.name}-" in run:
                    try:
                        self.seen = self.c.api.inspect_container(ct["Id"])
                    except docker.errors.NotFound:
                        continue

    def __enter__(self) -> GatewayWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(5)


def _need_image(c: Any, ref: str) -> None:
    try:
        c.images.get(ref)
    except docker.errors.ImageNotFound:
        reason = f"image {ref} missing (make images-gateways)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: Docker tests must run)")
        pytest.skip(reason)


@pytest.fixture
def aiocoap(docker_client: Any) -> Any:
    _need_image(docker_client, AIOCOAP)
    return docker_client


def _through_the_gateway(c: Any, run: Path, devices: int) -> None:
    """Every workload request of the run went to the gateway and got its
    answer, every device served exactly what was sent to it (none got
    another's requests, none was skipped), and nothing of the run is left.
    The routing assertion comes last: a gateway that misroutes fails on it
    with the report's own words."""
    manifest = json.loads((run / "manifest.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    gw = manifest["gateway"]
    north = json.loads((run / "ge" / "ge-0.summary.json").read_text())["north"]
    assert north["mode"] == gw["north"] and north["gateway"] == f"{gw['address']}:{gw['port']}"
    assert north["protocol"] == ("http" if gw["north"] == "http" else "coap")
    cd_ge = run / "cd" / "cd-ge.summary.json"
    if cd_ge.is_file():                                    # the CD pair (if any) stays direct
        assert (json.loads(cd_ge.read_text()).get("north") or {}).get("gateway") is None
    sec = summary["gateway"]
    assert sec is not None and sec["requests"] == summary["measure_counts"]["requests"] > 100
    assert sum(sec["codes"].values()) == sec["requests"]
    assert sec["ok"] == sum(n for code, n in sec["codes"].items() if code.startswith("2")), sec["codes"]
    assert sec["ok"] > 0.9 * sec["requests"], sec["codes"]
    assert sec["usage"]["samples"] > 0 and sec["usage"]["cpu_mean_pct"] is not None
    observed = json.loads((run / "observed.json").read_text())
    assert [ct["role"] for ct in observed["containers"].values()].count("gateway") == 1
    cts, nets = _left(c, manifest["run_id"])
    assert not cts and not nets
    r = sec["routing"]
    assert r is not None and r["devices"] == devices and r["served"] == r["sent"] > 0, sec.get("answer")
    assert r["served_more"] == 0 and r["served_fewer"] == 0, sec.get("answer")


def test_the_gateway_experiment_sends_every_request_through_aiocoap(aiocoap, tmp_path):
    with GatewayWatch(aiocoap, "gateway") as watch:
        proc = _cli("run", str(EXPERIMENT), "--scale", "ci", "--results", str(tmp_path), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = [Path(line) for line in proc.stdout.split()]
    manifest = json.loads((run / "manifest.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    gw = manifest["gateway"]
    # the gateway as run: its image, its own cores, its address
    assert gw["image"] == "aiocoap" and gw["image_ref"] == AIOCOAP and gw["north"] == "coap-scheme"
    assert gw["image_id"] == aiocoap.images.get(AIOCOAP).id == manifest["images"]["gateway"]
    assert gw["command"] is None and gw["cores"] == 1 and gw["ready_seconds"] is not None
    place = manifest["placement"]
    gw_cores = set(cpu_ids(gw["cpuset"]))
    assert gw_cores == set(place["gateway_cores"]) and len(gw_cores) == 1
    others = set(place["ge_cores"]) | set(cpu_ids(place["cd_ge_cpuset"])) | set(cpu_ids(place["cd_node_cpuset"]))
    others |= {c for cs in place["device_cpusets"] for c in cpu_ids(cs)} | set(place["reserved"])
    assert not gw_cores & others
    # the container, seen while it ran: hardened, on those cores, labelled
    seen = watch.seen
    assert seen is not None, "the gateway container was never seen running"
    host = seen["HostConfig"]
    assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"] and host["ReadonlyRootfs"]
    assert set(cpu_ids(host["CpusetCpus"])) == gw_cores
    assert host["Memory"] == host["MemorySwap"] == 256 << 20 and host["PidsLimit"] == 64
    assert "/tmp" in (host.get("Tmpfs") or {}) and not host.get("Privileged")
    assert seen["Config"]["Labels"][dockerenv.LABEL_RUN] == manifest["run_id"]
    assert any(h.startswith("dev-0:") for h in host.get("ExtraHosts") or [])
    assert summary["gateway"]["answer"]           # the gateway's answer, apart from the verdict
    # every workload request went to the gateway, reached the device it names and got its answer
    _through_the_gateway(aiocoap, run, 20)


#: The spec of the other shipped gateways' runs: experiments/gateway.yaml at
#: ci scale with 5 devices at 20 requests/s each (400 requests in 4 s) and
#: no CD pair (the path through the gateway is the point, not a verdict).
SHORT = {"devices[0].count": 5, "devices[0].rit": "exp:50ms", "cd": {"enabled": False},
         "phases": {"warmup": "1s", "measure": "4s", "cooldown": "1s"},
         "validity": {"min_measure": "4s", "min_requests": 100}}


def _short_spec(tmp_path: Path, name: str, north: str) -> Path:
    """experiments/gateway.yaml with a scale ``short`` naming the gateway."""
    import yaml

    doc = yaml.safe_load(EXPERIMENT.read_text())
    doc["scales"] = {"short": {**SHORT, "gateway_under_test.image": name, "gateway_under_test.north": north,
                               "gateway_under_test.port": None, "gateway_under_test.ready": None,
                               "gateway_under_test.ready_timeout": "60s"}}
    path = tmp_path / f"gateway-{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.mark.parametrize("name, north", [("libcoap", "coap-uri"), ("nodered", "http")])
def test_each_other_shipped_gateway_routes_every_request_to_its_device(docker_client, tmp_path, name, north):
    ref = dockerenv.GATEWAY_IMAGE.format(name=name)
    _need_image(docker_client, ref)
    proc = _cli("run", str(_short_spec(tmp_path, name, north)), "--scale", "short", "--results",
                str(tmp_path / "results"), "--no-progress")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = [Path(line) for line in proc.stdout.split()]
    gw = json.loads((run / "manifest.json").read_text())["gateway"]
    assert gw["image"] == name and gw["image_ref"] == ref and gw["north"] == north
    assert gw["port"] == (1880 if name == "nodered" else 5683)
    _through_the_gateway(docker_client, run, 5)


BAD = """\
name: badgw
workload: {seed: 1, rit_scope: device}
devices:
  - {name: d, count: 2, rit: exp:100ms, service: det:1ms}
gateway: {instances: 1}
cd: {enabled: false}
phases: {warmup: 1s, measure: 3s, cooldown: 1s}
gateway_under_test:
"""


def _bad_run(tmp_path: Path, section: str) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD + section)
    results = tmp_path / "results"
    return _cli("run", str(path), "--results", str(results), "--no-progress", timeout=240), path, results


def _no_run_left(c: Any, results: Path) -> None:
    for d in results.iterdir() if results.is_dir() else ():
        cts, nets = _left(c, d.name)
        assert not cts and not nets, d.name


def test_a_missing_image_is_refused_before_anything_starts(docker_client, tmp_path):
    before = len(docker_client.containers.list(all=True, filters={"label": dockerenv.LABEL_RUN}))
    proc, path, results = _bad_run(tmp_path, "  image: wotbench/no-such-gateway:none\n  north: coap-uri\n")
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}:9: gateway_under_test.image: image wotbench/no-such-gateway:none "
                           "is missing")
    assert not results.exists() or not list(results.iterdir())
    assert len(docker_client.containers.list(all=True, filters={"label": dockerenv.LABEL_RUN})) <= before


@pytest.mark.parametrize("command, why", [
    ('["sleep", "60"]', "no answer to"),                     # never answers its CoAP ping
    ('["sh", "-c", "exit 3"]', "its container stopped before it was ready"),
])
def test_a_gateway_never_ready_ends_the_run_with_why_and_leaves_nothing(docker_client, tmp_path, command, why):
    proc, path, results = _bad_run(tmp_path, f"  image: {dockerenv.IMAGES['nettools']}\n  command: {command}\n"
                                             "  north: coap-uri\n  ready_timeout: 3s\n")
    assert proc.returncode == 2, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: {path}:") and "gateway_under_test.ready: the gateway under test" in last
    assert "never got ready" in last and why in last, last
    (run,) = list(results.iterdir())
    assert (run / "INCOMPLETE").is_file() and not (run / "summary.json").exists()
    assert list((run / "logs").glob("*-gateway.log"))
    _no_run_left(docker_client, results)
