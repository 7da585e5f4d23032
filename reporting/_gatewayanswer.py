"""The second answer of a run with a gateway under test: did the gateway
meet its objective? Kept apart from the testbed's verdict (reporting/_checks.py).

The gateway MISSED when any of these holds, each a reason:
- its objective (``gateway_under_test.objective``, e.g. ``{p99: 50ms}``)
  over the workload GEs' response times of the ``ok`` requests in the
  measurement phase is above its limit;
- its error rate (5.02/5.04/502/504, timeouts, and the other failures
  without a response code: a RST, a connection it closed) is above
  ``validity.max_error_rate``;
- gateway.json says it was not running at the end of the load (exited,
  killed for memory) or was restarted;
- the workload GEs' summaries count datagrams it answered that they could
  not parse, responses with unknown tokens, unsolicited datagrams, or (HTTP)
  malformed responses, unsolicited bytes, requests that timed out waiting
  for a connection it held.

``met`` is null (no answer) without gateway.json (the run failed before
the load ended), or without a request through the gateway in the
measurement phase. :func:`through_gateway` splits the workload GEs'
failures into the gateway's and the testbed's, for the ``errors`` check."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from wotbench.base import rundir as layout
from wotbench.reporting._gatewaylatency import ok_response
from wotbench.reporting._load import GeData, Phases, RunFiles
from wotbench.reporting._sketch import Dist
from wotbench.spec import Spec

__all__ = ["GATEWAY_CODES", "status_code_counts", "through_gateway", "gateway_answer", "answer_line"]

#: The gateway's own errors in a GE row's ``code``: bad gateway and gateway
#: timeout, CoAP (RFC 7252 5.9.3) and HTTP.
GATEWAY_CODES = ("5.02", "5.04", "502", "504")
#: The GE summary's ``garbage`` kinds (gateway-emulator/README.md) by what they say of the gateway.
UNPARSEABLE = ("truncated", "unparseable")
UNKNOWN_TOKENS = ("unknown_token", "wrong_source")
UNSOLICITED = ("unknown_source", "unexpected_message", "unmatched_empty_ack", "unmatched_rst")


def status_code_counts(data: Sequence[GeData], window: tuple[float, float]) -> dict[tuple[str, str], int]:
    """(status, code) -> rows of every workload GE in the measurement phase
    (code "" when none); one pass over each Parquet cache, batch by batch
    (bounded memory)."""
    got: Counter[tuple[str, str]] = Counter()
    flt = (pc.field("intended_us") >= window[0]) & (pc.field("intended_us") < window[1])
    for g in data:
        for batch in g.dataset().scanner(columns=["status", "code"], filter=flt).to_batches():
            if batch.num_rows == 0:
                continue
            counts = pa.Table.from_batches([batch]).group_by(["status", "code"]).aggregate([([], "count_all")])
            for row in counts.to_pylist():
                got[(str(row["status"]), "" if row["code"] is None else str(row["code"]))] += int(row["count_all"])
    return dict(got)


def through_gateway(files: RunFiles, data: Sequence[GeData], window: tuple[float, float],
                    ges: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The workload GEs' requests in the measurement phase, their failures
    split: the gateway's (timeouts, 5.02/5.04/502/504, errors without a
    code but the GEs' own failed sends) and the testbed's (the failed sends,
    and errors carrying another code: the device's answer, e.g. 5.03, passed
    on by the gateway); and ``held``: GE k -> its requests that timed out
    on (or waiting for) HTTP connections the gateway held, whose sends the
    gateway delayed (their wait is in the send lag, as wrk2 counts it)."""
    sc = status_code_counts(data, window)
    requests = sum(sc.values())
    timeouts = sum(n for (s, _), n in sc.items() if s == "timeout")
    codes = {c: sum(n for (s, k), n in sc.items() if s == "error" and k == c) for c in GATEWAY_CODES}
    uncoded = sum(n for (s, k), n in sc.items() if s == "error" and k == "")
    device = sum(n for (s, k), n in sc.items() if s == "error" and k not in ("", *GATEWAY_CODES))
    send_errors = sum(int((g.get("counters") or {}).get("send_errors") or 0) for g in ges)
    failed_sends = min(uncoded, send_errors)
    held = {g.ge: n for g, p in zip(data, files.ge_summaries, strict=False)
            if (n := _sum(_read(p), "http", ("queue_timeouts", "closed_timeout")))}
    return {"requests": requests, "ok": sum(n for (s, _), n in sc.items() if s == "ok"), "held": held,
            "gateway": {"timeouts": timeouts, **codes, "other": uncoded - failed_sends,
                        "total": timeouts + sum(codes.values()) + uncoded - failed_sends},
            "testbed": {"send_errors": failed_sends, "device_codes": device, "total": failed_sends + device}}


def _value_us(d: Dist | None, stat: str) -> float | None:
    if d is None:
        return None
    return d.mean if stat == "mean" else d.q[float(stat[1:])]


def _ms(us: float) -> str:
    return f"{us / 1000:.3g} ms"


def _objective(spec: Spec, data: Sequence[GeData], window: tuple[float, float],
               measured: dict[str, float | None]) -> list[str]:
    gut = spec.gateway_under_test
    if gut is None or not gut.objective:
        return []
    resp = ok_response(data, window, sorted({float(o.stat[1:]) for o in gut.objective if o.stat != "mean"}))
    out = []
    for o in gut.objective:
        v = _value_us(resp, o.stat)
        measured[o.stat] = v
        if v is None:
            out.append(f"{o.stat}: no ok response through the gateway to judge (limit {_ms(o.limit_us)})")
        elif v > o.limit_us:
            out.append(f"{o.stat} {_ms(v)} > {_ms(o.limit_us)} (objective)")
    return out


