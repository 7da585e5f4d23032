"""The run verdict, in the spirit of TPC run rules and Lancet's coordinator:
each check is a small function returning ``(ok, reason)``; the run is
valid when every check passes. The reason is always filled in, so a
passing check still says what it looked at. Thresholds: wotbench.spec (validity).

This is the only place a run is judged: the harness records what it saw
(observed.json, the GE and device counters) and summary.json, the terminal
report, Markdown and HTML all show the verdict computed here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from wotbench.base import rundir as layout
from wotbench.base import units
from wotbench.reporting._countchecks import check_output, trace_names
from wotbench.reporting._hostchecks import (
    cd_sections,
    contention_per_host,
    monitor_per_host,
    no_collectl,
    placement_per_host,
    placement_unknown,
    swarm_problems,
    swarm_seen,
)
from wotbench.reporting._notify import check_observe, impaired_groups
from wotbench.spec import Thresholds

__all__ = ["CHECKS", "RECORD_CHECKS", "Thresholds", "run_checks", "stability_warnings"]

Check = tuple[bool, str]
A = dict[str, Any]


def _s(us: float) -> str:
    return f"{us / 1e6:g}s"


def _us(us: float) -> str:
    return f"{us / 1e3:g}ms" if us >= 1000 else f"{us:g}us"


def check_measure_length(a: A, th: Thresholds) -> Check:
    ph, n = a["phases"], a["measure_counts"]["requests"]
    dur = ph["measure"][1] - ph["measure"][0]
    if ph["inferred"]:      # the windows are the run's record: without it, nothing says where they were
        return False, (f"no {layout.PHASES}: the measurement phase is unknown (the whole output, "
                       f"{_s(dur)} with {n} requests, was analysed as one)")
    src = ""
    if dur < th.min_measure_us:
        return False, f"measurement phase {_s(dur)} is shorter than {_s(th.min_measure_us)}{src}"
    if _observe_only(a):
        got = a["observe"]["total"]["latency_us"]["n"]
        if got < th.min_notifications:
            return False, (f"only {got} notifications received in the measurement phase (observe only; need "
                           f"{th.min_notifications})")
        return True, f"measurement phase {_s(dur)} with {got} notifications received (observe only)"
    if n < th.min_requests:
        return False, f"only {n} requests in the measurement phase (need {th.min_requests}){src}"
    return True, f"measurement phase {_s(dur)} with {n} requests{src}"


def _held(a: A) -> dict[int, int]:
    """GE k -> its requests that timed out on HTTP connections a gateway under
    test held (reporting/_gatewayanswer.py): that GE's sends waited for the
    gateway, so its rate, RITs, send lag and late sends are not the testbed's."""
    return {int(k): int(n) for k, n in ((a.get("through_gateway") or {}).get("held") or {}).items()}


def _excused(held: dict[int, int], ges: set[int]) -> str:
    """What a check left to the gateway answer: the GEs whose sends the gateway held."""
    if not ges:
        return ""
    return "; not judged: " + ", ".join(
        f"GE {k} (the gateway held its connections: {held[k]} requests timed out on them; its sends waited "
        "for the gateway, judged in the gateway answer)" for k in sorted(ges))


def _observe_only(a: A) -> bool:
    """An Observe run without polling rows: nothing to send in the measurement phase."""
    obs = a.get("observe")
    return obs is not None and obs.get("polling_requests") == 0


def check_rate(a: A, th: Thresholds) -> Check:
    bad, held, excused = [], _held(a), set()
    if _observe_only(a):
        return True, ("observe only: the trace has no polling rows, and its OBS/UNOBS rows lie outside the "
                      "measurement phase (the notifications are judged by the observe check)")
    for g in a["ges"]:
        dev = g["rate_dev"]
        if (dev is None or abs(dev) > th.rate_tolerance) and g["ge"] in held:
            excused.add(g["ge"])
        elif dev is not None and abs(dev) > th.rate_tolerance and _rate_by_nstart(g):
            continue
        elif dev is None or abs(dev) > th.rate_tolerance:
            got = f"{g['achieved_rate']:.1f}/s" if g["achieved_rate"] is not None else "no rate"
            ev = g.get("evidence") or {}
            tgt = (f"{g['target_rate']:.1f}/s" if g["target_rate"] is not None else
                   f"unknown ({ev.get('trace_error') or 'no trace: ' + trace_names(g['ge'])})")
            bad.append(f"GE {g['ge']} sent {got} vs target {tgt}"
                       + (f" ({dev:+.1%})" if dev is not None else ""))
    if bad:
        return False, ("; ".join(bad) + f" (tolerance {th.rate_tolerance:.0%})" + _excused(held, excused)
                       + _nstart_note(a["ges"]))
    return True, (f"achieved send rate within {th.rate_tolerance:.0%} of the target (the trace's requests "
                  "in the measurement phase) for every GE" + _excused(held, excused) + _nstart_note(a["ges"]))


