"""The gateway section of a run that had a gateway under test
(``gateway_under_test:``, docs/spec.md): what the gateway did, apart from
whether the testbed was valid. The GEs' end-to-end response time (their
response distribution, already in the GE sections), the gateway
container's CPU and memory from the cgroup sampler (monitor/containers.csv,
role ``gateway``) and its errors: the GE rows' 5.02/5.04 (CoAP) and 502/504
(HTTP) codes in the measurement phase. The verdict stays the testbed's;
``numbers`` says both apart: "the testbed was valid" and the gateway's numbers;
``answer`` is the second answer, met or missed (wotbench.reporting._gatewayanswer).
The device tier's share and the latency the gateway adds, as distributions,
and its CPU per 1000 req/s: wotbench.reporting._gatewaylatency."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd
import pyarrow.compute as pc

from wotbench.base.errors import UserError
from wotbench.reporting._gatewayanswer import GATEWAY_CODES, gateway_answer, status_code_counts
from wotbench.reporting._gatewaylatency import cpu_per_kreq, latency_section, latency_text
from wotbench.reporting._load import GeData, Phases, RunFiles
from wotbench.reporting._records import DEVICE_STATS
from wotbench.reporting._shape import read_record
from wotbench.spec import Spec

__all__ = ["GATEWAY_ERRORS", "gateway_section", "gateway_result", "code_counts", "gateway_usage", "routing",
           "device_containers", "answer"]

#: The gateway's own errors in a GE row's ``code`` (one list: reporting/_gatewayanswer.py).
GATEWAY_ERRORS = GATEWAY_CODES
#: The container role of the gateway under test (wotbench.engine.GATEWAY_ROLE).
ROLE = "gateway"


def code_counts(data: Sequence[GeData], window: tuple[float, float]) -> dict[str, int]:
    """Every GE's rows in the measurement phase counted by ``code`` (the
    same bounded pass as the gateway answer's: status_code_counts)."""
    got: Counter[str] = Counter()
    for (_, code), n in status_code_counts(data, window).items():
        got[code] += n
    return dict(got)


def gateway_usage(containers: pd.DataFrame | None, window: tuple[float, float]) -> dict[str, Any]:
    """The gateway container's CPU (% of one core, from its cumulative cgroup
    usage between samples) and memory in the measurement phase; None values
    without samples."""
    out: dict[str, Any] = {"samples": 0, "cpu_mean_pct": None, "cpu_max_pct": None, "mem_max_bytes": None,
                           "anon_max_bytes": None}
    if containers is None or not {"role", "t_us", "cpu_usage_us", "mem_bytes"} <= set(containers.columns):
        return out
    d = containers[containers["role"] == ROLE].sort_values("t_us")
    if d.empty:
        return out
    pct = 100.0 * d["cpu_usage_us"].diff() / d["t_us"].diff()
    inside = (d["t_us"] >= window[0]) & (d["t_us"] < window[1])
    cpu = pct[inside & pct.notna() & (pct >= 0)]
    mem = d.loc[inside, "mem_bytes"]
    anon = d.loc[inside, "anon_bytes"] if "anon_bytes" in d.columns else pd.Series(dtype="float64")
    anon = anon[anon >= 0]
    out.update(samples=int(inside.sum()),
               cpu_mean_pct=float(cpu.mean()) if len(cpu) else None,
               cpu_max_pct=float(cpu.max()) if len(cpu) else None,
               mem_max_bytes=int(mem.max()) if len(mem) else None,
               anon_max_bytes=int(anon.max()) if len(anon) else None)
    return out


def _sent(data: Sequence[GeData]) -> Counter[int]:
    """Requests the GEs sent each device over the whole run."""
    sent: Counter[int] = Counter()
    for g in data:
        for batch in g.dataset().scanner(columns=["device_id"]).to_batches():
            for item in pc.value_counts(batch.column(0)).to_pylist():
                if item["values"] is not None:
                    sent[int(item["values"])] += int(item["counts"])
    return sent


def device_containers(files: RunFiles, data: Sequence[GeData]) -> dict[int, str]:
    """The workload GEs' devices: device_id -> its container (the GEs'
    device lists; the CD pair's nodes are not among them)."""
    container_of: dict[int, str] = {}
    for g in data:
        path = files.ge_devices(g.csv)
        if path.is_file():
            df = pd.read_csv(path, usecols=["device_id", "container"])
            container_of.update(zip(df["device_id"].astype(int), df["container"].astype(str), strict=True))
    return container_of


