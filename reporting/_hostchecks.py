"""The checks of a run across a swarm, host by host (``_checks.CHECKS``
calls them): contention, monitor and placement per host, each failing
reason naming its host, and what the ``harness`` check adds across a swarm
(a node lost mid-run, a probe without answers). A remote host's CD windows are its own clock's,
shifted onto the GE node's t0: its reasons state the clock-offset estimate."""

from __future__ import annotations

from typing import Any

from wotbench.base import rundir as layout
from wotbench.spec import Thresholds

__all__ = ["cd_sections", "clock_note", "clock_offset", "contention_per_host", "monitor_per_host", "no_collectl",
           "placement_per_host", "placement_unknown", "probes", "swarm_problems", "swarm_seen"]

Check = tuple[bool, str]
A = dict[str, Any]


def _us(us: float) -> str:
    return f"{us / 1e3:.3g} ms" if abs(us) >= 1000 else f"{us:.0f} us"


def _at(host: str, *parts: str) -> str:
    """A host's file, as the run folder names it."""
    return "/".join((layout.NODES, host, *parts))


def clock_offset(s: A) -> str | None:
    """A host's clock-offset estimate to the GE node, ``-350 us ± 80 us``
    (``unknown`` without one); None on the GE node itself."""
    if s["ge_node"]:
        return None
    c = s["clock"]
    if c is None:
        return "unknown"
    unc = c.get("uncertainty_us")
    return (f"{'+' if c['offset_us'] >= 0 else '-'}{_us(abs(c['offset_us']))}"
            + (f" ± {_us(unc)}" if isinstance(unc, (int, float)) else ""))


def clock_note(s: A) -> str:
    """The clock-offset estimate behind a remote host's CD windows (its
    CD-GE's clock shifted onto the GE node's t0); none on the GE node."""
    off = clock_offset(s)
    return "" if off is None else f" (clock offset to the GE node {off})"


def cd_sections(a: A) -> list[tuple[str, A]]:
    """(prefix naming the host, CD section) of every CD test of the run."""
    if a.get("swarm"):
        return [(f"host {h}: ", s["cd"]) for h, s in a["hosts"].items() if s["cd"] is not None]
    return [("", a["cd"])] if a["cd"] is not None else []


def _on_host(h: str, note: str, reason: str) -> str:
    """wotbench.cd's reason, said of host ``h``: 'contention: R_d ...' ->
    'contention on host h: R_d ...'."""
    for head in ("contention: ", "contention "):
        if reason.startswith(head):
            return f"contention on host {h}{note}{head[len('contention'):]}{reason[len(head):]}"
    return f"host {h}{note}: {reason}"


def contention_per_host(a: A, th: Thresholds) -> Check:
    """Every host with a CD pair: contention on any fails the run."""
    hosts = [(h, s) for h, s in a["hosts"].items() if s["device_host"] or s["cd"] is not None]
    if not hosts:
        return (not th.require_cd), ("no host ran a CD pair: contention was not tested"
                                     + ("" if th.require_cd else " (not required: validity.require_cd is false)"))
    bad, lines = [], []
    for h, s in hosts:
        cd = s["cd"]
        if cd is None:
            line = f"no CD data on host {h} ({_at(h, layout.CD, layout.CD_OUTPUT)}): contention was not tested"
            ok = not th.require_cd
        else:
            status = cd["contention"]["status"]
            line = _on_host(h, clock_note(s), cd["contention"]["reason"])
            ok = status not in ("contention", "disturbed") and (status != "unknown" or not th.require_cd) and (
                status != "inconclusive" or th.allow_inconclusive)
        lines.append(line)
        if not ok:
            bad.append(line)
    return (False, "; ".join(bad)) if bad else (True, "; ".join(lines))


def no_collectl(a: A, host: str | None) -> bool:
    """Whether observed.json says collectl was missing on ``host`` (None: the
    one host). Recorded per hostname, or as one bool: the harness's own
    host's (across a swarm the node the manifest marks ``local``)."""
    c = a["harness"].get("collectl")
    if isinstance(c, dict):
        return c.get(host) is False
    return c is False and (host is None or a["hosts"][host]["local"])