def _rate_by_nstart(g: A) -> bool:
    """Whether a GE's rate deviation is a shortfall of no more requests than
    NSTART held (sent later than their time, some past the measurement
    phase's end); sending more than the target is never excused."""
    h = _nstart(g)
    if not h or g["target_rate"] is None:
        return False
    return bool(g["rate_dev"] < 0 and -g["rate_dev"] * g["target_rate"] * g["duration_s"] <= h["held"])


def check_rit(a: A, th: Thresholds) -> Check:
    """Judged on what the devices under test see (paper section 6.1): a GE
    whose aggregate stream is floored at some minimum gap may still deliver
    every device's RITs faithfully when the per-device load is low (paper
    Table 1, ten devices); that case is a warning, not a failure."""
    held = _held(a)
    excused = {d["ge"] for d in a["devices"] if not d["rit_ok"] and d["ge"] in held}
    waited = {(g["ge"], dev) for g in a["ges"] if _nstart(g) for dev in (_nstart(g) or {}).get("held_devices", ())}
    nstart_bad = [d for d in a["devices"] if not d["rit_ok"] and (d["ge"], d["device_id"]) in waited]
    dev_bad = [d for d in a["devices"] if not d["rit_ok"] and d["ge"] not in held
               and (d["ge"], d["device_id"]) not in waited]
    note = (f"; not judged: {len(nstart_bad)} device(s) whose requests waited for NSTART (their submitted RITs "
            "are the protocol's)") if nstart_bad else ""
    if dev_bad:
        shown = "; ".join(f"device {d['device_id']}: {', '.join(d['rit_problems'])}" for d in dev_bad[:3])
        more = f" (and {len(dev_bad) - 3} more)" if len(dev_bad) > 3 else ""
        ges = sorted({d["ge"] for d in dev_bad})
        return False, (f"submitted workload deviates from the expected one for {len(dev_bad)} device(s): "
                       f"{shown}{more}; GE {', '.join(map(str, ges))} could not keep up: "
                       f"use more GE instances (gateway.instances)" + _excused(held, excused) + note)
    return True, ("submitted RITs match the expected ones (mean, p5, KS) for every device" + _excused(held, excused)
                  + note)


def _nstart(g: A) -> A | None:
    """A GE's requests NSTART held (reporting/_congestion.py holds_section), or None."""
    h = g.get("nstart_holds")
    return h if isinstance(h, dict) and h.get("held") else None


def _lag_p99(g: A) -> float | None:
    """The p99 send lag the GE is judged by: of the requests it was free to
    send when NSTART held some (their wait is the protocol's, not a GE behind)."""
    h = _nstart(g)
    return h.get("send_lag_p99_free_us") if h else g["send_lag_us"]["p99"]


def _nstart_note(ges: list[A]) -> str:
    held = [(g["ge"], _nstart(g)) for g in ges if _nstart(g)]
    return "".join(f"; GE {k}: {h['held']} requests waited for NSTART (their wait is the protocol's, "
                   f"in their send lag) and are not judged here" for k, h in held if h)


def check_send_lag(a: A, th: Thresholds) -> Check:
    held = _held(a)
    lagged = [g for g in a["ges"] if _lag_p99(g) is not None and (_lag_p99(g) or 0) > th.send_lag_p99_max_us]
    excused = {g["ge"] for g in lagged if g["ge"] in held}
    bad = [f"GE {g['ge']} p99 send lag {_lag_p99(g):.0f}us" for g in lagged if g["ge"] not in held]
    stalled, tolerated = _fifo_stalls(a["ges"])
    fifo = [(g["ge"], g["sched"]) for g in a["ges"] if (g.get("sched") or {}).get("policy") == "fifo"]
    yields = "".join(f"; GE {k} yielded {s['yields']} times ({s['yield_us'] / 1000:.0f} ms) to stay in its RT budget"
                     for k, s in fifo if s.get("yields"))
    if bad or stalled:
        lag = ["; ".join(bad) + f" > {th.send_lag_p99_max_us:.0f}us: the GE fell behind its schedule"] if bad else []
        return False, ("; ".join(lag + stalled)
                       + yields + (f"; {a['ges_needed']['sentence']}" if a.get("ges_needed") else "")
                       + _excused(held, excused) + _nstart_note(a["ges"]))
    return True, (f"p99 send lag within {th.send_lag_p99_max_us:.0f}us for every GE" + yields
                  + "".join(f"; {t}" for t in tolerated) + _excused(held, excused) + _nstart_note(a["ges"]))


