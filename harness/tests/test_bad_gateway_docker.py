"""Bad gateways end to end on real Docker (issue 25, item 6): a user's own
gateway (a short Python script in wotbench/gw-aiocoap, which has python3)
that misbehaves, in two short runs (2 devices, 3 s of measurement, no CD
pair):

- CoAP: it answers a third of the requests with garbage, a third with a
  wrong token, a third rightly followed by a flood of unsolicited CoAP
  requests toward the GE, and exits (code 3) after a number of requests;
- HTTP: it accepts connections and never answers (holds them).

Each run completes (a bad gateway never fails the run), its gateway
answer is ``met: false`` naming every way the gateway missed, the
testbed's ``errors`` check does not count the gateway's failures, the
GE's counters match what the gateway says it sent (its log), the
gateway's end state is in gateway.json, and nothing of the run is left.
An image missing and a gateway never ready are in test_gateway_run_docker.py."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import docker.errors
import pytest
import yaml

from wotbench.engine import dockerenv

pytestmark = pytest.mark.docker

AIOCOAP = dockerenv.GATEWAY_IMAGE.format(name="aiocoap")

#: A CoAP "forward proxy" that answers every request itself, badly: request
#: n (1, 2, ...) gets garbage (n % 3 == 0: version 0, not CoAP), a wrong
#: token (n % 3 == 1), or its right answer then FLOOD unsolicited CoAP
#: requests to the GE (n % 3 == 2); an empty CON (ping) gets its RST. After
#: CRASH_AFTER requests it prints what it sent and exits 3.
COAP = r"""
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 5683))
crash, flood = int(os.environ["CRASH_AFTER"]), int(os.environ["FLOOD"])
n = dict(requests=0, garbage=0, wrong_token=0, ok=0, flood=0)
mid = 0
while True:
    data, peer = s.recvfrom(4096)
    if len(data) < 4 or data[0] >> 6 != 1:
        continue
    t, tkl, code, m = data[0] >> 4 & 3, data[0] & 15, data[1], data[2:4]
    if code == 0:
        if t == 0:
            s.sendto(bytes((0x70, 0)) + m, peer)
        continue
    tok = data[4:4 + tkl]
    n["requests"] += 1
    rtype = 2 if t == 0 else 1
    if rtype == 1:
        mid = (mid + 1) & 0xFFFF
        m = mid.to_bytes(2, "big")
    k = n["requests"] % 3
    if k == 0:
        s.sendto(b"\x05\x45garbage", peer)
        n["garbage"] += 1
    elif k == 1:
        bad = bytes(b ^ 0x5A for b in tok)
        s.sendto(bytes((0x40 | rtype << 4 | len(bad), 0x45)) + m + bad + b"\xffok", peer)
        n["wrong_token"] += 1
    else:
        s.sendto(bytes((0x40 | rtype << 4 | tkl, 0x45)) + m + tok + b"\xffok", peer)
        n["ok"] += 1
        for _ in range(flood):
            mid = (mid + 1) & 0xFFFF
            s.sendto(bytes((0x50, 0x01)) + mid.to_bytes(2, "big"), peer)
            n["flood"] += 1
    if n["requests"] == crash:
        print("badgw " + " ".join(f"{k}={v}" for k, v in n.items()), flush=True)
        os._exit(3)