def monitor_per_host(a: A, th: Thresholds) -> Check:
    bad, seen = [], []
    for h, s in a["hosts"].items():
        m = s["monitor"]
        if not m["present"]:
            why = ": collectl is not installed there" if no_collectl(a, h) else ""
            bad.append(f"no monitor data on host {h} ({_at(h, layout.MONITOR, layout.HOST_MONITOR)}){why}")
        elif not m["covers_measure"]:
            bad.append(f"monitor data of host {h} does not cover the measurement phase")
        else:
            seen.append(f"{h} {m['samples']}")
    if not a["hosts"]:
        bad.append(f"no host monitor data ({_at('<hostname>', layout.MONITOR, layout.HOST_MONITOR)})")
    if bad:
        return (not th.require_monitor), "; ".join(bad)
    return True, f"monitor data present on every host (samples in the measurement phase: {', '.join(seen)})"


def placement_per_host(a: A, th: Thresholds) -> Check:
    """A host whose plan was degraded is accepted only when its own
    contention detector ruled contention out."""
    if a["placement"] is None or a["placement"].get("error"):
        return False, placement_unknown(a["placement"])
    bad, accepted = [], []
    for h, s in a["hosts"].items():
        p = s["placement"]
        if p is None or not p["degraded"]:
            continue
        what = f"placement of host {h} degraded (cores shared" + (f": {'; '.join(p['notes'])}" if p["notes"] else "")
        status = s["cd"]["contention"]["status"] if s["cd"] else "no CD pair on that host"
        if status == "none":
            accepted.append(what + "), accepted because its contention detector ruled contention out")
        else:
            bad.append(what + f") and its contention detector could not rule contention out ({status})")
    if bad:
        return False, "; ".join(bad)
    return True, "; ".join(accepted) if accepted else "placement as planned on every host: dedicated GE cores"


def placement_unknown(p: A | None) -> str:
    """Why the placement cannot be judged: the manifest (which also says
    what the spec opted out of) is missing, or has no readable plan."""
    if p is None:
        return (f"placement unknown: no {layout.MANIFEST} (or no placement in it), so whether the GEs had "
                "dedicated cores cannot be judged")
    return f"placement unknown: {p['error']}"


def probes(a: A) -> dict[str, A]:
    """The GE node's probe of every device host: from the files (analysis),
    else from observed.json alone (records-only verdict)."""
    if "hosts" in a:
        return {h: s["cross_host"]["probe"] for h, s in a["hosts"].items()
                if s["device_host"] and s["cross_host"] is not None}
    return {h: {"file": None, "requests": p.get("rows"), "ok": p.get("ok"), "exit_code": p.get("exit_code")}
            for h, p in (a["harness"].get("probe") or {}).items() if isinstance(p, dict)}


def _probe_problem(h: str, p: A) -> str:
    if not p["file"] and p["requests"] is None:
        return f"no probe of host {h} ({_at(h, layout.PROBE_OUTPUT)})"
    return (f"the probe of host {h} from the GE node got no answers ({p['requests']} requests, "
            f"exit code {p['exit_code']})")


def swarm_problems(a: A) -> list[str]:
    """Across a swarm: a node lost mid-run (down, its engine silent, a task
    on it failed), a device host whose probe from the GE node got no answers."""
    if not a.get("swarm"):
        return []
    states = a["harness"].get("node_states") or {}
    problems = [f"node {h} lost mid-run: {st.get('reason') or 'no reason recorded'}"
                for h, st in sorted(states.items()) if isinstance(st, dict) and st.get("lost")]
    return problems + [_probe_problem(h, p) for h, p in sorted(probes(a).items()) if not p["ok"]]


def swarm_seen(a: A) -> str:
    """What the node checks passed on ('' on one host)."""
    if not a.get("swarm"):
        return ""
    states = a["harness"].get("node_states") or {}
    ps = probes(a)
    answered = ", ".join(f"{h} {p['ok']}/{p['requests']}" for h, p in sorted(ps.items()))
    return ((f"; {len(states)} swarm node(s) up to the end" if states else "; swarm node states not recorded")
            + (f"; the GE node's probe answered on every device host ({answered})" if ps else ""))