def _fifo_stalls(ges: list[A]) -> tuple[list[str], list[str]]:
    """Gaps of over 1 ms in a GE's loop that it did not sleep for: a stall
    (a SCHED_FIFO GE switched out anyway: preempted, RT-throttled, or time
    taken below the guest's scheduler, docs/soak.md "The FIFO stall
    traced") or a hold (any GE that waited in the kernel: a major fault, a
    blocking write; docs/soak.md "Holes in the schedule"). (refused,
    tolerated) sentences. One is tolerated only when what it did is
    measured and small: every send of the GE carries the kernel's TX stamp
    (so the sends it delayed are in the send lag, and replies are stamped
    by the kernel anyway), and the longest is at most the GE's mean
    intended gap in the measurement phase (so it bunched about one
    request). Without the evidence (the counters, the trace's rate, a
    summary with the scheduling record and its hold counters) it is refused."""
    refused: list[str] = []
    tolerated: list[str] = []
    for g in ges:
        s = g.get("sched")
        if s is None:
            refused.append(f"GE {g['ge']}: its summary has no scheduling record (sched), so whether its loop "
                           "lost its core or waited in the kernel is unknown")
            continue
        gaps = []
        if s.get("policy") == "fifo" and s.get("stalls"):
            gaps.append((s["stall_max_us"], f"GE {g['ge']} lost its core {s['stalls']} time(s) for over 1 ms under "
                         f"SCHED_FIFO, up to {s['stall_max_us'] / 1000:.1f} ms (preempted, RT-throttled, or an "
                         "interrupt or the hypervisor below the guest's scheduler)"))
        if "holds" not in s:
            refused.append(f"GE {g['ge']}: its summary has no hold counters (a GE older than this analysis), so "
                           "whether its loop waited in the kernel is unknown")
        elif s["holds"]:
            faults = f", {s['majflt']} major page fault(s) in the run" if s.get("majflt") else ""
            gaps.append((s["hold_max_us"], f"GE {g['ge']}'s loop waited in the kernel {s['holds']} time(s) for over "
                         f"1 ms, up to {s['hold_max_us'] / 1000:.1f} ms{faults} (a page read back from the disk, "
                         "a blocking write)"))
        for worst_us, what in gaps:
            verdict, tolerable = _judge_gap(g, worst_us)
            (tolerated if tolerable else refused).append(what + verdict)
    return refused, tolerated


def _judge_gap(g: A, worst_us: float) -> tuple[str, bool]:
    """The rule of :func:`_fifo_stalls` for one kind of gap: (why, tolerated)."""
    c = g.get("counters") or {}
    rate = g.get("target_rate")
    gap_us = 1e6 / rate if rate else None
    if c.get("tx_stamps_fallback") != 0 or not c.get("tx_stamps_kernel"):
        return ": not all its sends carry the kernel's stamp, so their lag may not show it", False
    if gap_us is None:
        return ": its mean intended gap is unknown (no trace rate)", False
    if worst_us > gap_us:
        return (f", longer than its mean intended gap of {gap_us / 1000:.1f} ms: it bunched several requests",
                False)
    return (f", within its mean intended gap of {gap_us / 1000:.1f} ms: the sends it delayed are in its send lag, "
            "stamped by the kernel"), True