def _error_rate(tg: dict[str, Any], max_rate: float) -> list[str]:
    g, n = tg["gateway"], tg["requests"]
    if not n or g["total"] / n <= max_rate:
        return []
    parts = ", ".join(f"{k} {g[k]}" for k in ("timeouts", *GATEWAY_CODES, "other") if g[k])
    return [f"gateway error rate {g['total'] / n:.2%} ({g['total']} of {n} requests: {parts}) "
            f"> validity.max_error_rate {max_rate:.1%}"]


def read_end_state(files: RunFiles) -> dict[str, Any] | None:
    """gateway.json, or None when missing or unreadable."""
    try:
        doc = json.loads((files.root / layout.GATEWAY).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _end_state(end: dict[str, Any]) -> list[str]:
    out = []
    if end.get("state") != "running":
        how = "exited" if end.get("state") in ("exited", "dead") else f"was {end.get('state')}"
        out.append(f"gateway {how} mid-run (exit code {end.get('exit_code')}"
                   + (", killed for memory" if end.get("oom_killed") else "") + ")")
    if end.get("restarts"):
        out.append(f"gateway restarted {end['restarts']} time(s) mid-run")
    return out


def _read(p: Path | None) -> list[dict[str, Any]]:
    """A GE summary JSON as a list of one (none when missing or damaged)."""
    try:
        doc = json.loads(p.read_text()) if p is not None else None
    except (OSError, ValueError):
        doc = None
    return [doc] if isinstance(doc, dict) else []


def _summaries(files: RunFiles) -> list[dict[str, Any]]:
    return [d for p in files.ge_summaries for d in _read(p)]


def _sum(docs: Sequence[dict[str, Any]], part: str, keys: Sequence[str]) -> int:
    return sum(int((d.get(part) or {}).get(k) or 0) for d in docs for k in keys)


def _faults(docs: Sequence[dict[str, Any]]) -> list[str]:
    """What the workload GEs' counters say the gateway sent them (whole run)."""
    out = []
    n = _sum(docs, "garbage", UNPARSEABLE)
    if n:
        out.append(f"gateway answered {n} datagrams the GE could not parse")
    n = _sum(docs, "garbage", UNKNOWN_TOKENS)
    if n:
        out.append(f"gateway answered {n} responses with unknown tokens")
    n = _sum(docs, "garbage", UNSOLICITED)
    if n:
        out.append(f"gateway sent {n} unsolicited datagrams (flood)")
    n = _sum(docs, "http", ("closed_malformed",))
    if n:
        out.append(f"gateway answered {n} malformed HTTP responses")
    n = _sum(docs, "http", ("closed_unsolicited",))
    if n:
        out.append(f"gateway sent unsolicited bytes on {n} connections (flood)")
    held = _sum(docs, "http", ("queue_timeouts", "closed_timeout"))
    if held:
        waits = _sum(docs, "http", ("pool_waits",))
        longest = max((int((d.get("http") or {}).get("pool_wait_max_us") or 0) for d in docs), default=0)
        out.append(f"gateway held connections: {waits} requests waited for a connection, longest "
                   f"{longest / 1000:.0f} ms / {held} timeouts")
    return out


def gateway_answer(spec: Spec, files: RunFiles, data: Sequence[GeData], phases: Phases) -> dict[str, Any]:
    """summary.json's ``gateway.answer``: {objective (µs, null without one),
    met (true, false, or null: no evidence), reasons, measured (the
    objective's statistics, µs), through_gateway (:func:`through_gateway`)}."""
    gut = spec.gateway_under_test
    assert gut is not None
    objective = {o.stat: o.limit_us for o in gut.objective} or None
    measured: dict[str, float | None] = {}
    ges = [{"counters": {"send_errors": d.get("send_errors")}} for d in _summaries(files)]
    tg = through_gateway(files, data, phases.measure, ges)
    reasons = _objective(spec, data, phases.measure, measured) + _error_rate(tg, spec.validity.max_error_rate)
    end = read_end_state(files)
    reasons += _end_state(end) if end is not None else []
    reasons += _faults(_summaries(files))
    met: bool | None = not reasons
    if end is None:
        met, reasons = None, [f"no evidence: {layout.GATEWAY} missing", *reasons]
    elif tg["requests"] == 0:
        met, reasons = None, ["no evidence: no request through the gateway in the measurement phase", *reasons]
    return {"objective": objective, "met": met, "reasons": reasons, "measured": measured or None,
            "through_gateway": tg}


def answer_line(verdict: str, ans: dict[str, Any] | None) -> list[str]:
    """The two answers as a person reads them: the testbed's, then the gateway's."""
    out = ["The testbed was valid." if verdict == "valid"
           else "The testbed was NOT valid (see the reasons): the gateway's numbers are not trustworthy."]
    if ans is None:
        return out
    if ans["met"] is None:
        out.append("The gateway answer cannot be given: " + "; ".join(ans["reasons"]))
    elif ans["met"]:
        what = ", ".join(f"{k} {_ms(v)} <= {_ms(ans['objective'][k])}" for k, v in (ans.get("measured") or {}).items()
                         if v is not None)
        out.append(f"The gateway MET the objective ({what}), without gateway errors or faults." if what else
                   "The gateway had no errors or faults (no response-time objective to judge: "
                   "gateway_under_test.objective).")
    else:
        out.append("The gateway MISSED the objective: " + "; ".join(ans["reasons"]))
    return out
