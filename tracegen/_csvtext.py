"""Trace CSV text built with NumPy: no Python work per row.

Every row is assembled in a fixed-width byte matrix from small lookup
tables and the digits of its timestamp, with NUL bytes as padding; dropping
the NUL bytes of a chunk gives the exact CSV text of its rows. A row is::

    <device_id>,<send_ts_us>,<METHOD>,coap://<host>/r/<k>[,<payload>]\\n
    `-- A ---'  `-- digits-'`------ B ---' `-H-'`-- C (per group, method, k) --'

Tables A and H are per device, B per method, C per (group, method,
resource). Throughput is about that of copying the output (see
``make bench-tracegen``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from wotbench.base.formats import METHODS, OBSERVE_METHODS, TRACE_COLUMNS, TRACE_OPTIONAL_COLUMNS

__all__ = ["TraceEncoder", "TRACE_HEADER", "TRACE_HEADER_PAYLOAD", "device_host", "payload_text"]

TRACE_HEADER = (",".join(TRACE_COLUMNS) + "\n").encode()
TRACE_HEADER_PAYLOAD = (",".join(TRACE_COLUMNS + TRACE_OPTIONAL_COLUMNS) + "\n").encode()
#: Methods whose requests carry the group's payload.
_PAYLOAD_METHODS = ("PUT", "POST")
#: Method codes index this: formats.METHODS, then the observation's OBS and UNOBS.
_ALL_METHODS = METHODS + OBSERVE_METHODS
# Rows per chunk are picked so that one chunk's byte records are about this big:
# small enough for the chunk's passes to stay in cache (measured: 2 MB beats 24 MB by 8 %).
_CHUNK_BYTES = 2 << 20
# Zero-padded ASCII of 0..10^w-1 for w = 1..4 digits: one gather gives w digits.
_DIGITS = {w: np.array([b"%0*d" % (w, i) for i in range(10**w)], dtype=f"S{w}") for w in (1, 2, 3, 4)}


def _digit_groups(ndig: int) -> list[int]:
    """Widths of the digit groups of an ndig-digit number, most significant first."""
    top = ndig % 4 or 4
    return [top] + [4] * ((ndig - top) // 4)
_POW10 = 10 ** np.arange(19, dtype=np.int64)


def device_host(device_id: int) -> str:
    """Placeholder host of a device in trace URIs (the GE maps it with ``--hosts``)."""
    return f"dev-{device_id}"


def payload_text(n: int) -> str:
    """The literal request payload of n bytes (printable, no comma)."""
    return "x" * n


def _table(strings: Sequence[str]) -> np.ndarray:
    """Fixed-width byte strings (NumPy ``S`` dtype, NUL padded on the right)."""
    enc = [s.encode("ascii") for s in strings]
    return np.array(enc if enc else [b""], dtype=f"S{max(1, max(map(len, enc), default=1))}")


class TraceEncoder:
    """Encodes (device, time, method, resource) arrays as trace CSV rows.

    ``hosts[i]`` names device index i (``dev-<id>``) and ``device_ids[i]``
    is its id in the first column (default i); ``group_of[i]`` is its group
    index; ``resources[g]`` and ``payload[g]`` the resource count and the
    request payload bytes (PUT/POST) of group g. ``methods_used`` (indexes
    into formats.METHODS then OBSERVE_METHODS, default formats.METHODS) must
    include every method that occurs. ``observed[g]``: the observable
    resources of group g (the OBS and UNOBS rows' /o/<j>; default none).
    """

    # Above this many (method, device, resource) combinations the URI suffix is
    # assembled from three small tables instead of one fused table.
    _FUSED_MAX = 1 << 21

    def __init__(self, hosts: Sequence[str], group_of: np.ndarray, resources: Sequence[int],
                 payload: Sequence[int], device_ids: Sequence[int] | None = None,
                 methods_used: Sequence[int] | None = None, observed: Sequence[int] | None = None) -> None:
        n = len(hosts)
        ids = range(n) if device_ids is None else device_ids
        self._group_of = np.asarray(group_of, dtype=np.int64)
        self._a = _table([f"{i}," for i in ids])
        # The table's resources per group: /r/<k> rows and the /o/<j> rows of OBS and UNOBS.
        resources = [max(k, o) for k, o in zip(resources, observed or [0] * len(resources), strict=True)]
        k_dev = np.asarray(resources, dtype=np.int64)[self._group_of]
        # Tables hold only the methods that occur (indexes into METHODS), so
        # that a rarely-used long name does not widen every row.
        used = sorted(set(range(len(METHODS)) if methods_used is None else methods_used))
        self._mpos = np.zeros(len(_ALL_METHODS), dtype=np.int64)
        self._mpos[used] = np.arange(len(used))
        names = [_ALL_METHODS[i] for i in used]
        prefix = ["/o/" if m in OBSERVE_METHODS else "/r/" for m in names]
        # With any payload the file has a payload column on every row (empty
        # for GET/DELETE), so that it stays a rectangular CSV for pandas & co.
        self.payload_column = any(p > 0 for p in payload)
        empty = ",\n" if self.payload_column else "\n"
        tails = [[f",{payload_text(p)}\n" if p > 0 and m in _PAYLOAD_METHODS else empty for m in names]
                 for p in payload]
        self._fused = int(k_dev.sum()) * len(used) <= self._FUSED_MAX
        if self._fused:
            # One row per (device, method, resource): ",GET,coap://dev-3/r/7\n".
            rows = [f",{m},coap://{h}{prefix[mi]}{r}{tails[g][mi]}"
                    for h, g, k in zip(hosts, self._group_of.tolist(), k_dev.tolist(), strict=True)
                    for mi, m in enumerate(names) for r in range(k)]
            self._s = _table(rows)
            self._s_base = np.concatenate(([0], np.cumsum(k_dev * len(used))))[:-1]
            self._s_k = k_dev
            # Same resource count everywhere: the row index is plain arithmetic.
            self._s_uniform = (int(k_dev[0]), len(used)) if k_dev.size and (k_dev == k_dev[0]).all() else None
        else:
            self._b = _table([f",{m},coap://" for m in names])
            self._h = _table(list(hosts))
            c_rows: list[str] = []
            base = []
            for g, k in enumerate(resources):
                base.append(len(c_rows))
                for mi in range(len(names)):
                    c_rows.extend(f"{prefix[mi]}{r}{tails[g][mi]}" for r in range(k))
            self._c = _table(c_rows)
            self._c_base = np.asarray(base, dtype=np.int64)
            self._c_k = np.asarray(resources, dtype=np.int64)

    def _row_dtype(self, ndig: int) -> np.dtype:
        """Record of one row: ``a``, the digit groups ``t0`` (ndig % 4 or 4 wide)
        then ``t1``.. (4 wide each), and the URI suffix field(s)."""
        groups = _digit_groups(ndig)
        fields = [("a", self._a.dtype)] + [(f"t{j}", f"S{w}") for j, w in enumerate(groups)]
        if self._fused:
            fields.append(("s", self._s.dtype))
        else:
            fields += [("b", self._b.dtype), ("h", self._h.dtype), ("c", self._c.dtype)]
        return np.dtype(fields)

    def encode(self, t_us: np.ndarray, dev: np.ndarray, method: np.ndarray,
               res: np.ndarray) -> Iterator[npt.NDArray[np.uint8]]:
        """Yield uint8 arrays whose concatenation is the CSV text of the rows (no header)."""
        for job in self._jobs(t_us, dev, method, res):
            yield self._chunk(*job)

    def _chunk(self, row: np.dtype, ndig: int, ts: np.ndarray, dv: np.ndarray,
               me: np.ndarray, res: np.ndarray) -> npt.NDArray[np.uint8]:
        m = ts.size
        rec = np.empty(m, dtype=row)
        np.take(self._a, dv, out=rec["a"], mode="clip")
        # Four digits per table lookup, least significant group first; the
        # arithmetic runs in 32 bits when the times fit (twice the SIMD width).
        groups = _digit_groups(ndig)
        q = ts.astype(np.int32) if ndig <= 9 else ts
        for j in range(len(groups) - 1, 0, -1):
            high = q // 10000
            low = q - high * 10000  # cheaper than np.divmod
            np.take(_DIGITS[4], low, out=rec[f"t{j}"], mode="clip")
            q = high
        np.take(_DIGITS[groups[0]], q, out=rec["t0"], mode="clip")
        assert row.fields is not None  # a record dtype (_row_dtype)
        o_t = row.fields["t0"][1]
        self._blank_leading_zeros(rec.view(np.uint8).reshape(m, row.itemsize)[:, o_t:o_t + ndig], ts, ndig)
        if self._fused:
            if self._s_uniform is not None:
                k, nu = self._s_uniform
                idx = dv.astype(np.int64) * (k * nu) + me * k + res
            else:
                idx = self._s_base[dv] + me * self._s_k[dv] + res
            np.take(self._s, idx, out=rec["s"], mode="clip")
        else:
            np.take(self._b, me, out=rec["b"], mode="clip")
            np.take(self._h, dv, out=rec["h"], mode="clip")
            g = self._group_of[dv]
            np.take(self._c, self._c_base[g] + me * self._c_k[g] + res, out=rec["c"], mode="clip")
        flat: npt.NDArray[np.uint8] = rec.view(np.uint8)
        text: npt.NDArray[np.uint8] = flat[flat != 0]
        return text

    @staticmethod
    def _blank_leading_zeros(digits: np.ndarray, ts: np.ndarray, tw: int) -> None:
        ndig = np.searchsorted(_POW10, ts, side="right")
        np.maximum(ndig, 1, out=ndig)
        if ndig.size > 1 and (ndig[1:] >= ndig[:-1]).all():
            # Sorted times: digit counts form a few contiguous blocks.
            cuts = np.flatnonzero(np.diff(ndig)) + 1
            for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [ndig.size])), strict=True):
                digits[a:b, :tw - int(ndig[a])] = 0
        else:
            for d in np.unique(ndig):
                digits[ndig == d, :tw - int(d)] = 0

    def write(self, fh: BinaryIO, t_us: np.ndarray, dev: np.ndarray, method: np.ndarray,
              res: np.ndarray, *, header: bool = True, workers: int = 1) -> None:
        """Write the header (optional) and all rows to a binary file.

        With ``workers`` > 1, chunks are encoded by that many threads (NumPy
        releases the GIL) and written in order; the bytes are identical.
        """
        if header:
            fh.write(TRACE_HEADER_PAYLOAD if self.payload_column else TRACE_HEADER)
        if workers <= 1:
            for chunk in self.encode(t_us, dev, method, res):
                fh.write(chunk.data)
            return
        jobs = self._jobs(t_us, dev, method, res)
        window: deque[Future[npt.NDArray[np.uint8]]] = deque()
        with ThreadPoolExecutor(workers, thread_name_prefix="tracegen-encode") as pool:
            for job in jobs:
                window.append(pool.submit(self._chunk, *job))
                # A bounded window keeps memory flat: at most 2 chunks per worker in flight.
                if len(window) >= 2 * workers:
                    fh.write(window.popleft().result().data)
            while window:
                fh.write(window.popleft().result().data)

    def _jobs(self, t_us: np.ndarray, dev: np.ndarray, method: np.ndarray,
              res: np.ndarray) -> Iterator[tuple[Any, ...]]:
        n = t_us.size
        if n == 0:
            return
        ndig = len(str(int(t_us.max())))
        row = self._row_dtype(ndig)
        step = max(1024, _CHUNK_BYTES // row.itemsize)
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            yield (row, ndig, t_us[lo:hi], dev[lo:hi], self._mpos[method[lo:hi]], res[lo:hi])