def check_errors(a: A, th: Thresholds) -> Check:
    """Failed requests in the measurement phase. With a gateway under test
    only those the testbed made count (failed sends; a device's error code
    the gateway passed on, e.g. 5.03): the gateway's 5.02/5.04/502/504, its
    timeouts and the other failures through it go to the gateway answer
    (reporting/_gatewayanswer.py)."""
    if a.get("through_gateway") is not None:
        return _testbed_errors(a["through_gateway"], th)
    c = a["measure_counts"]
    excused, why = _impaired_timeouts(a)
    queued = int(c.get("never_sent") or 0)
    if queued > 0:
        excused += queued
        why = "; ".join(x for x in (why, f"{queued} requests NSTART held past their timeout (no sent stamp: "
                                         "never sent) are the protocol's results, not failures") if x)
    left = c["timeouts"] - excused
    if excused and left > 0:
        why += f"; the other {left} timeouts are counted"
    rate = (c["requests"] - c["ok"] - excused) / c["requests"] if c["requests"] else 0.0
    what = f"{c['timeouts']} timeouts and {c['errors']} errors of {c['requests']} requests ({rate:.2%}"
    what += f" counted: {why})" if excused else ")"
    if rate > th.max_error_rate:
        return False, f"{what} > {th.max_error_rate:.1%}" + _failing_devices(a.get("devices") or [])
    return True, what


def _impairment_text(g: dict[str, Any]) -> str:
    parts = ([f"loss {g['loss']:.0%}"] if g.get("loss") else []) + (
        [f"rate {g['rate_bps'] / 1e3:g} kbit/s"] if g.get("rate_bps") else [])
    return " and ".join(parts)


def _explained(d: A, g: A, exchange: A) -> int:
    """How many of device d's timeouts its group's impairment g can explain.
    Loss p of exchanges: a CON exchange times out when all its 1 +
    MAX_RETRANSMIT transmissions are lost (p^(1+R)), a NON one when its one
    is (p); at most E + 4 sqrt(E) + 1 of the device's requests (E the
    expected count), so a device that hangs or a GE that drops what it
    received is not excused. A rate limit (tbf) drops what its queue cannot
    hold, which no formula bounds: its timeouts are excused up to the
    device's answered requests (a device that lost more than it answered
    stopped answering, it was not rate-limited)."""
    t, loss = int(d["timeouts"]) - int(d.get("never_sent") or 0), float(g.get("loss") or 0.0)
    if g.get("rate_bps"):
        return min(t, int(d["ok"]))
    con = exchange.get("type") == "con"
    retx = exchange.get("max_retransmit")
    q = loss ** (1 + int(retx if retx is not None else 4)) if con else loss
    e = int(d["requests"]) * q
    return min(t, int(e + 4 * math.sqrt(e) + 1))


def _impaired_timeouts(a: A) -> tuple[int, str]:
    """The measurement phase's timeouts the configured impairment explains
    (_explained): lost exchanges are what such a run measures, results and
    not failures, as far as the configured loss or rate limit accounts for
    them. A device of such a group that answered none of its requests is
    not excused (cut off, not lossy), nor are timeouts of unimpaired
    devices, timeouts beyond what the impairment explains, or any other
    error."""
    groups = impaired_groups(a)
    if not groups:
        return 0, ""
    exchange = {g.get("ge"): g.get("exchange") or {} for g in a.get("ges") or ()}
    devs = [d for d in a.get("devices") or () if d.get("group") in groups and d.get("timeouts")
            and (d["ok"] > 0 or (groups[d["group"]].get("loss") or 0) >= 1)]
    n = sum(_explained(d, groups[d["group"]], exchange.get(d.get("ge")) or {}) for d in devs)
    if not n:
        return 0, ""
    named = "; ".join(f"{name}: {_impairment_text(g)}" for name, g in sorted(groups.items()))
    return n, (f"{n} timeouts of devices under the configured impairment ({named}) are its results, "
               "not failures")


def _testbed_errors(tg: A, th: Thresholds) -> Check:
    n, tb, gw = tg["requests"], tg["testbed"], tg["gateway"]
    rate = tb["total"] / n if n else 0.0
    what = (f"{tb['total']} errors the testbed made of {n} requests ({rate:.2%}: {tb['send_errors']} failed sends, "
            f"{tb['device_codes']} device error codes through the gateway); the gateway's {gw['total']} "
            "(timeouts, 5.02/5.04/502/504, closed connections) are judged in the gateway answer")
    if rate > th.max_error_rate:
        return False, f"{what}; {rate:.2%} > {th.max_error_rate:.1%}"
    return True, what


def _failing_devices(devices: list[dict[str, Any]], show: int = 5) -> str:
    """Which devices the failures came from: the worst first, and how many
    devices had no request answered at all (a device cut off the network)."""
    bad = sorted(((d["requests"] - d["ok"], d["requests"], d["device_id"]) for d in devices
                  if d["requests"] > d["ok"]), key=lambda x: (-x[0] / x[1], -x[0], x[2]))
    if not bad:
        return ""
    dead = sum(1 for f, n, _ in bad if f == n)
    named = ", ".join(f"device {i} {f}/{n}" for f, n, i in bad[:show])
    more = f" (and {len(bad) - show} more)" if len(bad) > show else ""
    none = f"; {dead} device(s) answered none of their requests" if dead else ""
    return f"; failed requests by device: {named}{more}{none}"


