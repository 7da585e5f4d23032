"""Requests matched to their responses in a capture's CoAP messages, vectorised.

* A **request** is a message with a method code (0.01 .. 0.31), a
  **response** one with a response code (2.xx .. 5.xx); empty messages
  (0.00: an empty ACK, a RST, a ping) are neither.
* **Retransmissions**: a request with the same message id from the same
  client to the same server as the previous one, less than
  EXCHANGE_LIFETIME (RFC 7252, 247 s) after it, is a retransmission: the
  first transmission is kept, the others counted.
* **Piggybacked responses** (an ACK carrying a response code) are matched
  to the latest earlier request of the same client, server and message id;
  **separate responses** (CON or NON) to the latest earlier request of the
  same client, server and token. A request's response is the earliest one
  matched to it; later ones (duplicates, Observe notifications) are
  counted as extra.
* The **service-time sample** of a matched request is its response's time
  minus its first transmission's. That is the device's service time only
  when the capture was taken next to the devices (otherwise it holds the
  network's round trip, and a response to a retransmission holds the
  retransmission's delay).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from wotbench.tracegen._capture import CHUNK, Messages

__all__ = ["EXCHANGE_LIFETIME_US", "WINDOW_REQUESTS", "ACK", "CON", "NON", "RST", "Pairs", "Done", "Matcher", "match"]

EXCHANGE_LIFETIME_US = 247_000_000
#: The most requests the streaming window holds (:class:`Matcher`); beyond,
#: its oldest ones are finalised early (``window`` in capture.json).
WINDOW_REQUESTS = 1 << 17
CON, NON, ACK, RST = 0, 1, 2, 3


@dataclass(frozen=True)
class Pairs:
    """The requests of a capture (first transmissions, in time order) and their answers."""

    requests: np.ndarray            # int64 row numbers of Messages, sorted by time
    response: np.ndarray            # int64 row of each request's response, -1 when unanswered
    service_us: np.ndarray          # int64 response time - request time, -1 when unanswered
    retransmissions: int            # request rows that repeat a kept one
    responses: int                  # response rows in all
    responses_matched: int          # responses that answer a request first
    responses_extra: int            # responses to an already answered request
    responses_unmatched: int        # responses with no request in the capture
    piggybacked: int                # matched responses that were ACKs
    separate: int                   # matched responses that were CON or NON


def _first_transmissions(m: Messages, req: np.ndarray) -> tuple[np.ndarray, int]:
    """The rows of ``req`` that are not retransmissions (time order), and how many are."""
    order = np.lexsort((m.t_us[req], m.mid[req], m.dst[req], m.src[req]))
    r = req[order]
    same = np.zeros(r.size, dtype=bool)
    if r.size > 1:
        same[1:] = ((m.src[r[1:]] == m.src[r[:-1]]) & (m.dst[r[1:]] == m.dst[r[:-1]])
                    & (m.mid[r[1:]] == m.mid[r[:-1]])
                    & (m.t_us[r[1:]] - m.t_us[r[:-1]] < EXCHANGE_LIFETIME_US))
    kept = r[~same]
    kept = kept[np.lexsort((kept, m.t_us[kept]))]
    return kept, int(same.sum())


def _latest_before(req_keys: tuple[np.ndarray, ...], req_t: np.ndarray,
                   resp_keys: tuple[np.ndarray, ...], resp_t: np.ndarray) -> np.ndarray:
    """For each response, the position in the request arrays of the latest
    request with equal keys at or before its time (within
    EXCHANGE_LIFETIME), else -1."""
    n_req = req_t.size
    keys = [np.concatenate((a, b)) for a, b in zip(req_keys, resp_keys, strict=True)]
    t = np.concatenate((req_t, resp_t))
    kind = np.concatenate((np.zeros(n_req, np.int8), np.ones(resp_t.size, np.int8)))
    order = np.lexsort((kind, t, *reversed(keys)))
    is_req = kind[order] == 0
    del kind
    last = np.maximum.accumulate(np.where(is_req, np.arange(order.size), -1)) if order.size else order
    resp_at = np.flatnonzero(~is_req)
    cand = last[resp_at]
    del last
    ok = cand >= 0
    req_row, resp_row = order[np.where(ok, cand, 0)], order[resp_at]     # rows of the concatenation
    for k in keys:
        ok &= k[req_row] == k[resp_row]
    ok &= t[resp_row] - t[req_row] < EXCHANGE_LIFETIME_US
    out = np.full(resp_t.size, -1, dtype=np.int64)
    out[resp_row[ok] - n_req] = req_row[ok]
    return out


def _answers(m: Messages, kept: np.ndarray, resp: np.ndarray) -> np.ndarray:
    """For each response row, the position in ``kept`` of the request it answers, else -1."""
    piggy = m.mtype[resp] == ACK
    out = np.full(resp.size, -1, dtype=np.int64)
    pr, sr = resp[piggy], resp[~piggy]
    out[piggy] = _latest_before((m.src[kept], m.dst[kept], m.mid[kept]), m.t_us[kept],
                                (m.dst[pr], m.src[pr], m.mid[pr]), m.t_us[pr])
    out[~piggy] = _latest_before((m.src[kept], m.dst[kept], m.tkl[kept], m.token[kept]), m.t_us[kept],
                                 (m.dst[sr], m.src[sr], m.tkl[sr], m.token[sr]), m.t_us[sr])
    return out


def match(m: Messages) -> Pairs:
    """Requests, their first responses and the service-time samples of ``m``."""
    code = m.code
    req = np.flatnonzero((code > 0) & (code < 32))
    resp = np.flatnonzero(code >= 64)
    kept, retrans = _first_transmissions(m, req)
    answers = _answers(m, kept, resp)
    found = answers >= 0
    # The earliest response per request: sort the found ones by time, keep the first per request.
    rows, pos = resp[found], answers[found]
    by_time = np.lexsort((rows, m.t_us[rows]))
    rows, pos = rows[by_time], pos[by_time]
    first_pos, first_at = np.unique(pos, return_index=True)
    response = np.full(kept.size, -1, dtype=np.int64)
    response[first_pos] = rows[first_at]
    service = np.where(response >= 0, m.t_us[np.maximum(response, 0)] - m.t_us[kept], -1)
    first_rows = rows[first_at]
    piggy = int(np.count_nonzero(m.mtype[first_rows] == ACK))
    return Pairs(requests=kept, response=response, service_us=service.astype(np.int64),
                 retransmissions=retrans, responses=int(resp.size), responses_matched=int(first_at.size),
                 responses_extra=int(found.sum()) - int(first_at.size),
                 responses_unmatched=int(resp.size - found.sum()), piggybacked=piggy,
                 separate=int(first_at.size) - piggy)


@dataclass(frozen=True)
class Done:
    """Requests whose answer is settled (first transmissions, time order) and their answers."""

    m: Messages                     # the request rows, RSTs and responses with an Observe option
    service_us: np.ndarray          # int64 response time - request time, -1 when unanswered (or not a request)
    piggy: np.ndarray               # bool, answered by an ACK


@dataclass
class Matcher:
    """:func:`match` over a capture read in chunks, in bounded memory.

    The window is the requests of the last EXCHANGE_LIFETIME (at most
    ``window_requests`` of them: a retransmission repeats, and a response
    answers, a request of that span); a response is matched once, against
    the window and the new messages, and not kept (but for RSTs and responses
    with an Observe option, handed out with the requests for
    :mod:`wotbench.tracegen._capobserve`). A request leaves the
    window, settled, when the capture's clock passes it by EXCHANGE_LIFETIME
    (or the window is full): :meth:`feed` and :meth:`finish` hand the
    settled requests out in time order. On a capture in time order the
    result is :func:`match`'s (``tracegen/tests/test_capture.py``) unless
    the window was full (``shortened``)."""

    window_requests: int = WINDOW_REQUESTS
    step_min: int = 0
    """New messages gathered before a step (0: :data:`CHUNK`; never fewer than the window holds)."""
    retransmissions: int = 0
    responses: int = 0
    responses_found: int = 0
    first_us: int | None = None
    last_us: int | None = None
    shortened: int = 0                  # requests settled early: the window was full
    shortest_us: int | None = None      # the shortest span the window covered when full
    _tail: Messages = field(default_factory=Messages.empty)
    _g: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))       # global row numbers
    _kept: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    _best_t: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _best_g: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    _best_ack: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    _pending: list[Messages] = field(default_factory=list)
    _n_pending: int = 0
    _next_g: int = 0
    _t_max: int = -1

    def feed(self, chunk: Messages) -> Iterator[Done]:
        """Takes the next chunk of messages (capture order); yields what it settles."""
        if chunk.size:
            self._pending.append(chunk)
            self._n_pending += chunk.size
        if self._n_pending >= max(self.step_min or CHUNK, self._tail.size):
            yield from self._step(final=False)

    def finish(self) -> Iterator[Done]:
        """The end of the capture: every request left is settled."""
        yield from self._step(final=True)

    def _step(self, final: bool) -> Iterator[Done]:
        new = Messages.concat(self._pending)
        self._pending, self._n_pending = [], 0
        if new.size:
            lo, hi = int(new.t_us.min()), int(new.t_us.max())
            self.first_us = lo if self.first_us is None else min(self.first_us, lo)
            self.last_us = hi if self.last_us is None else max(self.last_us, hi)
            self._t_max = max(self._t_max, hi)
        n_tail, n_new = self._tail.size, new.size
        b = Messages.concat([self._tail, new])          # consumes both
        g = np.concatenate((self._g, self._next_g + np.arange(n_new, dtype=np.int64)))
        self._next_g += n_new
        is_req = (b.code > 0) & (b.code < 32)
        kept_now, _ = _first_transmissions(b, np.flatnonzero(is_req))
        kept = np.zeros(b.size, bool)
        kept[kept_now] = True
        kept[:n_tail] = self._kept
        self.retransmissions += int(np.count_nonzero(is_req[n_tail:] & ~kept[n_tail:]))
        best_t, best_g, best_ack = self._answer(b, g, n_tail, kept & is_req)
        cut = _MAX_T if final else self._t_max - EXCHANGE_LIFETIME_US
        # Observe's messages go out with the requests, in time order: RSTs, responses with Observe.
        held = is_req | ((b.mtype == RST) & (b.code == 0)) | ((b.code >= 64) & (b.observe >= 0))
        stay = held & (b.t_us >= cut)
        n_stay = int(np.count_nonzero(stay))
        if n_stay > self.window_requests:
            at = np.flatnonzero(stay)
            drop = at[:n_stay - self.window_requests]
            stay[drop] = False
            self.shortened += int(np.count_nonzero(kept[drop]))
            span = self._t_max - int(b.t_us[at[n_stay - self.window_requests]])
            self.shortest_us = span if self.shortest_us is None else min(self.shortest_us, span)
        settled = np.flatnonzero(~stay & held & (kept | ~is_req))
        settled = settled[np.lexsort((g[settled], b.t_us[settled]))]
        if settled.size:
            answered = best_t[settled] < _MAX_T
            service = np.where(answered, best_t[settled] - b.t_us[settled], -1).astype(np.int64)
            yield Done(b.take(settled), service, best_ack[settled] & answered)
        self._tail, self._g, self._kept = b.take(stay), g[stay], kept[stay]
        self._best_t, self._best_g, self._best_ack = best_t[stay], best_g[stay], best_ack[stay]

    def _answer(self, b: Messages, g: np.ndarray, n_tail: int,
                kept: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The new responses matched to the window's kept requests: each
        request's earliest response so far (time, row, was it an ACK)."""
        n_new = b.size - n_tail
        best_t = np.concatenate((self._best_t, np.full(n_new, _MAX_T, np.int64)))
        best_g = np.concatenate((self._best_g, np.full(n_new, _MAX_T, np.int64)))
        best_ack = np.concatenate((self._best_ack, np.zeros(n_new, bool)))
        resp = np.flatnonzero(b.code[n_tail:] >= 64) + n_tail
        self.responses += int(resp.size)
        rows_kept = np.flatnonzero(kept)
        answers = _answers(b, rows_kept, resp)
        found = answers >= 0
        self.responses_found += int(np.count_nonzero(found))
        rows, req = resp[found], rows_kept[answers[found]]
        order = np.lexsort((g[rows], b.t_us[rows]))
        rows, req = rows[order], req[order]
        req, first = np.unique(req, return_index=True)
        rows = rows[first]
        t, gr = b.t_us[rows], g[rows]
        better = (t < best_t[req]) | ((t == best_t[req]) & (gr < best_g[req]))
        req, rows = req[better], rows[better]
        best_t[req], best_g[req], best_ack[req] = b.t_us[rows], g[rows], b.mtype[rows] == ACK
        return best_t, best_g, best_ack


_MAX_T = np.iinfo(np.int64).max
