"""The GE's hand-assembled requests are accepted by independent CoAP
servers: libcoap's example server and an aiocoap server that records the
path, query and payload it decoded."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from gehelpers import free_port, run_ge, write_trace

#: Times, pins or waits on short timers: never beside another test (pyproject's serial).
pytestmark = pytest.mark.serial

AIOCOAP_SERVER = r'''
import asyncio, json, sys
import aiocoap, aiocoap.resource as resource

class Echo(resource.Resource):
    async def render(self, request):
        print(json.dumps({"code": str(request.code), "path": list(request.opt.uri_path),
                          "query": list(request.opt.uri_query),
                          "payload": request.payload.decode(),
                          "format": request.opt.content_format is not None}), flush=True)
        return aiocoap.Message(code=aiocoap.CONTENT if request.code == aiocoap.GET else aiocoap.CHANGED)

async def main():
    # the root resource sees every request with its options undecorated
    await aiocoap.Context.create_server_context(Echo(), bind=("127.0.0.1", int(sys.argv[1])))
    print("ready", flush=True)
    await asyncio.get_running_loop().create_future()

asyncio.run(main())
'''


def test_aiocoap_decodes_path_query_payload(ge_bin, tmp_path):
    port = free_port()
    script = tmp_path / "server.py"
    script.write_text(AIOCOAP_SERVER)
    srv = subprocess.Popen([sys.executable, str(script), str(port)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout is not None and srv.stdout.readline().strip() == "ready"
        base = f"coap://127.0.0.1:{port}"
        trace = write_trace(tmp_path / "t.csv", [
            (0, 0, "GET", f"{base}/a/b%20c?k=v&flag"),
            (0, 1000, "PUT", f"{base}/x,hello world"),
            (0, 2000, "POST", f"{base}/x?q=1,p"),
            (0, 3000, "DELETE", f"{base}/a/b%20c"),
        ])
        run = run_ge(ge_bin, trace, "--type", "con", timeout=60)
        assert run.returncode == 0, run.stderr
        assert list(run.rows.status) == ["ok"] * 4, run.rows
    finally:
        srv.terminate()
        out, _ = srv.communicate(timeout=10)
    seen = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert seen == [
        {"code": "GET", "path": ["a", "b c"], "query": ["k=v", "flag"], "payload": "", "format": False},
        {"code": "PUT", "path": ["x"], "query": [], "payload": "hello world", "format": True},
        {"code": "POST", "path": ["x"], "query": ["q=1"], "payload": "p", "format": True},
        {"code": "DELETE", "path": ["a", "b c"], "query": [], "payload": "", "format": False},
    ]


def test_libcoap_example_server_including_separate_response(ge_bin, tmp_path):
    assert shutil.which("coap-server-notls"), "libcoap3-bin missing (make setup installs it)"
    port = free_port()
    srv = subprocess.Popen(["coap-server-notls", "-A", "127.0.0.1", "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)
        base = f"coap://127.0.0.1:{port}"
        trace = write_trace(tmp_path / "t.csv", [
            (0, 0, "GET", f"{base}/"),
            (0, 1000, "PUT", f"{base}/example_data,hello"),
            (0, 2000, "GET", f"{base}/async?1"),  # separate response after 1 s
            (0, 3000, "GET", f"{base}/nothing-here"),
        ])
        run = run_ge(ge_bin, trace, "--ack-timeout-ms", "500", "--timeout-ms", "5000", timeout=60)
    finally:
        srv.terminate()
        srv.wait(10)
    assert run.returncode == 0, run.stderr
    assert list(run.rows.status) == ["ok", "ok", "ok", "error"]
    assert list(run.rows.code) == ["2.05", "2.01", "2.05", "4.04"] or \
        list(run.rows.code) == ["2.05", "2.04", "2.05", "4.04"]
    assert run.summary["empty_acks"] == 1 and run.summary["acks_sent"] == 1
    # The separate response comes after the server's 1 s delay, which libcoap
    # schedules on its own millisecond tick clock: it may fire up to a tick
    # (plus rounding) before a full second of our clock has passed.
    assert run.rows.response_us[2] >= 990_000