def check_contention(a: A, th: Thresholds) -> Check:
    """The CD module's verdict: of the host, or of every host of a swarm
    (the failing ones named)."""
    if a.get("swarm"):
        return contention_per_host(a, th)
    cd = a["cd"]
    if cd is None:
        return (not th.require_cd), (f"no CD data ({layout.CD}/{layout.CD_OUTPUT}): contention was not tested"
                                     + _not_required(th.require_cd, "require_cd"))
    status = cd["contention"]["status"]
    reason = cd["contention"]["reason"]
    if status in ("contention", "disturbed"):   # a disturbed baseline: the CD pair cannot judge
        return False, reason
    if status == "unknown":
        return (not th.require_cd), reason + _not_required(th.require_cd, "require_cd")
    if status == "inconclusive":
        return th.allow_inconclusive, reason + ("" if th.allow_inconclusive else
                                                 " (validity.allow_inconclusive: false)")
    return True, reason


def _not_required(required: bool, key: str) -> str:
    """What a passing check without its evidence says: the spec opted out."""
    return "" if required else f" (not required: validity.{key} is false)"


def check_monitor(a: A, th: Thresholds) -> Check:
    if a.get("swarm"):
        return monitor_per_host(a, th)
    m = a["monitor"]
    if not m["present"]:
        why = ": collectl is not installed" if no_collectl(a, None) else ""
        return (not th.require_monitor), (f"no monitor data ({layout.MONITOR}/{layout.HOST_MONITOR}){why}"
                                          + _not_required(th.require_monitor, "require_monitor"))
    if not m["covers_measure"]:
        return (not th.require_monitor), ("monitor data does not cover the measurement phase"
                                          + _not_required(th.require_monitor, "require_monitor"))
    return True, f"monitor data present ({m['samples']} samples in the measurement phase)"


def check_placement(a: A, th: Thresholds) -> Check:
    if a.get("swarm"):
        return placement_per_host(a, th)
    p = a["placement"]
    if p is None or p.get("error"):
        return False, placement_unknown(p)
    if not p["degraded"]:
        return True, "placement as planned: dedicated GE cores"
    notes = "; ".join(p["notes"])
    # Only a test that had the power to see contention and saw none accepts shared cores.
    status = a["cd"]["contention"]["status"] if a["cd"] else "unknown"
    if status == "none":
        return True, ("cores were shared (placement degraded" + (f": {notes}" if notes else "")
                      + "); the contention detector ruled contention out: the sharing did not slow the devices, "
                      "so the numbers hold for this host")
    return False, ("placement degraded (cores shared" + (f": {notes}" if notes else "")
                   + f") and the contention detector could not rule contention out ({status})")


def _node_problems(h: A) -> list[str]:
    return [f"{c.get('role')} {c.get('key')} (container {c['container']})"
            + (f" on node {c['node']}" if c.get("node") else "") + " was not running at the end of the "
            f"test (status {c.get('status')}, exit code {c.get('exit_code')}"
            + (", OOM-killed" if c.get("oom_killed") else "") + ")" for c in h["nodes_not_running"]]


def _restart_problems(h: A) -> list[str]:
    return [f"{c.get('role')} {c.get('key')} (container {c['container']}) was restarted during the test "
            f"(started at {c.get('started_at')}, after the GEs were up; restarts {c.get('restarts') or 0}): "
            "its state and counters began again" for c in h.get("nodes_restarted") or ()]


def _cut_off_problems(h: A) -> list[str]:
    return [f"{c.get('role')} {c.get('key')} (container {c['container']}) was cut off the network during the "
            f"test: its address {c['address']} was no longer attached at the end"
            + (f" (it had {', '.join(c['addresses'])})" if c["addresses"] else " (it had no network left)")
            for c in h.get("nodes_cut_off") or ()]


