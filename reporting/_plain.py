"""The report in plain words: one sentence per check saying what its result
means for the user's numbers (the statistics stay in the check's reason,
one click away), what each check tests and which spec keys set it, the
glossary, and the one wording of shared cores (DEGRADED) the report uses.

A leaf module: ``_tables`` and ``_render`` import it; it imports nothing of
the reporting package. The anchors (``check-<name>``, ``g-<term>``,
``shared-cores``) are the HTML report's and docs/reading-the-report.md's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wotbench.base import units

__all__ = ["MEANING", "ABOUT", "GLOSSARY", "DOC", "meaning", "check_anchor", "degraded", "degraded_sentence",
           "glossary_anchor"]

R = dict[str, Any]
#: The guide to reading a report; its ``#shared-cores`` and ``#check-<name>`` anchors are linked.
DOC = "docs/reading-the-report.md"


def _count(n: Any) -> str:
    return units.fmt_count(n) if isinstance(n, (int, float)) else "?"


def _dur_us(us: Any) -> str:
    return units.fmt_duration_us(us) if isinstance(us, (int, float)) else "?"


def _th(r: R, key: str, default: float) -> float:
    v = (r.get("thresholds") or {}).get(key)
    return float(v) if isinstance(v, (int, float)) else default


def _statuses(r: R) -> list[str]:
    """The contention status of every CD test of the run (every host of a swarm)."""
    if r.get("swarm") and isinstance(r.get("hosts"), dict):
        cds = [s.get("cd") for s in r["hosts"].values() if isinstance(s, dict)]
    else:
        cds = [r.get("cd")]
    return [str(((c or {}).get("contention") or {}).get("status")) for c in cds if c]


# --- one sentence per check -------------------------------------------------------------

def _measurement(ok: bool, r: R) -> str:
    c, ph = r.get("measure_counts") or {}, r.get("phases") or {}
    m = ph.get("measure")
    dur = _dur_us(m[1] - m[0]) if isinstance(m, (list, tuple)) and len(m) == 2 else None
    if ok:
        what = f" ({dur}, {_count(c.get('requests'))} requests)" if dur and c.get("requests") else ""
        return f"The measurement phase{what} was long enough for its numbers to be stable."
    if ph.get("inferred"):
        return "The run did not record where its measurement phase began and ended, so warm-up was not cut."
    return ("The measurement phase was too short or had too few requests: its percentiles rest on too little "
            "data.")


def _errors(ok: bool, r: R) -> str:
    c = r.get("measure_counts") or {}
    n, good = c.get("requests"), c.get("ok")
    limit = f"{_th(r, 'max_error_rate', 0.01) * 100:g} %"
    if isinstance(n, int) and isinstance(good, int) and n:
        if good == n:
            return f"All {_count(n)} requests of the measurement phase were answered."
        got = f"{_count(good)} of {_count(n)} requests were answered"
        return (f"{got}; the {_count(n - good)} that failed or timed out stay within the allowed {limit}." if ok
                else f"{got}: more than {limit} failed or timed out, so the latency numbers leave out a real share "
                     "of the requests.")
    return (f"Failed and timed-out requests stayed within the allowed {limit}." if ok else
            f"More than {limit} of the requests failed or timed out.")


def _send_lag(ok: bool, r: R) -> str:
    lag = _dur_us(_th(r, "send_lag_p99_max_us", 1000.0))
    return (f"Requests left on time: 99 % of them were sent within {lag} of their scheduled instant." if ok else
            f"Requests left late (more than {lag} after their scheduled instant for 1 % or more): the "
            "traffic generator fell behind, so response times include its own delay.")


def _contention(ok: bool, r: R) -> str:
    st = _statuses(r)
    if ok:
        if st and all(s == "none" for s in st):
            return ("Nothing else on this host slowed the devices down: the contention detector's response times "
                    "stayed at their calibration level.")
        return ("Passed without a full answer: the contention detector could not tell whether something slowed "
                "the devices down, and the spec accepts that.")
    if "contention" in st:
        return ("Something else on the host slowed the devices down during the measurement: the response times "
                "include that interference, not just the devices and the network.")
    if "disturbed" in st:
        return ("The contention detector's calibration was itself disturbed, so it cannot say whether something "
                "slowed the devices down.")
    if "inconclusive" in st:
        return ("The contention detector had too few samples to decide whether something slowed the devices down; "
                "a longer run decides.")
    return "The contention detector did not run, so nothing shows that the host left the devices alone."


#: What one contention detector's status means, in a sentence (its statistics follow it).
CD_STATUS: dict[str, str] = {
    "none": "No contention: the CD node's response times stayed at their calibration level.",
    "contention": "Contention: the CD node's response times rose above their calibration level, so something "
                  "else on this host slowed the devices down.",
    "disturbed": "Undecided: the detector's calibration was itself disturbed.",
    "inconclusive": "Undecided: too few samples to tell; a longer run decides.",
}


def cd_status_sentence(status: object) -> str:
    """The plain sentence for a contention detector's ``status``."""
    return CD_STATUS.get(str(status), f"The contention detector's status is {status}.")


