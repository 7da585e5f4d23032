"""Observe (RFC 7641): the notifications of a run and the ``observe`` check.

What the workload asked (workload/expected.json ``observe``), what the
devices did (their --stats counters obs_*/notify_* and the ``notify_lag_us``
histogram), and what the GEs received (each GE's summary ``observe`` object
and its ge/notify-<k>.csv, one row per notification). Per device group and in
total: observations, events expected, events drawn and messages sent by the
devices, notifications received (distinct), lost and loss rate, reordered,
duplicates, re-registrations, superseded events, CON retransmissions and
give-ups; the notification latency and age in the measurement phase (by
``recv_us``). Loss, reordering, duplicates and re-registrations are results,
never failures: :func:`check_observe` fails only when the testbed did not set
up or generate the asked workload (design: /work/coord/observe-design.md 4).
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
           "EXPECTED_JSON"]

EXPECTED_JSON = "expected.json"
_READ = ["device_id", "recv_us", "latency_us", "age_us", "status", "gap"]
_DISTINCT = ("registered", "fresh", "reregistered", "reordered")
_QS = (50, 95, 99)
#: Device counters shown per group (names of the device's --stats file).
_DEV_KEYS = ("obs_registered", "obs_reregistered", "obs_refused", "obs_table_full", "obs_cancelled", "obs_reset",
             "obs_gave_up", "obs_active", "notify_events", "notify_sent", "notify_con", "notify_retransmits",
             "notify_acked", "notify_superseded", "notify_refresh")
_CHUNK_ROWS = 1 << 20


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
    for i, ge_csv in enumerate(files.ge_csvs):
        k = layout.ge_index(ge_csv)
        path = ge_csv.parent / layout.ge_notify(k if k is not None else 0)
        if not path.is_file():
            if observing is None or i in observing:
                notify_missing.append(path.name)
            continue
        c, m = _read_notify(path, window)
        counts.append(c)
        measured.append(m)
    cnt = pd.concat(counts).groupby(level=0).sum() if counts else pd.DataFrame()
    meas = pd.concat(measured, ignore_index=True) if measured else pd.DataFrame(columns=["device_id", "latency", "age"])
    observed_containers = {n: g for n, g in by_name.items() if g in groups_exp}
    dev, dev_missing, lag = _device_stats(files, observed_containers)
    ges, ge_missing = _ge_observe(files, observing)
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


def check_observe(a: dict[str, Any], th: Thresholds) -> tuple[bool, str] | None:
    """Only in a run with observations (None otherwise). Fails when the testbed
    did not set up or generate the asked workload: a refused registration or a
    full table, a device missing its stats, the devices' notification lag p99
    above ``send_lag_p99_max``, or their events off the expected count by more
    than max(rate_tolerance x E, 4 sqrt(E)). Missing evidence fails: also a GE
    that registered observations without an expected workload to judge them
    by, and notification rows a GE dropped."""
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
    e, got = t["expected_events"], t["device_events"]
    if e is None or got is None:
        bad.append("no expected or device event counts to compare")
    elif abs(got - e) > max(th.rate_tolerance * e, 4 * math.sqrt(e)):
        bad.append(f"the devices drew {got} events vs {e:.0f} expected (tolerance "
                   f"max({th.rate_tolerance:.0%}, 4 sqrt(E)))")
    if bad:
        return False, "; ".join(bad)
    return True, (f"{o['observations']} observations set up; the devices drew {got} events ({e:.0f} expected), "
                  f"notification lag p99 {lag:.0f}us; {t['received']} notifications received, "
                  f"{t['lost']} lost (a result, not a failure)")


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
                "count, with the tail known from the deregistration answers). Loss, reordering and "
                "re-registrations are results, not failures.")
