"""Observe (RFC 7641): the notifications of a run and the ``observe`` check.

What the workload asked (workload/expected.json ``observe``), what the
devices did (their --stats counters obs_*/notify_* and the ``notify_lag_us``
histogram), and what the GEs received (each GE's summary ``observe`` object
and its ge/notify-<k>.csv, one row per notification). Per device group and in
total: observations, events expected, events drawn and messages sent by the
devices, notifications received (distinct), lost and loss rate, reordered,
duplicates, re-registrations, superseded events, CON retransmissions and
give-ups; the notification latency and age in the measurement phase (by
``recv_us``). Loss, reordering, duplicates and re-registrations are results
under a configured impairment: :func:`check_observe` fails when the testbed
did not set up or generate the asked workload (design:
/work/coord/observe-design.md 4), or when the GE lost notifications where
nothing but its own receive path could lose them (docs/observe.md, "Which
validity checks apply").
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wotbench.base import rundir as layout
from wotbench.base.formats import NOTIFY_COLUMNS
from wotbench.reporting._gatewaylatency import DeviceHist, hist_quantiles, merge_hists
from wotbench.reporting._load import RunFiles
from wotbench.spec import Thresholds

__all__ = ["ObservePlot", "observe_section", "check_observe", "observe_table", "OBSERVE_NOTE", "NOTIFY_COLUMNS",
           "EXPECTED_JSON", "impaired_groups", "GE_OBSERVE_GRACE_US"]

EXPECTED_JSON = "expected.json"
_READ = ["device_id", "recv_us", "latency_us", "age_us", "status", "gap"]
_DISTINCT = ("registered", "fresh", "reregistered", "reordered")
_QS = (50, 95, 99)
#: Device counters shown per group (names of the device's --stats file).
_DEV_KEYS = ("obs_registered", "obs_reregistered", "obs_refused", "obs_table_full", "obs_cancelled", "obs_reset",
             "obs_gave_up", "obs_active", "notify_events", "notify_sent", "notify_con", "notify_retransmits",
             "notify_acked", "notify_superseded", "notify_refresh")
_CHUNK_ROWS = 1 << 20
#: The GE's --observe-grace-ms as the harness runs it (the GE's default; the harness does not pass it).
GE_OBSERVE_GRACE_US = 2_000_000
#: Allowed on top of Max-Age + grace per re-registration: the GE's sweep (every 100 ms) and the transit.
_REREG_SLACK_US = 1_000_000
#: The event-count band in standard deviations (two-sided tail ~6e-5) and, for
#: the infinite-variance band (Hoeffding), the same tail probability.
_Z = 4.0
_DELTA = math.erfc(_Z / math.sqrt(2))
#: A polling + Observe run must receive notifications in the measurement phase
#: when the workload expects at least this many events there.
_MIN_MEASURED_EVENTS = 10


@dataclass(frozen=True)
class ObservePlot:
    """Sorted latency and age (us) of the notifications received in the measurement phase."""

    latency: np.ndarray
    age: np.ndarray


def _dist(v: np.ndarray) -> dict[str, Any]:
    """n, p50/p95/p99 and max of ``v`` (finite values), None without any."""
    v = v[np.isfinite(v)]
    out: dict[str, Any] = {"n": int(v.size)}
    for q in _QS:
        out[f"p{q}"] = float(np.percentile(v, q)) if v.size else None
    out["max"] = float(v.max()) if v.size else None
    return out


def _read_notify(path: Path, window: tuple[float, float]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per device: counts by status and the sum of gaps (whole run); and the rows
    (device, latency, age) received in ``window``, duplicates left out."""
    counts, measured = [], []
    for chunk in pd.read_csv(path, usecols=_READ, chunksize=_CHUNK_ROWS,
                             dtype={"device_id": np.int64, "status": str}):
        gap = pd.to_numeric(chunk["gap"], errors="coerce").fillna(0).to_numpy(np.float64)
        st = chunk["status"].to_numpy(str)
        dev = chunk["device_id"].to_numpy(np.int64)
        frame = pd.DataFrame({"device_id": dev, "distinct": np.isin(st, _DISTINCT), "reordered": st == "reordered",
                              "duplicate": st == "duplicate", "reregistered": st == "reregistered",
                              "after_cancel": st == "after_cancel", "gap": gap, "rows": 1})
        counts.append(frame.groupby("device_id").sum())
        recv = pd.to_numeric(chunk["recv_us"], errors="coerce").to_numpy(np.float64)
        keep = (recv >= window[0]) & (recv < window[1]) & (st != "duplicate")
        measured.append(pd.DataFrame({
            "device_id": dev[keep],
            "latency": pd.to_numeric(chunk["latency_us"], errors="coerce").to_numpy(np.float64)[keep],
            "age": pd.to_numeric(chunk["age_us"], errors="coerce").to_numpy(np.float64)[keep]}))
    c = pd.concat(counts).groupby(level=0).sum() if counts else pd.DataFrame()
    m = pd.concat(measured, ignore_index=True) if measured else pd.DataFrame(columns=["device_id", "latency", "age"])
    return c, m