def _placement(ok: bool, r: R) -> str:
    if degraded(r):
        return _shared(ok)
    if ok:
        return "The traffic generators had cores of their own, as planned."
    return "The run's plan of cores cannot be read, so whether the traffic generators had their own cores is unknown."


def _fixed(pass_: str, fail: str) -> Callable[[bool, R], str]:
    return lambda ok, r: pass_ if ok else fail


#: check -> (ok, result) -> the sentence shown first; every check of _checks.CHECKS and RECORD_CHECKS.
MEANING: dict[str, Callable[[bool, R], str]] = {
    "harness": _fixed(
        "Every container ran to the end without a restart and every traffic generator finished cleanly.",
        "A container stopped, restarted or lost its network, or a traffic generator did not finish: part of the "
        "run is missing."),
    "output": _fixed(
        "Every request the workload asked for is in the output: nothing was lost on the way to the files.",
        "Some traffic generator output is missing or does not match what was asked: the numbers rest on "
        "incomplete data."),
    "measurement": _measurement,
    "rate": _fixed(
        "The traffic generators sent at the rate the workload asked for.",
        "A traffic generator did not send at the rate asked for: the devices saw a different load than the one "
        "specified."),
    "rit_integrity": _fixed(
        "Every device received its requests spaced as the workload specified: the testbed did not distort it.",
        "Some devices received their requests spaced differently from the workload: a traffic generator could not "
        "keep its schedule (more generator instances help)."),
    "send_lag": _send_lag,
    "errors": _errors,
    "ge_counters": _fixed(
        "The traffic generators sent almost nothing late and had no send errors.",
        "A traffic generator sent too many requests late, or could not send some of them."),
    "overload": _fixed(
        "No device was overloaded: none answered 'busy, try again later' (5.03).",
        "Some devices were overloaded and answered 'busy, try again later' (5.03): their response times are "
        "those of a saturated device."),
    "contention": _contention,
    "monitor": _fixed(
        "The host's CPU, memory and network use was recorded for the whole measurement (see the CPU figure).",
        "The host's CPU and memory use was not recorded, so a busy host cannot be seen in it."),
    "placement": _placement,
    "observe": _fixed(
        "Every observation asked for was set up, and the devices sent their notifications on time.",
        "The observation workload was not generated as asked: refused registrations, late notifications or a "
        "wrong number of events."),
    "congestion": _fixed(
        "Every retransmission log the traffic generators were asked for is whole.",
        "A retransmission log the traffic generators were asked for is missing or damaged: the congestion "
        "results cannot be checked."),
    "analysis": _fixed(
        "The run's data could be analysed.",
        "The run's data could not be analysed (a file is missing or damaged): this verdict comes from the run's "
        "records alone."),
}


def meaning(check: str, ok: bool, r: R) -> str:
    """The plain sentence for one check's result (``r``: the analysis result,
    or a records-only verdict); ends with a full stop."""
    fn = MEANING.get(check)
    return fn(ok, r) if fn is not None else ("Passed." if ok else "Failed.")


