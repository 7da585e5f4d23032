"""Independent CoAP clients (libcoap's coap-client-notls, aiocoap) get the
codes, option 65000 and payloads docs/formats.md promises, including
/.well-known/core split with Block2."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from aiocoap import Context, Message
from aiocoap.numbers.codes import Code

ROWS = [("/a", 0, None), ("/b/c", 1500, 40), ("/tiny", 300, 3), ("/empty", 0, 0)]


def coap_client(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["coap-client-notls", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_coap_client_gets_payloads_and_codes(make_device):
    dev = make_device(ROWS)
    base = f"coap://127.0.0.1:{dev.port}"
    assert coap_client("-m", "get", f"{base}/a").stdout.strip() == "service_us=0"
    out = coap_client("-m", "get", f"{base}/b/c").stdout.strip()
    assert out == "service_us=1500" + "." * (40 - len("service_us=1500"))
    assert coap_client("-m", "put", "-e", "x", f"{base}/tiny").stdout.strip() == "ser"
    assert coap_client("-m", "get", f"{base}/nope").stderr.strip() == "4.04"
    assert coap_client("-m", "fetch", f"{base}/a").stderr.strip() == "4.05"
    verbose = coap_client("-v", "7", "-m", "get", f"{base}/b/c").stdout
    assert "c:2.05" in verbose and "65000:" in verbose
    assert dev.stop() == 0
    assert dev.counts["not_found"] == 1 and dev.counts["bad_method"] == 1


async def _aiocoap_requests(port: int) -> list[Message]:
    ctx = await Context.create_client_context()
    try:
        out = []
        for code, path in [(Code.GET, "b/c"), (Code.PUT, "a"), (Code.POST, "tiny"),
                           (Code.DELETE, "b/c"), (Code.GET, "zzz"), (Code.FETCH, "a"),
                           (Code.GET, "empty")]:
            req = Message(code=code, uri=f"coap://127.0.0.1:{port}/{path}")
            out.append(await asyncio.wait_for(ctx.request(req).response, 10))
        return out
    finally:
        await ctx.shutdown()


def test_aiocoap_codes_option_65000_and_payload(make_device, wire):
    dev = make_device(ROWS)
    get_bc, put_a, post_tiny, del_bc, missing, fetch, empty = asyncio.run(
        _aiocoap_requests(dev.port))
    assert get_bc.code == Code.CONTENT and wire.service_option(get_bc) == 1500
    assert get_bc.payload == b"service_us=1500" + b"." * 25
    assert get_bc.opt.content_format == 0
    assert put_a.code == Code.CHANGED and wire.service_option(put_a) == 0
    assert put_a.payload == b"service_us=0"
    assert post_tiny.code == Code.CHANGED and post_tiny.payload == b"ser"
    assert del_bc.code == Code.DELETED and wire.service_option(del_bc) == 1500
    assert missing.code == Code.NOT_FOUND and wire.service_option(missing) is None
    assert fetch.code == Code.METHOD_NOT_ALLOWED and wire.service_option(fetch) == 0
    assert empty.code == Code.CONTENT and empty.payload == b""
    assert dev.stop() == 0
    assert dev.counts["served"] == 7 and dev.counts["ok"] == 5


def _listing(rows) -> str:
    return ",".join(f"<{p}>;ct=0" for p, *_ in rows)


def test_well_known_core_small(make_device):
    dev = make_device(ROWS)
    out = coap_client("-m", "get", f"coap://127.0.0.1:{dev.port}/.well-known/core").stdout
    assert out.strip() == _listing(ROWS)


@pytest.mark.parametrize("client", ["coap-client-notls", "aiocoap"])
def test_well_known_core_2000_resources_block2(make_device, client):
    rows = [(f"/sensor/{i:05d}/value", i, None) for i in range(2000)]
    dev = make_device(rows)
    expected = _listing(rows)
    assert len(expected) > 50 * 1024  # many blocks
    url = f"coap://127.0.0.1:{dev.port}/.well-known/core"
    if client == "coap-client-notls":
        got = coap_client("-m", "get", "-B", "30", url, timeout=60).stdout.strip()
    else:
        async def fetch() -> bytes:
            ctx = await Context.create_client_context()
            try:
                resp = await asyncio.wait_for(
                    ctx.request(Message(code=Code.GET, uri=url)).response, 30)
                assert resp.code == Code.CONTENT and resp.opt.content_format == 40
                payload: bytes = resp.payload
                return payload
            finally:
                await ctx.shutdown()
        got = asyncio.run(fetch()).decode()
    assert got == expected
    assert dev.stop() == 0
    assert dev.counts["wkc"] >= len(expected) // 1024


def test_well_known_core_small_block_size(make_device, raw_client, wire):
    """A client asking for 16-byte blocks gets them, with M set until the end."""
    CON, GET, encode = wire.CON, wire.GET, wire.encode
    dev = make_device(ROWS)
    c = raw_client(dev.addr)
    body, num = b"", 0
    while True:
        c.send(encode(CON, GET, 100 + num, b"k", (".well-known", "core"),
                      options=[(23, bytes([num << 4 | 0]) if num < 16 else
                                bytes([num >> 4, (num & 15) << 4]))]))
        m = c.recv()
        assert m is not None and m.code == Code.CONTENT
        blk = m.opt.block2
        assert blk.block_number == num and blk.size_exponent == 0
        body += m.payload
        if not blk.more:
            break
        num += 1
    assert body.decode() == _listing(ROWS)
    # Past the end: 4.02 Bad Option (RFC 7959 2.4).
    c.send(encode(CON, GET, 999, b"k", (".well-known", "core"), options=[(23, bytes([0x70, 0]))]))
    assert c.recv().code == Code.BAD_OPTION


def test_ipv6_and_dual_stack(make_device):
    dev6 = make_device(ROWS, host="::1")
    assert coap_client("-m", "get", f"coap://[::1]:{dev6.port}/a").stdout.strip() == "service_us=0"
    dual = make_device(ROWS, host="::")
    # [::] with IPV6_V6ONLY=0 answers IPv4 clients too.
    assert coap_client("-m", "get", f"coap://127.0.0.1:{dual.port}/a").stdout.strip() == "service_us=0"
    assert coap_client("-m", "get", f"coap://[::1]:{dual.port}/a").stdout.strip() == "service_us=0"