def _lag_hist(h: Any) -> DeviceHist | None:
    """A device's ``notify_lag_us`` histogram, None when absent or malformed."""
    if not isinstance(h, dict):
        return None
    try:
        b = np.asarray(h["buckets"], dtype=np.int64).reshape(-1, 3)
        return DeviceHist(b[:, 0], b[:, 1], b[:, 2], int(h["overflow"]), int(h["max"]))
    except (KeyError, TypeError, ValueError):
        return None


def _device_stats(files: RunFiles, group_of_container: dict[str, str]
                  ) -> tuple[pd.DataFrame, list[str], dict[str, list[DeviceHist]]]:
    """Observe counters per device container (rows) with its group, the devices
    of observed groups without a readable stats file, and the devices'
    ``notify_lag_us`` histograms per group."""
    rows: list[dict[str, Any]] = []
    missing: list[str] = []
    lag: dict[str, list[DeviceHist]] = {}
    for name, group in sorted(group_of_container.items()):
        path = files.device_stats.get(name)
        doc = None
        if path is not None:
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                doc = None
        if not isinstance(doc, dict) or any(k not in doc for k in _DEV_KEYS):
            missing.append(name)
            continue
        rows.append({"container": name, "group": group, **{k: int(doc[k]) for k in _DEV_KEYS}})
        h = _lag_hist(doc.get("notify_lag_us"))
        if h is not None:
            lag.setdefault(group, []).append(h)
    return pd.DataFrame(rows), missing, lag


def lag_p99(hists: list[DeviceHist]) -> float | None:
    """p99 of the devices' notification lag together (reporting/_gatewaylatency.py's
    reading of a histogram: values spread evenly in their bucket, interpolated)."""
    h = merge_hists(hists)
    if h is None or h.count == 0:
        return None
    return float(hist_quantiles(h, [99.0])[0])


def _ge_observe(files: RunFiles, observing: set[int] | None) -> tuple[list[dict[str, Any]], list[int]]:
    """Each GE summary's ``observe`` object (with its GE index); the GEs
    without one among ``observing`` (those with observed devices; None: all)."""
    out, missing = [], []
    for k, summary in enumerate(files.ge_summaries):
        if observing is not None and k not in observing:
            continue
        doc = None
        if summary is not None:
            try:
                doc = json.loads(summary.read_text())
            except (OSError, ValueError):
                doc = None
        obs = doc.get("observe") if isinstance(doc, dict) else None
        if isinstance(obs, dict):
            out.append(dict(obs, ge=k))
        else:
            missing.append(k)
    return out, missing


def _containers(files: RunFiles) -> tuple[dict[int, str], dict[str, str], dict[int, set[str]]]:
    """device_id -> group, container -> group and GE -> its devices' groups,
    from ge/devices-<k>.csv."""
    by_id: dict[int, str] = {}
    by_name: dict[str, str] = {}
    by_ge: dict[int, set[str]] = {}
    for k, ge_csv in enumerate(files.ge_csvs):
        p = files.ge_devices(ge_csv)
        try:
            df = pd.read_csv(p, dtype={"group": str, "container": str}, keep_default_na=False)
        except (OSError, ValueError):
            continue
        if {"device_id", "group", "container"} <= set(df.columns):
            by_id.update(zip(df["device_id"].astype(int), df["group"], strict=True))
            by_name.update(zip(df["container"], df["group"], strict=True))
            by_ge[k] = set(df["group"])
    return by_id, by_name, by_ge


