"""The shipped gateways under test (docker/gw-*.Dockerfile, make images-gateways):
each image, run as the harness runs every container (no capabilities, no
privilege gain, read-only root filesystem, a tmpfs /tmp, uid 65534) on a
network of its own, carries real requests from a real client (libcoap's
coap-client-notls, Python's HTTP client) to the one of two wotbench/device
containers that the request names, and back; and the test leaves no
container or network behind (found by its label). Real Docker."""

from __future__ import annotations

import http.client
import ipaddress
import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import docker.types
import pytest

from wotbench.engine import dockerenv

pytestmark = pytest.mark.docker

GATEWAYS = {"libcoap": ("coap", "5683"), "aiocoap": ("coap", "5683"), "nodered": ("http", "1880")}
LABEL = "org.wotbench.test"
RUN = f"gateway-images-{os.getpid()}"
#: The two devices' one resource; its payload (service_us=N) names the device that answered.
SERVICE_US = {"a": 1000, "b": 2000}
READY_S = 60
REPO = Path(__file__).resolve().parents[2]


@dataclass
class Lab:
    """The test's network and devices."""

    c: Any
    net: Any
    subnet: ipaddress.IPv4Network
    device: dict[str, str]          # device name -> address


def _address(ct: Any, net: Any) -> str:
    ct.reload()
    assert ct.status == "running", ct.logs().decode(errors="replace")
    return str(ct.attrs["NetworkSettings"]["Networks"][net.name]["IPAddress"])


def _start(lab: Lab, name: str, image: str, command: list[str] | None = None, **kw: Any) -> Any:
    """A container hardened as the harness makes them (engine.dockerenv.hardening)."""
    return lab.c.containers.run(image, command, name=f"wbtest-{RUN}-{name}", detach=True, network=lab.net.name,
                                user="65534:65534", tmpfs={"/tmp": "rw,nosuid,nodev,size=64m"},
                                labels={LABEL: RUN}, **kw,
                                **dockerenv.hardening(memory_bytes=512 << 20, pids=64))


def _leftovers(c: Any) -> tuple[list[Any], list[Any]]:
    flt = {"label": f"{LABEL}={RUN}"}
    return c.containers.list(all=True, filters=flt, ignore_removed=True), c.networks.list(filters=flt)


def _remove_all(c: Any) -> None:
    cts, nets = _leftovers(c)
    for ct in cts:
        try:
            ct.remove(force=True)
        except docker.errors.NotFound:
            pass
    for net in nets:
        net.remove()


@pytest.fixture(scope="module")
def lab(docker_client: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    # The images as their Dockerfiles say now: build-images.sh (make
    # images-gateways) builds a missing or stale one, and skips an up-to-date
    # one in a tenth of a second.
    built = subprocess.run(["bash", "docker/build-images.sh", "--gateways"], cwd=REPO, capture_output=True,
                           text=True, timeout=900)
    assert built.returncode == 0, built.stdout + built.stderr
    folder = tmp_path_factory.mktemp("devices")
    with dockerenv.subnet_lock():              # as runs pick theirs: concurrent ones take turns
        subnet = dockerenv.free_subnets(dockerenv.used_subnets(docker_client), 1)[0]
        ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(subnet),
                                                                           gateway=str(next(subnet.hosts())))])
        net = docker_client.networks.create(f"wbtest-{RUN}", driver="bridge", internal=True, ipam=ipam,
                                            labels={LABEL: RUN})
    the_lab = Lab(docker_client, net, subnet, {})
    try:
        for name, service_us in SERVICE_US.items():
            csv = folder / f"{name}.csv"
            csv.write_text(f"path,service_us\n/r/0,{service_us}\n")
            csv.chmod(0o644)
            ct = _start(the_lab, f"dev-{name}", dockerenv.IMAGES["device"],
                        ["--resources", "/r.csv", "--threads", "2"],
                        volumes={str(csv): {"bind": "/r.csv", "mode": "ro"}})
            the_lab.device[name] = _address(ct, net)
        yield the_lab
    finally:
        _remove_all(docker_client)
    assert _leftovers(docker_client) == ([], []), "the test left containers or networks behind"