def check_anchor(check: str) -> str:
    return f"check-{check}"


#: check -> (what it tests, the spec keys (validity.*) that set its threshold): the "About the checks" section.
ABOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    "harness": ("What the harness saw: every device and CD container running to the end, not restarted and on its "
                "network; every GE (and CD-GE) exiting 0 with one output row per trace line, and up before its "
                "start instant. Across a swarm also every node up to the end and every probe answered.", ()),
    "output": ("Every GE and CD-GE output holds as many rows as its trace has lines, as its own summary and "
               "observed.json counted. Counts are held against the records, not against what survived.", ()),
    "measurement": ("The measurement phase (between warm-up and cool-down) is long enough and holds enough "
                    "requests (or notifications, in an observe-only run).",
                    ("min_measure", "min_requests", "min_notifications")),
    "rate": ("Each GE's achieved send rate in the measurement phase against the rate its trace asked for.",
             ("rate_tolerance",)),
    "rit_integrity": ("Each device's submitted request inter-arrival times (RIT) against the expected ones: mean, "
                      "5th percentile and a two-sample KS test (paper Table 1).",
                      ("rit_mean_tolerance", "rit_p5_tolerance", "rit_slack", "rit_ks_max", "rit_ks_alpha")),
    "send_lag": ("Each GE's 99th-percentile send lag: how long after its scheduled instant a request left.",
                 ("send_lag_p99_max",)),
    "errors": ("The share of requests in the measurement phase that timed out or failed. Timeouts explained by a "
               "configured loss, and requests NSTART held past their timeout, are results, not failures.",
               ("max_error_rate",)),
    "ge_counters": ("Each GE's late sends (send lag beyond late_send) in the measurement phase, and its send errors "
                    "over the whole run.", ("late_send", "max_late_sends", "max_send_errors")),
    "overload": ("5.03 replies (a device's queue full) in the measurement phase, from the GE output; the devices' "
                 "own counters are shown beside them.", ("allow_overload",)),
    "contention": ("The contention detector (a CD node and its CD-GE on the device host) measures R_d, its response "
                   "time's deviation from S. The check fails when R_d rose above its calibration level during the "
                   "measurement, by a margin that matters, at a stated false-alarm rate (the CUSUM test).",
                   ("cd_alpha", "cd_min_effect", "cd_min_samples", "cd_baseline_rd_max", "cd_baseline_excess",
                    "cd_baseline_max_lost", "require_cd", "allow_inconclusive")),
    "monitor": ("Host monitor data (collectl: CPU, memory, network) covering the measurement phase.",
                ("require_monitor",)),
    "placement": ("Whether the GEs had dedicated cores as planned. Shared cores are accepted only when the "
                  "contention detector ruled contention out (see shared cores).", ()),
    "observe": ("Observe runs (RFC 7641): registrations set up, the devices' notification lag p99, and the number "
                "of events against the expected count.", ("send_lag_p99_max", "rate_tolerance")),
    "congestion": ("Shown only when a GE's per-exchange retransmission log (RTO log) it was asked for is missing or "
                   "damaged.", ()),
    "analysis": ("Shown only when the run's data could not be analysed: the verdict then comes from the run's "
                 "records (manifest, observed.json) alone.", ()),
}


# --- glossary ---------------------------------------------------------------------------

def glossary_anchor(term: str) -> str:
    """``g-`` and the term without its parenthesis, letters and digits kept, the rest a dash
    (``~`` is ``g-approx``)."""
    if term == "~":
        return "g-approx"
    term = term.split(" (")[0]
    return "g-" + "".join(ch if ch.isalnum() else "-" for ch in term.lower()).strip("-")