def observe_section(files: RunFiles, window: tuple[float, float]
                    ) -> tuple[dict[str, Any] | None, ObservePlot | None]:
    """The run's ``observe`` section and the arrays its figure draws; (None, None)
    when the workload has no observations."""
    expected, polling = _expected(files)
    if expected is None:
        return None, None
    by_id, by_name, by_ge = _containers(files)
    groups_exp = {g["group"]: g for g in expected.get("groups", [])}
    counts, measured = [], []
    notify_missing = []
    observing = {k for k, groups in by_ge.items() if groups & groups_exp.keys()} if by_ge else None
    received_by_ge: dict[int, int] = {}
    for i, ge_csv in enumerate(files.ge_csvs):
        k = layout.ge_index(ge_csv)
        path = ge_csv.parent / layout.ge_notify(k if k is not None else 0)
        if not path.is_file():
            if observing is None or i in observing:
                notify_missing.append(path.name)
            continue
        c, m = _read_notify(path, window)
        received_by_ge[i] = int(c["distinct"].sum()) if not c.empty else 0
        counts.append(c)
        measured.append(m)
    cnt = pd.concat(counts).groupby(level=0).sum() if counts else pd.DataFrame()
    meas = pd.concat(measured, ignore_index=True) if measured else pd.DataFrame(columns=["device_id", "latency", "age"])
    observed_containers = {n: g for n, g in by_name.items() if g in groups_exp}
    dev, dev_missing, lag = _device_stats(files, observed_containers)
    ges, ge_missing = _ge_observe(files, observing)
    for g in ges:
        g["received"] = received_by_ge.get(g["ge"])
        g["groups"] = sorted(by_ge.get(g["ge"], set()) & groups_exp.keys())
    group_rows = []
    for name, e in groups_exp.items():
        ids = [i for i, g in by_id.items() if g == name]
        group_rows.append(_row(name, e, cnt.reindex(ids).dropna(how="all") if not cnt.empty else cnt,
                               meas[meas["device_id"].isin(ids)],
                               dev[dev["group"] == name] if not dev.empty else dev, lag.get(name, [])))
    total = _row("total", expected, cnt, meas, dev, [h for hs in lag.values() for h in hs])
    if ges:
        total["lost_ge"] = int(sum(int(g.get("lost") or 0) for g in ges))
        total["tail_unknown"] = int(sum(int(g.get("tail_unknown") or 0) for g in ges))
    section = {
        "observations": int(expected.get("observations") or 0),
        "expected_events": expected.get("expected_events"),
        "expected_events_measure": expected.get("expected_events_measure"),
        "live_max_us": _live_max(expected),
        "polling_requests": polling,
        "groups": group_rows, "total": total, "ges": ges,
        "missing": {"notify_csv": notify_missing, "ge_summary_observe": ge_missing, "device_stats": dev_missing},
    }
    plot = ObservePlot(np.sort(meas["latency"].to_numpy(np.float64)), np.sort(meas["age"].to_numpy(np.float64)))
    return section, plot


def _expected(files: RunFiles) -> tuple[dict[str, Any] | None, int | None]:
    """expected.json's ``observe`` object (None without one: no observations)
    and its ``polling_requests``."""
    p = files.root / layout.WORKLOAD / EXPECTED_JSON
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError):
        return None, None
    obs = doc.get("observe") if isinstance(doc, dict) else None
    if not isinstance(obs, dict) or not obs.get("observations"):
        return None, None
    polling = doc.get("polling_requests")
    return obs, polling if isinstance(polling, int) else None