def _ge_problems(h: A) -> list[str]:
    out = []
    for key, g in sorted(h["ges"].items()):
        name = f"{key} (on node {g['node']})" if g.get("node") else key
        if g.get("killed"):
            out.append(f"{name} was killed: it did not finish in time (see {layout.LOGS}/)")
        elif g.get("exit_code") != 0:
            out.append(f"{name} exited with {g.get('exit_code')} (see {layout.LOGS}/)")
        if g.get("trace_lines") is not None and g.get("rows") != g["trace_lines"]:
            out.append(f"{name}: {g.get('rows')} output rows for {g['trace_lines']} trace lines")
    out += [f"{f}: the output written before it was killed ({n} rows; kept, not analysed)"
            for f, n in sorted((h.get("partial") or {}).items())]
    return out


def _start_problems(h: A) -> list[str]:
    late = (h.get("start") or {}).get("late_us") or 0
    return [f"the GE containers were not all up at their start instant ({late / 1e3:.0f} ms late: "
            "the host was too slow starting containers)"] if late > 0 else []


def check_harness(a: A, th: Thresholds) -> Check:
    """What the harness saw (observed.json): nodes running to the end, not
    restarted and still on their networks, GEs exiting 0 with one output
    row per trace line, GEs up in time; across a swarm also every node up
    to the end and every device host's probe answered."""
    h = a["harness"]
    if not h["recorded"]:
        if h.get("error"):
            return False, f"{layout.OBSERVED} is damaged: {h['error']}: what the harness saw cannot be judged"
        return False, (f"no {layout.OBSERVED}: what the harness saw (containers running to the end, GE exits) "
                       "is missing, so it cannot be judged")
    problems = (swarm_problems(a) + _node_problems(h) + _restart_problems(h) + _cut_off_problems(h)
                + _ge_problems(h) + _start_problems(h))
    if problems:
        return False, "; ".join(problems)
    return True, (f"{h['nodes']} device/CD containers ran to the end without a restart, on their networks; "
                  f"{_ge_count(h['ges'])} exited 0 with "
                  "one output row per trace line, up before their start instant" + swarm_seen(a))


def _ge_count(keys: Any) -> str:
    """'1 GE and 1 CD-GE': the workload's GEs counted apart from the
    contention detectors' (observed.json keys ``cd-ge``, ``cd-ge-<i>``)."""
    cd = sum(1 for k in keys if str(k) == "cd-ge" or str(k).startswith("cd-ge-"))
    ges = units.plural(len(keys) - cd, "GE")
    return f"{ges} and {units.plural(cd, 'CD-GE')}" if cd else ges


def check_ge_counters(a: A, th: Thresholds) -> Check:
    """Late sends in the measurement phase (GE output: send lag beyond
    late_send) and send errors over the whole run (the GE's summary)."""
    bad: list[str] = []
    held, excused = _held(a), set()
    for g in a["ges"]:
        n, late = g["requests"], g["late_sends"]
        h = _nstart(g)
        if h:                          # judged on the requests NSTART did not hold
            n, late = h["free"], h["late_free"]
        if n and late / n > th.max_late_sends and g["ge"] in held:
            excused.add(g["ge"])
        elif n and late / n > th.max_late_sends:
            bad.append(f"GE {g['ge']}: {late} of {n} sends ({late / n:.2%}) later than "
                       f"{_us(th.late_send_us)} (max {th.max_late_sends:.1%})")
        c = g["counters"]
        err = (g.get("evidence") or {}).get("summary_error")
        if c is None:
            bad.append(f"GE {g['ge']}: " + (f"summary damaged ({err})" if err else
                                            f"no summary ({layout.GE}/{layout.ge_summary(g['ge'])})")
                       + ": its send errors are unknown")
        elif (c["send_errors"] or 0) > th.max_send_errors:
            bad.append(f"GE {g['ge']}: {c['send_errors']} send errors (max {th.max_send_errors})")
    if bad:
        return False, "; ".join(bad) + _excused(held, excused) + _nstart_note(a["ges"])
    return True, (f"late sends within {th.max_late_sends:.1%} (later than {_us(th.late_send_us)}) "
                  f"and at most {th.max_send_errors} send errors for every GE" + _excused(held, excused)
                  + _nstart_note(a["ges"]))


