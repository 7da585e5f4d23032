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

from dataclasses import dataclass

import numpy as np

from wotbench.tracegen._capture import Messages

__all__ = ["EXCHANGE_LIFETIME_US", "ACK", "CON", "NON", "Pairs", "match"]

EXCHANGE_LIFETIME_US = 247_000_000
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
