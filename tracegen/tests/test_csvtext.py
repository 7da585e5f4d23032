"""The NumPy CSV text builder against plain Python formatting."""

from __future__ import annotations

import io

import numpy as np
import pytest

from wotbench.base.formats import METHODS
from wotbench.tracegen import _csvtext as csvtext
from wotbench.tracegen._csvtext import TraceEncoder


def reference(ids, hosts, t, dev, method, res, payload_of_dev, payload_column) -> bytes:
    out = io.StringIO()
    out.write("device_id,send_ts_us,method,uri" + (",payload" if payload_column else "") + "\n")
    for ts, d, m, r in zip(t.tolist(), dev.tolist(), method.tolist(), res.tolist(), strict=True):
        name = METHODS[m]
        tail = ""
        if payload_column:
            tail = "," + ("x" * payload_of_dev[d] if name in ("PUT", "POST") else "")
        out.write(f"{ids[d]},{ts},{name},coap://{hosts[d]}/r/{r}{tail}\n")
    return out.getvalue().encode()


@pytest.mark.parametrize("top", [0, 9, 10, 9999, 10**4, 10**9 - 1, 10**9, 2**31, 10**15, 2**53])
@pytest.mark.parametrize("sort", [True, False])
@pytest.mark.parametrize("fused", [True, False])
def test_rows_match_python_formatting(top: int, sort: bool, fused: bool,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(top % 1000 + sort)
    n = 3000
    t = rng.integers(0, top + 1, n, dtype=np.int64)
    t[0] = top
    if sort:
        t.sort()
    groups = np.array([0, 0, 1, 1, 1])
    k = [7, 130]
    pay = [0, 5]
    dev = rng.integers(0, 5, n).astype(np.int32)
    method = rng.integers(0, 4, n).astype(np.uint8)
    res = np.array([rng.integers(0, k[groups[d]]) for d in dev], dtype=np.int32)
    hosts = [f"dev-{i}" for i in range(5)]
    if not fused:
        monkeypatch.setattr(TraceEncoder, "_FUSED_MAX", 0)
    monkeypatch.setattr(csvtext, "_CHUNK_BYTES", 20_000)  # several chunks
    enc = TraceEncoder(hosts, groups, k, pay)
    for workers in (1, 2):
        buf = io.BytesIO()
        enc.write(buf, t, dev, method, res, workers=workers)
        want = reference(list(range(5)), hosts, t, dev, method, res, [pay[g] for g in groups], True)
        assert buf.getvalue() == want


def test_ids_hosts_and_methods_subset() -> None:
    enc = TraceEncoder(["cd-node"], np.zeros(1, dtype=int), [1], [0], device_ids=[42],
                       methods_used=[METHODS.index("GET")])
    buf = io.BytesIO()
    t = np.array([0, 1_000_000], dtype=np.int64)
    z = np.zeros(2, dtype=np.int32)
    enc.write(buf, t, z, z.astype(np.uint8), z)
    assert buf.getvalue() == (b"device_id,send_ts_us,method,uri\n42,0,GET,coap://cd-node/r/0\n"
                              b"42,1000000,GET,coap://cd-node/r/0\n")