"""

#: An HTTP gateway that accepts every connection and never reads or answers.
HOLD = r"""
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8080))
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])
"""

BASE: dict[str, Any] = {
    "workload": {"seed": 1, "rit_scope": "device"},
    "devices": [{"name": "d", "count": 2, "rit": "exp:25ms", "service": "det:1ms"}],
    "gateway": {"instances": 1, "type": "non", "timeout": "1s"},
    "cd": {"enabled": False},
    "phases": {"warmup": "1s", "measure": "3s", "cooldown": "1s"},
    "validity": {"min_measure": "3s", "min_requests": 100, "require_cd": False},
}
CASES = {
    "coap": ({"command": ["python3", "-c", COAP], "env": {"CRASH_AFTER": 200, "FLOOD": 10},
              "north": "coap-scheme", "port": 5683, "ready": "coap"},
             ["gateway exited mid-run (exit code 3)", "gateway answered ", "datagrams the GE could not parse",
              "responses with unknown tokens", "unsolicited datagrams (flood)", "gateway error rate "]),
    "http": ({"command": ["python3", "-c", HOLD], "north": "http", "port": 8080, "http_conns": 4, "ready": "tcp"},
             ["gateway held connections: ", "gateway error rate "]),
}


@pytest.fixture
def aiocoap(docker_client: Any) -> Any:
    try:
        docker_client.images.get(AIOCOAP)
    except docker.errors.ImageNotFound:
        if os.environ.get("CI") == "true":
            pytest.fail(f"image {AIOCOAP} missing (make images-gateways; CI=true: Docker tests must run)")
        pytest.skip(f"image {AIOCOAP} missing (make images-gateways)")
    return docker_client


def _coap_counts(run: Path, ge: dict[str, Any], manifest: dict[str, Any], why: str) -> None:
    """The GE counted what the gateway says it sent (its log, saved by the run),
    and the ARP entries were primed toward it and from it."""
    log = (run / "logs" / f"{manifest['gateway']['container']}.log").read_text()
    said = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", log.split("badgw ", 1)[1]))
    g = ge["garbage"]
    assert g["truncated"] + g["unparseable"] == said["garbage"] > 0, (g, said, why)
    assert g["unknown_token"] == said["wrong_token"] > 0, (g, said, why)
    assert 0 < g["unexpected_message"] <= said["flood"], (g, said, why)
    primed = manifest["gateway"].get("primed") or {}
    if not primed.get("skipped"):                  # priming needs CAP_SYS_ADMIN
        assert primed["answered"] == primed["nodes"] == 2, primed
        observed = json.loads((run / "observed.json").read_text())
        assert observed["ges"]["ge-0"]["primed"]["answered"] == 1, observed["ges"]["ge-0"]   # the gateway


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_gateway_is_named_in_the_gateway_answer_and_leaves_nothing(aiocoap, tmp_path, case, wotbench_cli,
                                                                         run_objects):
    section, reasons = CASES[case]
    spec = tmp_path / f"badgw-{case}.yaml"
    spec.write_text(yaml.safe_dump({"name": f"badgw-{case}", **BASE, "gateway_under_test": {
        "image": AIOCOAP, "memory": "64m", "objective": {"p99": "50ms"}, **section}}, sort_keys=False))
    proc = wotbench_cli("run", str(spec), "--results", str(tmp_path / "results"), "--no-progress", timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]          # a bad gateway never fails the run
    (run,) = [Path(line) for line in proc.stdout.split()]
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    answer = summary["gateway"]["answer"]
    why = f"testbed {summary['verdict']}: {summary['reasons']}; gateway answer: {answer}"
    assert answer["met"] is False, why
    for r in reasons:
        assert any(r in x for x in answer["reasons"]), (r, why)
    errors = next(c for c in summary["checks"] if c["check"] == "errors")
    assert errors["ok"] and "the gateway's" in errors["reason"], (errors, why)
    end = json.loads((run / "gateway.json").read_text())
    assert end["container"] == manifest["gateway"]["container"] and end["cpuset"] == manifest["gateway"]["cpuset"]
    assert (end["state"], end["exit_code"]) == (("exited", 3) if case == "coap" else ("running", None)), end
    ge = json.loads((run / "ge" / "ge-0.summary.json").read_text())
    if case == "coap":
        _coap_counts(run, ge, manifest, why)
    else:                 # its sends waited for the held connections: the gateway's, not the testbed's
        assert ge["http"]["closed_timeout"] + ge["http"]["queue_timeouts"] > 0, ge["http"]
        for c in summary["checks"]:
            assert c["ok"] or c["check"] not in ("rate", "rit_integrity", "send_lag", "ge_counters"), (c, why)
    from wotbench.reporting import write_reports

    write_reports([run], None)
    md = (run / "report" / "summary.md").read_text()
    assert "The gateway MISSED the objective: " in md and ("The testbed was valid." in md) == (
        summary["verdict"] == "valid"), why
    cts, nets = run_objects(manifest["run_id"])
    assert not cts and not nets, (cts, nets)