def check_overload(a: A, th: Thresholds) -> Check:
    """5.03 replies (a device's queue full) in the measurement phase: the GE
    output decides, exactly; the devices' --stats totals (whole run) are
    shown beside it."""
    n = sum(g["overloaded"] for g in a["ges"])
    dc = a["device_counters"]
    stats = (f"devices' --stats, whole run: {dc['totals']['overflow']} 5.03, "
             f"{dc['totals']['duplicates']} duplicates, {dc['totals']['dropped']} dropped"
             if dc["files"] else "no device --stats")
    missing = _stats_missing(a)
    if missing:
        return False, "; ".join(missing) + ": the devices' own counts (5.03, drops) are missing"
    if n == 0:
        return True, f"no 5.03 (overload) reply in the measurement phase ({stats})"
    what = f"{n} requests answered 5.03 (device queue full) in the measurement phase (GE output; {stats})"
    if th.allow_overload:
        return True, what + "; accepted: allow_overload"
    return False, what + ": the devices were overloaded"


def _stats_missing(a: A) -> list[str]:
    """The device --stats files that should be there and are not (a device
    observed running to the end, or fewer files than devices in the output),
    or cannot be read."""
    dc = a["device_counters"]
    where = f"{layout.DEVICES}/<container>/{layout.DEVICE_STATS}"
    out = [f"damaged device --stats: {e}" for e in dc.get("damaged", ())]
    running = dc.get("missing_running", [])
    if running:
        out.append(f"{len(running)} device(s) ran to the end but wrote no --stats counters ({where}): "
                   + ", ".join(running[:5]) + (" ..." if len(running) > 5 else ""))
    seen, have = len(a["devices"]), dc["files"]
    if not running and have < seen:
        out.append(f"{seen} devices answered in the GE output but only {have} device --stats files "
                   f"were found ({where})")
    return out


def check_analysis(a: A, th: Thresholds) -> Check:
    """The run's data could be analysed at all (records-only verdict)."""
    return False, f"the run's data could not be analysed: {a['analysis_error']}"


def check_congestion_evidence(a: A, th: Thresholds) -> Check | None:
    """The per-exchange RTO logs the GEs were asked for (--rto-out) are
    whole: a missing or unreadable one fails (missing evidence); left out
    when every log asked for is there."""
    c = a.get("congestion")
    if not c or c.get("complete", True):
        return None
    return False, "MISSING EVIDENCE: " + "; ".join(str(p) for p in c.get("problems") or ["an RTO log"])


CHECKS: tuple[tuple[str, Callable[[A, Thresholds], Check | None]], ...] = (
    ("harness", check_harness),
    ("output", check_output),
    ("measurement", check_measure_length),
    ("rate", check_rate),
    ("rit_integrity", check_rit),
    ("send_lag", check_send_lag),
    ("errors", check_errors),
    ("ge_counters", check_ge_counters),
    ("overload", check_overload),
    ("contention", check_contention),
    ("monitor", check_monitor),
    ("placement", check_placement),
    ("observe", check_observe),        # only in a run with observations (Observe, RFC 7641)
    ("congestion", check_congestion_evidence),   # only when an RTO log the GEs were asked for is not whole
)

#: The verdict of a run whose data could not be analysed: its records alone.
RECORD_CHECKS: tuple[tuple[str, Callable[[A, Thresholds], Check | None]], ...] = (
    ("harness", check_harness),
    ("analysis", check_analysis),
)


def run_checks(a: A, th: Thresholds,
               table: tuple[tuple[str, Callable[[A, Thresholds], Check | None]], ...] = CHECKS
               ) -> tuple[str, list[str], list[dict[str, Any]]]:
    """(verdict, reasons of the failed checks, every check with ok and reason;
    a check that does not apply to the run, returning None, is left out)."""
    results: list[dict[str, Any]] = []
    for name, fn in table:
        got = fn(a, th)
        if got is None:
            continue
        ok, reason = got
        results.append({"check": name, "ok": bool(ok), "reason": reason})
    reasons = [r["reason"] if r["reason"].startswith(r["check"]) else f"{r['check']}: {r['reason']}"
               for r in results if not r["ok"]]
    return ("valid" if not reasons else "invalid"), reasons, results