def routing(files: RunFiles, data: Sequence[GeData]) -> dict[str, Any] | None:
    """Whether the gateway sent each request to the device it names: every
    device's served requests (its --stats ``requests`` but the readiness
    probe's GET /.well-known/core) against the requests the GEs sent it.
    A device that served more than it was sent got another's requests
    (loss or timeouts only make fewer). None without the devices' stats."""
    container_of = device_containers(files, data)
    served: dict[int, int] = {}
    for dev, name in container_of.items():
        stats = files.device_stats.get(name)
        try:
            doc = read_record(stats, DEVICE_STATS) if stats is not None else None
        except UserError:
            doc = None
        if doc is not None:
            served[dev] = int(doc["requests"]) - int(doc["wkc"])
    if not served:
        return None
    sent = _sent(data)
    busiest = max(served, key=lambda d: served[d])
    return {"devices": len(served), "sent": sum(sent[d] for d in served), "served": sum(served.values()),
            "served_more": sum(1 for d in served if served[d] > sent[d]),
            "served_fewer": sum(1 for d in served if served[d] < sent[d]),
            "busiest": {"device_id": busiest, "served": served[busiest], "sent": sent[busiest]}}


def gateway_section(spec: Spec | None, data: Sequence[GeData], phases: Phases, ges: Sequence[dict[str, Any]],
                    containers: pd.DataFrame | None) -> dict[str, Any] | None:
    """The section, or None when the run had no gateway under test."""
    gut = spec.gateway_under_test if spec is not None else None
    if gut is None:
        return None
    codes = code_counts(data, phases.measure)
    usage = gateway_usage(containers, phases.measure)
    # "answered": rows with a response code (any), i.e. served through the gateway
    answered = sum(n for c, n in codes.items() if c)
    dur_s = (phases.measure[1] - phases.measure[0]) / 1e6
    usage["answered_per_s"] = answered / dur_s if dur_s > 0 else None
    usage["cpu_pct_per_kreq_s"] = cpu_per_kreq(usage["cpu_mean_pct"], answered, dur_s)
    return {
        "image": gut.image, "north": gut.north, "port": gut.port, "cores": gut.cores,
        "requests": int(sum(g["requests"] for g in ges)), "ok": int(sum(g["ok"] for g in ges)),
        "timeouts": int(sum(g["timeouts"] for g in ges)), "errors": int(sum(g["errors"] for g in ges)),
        "gateway_errors": {c: codes.get(c, 0) for c in GATEWAY_ERRORS},
        "codes": codes,
        "response_us": {str(g["ge"]): g["response_us"] for g in ges},
        "usage": usage,
    }


def _ms(us: float | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f} ms"


def answer(section: dict[str, Any], verdict: str) -> str:
    """The gateway's numbers (the two answers, the testbed's verdict first,
    are said before them: reporting/_gatewayanswer.py answer_line); with a
    testbed that was not valid they say they are not to be trusted."""
    caveat = "" if verdict == "valid" else " (the testbed was NOT valid: these numbers are not trustworthy)"
    per_ge: dict[str, dict[str, Any]] = section["response_us"]
    resp: dict[str, Any] = next(iter(per_ge.values())) if len(per_ge) == 1 else {}
    u = section["usage"]
    errs = ", ".join(f"{c}: {n}" for c, n in section["gateway_errors"].items())
    cpu = "-" if u["cpu_mean_pct"] is None else f"{u['cpu_mean_pct']:.1f} % of a core (max {u['cpu_max_pct']:.1f} %)"
    mem = "-" if u["mem_max_bytes"] is None else f"{u['mem_max_bytes'] / 2**20:.1f} MiB"
    return (f"The gateway ({section['image']}, {section['north']}, {section['cores']} core(s)){caveat}: "
            f"{section['ok']} of {section['requests']} requests ok, {section['timeouts']} timeouts, "
            f"gateway errors {errs}; end-to-end response p50 {_ms(resp.get('p50'))}, p99 {_ms(resp.get('p99'))}; "
            f"CPU {cpu}; memory max {mem}" + _misrouted(section.get("routing")) + _latency(section))


def _latency(section: dict[str, Any]) -> str:
    if "device_share" not in section:
        return ""
    text = latency_text(section["device_share"], section["added_latency"], section["usage"].get("cpu_pct_per_kreq_s"))
    return ". " + text[:1].upper() + text[1:]


def _misrouted(r: dict[str, Any] | None) -> str:
    if r is None or not r["served_more"]:
        return ""
    b = r["busiest"]
    return (f"; MISROUTED: {r['served_more']} of {r['devices']} devices served more requests than were sent "
            f"to them (device {b['device_id']}: {b['served']} served, {b['sent']} sent): the gateway did not "
            "send each request to the device it names")


def gateway_result(spec: Spec | None, files: RunFiles, data: Callable[[], Sequence[GeData]], phases: Phases,
                   ges: Sequence[dict[str, Any]], containers: pd.DataFrame | None,
                   verdict: str) -> dict[str, Any] | None:
    """The ``gateway`` section of the analysis with its ``answer``; None
    (and no pass over the GE outputs) without a gateway under test."""
    if spec is None or spec.gateway_under_test is None:
        return None
    ge_files = data()
    section = gateway_section(spec, ge_files, phases, ges, containers)
    if section is not None:
        section["routing"] = routing(files, ge_files)
        devices = set(device_containers(files, ge_files).values())
        section.update(latency_section({n: files.device_stats.get(n) for n in devices}, ge_files, phases.measure))
        section["numbers"] = answer(section, verdict)
        section["answer"] = gateway_answer(spec, files, ge_files, phases)   # the second answer: met or missed
    return section