def _gateway(lab: Lab, name: str, **kw: Any) -> tuple[Any, str]:
    image = dockerenv.GATEWAY_IMAGE.format(name=name)
    labels = lab.c.images.get(image).labels
    north, port = GATEWAYS[name]
    assert (labels["org.wotbench.gateway.north"], labels["org.wotbench.gateway.port"]) == (north, port)
    ct = _start(lab, f"gw-{name}", image, **kw)
    return ct, _address(ct, lab.net)


def _coap(*args: str) -> tuple[int, str, str]:
    """One request by coap-client-notls: its exit status, the payload (the
    last line of stdout, where libcoap's warnings also go, e.g. an ICMP
    refusal before the gateway bound) and stderr (a code other than 2.xx)."""
    p = subprocess.run(["coap-client-notls", "-B", "3", *args], capture_output=True, text=True, timeout=30)
    lines = p.stdout.strip().splitlines()
    return p.returncode, lines[-1] if lines and " WARN " not in lines[-1] else "", p.stderr


def _until_answered(ct: Any, *args: str) -> str:
    """The first answer of a CoAP request repeated until the gateway is up (a
    gateway container takes a moment to bind; bounded by READY_S)."""
    deadline = time.monotonic() + READY_S
    while True:
        rc, out, err = _coap(*args)
        if rc == 0 and out:
            return out
        ct.reload()
        assert ct.status == "running" and time.monotonic() < deadline, (rc, out, err,
                                                                         ct.logs().decode(errors="replace"))
        time.sleep(0.5)


def _stop(ct: Any) -> str:
    """Stops a gateway; its whole log (the test asks each to log little)."""
    ct.stop(timeout=5)
    logs = ct.logs().decode(errors="replace")
    ct.remove(force=True)
    return str(logs)


def test_libcoap_forwards_proxy_uri_and_proxy_scheme_to_the_named_device(lab: Lab) -> None:
    ct, gw = _gateway(lab, "libcoap")
    try:
        b = lab.device["b"]
        got = _until_answered(ct, "-P", f"coap://{gw}:5683", f"coap://{b}:5683/r/0")
        assert got == "service_us=2000"
        a = lab.device["a"]
        rc, got, err = _coap("-O", "39,coap", "-O", f"3,{a}", f"coap://{gw}:5683/r/0")   # Proxy-Scheme, Uri-Host
        assert (rc, got) == (0, "service_us=1000"), err
        rc, got, err = _coap("-P", f"coap://{gw}:5683", f"coap://{b}:5683/nothing")
        assert (rc, got) == (0, "") and re.search(r"^4\.04\b", err, re.M), err
    finally:
        logs = _stop(ct)
    assert logs == "", logs


def _non_get(token: int, proxy_uri: str) -> bytes:
    """A NON GET with a 1-byte token and one Proxy-Uri option (35; RFC 7252 3.1)."""
    uri = proxy_uri.encode()
    assert 13 <= len(uri) < 269
    return bytes([0x51, 0x01, 0x12, token, token, 0xDD, 35 - 13, len(uri) - 13]) + uri


def test_libcoap_sends_every_request_of_one_client_to_its_first_device(lab: Lab) -> None:
    """libcoap 4.3.1's proxy keeps one upstream session per client session,
    made for the first request's host: from one source port, a request naming
    device b after one naming device a is served by a (docker/gw-libcoap.Dockerfile)."""
    ct, gw = _gateway(lab, "libcoap")
    try:
        a, b = lab.device["a"], lab.device["b"]
        _until_answered(ct, "-P", f"coap://{gw}:5683", f"coap://{a}:5683/r/0")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(10)
            got = []
            for token, dev in enumerate((a, b, a, b)):
                s.sendto(_non_get(token, f"coap://{dev}:5683/r/0"), (gw, 5683))
                data = s.recv(2048)
                assert data[1] == 0x45 and data[4] == token, data      # 2.05, the token echoed
                got.append(data.rsplit(b"\xff", 1)[1].decode())
        assert got == ["service_us=1000"] * 4
    finally:
        _stop(ct)