def _live_max(expected: dict[str, Any]) -> float | None:
    """The longest an observation was asked to live: its registration window's
    start to its deregistration window's end (expected.json), None without them."""
    try:
        return float(expected["deregistration_us"][1]) - float(expected["registration_us"][0])
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def _row(name: str, exp: dict[str, Any], cnt: pd.DataFrame, meas: pd.DataFrame, dev: pd.DataFrame,
         lag: list[DeviceHist]) -> dict[str, Any]:
    def col(df: pd.DataFrame, c: str) -> int:
        return int(df[c].sum()) if not df.empty and c in df.columns else 0

    distinct, reordered = col(cnt, "distinct"), col(cnt, "reordered")
    lost = max(0, col(cnt, "gap") - reordered)   # seq gaps not filled later (tail loss: GE summary)
    return {
        "group": name, "observations": int(exp.get("observations") or 0),
        "expected_events": exp.get("expected_events"),
        "device_events": col(dev, "notify_events") if not dev.empty else None,
        "device_sent": col(dev, "notify_sent") if not dev.empty else None,
        "notifications": col(cnt, "rows"), "received": distinct, "lost": lost,
        "loss_rate": lost / (lost + distinct) if lost + distinct else None,
        "reordered": reordered, "duplicates": col(cnt, "duplicate"), "after_cancel": col(cnt, "after_cancel"),
        "reregistrations": col(cnt, "reregistered"),
        "superseded": col(dev, "notify_superseded") if not dev.empty else None,
        "retransmits": col(dev, "notify_retransmits") if not dev.empty else None,
        "gave_up": col(dev, "obs_gave_up") if not dev.empty else None,
        "reset": col(dev, "obs_reset") if not dev.empty else None,
        "device_registered": col(dev, "obs_registered") if not dev.empty else None,
        "device_reregistered": col(dev, "obs_reregistered") if not dev.empty else None,
        "device_rit": exp.get("device_rit"), "rit_mean_us": exp.get("rit_mean_us"), "max_age_s": exp.get("max_age_s"),
        "refused": col(dev, "obs_refused") + col(dev, "obs_table_full") if not dev.empty else None,
        "latency_us": _dist(meas["latency"].to_numpy(np.float64)),
        "age_us": _dist(meas["age"].to_numpy(np.float64)),
        "notify_lag_p99_us": lag_p99(lag),
    }


def _missing_evidence(o: dict[str, Any]) -> list[str]:
    """What the observe check cannot judge without: device stats, notify
    CSVs, the GEs' observe objects, notification rows a GE dropped."""
    miss, bad = o["missing"], []
    if miss["device_stats"]:
        bad.append(f"{len(miss['device_stats'])} observed device(s) wrote no observe counters "
                   f"(e.g. {', '.join(miss['device_stats'][:3])})")
    if miss["notify_csv"]:
        bad.append("no notification output (--notify-out) of a GE with observed devices: "
                   + ", ".join(miss["notify_csv"]))
    if miss["ge_summary_observe"]:
        bad.append("no observe object in the summary of GE " + ", ".join(map(str, miss["ge_summary_observe"])))
    dropped = sum(int(g.get("rows_dropped") or 0) for g in o["ges"])
    if dropped:
        bad.append(f"{dropped} notification rows dropped by the GEs (ring and buffer full): the notify "
                   "CSVs are incomplete")
    return bad


