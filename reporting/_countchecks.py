"""The ``output`` check: every GE and CD-GE output is whole, its rows held
against what was asked and recorded (its trace, its summary,
observed.json), never against what survived."""

from __future__ import annotations

from typing import Any

from wotbench.base import rundir as layout
from wotbench.spec import Thresholds

__all__ = ["check_output", "trace_names"]

Check = tuple[bool, str]
A = dict[str, Any]


def trace_names(k: int) -> str:
    return f"{layout.WORKLOAD}/{layout.ge_trace(k)} or {layout.WORKLOAD}/{layout.TRACE}"


def _count_problems(g: A, observed: A | None) -> list[str]:
    """A GE's output rows against its trace, its summary and observed.json."""
    ev, k = g["evidence"], g["ge"]
    rows, out = ev["rows"], []
    if ev["trace"] is None:
        out.append(f"no trace for GE {k} ({trace_names(k)}): its output cannot be counted against it")
    elif ev["trace_error"]:
        out.append(f"the trace of GE {k} cannot be read: {ev['trace_error']}")
    if ev["summary_error"]:
        out.append(f"GE {k}'s summary is damaged: {ev['summary_error']}")
    elif ev["summary"] is None:
        out.append(f"no summary of GE {k} ({layout.GE}/{layout.ge_summary(k)})")
    recorded = ((observed or {}).get(f"ge-{k}") or {}).get("rows")
    seen = [(n, what) for n, what in ((ev["trace_lines"], f"{ev['trace']} has {ev['trace_lines']} lines"),
                                       (ev["summary_requests"],
                                        f"{ev['summary']} counted {ev['summary_requests']} requests"),
                                       (recorded, f"{layout.OBSERVED} recorded {recorded} rows"))
            if n is not None]
    if any(n != rows for n, _ in seen):
        out.append(f"{ev['output']} holds {rows} rows, but " + ", ".join(w for _, w in seen)
                   + ": the output is incomplete or altered")
    return out


def _cd_count_problems(a: A, observed: A) -> list[str]:
    """Every CD-GE observed.json records has its output, with its rows."""
    out = []
    for key, rec in sorted(observed.items()):
        if key != "cd-ge" and not key.startswith("cd-ge-"):
            continue
        host = rec.get("node") if a.get("swarm") else None
        if a.get("swarm") and not host:     # no node recorded: its host's output cannot be named
            continue
        cd = (a.get("hosts", {}).get(host) or {}).get("cd") if host else a.get("cd")
        where = "/".join(([layout.NODES, host] if host else []) + [layout.CD, layout.CD_OUTPUT])
        if cd is None:
            out.append(f"{where} is missing ({layout.OBSERVED} recorded {rec.get('rows')} rows of {key})")
        elif rec.get("rows") is not None and cd["requests"] != rec["rows"]:
            out.append(f"{where} holds {cd['requests']} rows, but {layout.OBSERVED} recorded {rec['rows']} rows "
                       f"of {key}: the CD output is incomplete or altered")
    return out


def check_output(a: A, th: Thresholds) -> Check:
    """Every GE output is whole: its rows are its trace's lines, its summary's
    requests and observed.json's rows, and every GE observed.json records
    has an output. What is missing fails: the counts are held against the
    records, not against what survived."""
    h = a["harness"]
    observed = h["ges"] if h["recorded"] else None
    problems = [p for g in a["ges"] for p in _count_problems(g, observed)]
    have = {f"ge-{g['ge']}" for g in a["ges"]}
    problems += [f"{layout.GE}/{layout.ge_output(int(key[3:]))} is missing ({layout.OBSERVED} recorded "
                 f"{r.get('rows')} rows)" for key, r in sorted((observed or {}).items())
                 if key.startswith("ge-") and key[3:].isdigit() and key not in have]
    problems += _cd_count_problems(a, observed or {})
    if not h["recorded"]:
        problems.append(f"no {layout.OBSERVED} to hold the output rows against" if not h.get("error")
                        else f"{layout.OBSERVED} is damaged ({h['error']}): the output rows are not held against it")
    if problems:
        return False, "; ".join(problems)
    counts = ", ".join(f"GE {g['ge']} {g['evidence']['rows']}" for g in a["ges"])
    return True, (f"every GE output holds one row per trace line, as its summary and {layout.OBSERVED} "
                  f"counted ({counts})")