def stability_warnings(a: A, th: Thresholds) -> list[str]:
    """pyperf-style warnings: numbers that are not wrong but may not be stable."""
    out = []
    ges_with_bad_devices = {d["ge"] for d in a["devices"] if not d["rit_ok"]}
    for g in a["ges"]:
        if not g["rit"]["ok"] and g["ge"] not in ges_with_bad_devices:
            out.append(f"GE {g['ge']}'s aggregate stream deviates from the trace ({'; '.join(g['rit']['problems'])}); "
                       f"the devices' RITs are still within tolerance, but more GE instances would remove the doubt")
        cv = g["response_window_cv"]
        if cv is not None and cv > th.instability_cv:
            out.append(f"GE {g['ge']}: mean response time varies {cv:.0%} between the ten slices of "
                       f"the measurement phase (> {th.instability_cv:.0%}): the result may be unstable; "
                       f"run longer or check the host")
    few = [d["device_id"] for d in a["devices"] if d["ok"] < th.min_device_samples]
    if few:
        out.append(f"{len(few)} device(s) have fewer than {th.min_device_samples} measured responses "
                   f"(e.g. {', '.join(map(str, few[:5]))}): their percentiles are not reliable")
    for where, cd in cd_sections(a):
        c = cd["contention"]
        if c["status"] == "inconclusive":
            out.append(where + c["reason"])
        n = c["measure"]["n"]
        if 0 < n < 30:
            out.append(f"{where}only {n} CD samples in the measurement phase: the contention test has little power")
    out += _fifo_stalls(a["ges"])[1] + _holes(a["ges"], th) + _keep_warnings(a["ges"])
    if a["phases"]["inferred"]:
        out.append(f"no {layout.PHASES}: the whole trace is treated as the measurement phase (no warm-up cut)")
    return out + _counter_warnings(a)


def _holes(ges: list[A], th: Thresholds) -> list[str]:
    """A send later than 10 x ``late_send``: the GE's loop was held that long
    at least once (its trace paged out under it, docs/soak.md "Holes in the
    schedule"), and what was due meanwhile went out together. The p99 and
    the late-send share do not judge one such hole, so it is named."""
    out = []
    for g in ges:
        lag = g.get("send_lag_us") or {}
        worst = lag.get("max")
        if worst is not None and worst > 10 * th.late_send_us:
            out.append(f"GE {g['ge']}: a send was {worst / 1000:.0f} ms late (p99 {lag.get('p99') or 0:.0f} us): "
                       "its loop was held that long at least once and the requests due meanwhile went out "
                       "together; the p99 and the late-send share do not judge one such hole "
                       "(docs/soak.md, \"Holes in the schedule\")")
    return out


def _keep_warnings(ges: list[A]) -> list[str]:
    """A GE that could not keep its trace locked ahead of its loop
    (gateway-emulator/README.md, "The trace kept resident"): its loop may
    wait on the disk where the host pages cold files out (its holds say
    whether it did)."""
    out = []
    for g in ges:
        k = g.get("trace_keep") or {}
        if k.get("mode") == "prefetch":
            why = f" (mlock: {k['lock_error']})" if k.get("lock_error") else " (RLIMIT_MEMLOCK under 1 MB)"
            out.append(f"GE {g['ge']} could not lock its trace ahead of its loop{why}: it read ahead only")
        if k.get("probe") == "mincore":
            out.append(f"GE {g['ge']}'s trace keeper could not ask the page cache without waiting (no RWF_NOWAIT "
                       "on its file system): it trusted mincore, which calls every page resident for a file the GE "
                       "does not own, so a paged-out chunk may have been read in its loop")
        if k.get("behind"):
            out.append(f"GE {g['ge']}'s parse overtook its trace keeper {k['behind']} time(s): its gaps were too "
                       "short to keep the trace locked ahead")
    return out


def _counter_warnings(a: A) -> list[str]:
    """What the GE and device counters say beyond the checks."""
    out = [f"GE {g['ge']} received {g['counters']['malformed']} malformed datagrams (truncated or not CoAP)"
           for g in a["ges"] if g["counters"] and g["counters"]["malformed"]]
    out += [f"GE {g['ge']}: {c['tx_stamps_fallback']} of {c['tx_stamps_fallback'] + (c.get('tx_stamps_kernel') or 0)} "
            "sends carry the GE's own stamp from before its send call, not the kernel's: their send lag leaves out "
            "the send itself (gateway-emulator/README.md, \"Kernel send stamps\")"
            for g in a["ges"] if (c := g["counters"]) and c.get("tx_stamps_fallback")]
    dc = a["device_counters"]
    n503 = sum(g["overloaded"] for g in a["ges"])
    if dc["totals"]["overflow"] > n503:
        out.append(f"the devices answered {dc['totals']['overflow']} requests 5.03 over the whole run (--stats), "
                   f"{n503} of them in the measurement phase: overload in warm-up or cool-down")
    if dc["missing"]:
        out.append(f"{len(dc['missing'])} device(s) wrote no --stats counters (killed, or not stopped "
                   f"cleanly): {', '.join(dc['missing'][:5])}")
    return out