def impaired_groups(a: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The device groups whose links the run impaired with loss or a rate
    limit (observed.json: what was applied), by name; a delay alone loses
    nothing. The errors check (reporting/_checks.py) and the observe check
    read the same."""
    groups = ((a.get("harness") or {}).get("impairment") or {}).get("groups") or {}
    return {str(n): g for n, g in groups.items() if isinstance(g, dict) and (g.get("loss") or g.get("rate_bps"))}


def _ge_loss(o: dict[str, Any], a: dict[str, Any], th: Thresholds) -> list[str]:
    """Notifications lost where only the GE's own receive path can lose them:
    per group without a configured impairment (the CSV's seq gaps), and per GE
    whose observed groups are all unimpaired (its own count, the tail the
    devices' last seq reveals included); above ``max_error_rate`` fails."""
    imp, bad, failed = impaired_groups(a), [], set()
    for g in o["groups"]:
        lost, got = int(g["lost"]), int(g["received"])
        if g["group"] not in imp and lost and lost / (lost + got) > th.max_error_rate:
            failed.add(g["group"])
            bad.append(f"group {g['group']} (no impairment): {lost:,} of {lost + got:,} notifications lost "
                       f"({lost / (lost + got):.2%} > {th.max_error_rate:.1%})")
    for ge in o["ges"]:
        groups, got, lost = ge.get("groups") or [], ge.get("received"), int(ge.get("lost") or 0)
        if not groups or got is None or set(groups) & (imp.keys() | failed):
            continue
        if lost and lost / (lost + got) > th.max_error_rate:
            bad.append(f"GE {ge['ge']} (groups {', '.join(groups)}, no impairment): {lost:,} of {lost + got:,} "
                       f"notifications lost, its own count with the tail ({lost / (lost + got):.2%} > "
                       f"{th.max_error_rate:.1%})")
    if bad:
        bad[-1] += (": on a link without configured loss or rate limit only the GE's receive path loses "
                    "notifications (a GE behind or not reading)")
    t, e_meas = o["total"], o.get("expected_events_measure")
    if o.get("polling_requests") != 0 and t["latency_us"]["n"] == 0 and (
            e_meas is None or e_meas >= _MIN_MEASURED_EVENTS):
        n = "an unknown number of" if e_meas is None else f"{e_meas:,.0f}"
        bad.append(f"no notification received in the measurement phase ({n} events expected there): the GE did "
                   "not receive the observations while it polled")
    return bad


@dataclass(frozen=True)
class _Process:
    """What the event count N(t) of one observation's renewal process allows
    (t its live time, mean the time between events): ``cv2`` the squared CV of
    that time (Var N(t) ~ cv2 t / mean; None: infinite variance), ``gap_us``
    its least value (0: none), and [lo, hi] the bounds of E N(t) - t / mean
    (Wald: >= -1; Lorden: <= cv2; exp exactly 0; det -1..0)."""

    kind: str
    mean_us: float
    cv2: float | None
    gap_us: float
    lo: float
    hi: float


def _process(cell: Any) -> _Process | None:
    """The process of the resource file's ``observe_rit`` cell (expected.json
    ``device_rit``, docs/formats.md), None when it is not one."""
    kind, _, rest = str(cell).partition(":")
    try:
        v = [float(x) for x in rest.split(":")]
    except ValueError:
        return None
    if kind in ("exp", "det") and len(v) == 1 and v[0] > 0:
        return _Process(kind, v[0], 1.0, 0.0, 0.0, 0.0) if kind == "exp" else _Process(kind, v[0], 0.0, v[0], -1, 0)
    if len(v) != 2 or not v[0] > 0:
        return None
    if kind == "uniform":
        mean = (v[0] + v[1]) / 2
        cv2 = (v[1] - v[0]) ** 2 / 12 / mean**2
        return _Process(kind, mean, cv2, v[0], -1.0, cv2)
    if kind == "lognormal" and v[1] > 0:
        return _Process(kind, v[0], v[1] ** 2, 0.0, -1.0, v[1] ** 2)
    if kind == "pareto" and v[1] > 1:
        c2 = 1 / (v[1] * (v[1] - 2)) if v[1] > 2 else None
        return _Process(kind, v[0], c2, v[0] * (v[1] - 1) / v[1], -1.0, math.inf if c2 is None else c2)
    return None


def _dead_us(g: dict[str, Any], o: dict[str, Any], a: dict[str, Any]) -> tuple[float, str]:
    """At most how long the group's observations were dead on the devices, on
    the evidence: each observation a device removed without an UNOBS (CON
    given up, RST: ``obs_gave_up`` + ``obs_reset``) and each registration its
    GE never saw answered is dead until the GE's re-registration, which comes
    at most Max-Age + grace (+ sweep and transit, + twice the group's delay
    and jitter) after the last fresh notification; each re-registration left
    unanswered (the GE's ``reregistrations`` - ``rereg_answered``) adds that
    once more. No such episode, no dead time."""
    ges = [x for x in o["ges"] if g["group"] in (x.get("groups") or ())]
    episodes = int(g.get("gave_up") or 0) + int(g.get("reset") or 0)
    unregistered = sum(max(0, int(x.get("observations") or 0) - int(x.get("registered") or 0)) for x in ges)
    unanswered = sum(max(0, int(x.get("reregistrations") or 0) - int(x.get("rereg_answered") or 0)) for x in ges)
    if episodes + unregistered == 0 or g.get("max_age_s") is None:
        return 0.0, ""
    imp = impaired_groups(a).get(g["group"]) or {}
    w = (float(g["max_age_s"]) * 1e6 + GE_OBSERVE_GRACE_US + _REREG_SLACK_US
         + 2 * (float(imp.get("delay_us") or 0) + float(imp.get("jitter_us") or 0)))
    n = episodes + unregistered + unanswered
    return n * w, (f"; dead until re-registered: {episodes} observations given up or reset, {unregistered} "
                   f"registrations and {unanswered} re-registrations unanswered, x {w / 1e6:g} s (Max-Age + "
                   "grace + 1 s) each")


def _event_bounds(g: dict[str, Any], o: dict[str, Any], a: dict[str, Any], th: Thresholds
                  ) -> tuple[float, float, str] | str:
    """[low, high] of the events the group's devices may draw, and how they
    were found; a string when the group's counts cannot be judged."""
    e, n, p = g["expected_events"], int(g["observations"]), _process(g.get("device_rit"))
    if e is None or g["device_events"] is None:
        return f"group {g['group']}: no expected or device event counts to compare"
    if p is None or n == 0:
        return (f"group {g['group']}: expected.json gives no notification process (device_rit "
                f"{g.get('device_rit')!r}) to judge its event count by (missing evidence)")
    draws = max(0.0, e - n)                  # the renewals; each registration's event 0 is the + n
    dead_us, why = _dead_us(g, o, a)
    dead = min(draws, dead_us / p.mean_us)
    # a re-registration draws its event 0 again: on a live observation, or one that a device re-created
    extra = int(g.get("device_reregistered") or 0) + max(0, int(g.get("device_registered") or 0) - n)
    floor = th.rate_tolerance * e
    if p.cv2 is not None:
        band = max(floor, _Z * math.sqrt(p.cv2 * draws))
        how = f"max({th.rate_tolerance:.0%} x E, 4 sqrt(cv^2 E)), {p.kind} cv^2 {p.cv2:.3g}"
        return e + n * p.lo - dead - band, e + n * p.hi + extra + band, how + why
    # Infinite variance (pareto, alpha <= 2): no normal band. What holds: each
    # observation draws at most live / x_m renewals, so the count is bounded
    # above, and Hoeffding's bound on these bounded independent counts below.
    live = o.get("live_max_us") or draws * p.mean_us / n
    spread = live / p.gap_us * math.sqrt(n * math.log(2 / _DELTA) / 2)
    high = draws * p.mean_us / p.gap_us * (1 + th.rate_tolerance) + n + extra
    how = (f"{g['device_rit']} has infinite variance (pareto alpha <= 2): judged only within the bounds that "
           "hold for it, at most live / x_m events per observation above, Hoeffding's bound below")
    return e - n - dead - max(floor, spread), high, how + why


def _events(o: dict[str, Any], a: dict[str, Any], th: Thresholds) -> tuple[list[str], list[str]]:
    """Each group's devices' events (``notify_events``) against the workload's
    expectation (_event_bounds): the failures, and what the passes allowed."""
    bad, notes = [], []
    for g in o["groups"]:
        got = g["device_events"]
        b = _event_bounds(g, o, a, th)
        if isinstance(b, str):
            bad.append(b)
            continue
        low, high, how = b
        span = f"allowed {max(0.0, low):,.0f}..{high:,.0f}: {how}"
        if not low <= got <= high:
            bad.append(f"group {g['group']}: the devices drew {got:,} events vs {g['expected_events']:,.0f} "
                       f"expected ({span})")
        elif "infinite variance" in how or "dead until" in how:
            notes.append(f"group {g['group']}: {got:,} events ({span})")
    return bad, notes


def check_observe(a: dict[str, Any], th: Thresholds) -> tuple[bool, str] | None:
    """Only in a run with observations (None otherwise). Fails when the testbed
    did not set up or generate the asked workload: a refused registration or a
    full table, a device missing its stats, the devices' notification lag p99
    above ``send_lag_p99_max``, or a group's events outside what its process
    and the dead time of its observations allow (_event_bounds). Fails when
    the GE lost more than ``max_error_rate`` of the notifications of a group
    without a configured impairment, or, polling too, received none in the
    measurement phase (_ge_loss). Missing evidence fails: also a GE that
    registered observations without an expected workload to judge them by,
    and notification rows a GE dropped."""
    o = a.get("observe")
    if o is None:
        if any(g.get("observes") for g in a.get("ges") or ()):
            return False, ("a GE registered observations but the workload's expected.json has no readable "
                           "observe object: no expected workload to judge them by (missing evidence)")
        return None
    t, bad = o["total"], _missing_evidence(o)
    refused_ge = sum(int(g.get("refused") or 0) for g in o["ges"])
    if refused_ge or t["refused"]:
        bad.append(f"registrations refused: {refused_ge} at the GEs, {t['refused'] or 0} at the devices "
                   "(refused or table full): the asked observations were not all set up")
    lag = t["notify_lag_p99_us"]
    if lag is None and t["device_events"] is not None:
        bad.append("the devices recorded no notify_lag_us histogram")
    elif lag is not None and lag > th.send_lag_p99_max_us:
        bad.append(f"the devices' notification lag p99 {lag:.0f}us > {th.send_lag_p99_max_us:.0f}us: "
                   "the notification generators fell behind")
    events_bad, notes = _events(o, a, th)
    bad += events_bad + _ge_loss(o, a, th)
    if bad:
        return False, "; ".join(bad)
    imp = impaired_groups(a)
    plain = [g["group"] for g in o["groups"] if g["group"] not in imp]
    under = [g["group"] for g in o["groups"] if g["group"] in imp]
    loss = ([f"within {th.max_error_rate:.1%} in {', '.join(plain)} (no impairment)"] if plain else []) + (
        [f"a result in {', '.join(under)} (configured impairment)"] if under else [])
    return True, (f"{o['observations']} observations set up; the devices drew {t['device_events']} events "
                  f"({t['expected_events']:.0f} expected{'; ' if notes else ''}{'; '.join(notes)}), notification "
                  f"lag p99 {lag:.0f}us; {t['received']} notifications received, {t['lost']} lost "
                  f"({'; '.join(loss)})")


def _n(v: Any) -> str:
    return "-" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:,.0f}"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v / 1000:.3f}"


def observe_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """The Observe section's table: per group and in total (None without observations)."""
    o = r.get("observe")
    if o is None:
        return None
    head = ["group", "observations", "events expected", "device events", "device sent", "received", "lost",
            "loss rate", "reordered", "duplicates", "re-registrations", "superseded", "CON retransmits",
            "gave up", "latency p50/p95/p99/max (ms)", "age p50/p95/p99/max (ms)"]
    rows = []
    for g in [*o["groups"], o["total"]] if len(o["groups"]) > 1 else [o["total"]]:
        lat, age = g["latency_us"], g["age_us"]
        lost = g["lost"] if g["group"] != "total" or "lost_ge" not in g else g["lost_ge"]
        rate = lost / (lost + g["received"]) if lost + g["received"] else None
        rows.append([g["group"], _n(g["observations"]), _n(g["expected_events"]), _n(g["device_events"]),
                     _n(g["device_sent"]), _n(g["received"]), _n(lost), "-" if rate is None else f"{rate:.3%}",
                     _n(g["reordered"]), _n(g["duplicates"]), _n(g["reregistrations"]), _n(g["superseded"]),
                     _n(g["retransmits"]), _n(g["gave_up"]),
                     " / ".join(_ms(lat[k]) for k in ("p50", "p95", "p99", "max")),
                     " / ".join(_ms(age[k]) for k in ("p50", "p95", "p99", "max"))])
    return head, rows


OBSERVE_NOTE = ("Counts cover the whole run, latency and age the notifications received in the measurement "
                "phase (duplicates left out). Latency: the device's send stamp to the GE's kernel receive "
                "stamp; age: the event to the receipt. Lost: sequence numbers never received (total: the GEs' "
                "count, with the tail known from the deregistration answers). Loss under a configured "
                "impairment, reordering and re-registrations are results, not failures; in a group without "
                "one, only the GE loses notifications, and more than validity.max_error_rate fails the run.")