#: (term, anchor, explanation), in reading order.
GLOSSARY: list[tuple[str, str, str]] = [(t, glossary_anchor(t), x) for t, x in (
    ("GE", "Gateway emulator: the traffic generator that sends the workload's CoAP requests to the devices, each "
           "at its scheduled instant, and records every answer."),
    ("CD", "Contention detector: a CD node (one more emulated device, with a known service time S) and its own "
           "GE, the CD-GE, run beside the devices. When something else on the host competes for the CPU, the CD "
           "node's response time rises above its calibration level."),
    ("CD-GE", "The contention detector's own GE. It is not part of the workload and is counted apart from the "
              "workload's GEs."),
    ("RIT", "Request inter-arrival time: the time between two requests to the same device. The workload specifies "
            "it; the report compares the expected RITs with the ones the devices actually received."),
    ("S", "The service time a device (or the CD node) spends on one request, by configuration."),
    ("R_d", "Normalised response-time deviation, (R - S) / S: how much longer than its service time S a request "
            "took. 0 means no waiting at all."),
    ("CON/NON", "CoAP's confirmable (CON: acknowledged and retransmitted when lost) and non-confirmable (NON: sent "
                "once) messages."),
    ("2.05", "CoAP's Content: a successful answer."),
    ("5.03", "CoAP's Service Unavailable: the device's queue was full and it turned the request away (overload)."),
    ("5.02/5.04", "CoAP's Bad Gateway and Gateway Timeout: a gateway under test could not reach a device or did not "
                  "get its answer in time."),
    ("send lag", "How long after its scheduled instant the GE actually sent a request. A large send lag means the "
                 "GE fell behind its schedule."),
    ("timeout", "A request with no answer before the GE gave up on it (after its retransmissions, for CON)."),
    ("shared cores (DEGRADED)",
     "A DEGRADED placement: the host has fewer cores than the paper's layout needs, so the GEs share cores with "
     "the devices or other work. Such a run is valid only when the contention detector shows the sharing did not "
     "slow the devices down, and its numbers are this host's, not a dedicated-core testbed's."),
    ("p50/p99", "Percentiles: half of the values are at or below p50 (the median), 99 % at or below p99."),
    ("~", "An approximate quantile, from a log-linear histogram within 0.1 % of the exact one (shown when a run "
          "has more values than are kept for exact quantiles)."),
    ("tau/CUSUM", "The contention detector's test: tau is the R_d level a measurement sample must exceed to count, "
                  "and a CUSUM (cumulative sum) of those exceedances raises an alarm when they add up beyond what "
                  "calibration allows."),
    ("warm-up/measure/cool-down", "The run's phases: warm-up lets caches and queues settle and is not counted; "
                                  "every number and check is on the measurement phase; cool-down lets the last "
                                  "answers arrive."),
    ("calibration", "The first seconds of a run, before the workload: the CD pair alone, which gives the baseline "
                    "of R_d the measurement is compared with."),
    ("drift", "A slow change of rate, send lag or response time over a long run, found by a trend fitted over 10 s "
              "windows; judged only in runs long enough to show one (docs/soak.md)."),
)]


# --- shared cores (DEGRADED) --------------------------------------------------------------

def degraded(r: R) -> bool:
    """Whether the run's placement was degraded (cores shared), on its one
    host or on any host of a swarm."""
    p = r.get("placement")
    if isinstance(p, dict) and p.get("degraded"):
        return True
    hosts = r.get("hosts") if r.get("swarm") else None
    return isinstance(hosts, dict) and any(
        isinstance(s, dict) and isinstance(s.get("placement"), dict) and s["placement"].get("degraded")
        for s in hosts.values())


def degraded_sentence(r: R) -> str | None:
    """The one wording of shared cores (DEGRADED) in the report, or None when
    the cores were as planned. Its plan-time twin is
    wotbench.execution.placement's; both point to DOC#shared-cores."""
    if not degraded(r):
        return None
    placement = next((c for c in r.get("checks") or () if c.get("check") == "placement"), None)
    return _shared(placement is not None and bool(placement.get("ok")))


def _shared(ok: bool) -> str:
    if ok:
        return ("Cores were shared (this host has fewer than the paper's layout needs), and the contention "
                "detector showed that this did not slow the devices down: the numbers hold for this host, not "
                "for a testbed with dedicated cores.")
    return ("Cores were shared (this host has fewer than the paper's layout needs), and the contention detector "
            "could not show that this did not slow the devices down: the numbers may include that sharing.")