def test_aiocoap_forwards_proxy_scheme_and_refuses_proxy_uri(lab: Lab) -> None:
    ct, gw = _gateway(lab, "aiocoap")
    try:
        b = lab.device["b"]
        got = _until_answered(ct, "-O", "39,coap", "-O", f"3,{b}", f"coap://{gw}:5683/r/0")
        assert got == "service_us=2000"
        # aiocoap 0.4.17's ForwardProxy does not split a Proxy-Uri: 5.01 (the
        # image's org.wotbench.gateway.modes label says coap-scheme only).
        rc, got, err = _coap("-P", f"coap://{gw}:5683", f"coap://{b}:5683/r/0")
        assert (rc, got) == (0, "") and re.search(r"^5\.01 URI splitting not implemented", err, re.M), err
    finally:
        logs = _stop(ct)
    assert "Traceback" not in logs, logs


def _http(gw: str, method: str, target: str, body: str | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection(gw, 1880, timeout=30)
    try:
        conn.request(method, target, body=body, headers={"Content-Type": "text/plain"} if body else {})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _http_until_up(ct: Any, gw: str) -> None:
    """Until the flow answers: Node-RED's HTTP server is up (404 "Cannot GET")
    before its flow's /proxy route is deployed, which answers a non-CoAP
    target 400."""
    deadline = time.monotonic() + READY_S
    while True:
        try:
            status = _http(gw, "GET", "/proxy/http://x/")[0]
            if status != 404:
                return
            exc: Exception = AssertionError(f"the flow is not deployed yet: {status}")
        except OSError as err:
            exc = err
        ct.reload()
        assert ct.status == "running" and time.monotonic() < deadline, (exc, ct.logs().decode(errors="replace"))
        time.sleep(0.5)


def test_nodered_maps_http_to_coap_and_coap_codes_to_http_statuses(lab: Lab) -> None:
    ct, gw = _gateway(lab, "nodered", environment={"WOTBENCH_COAP_TIMEOUT_MS": "1500"})
    try:
        _http_until_up(ct, gw)
        a, b = lab.device["a"], lab.device["b"]
        assert _http(gw, "GET", f"/proxy/coap://{b}:5683/r/0") == (200, "service_us=2000")
        assert _http(gw, "GET", f"/proxy/coap://{a}:5683/r/0") == (200, "service_us=1000")
        assert _http(gw, "PUT", f"/proxy/coap://{b}:5683/r/0", "x=1") == (200, "service_us=2000")
        assert _http(gw, "POST", f"/proxy/coap://{a}:5683/r/0", "x=1") == (200, "service_us=1000")
        assert _http(gw, "DELETE", f"/proxy/coap://{b}:5683/r/0") == (200, "service_us=2000")
        assert _http(gw, "GET", "/proxy/http://x/")[0] == 400
        # node-red-contrib-coap 0.6.0 passes a response on only with a payload:
        # the device's empty 4.04 never reaches the flow, whose timer answers 504.
        assert _http(gw, "GET", f"/proxy/coap://{b}:5683/nothing") == (504, "no CoAP response in 1500 ms\n")
        silent = lab.subnet.broadcast_address - 1          # an address nobody holds: no CoAP answer
        status, text = _http(gw, "GET", f"/proxy/coap://{silent}:5683/r/0")
        assert (status, text) == (504, "no CoAP response in 1500 ms\n")
    finally:
        _stop(ct)
