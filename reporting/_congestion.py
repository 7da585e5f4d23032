"""The congestion-control section of a run (``gateway.congestion``,
``gateway.nstart``; docs/congestion.md): what the workload GEs' strategy
did to the exchanges of the measurement phase. Completion ratio (ok /
requests), response-time percentiles of the ok requests, transmissions per
request (1 + ``retransmissions``: the mean and the share with 0..4 or more
retransmissions), spurious retransmissions (the GE's counter, and the
devices' ``duplicates``: retransmitted requests whose original had
arrived), throughput (ok responses that arrived in the measurement phase,
per second: what the link delivered, whenever the request was due) and
the RTO over time per
peer from each GE's per-exchange log (``ge/rto-<k>.csv``, its
``--rto-out``). A log the GE was told to write and that is missing is a
missing-evidence failure of this part (``complete`` false, ``problems``),
never a silent pass.

With NSTART, a request the GE held back (its peer had NSTART exchanges in
flight at its intended time) waited by the protocol's rule, not because
the GE fell behind: :func:`nstart_holds` finds those rows from the GE
output (each exchange's end: its response, or its give-up in the RTO log)
so that the send-lag checks judge the GE on the requests it was free to
send (reporting/_checks.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.base.formats import GE_RTO_COLUMNS
from wotbench.reporting import _stream
from wotbench.reporting._load import GeData, Phases, RunFiles, read_json
from wotbench.reporting._records import ge_summary
from wotbench.reporting._sketch import GroupQuantiles

__all__ = ["congestion_section", "nstart_holds", "holds_section", "read_rto", "rto_bins", "RTO_COLUMNS_USED",
           "congestion_lines", "congestion_table", "MAX_RETX_SHOWN", "shown", "side_by_side", "sweep_fields",
           "condition", "ORDER"]

#: The columns of the RTO log this part reads (the log: docs/formats.md, "GE RTO log CSV").
RTO_COLUMNS_USED = tuple(c for c in GE_RTO_COLUMNS if c in ("row", "peer", "event", "t_us", "rto_us"))
#: Retransmission counts shown one by one; more are summed in the last share.
MAX_RETX_SHOWN = 4
#: Time bins of the RTO-over-time summary (and figure), over the whole run.
RTO_BINS = 40
#: Peers listed by name in summary.json (all of them are in the bins).
MAX_PEERS_LISTED = 64
_COLUMNS = ["device_id", "intended_us", "sent_us", "recv_us", "response_us", "send_lag_us", "status",
            "retransmissions"]


def _config(doc: dict[str, Any] | None) -> dict[str, Any]:
    """A GE summary's ``congestion`` object (empty from an older GE)."""
    c = (doc or {}).get("congestion")
    return c if isinstance(c, dict) else {}


def _spurious(doc: dict[str, Any] | None) -> int | None:
    """The GE's spurious-retransmission counter, wherever its summary keeps it."""
    for where in (doc or {}, _config(doc)):
        v = where.get("spurious_retransmissions")
        if isinstance(v, int) and not isinstance(v, bool):
            return v
    return None


def read_rto(path: Path) -> pd.DataFrame:
    """A GE's RTO log: the columns this part reads; a UserError naming the
    file when it cannot be read or lacks one."""
    try:
        df = pd.read_csv(path, usecols=lambda c: c in RTO_COLUMNS_USED, dtype={"peer": str, "event": str})
    except (OSError, ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the RTO log: {exc}", path) from None
    missing = [c for c in RTO_COLUMNS_USED if c not in df.columns]
    if missing:
        raise UserError(f"the RTO log lacks column(s) {', '.join(missing)}", path)
    return df


def rto_bins(rto: pd.DataFrame, span_us: tuple[float, float], bins: int = RTO_BINS) -> pd.DataFrame:
    """Per peer and time bin the median RTO (us): t_s (bin start, s since
    t0), peer, rto_median_us; vectorized over the whole log."""
    d = rto.dropna(subset=["t_us", "rto_us"])
    if d.empty:
        return pd.DataFrame(columns=["t_s", "peer", "rto_median_us"])
    lo, hi = span_us
    width = max(1e6, (hi - lo) / bins)
    b = np.floor((d["t_us"].to_numpy(np.float64) - lo) / width)
    g = d.assign(t_s=(lo + b * width) / 1e6).groupby(["t_s", "peer"], sort=True)["rto_us"].median()
    return g.rename("rto_median_us").reset_index()


def _rto_summary(frames: Sequence[pd.DataFrame], phases: Phases) -> dict[str, Any] | None:
    """The RTO over time of every GE's log in brief: per time bin the median
    over peers of the peers' medians (and their min and max), per peer its
    median and last RTO (at most MAX_PEERS_LISTED named)."""
    if not frames:
        return None
    rto = pd.concat(frames, ignore_index=True)
    if rto.empty:
        return {"events": 0, "peers": 0, "bins": [], "per_peer": []}
    span = (min(float(rto["t_us"].min()), phases.measure[0]), max(float(rto["t_us"].max()), phases.measure[1]))
    per_bin = rto_bins(rto, span).groupby("t_s")["rto_median_us"].agg(["median", "min", "max"]).reset_index()
    last = rto.sort_values("t_us").groupby("peer")["rto_us"].agg(["median", "last", "size"]).reset_index()
    last = last.sort_values("size", ascending=False).head(MAX_PEERS_LISTED)
    return {
        "events": int(len(rto)), "peers": int(rto["peer"].nunique()),
        "events_by_kind": {str(k): int(v) for k, v in rto["event"].value_counts().items()},
        "bins": [{"t_s": float(t), "median_us": float(m), "min_us": float(lo), "max_us": float(hi)}
                 for t, m, lo, hi in zip(*(per_bin[c].to_numpy(np.float64) for c in ("t_s", "median", "min", "max")),
                                         strict=True)],
        "per_peer": [{"peer": str(p), "events": int(n), "rto_median_us": float(m), "rto_last_us": float(x)}
                     for p, n, m, x in zip(last["peer"].astype(str), last["size"].to_numpy(np.int64),
                                           last["median"].to_numpy(np.float64), last["last"].to_numpy(np.float64),
                                           strict=True)],
    }


class _Tally:
    """The measurement phase's numbers of one GE, streamed batch by batch."""

    def __init__(self, window: tuple[float, float], pooled: GroupQuantiles | None = None) -> None:
        self.window = window
        self.pooled = pooled
        self.n = self.ok = self.timeouts = self.sent = self.delivered = self.retx_sum = 0
        self.retx = np.zeros(MAX_RETX_SHOWN + 2, np.int64)     # requests with 0..4 retransmissions, more
        self.resp = GroupQuantiles(_stream.EXACT_MAX)     # the stream's exact budget: bounded memory

    def add(self, batch: Any) -> None:
        t = batch.to_pandas()
        recv = t["recv_us"]
        self.delivered += int(((t["status"].astype(str) == "ok") & (recv >= self.window[0])
                               & (recv < self.window[1])).sum())
        t = t[(t["intended_us"] >= self.window[0]) & (t["intended_us"] < self.window[1])]
        if t.empty:
            return
        status = t["status"].astype(str).to_numpy()
        ok = status == "ok"
        self.n += len(t)
        self.ok += int(ok.sum())
        self.timeouts += int((status == "timeout").sum())
        sent = t["sent_us"].notna().to_numpy()
        self.sent += int(sent.sum())
        r = np.nan_to_num(t["retransmissions"].to_numpy(np.float64)[sent], nan=0.0).astype(np.int64)
        self.retx_sum += int(r.sum())
        r = np.clip(r, 0, MAX_RETX_SHOWN + 1)
        self.retx += np.bincount(r, minlength=self.retx.size)[: self.retx.size]
        resp = t["response_us"].to_numpy(np.float64)[ok]
        resp = resp[np.isfinite(resp)]
        self.resp.add(np.zeros(resp.size, np.int64), resp)
        if self.pooled is not None:
            self.pooled.add(np.zeros(resp.size, np.int64), resp)


def _shares(retx: np.ndarray, sent: int) -> dict[str, Any]:
    shown = {str(i): (int(retx[i]) / sent if sent else None) for i in range(MAX_RETX_SHOWN + 1)}
    shown[f">{MAX_RETX_SHOWN}"] = int(retx[MAX_RETX_SHOWN + 1]) / sent if sent else None
    return shown


def _quantiles(q: GroupQuantiles) -> dict[str, Any]:
    d = q.total([50, 95, 99])
    return {"n": d.n if d else 0, **{f"p{x}": (float(d.q[x]) if d else None) for x in (50, 95, 99)},
            "exact": d.exact if d else True}


def _per_ge(t: _Tally, dur_s: float) -> dict[str, Any]:
    return {
        "requests": t.n, "ok": t.ok, "timeouts": t.timeouts, "sent": t.sent,
        "completion_ratio": t.ok / t.n if t.n else None,
        "response_us": _quantiles(t.resp),
        "transmissions_per_request": (t.sent + t.retx_sum) / t.sent if t.sent else None,
        "retransmissions": t.retx_sum,
        "retransmission_shares": _shares(t.retx, t.sent),
        "throughput_ok_per_s": t.delivered / dur_s if dur_s > 0 else None,
    }


def _merge(parts: Sequence[_Tally], window: tuple[float, float]) -> _Tally:
    out = _Tally(window)
    for t in parts:
        out.n, out.ok, out.timeouts, out.sent = out.n + t.n, out.ok + t.ok, out.timeouts + t.timeouts, out.sent + t.sent
        out.delivered += t.delivered
        out.retx_sum += t.retx_sum
        out.retx += t.retx
    return out


def _expected_rto(files: RunFiles) -> set[str]:
    """The RTO logs the harness told the GEs to write (manifest.json's
    ``congestion.rto_out``); empty for GE files alone or an older run."""
    if files.manifest is None:
        return set()
    try:
        m = read_json(files.manifest)
    except UserError:
        return set()
    c = m.get("congestion") if isinstance(m, dict) else None
    out = c.get("rto_out") if isinstance(c, dict) else None
    return {str(x) for x in out} if isinstance(out, list) else set()


def _con_exchanges(doc: dict[str, Any] | None, t: _Tally) -> bool:
    """Whether the GE sent CoAP CON exchanges (whose events its RTO log
    holds): a NON run or one over an HTTP north logs none."""
    north = (doc or {}).get("north") or {}
    return (doc or {}).get("type") == "con" and north.get("protocol", "coap") == "coap" and t.sent > 0


def _rto_of(files: RunFiles, g: GeData, expected: set[str], problems: list[str],
            exchanges: bool) -> pd.DataFrame | None:
    path = g.csv.parent / layout.ge_rto(g.ge)
    rel = f"{layout.GE}/{layout.ge_rto(g.ge)}"
    if not path.is_file():
        if rel in expected:
            problems.append(f"GE {g.ge} was given --rto-out {rel} and it is missing: its RTO over time is "
                            "not known (missing evidence)")
        return None
    try:
        df = read_rto(path)
    except UserError as err:
        problems.append(f"GE {g.ge}: {err}")
        return None
    if df.empty and rel in expected and exchanges:
        problems.append(f"GE {g.ge}'s RTO log {rel} has no rows (missing evidence)")
    return df.assign(ge=g.ge)


def congestion_section(files: RunFiles, data: Sequence[GeData], phases: Phases,
                       device_counters: dict[str, Any] | None, late_us: float) -> dict[str, Any]:
    """The section (summary.json ``congestion``): per GE and over all GEs;
    per GE also ``nstart_holds`` (:func:`holds_section`)."""
    expected = _expected_rto(files)
    problems: list[str] = []
    dur_s = (phases.measure[1] - phases.measure[0]) / 1e6
    tallies, per_ge, frames = [], [], []
    pooled = GroupQuantiles(_stream.EXACT_MAX)
    for g, summary in zip(data, files.ge_summaries, strict=True):
        doc, _ = ge_summary(summary)
        t = _Tally(phases.measure, pooled)
        for batch in g.batches(_COLUMNS):
            t.add(batch)
        tallies.append(t)
        cfg = _config(doc)
        per_ge.append({"ge": g.ge, "strategy": cfg.get("strategy"), "nstart": cfg.get("nstart"),
                       "probing_rate": cfg.get("probing_rate"), "ack_random_factor": cfg.get("ack_random_factor"),
                       "held": cfg.get("held"), "spurious_retransmissions": _spurious(doc),
                       "timer0_us": cfg.get("timer0_us"),
                       "rto_peers_final": (cfg.get("peers") or [])[:MAX_PEERS_LISTED], **_per_ge(t, dur_s)})
        rto = _rto_of(files, g, expected, problems, _con_exchanges(doc, t))
        if rto is not None:
            frames.append(rto)
        per_ge[-1]["nstart_holds"] = holds_section(g, doc, rto, phases.measure, late_us)
    total = _per_ge(_merge(tallies, phases.measure), dur_s)
    total["response_us"] = _quantiles(pooled)
    spur = [p["spurious_retransmissions"] for p in per_ge]
    dc = device_counters or {}
    strategies = sorted({str(p["strategy"]) for p in per_ge if p["strategy"] is not None})
    nstarts = sorted({str(p["nstart"]) for p in per_ge})
    return {
        "strategy": strategies[0] if len(strategies) == 1 else (", ".join(strategies) or None),
        "nstart": (per_ge[0]["nstart"] if len(nstarts) == 1 and per_ge else None),
        "probing_rate": per_ge[0]["probing_rate"] if per_ge else None,
        **total,
        "spurious_retransmissions": sum(s for s in spur if s is not None) if any(s is not None for s in spur) else None,
        "device_duplicates": (dc.get("totals") or {}).get("duplicates") if dc.get("files") else None,
        "rto": _rto_summary(frames, phases),
        "complete": not problems, "problems": problems,
        "ges": per_ge,
    }


# --- NSTART: which rows waited for the protocol ---------------------------------------------------------


def nstart_holds(g: GeData, nstart: int, one_peer: bool, rto: pd.DataFrame | None = None) -> np.ndarray:
    """Per row of the GE output (in file order), whether NSTART held it: at
    its intended time its peer already had ``nstart`` exchanges in flight
    (sent earlier and not yet ended). An exchange ends at its response
    (``recv_us``), or, timed out, at its give-up: the RTO log's ``timeout``
    event (``rto``; without the log the give-up is unknown and the
    exchange never ends, so the later rows of its peer count as held). With
    the log, a row it has no ``send`` for was never transmitted (held past
    its timeout) and never in flight. The peer is the device (direct), or
    one for all (``one_peer``: through a gateway over shared sockets)."""
    t = pd.concat([b.to_pandas() for b in g.batches(["device_id", "intended_us", "sent_us", "recv_us"])],
                  ignore_index=True)
    n = len(t)
    end = t["recv_us"].to_numpy(np.float64).copy()
    sent = t["sent_us"].notna().to_numpy()
    if rto is not None and not rto.empty:
        tmo = rto[rto["event"] == "timeout"]
        rows = tmo["row"].to_numpy(np.int64)
        keep = (rows >= 0) & (rows < n)
        end[rows[keep]] = tmo["t_us"].to_numpy(np.float64)[keep]
        went = np.zeros(n, bool)
        tx = rto.loc[rto["event"] == "send", "row"].to_numpy(np.int64)
        went[tx[(tx >= 0) & (tx < n)]] = True
        sent = sent & went
    end = np.where(~sent, -np.inf, np.where(np.isnan(end), np.inf, end))     # never sent: never in flight
    peer = np.zeros(n, np.int64) if one_peer else t["device_id"].to_numpy(np.int64)
    intended = t["intended_us"].to_numpy(np.float64)
    order = np.lexsort((intended, peer))
    p, i, e = peer[order], intended[order], end[order]
    inflight = np.zeros(n, np.int64)
    for k in range(1, min(n, 4 * nstart + 64)):      # the k-th earlier exchange of the same peer
        same = p[k:] == p[:-k]
        inflight[k:] += (same & (e[:-k] > i[k:])).astype(np.int64)
    held = np.zeros(n, bool)
    held[order] = inflight >= nstart
    return held


def holds_section(g: GeData, doc: dict[str, Any] | None, rto: pd.DataFrame | None, window: tuple[float, float],
                  late_us: float) -> dict[str, Any] | None:
    """The requests of the measurement phase NSTART held (None when the GE
    ran without NSTART or held none): how many, the devices they were
    for, and the send lag of the others (p99, late sends): what the GE did
    where it was free to send on time. The holds are reconstructed from
    the rows' times and the RTO log, so they excuse nothing (None) when
    they cannot be trusted: no RTO log of a CON run, more rows "held"
    than the GE counted holds (the GE's own lateness), or no row left
    that the GE was free to send."""
    cfg = _config(doc)
    nstart, held = cfg.get("nstart"), cfg.get("held") or {}
    if not isinstance(nstart, int) or not (held.get("nstart_waits") or held.get("probing_waits")):
        return None
    north = (doc or {}).get("north") or {}
    one_peer = bool(north.get("gateway")) and north.get("sockets", "one") == "one"
    if rto is None and (doc or {}).get("type") == "con":
        return None     # no RTO log: give-ups unknown, the holds cannot be told (never an excuse)
    mask = nstart_holds(g, nstart, one_peer, rto)
    counted = int(held.get("nstart_waits") or 0) + int(held.get("probing_waits") or 0)
    if int(mask.sum()) > counted + max(10, counted // 10):
        return None     # more "held" than the GE held: lateness of its own, never an excuse
    t = pd.concat([b.to_pandas() for b in g.batches(["device_id", "intended_us", "send_lag_us"])], ignore_index=True)
    inside = ((t["intended_us"] >= window[0]) & (t["intended_us"] < window[1])).to_numpy()
    free = inside & ~mask
    if not free.any():
        return None     # nothing the GE was free to send: no evidence to judge it by, so no excuse
    lag = t["send_lag_us"].to_numpy(np.float64)[free]
    lag = lag[np.isfinite(lag)]
    return {"held": int((inside & mask).sum()), "free": int(free.sum()),
            "held_whole_run": int(mask.sum()), "ge_counted_whole_run": held.get("nstart_waits"),
            "held_devices": sorted(int(d) for d in np.unique(t["device_id"].to_numpy(np.int64)[inside & mask])),
            "send_lag_p99_free_us": float(np.percentile(lag, 99)) if lag.size else None,
            "late_free": int((lag > late_us).sum())}


# --- presentation (terminal, Markdown, HTML) -------------------------------------------------------------

def _ms(us: float | None) -> str:
    return "-" if us is None else (f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.2f} ms")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def congestion_lines(c: dict[str, Any]) -> list[str]:
    """The part in sentences: strategy, NSTART, completion, transmissions, RTO."""
    ns = "unlimited" if c.get("nstart") is None else str(c["nstart"])
    sh = c["retransmission_shares"]
    shares = ", ".join(f"{k}: {_pct(v)}" for k, v in sh.items())
    out = [f"Strategy {c.get('strategy') or 'unknown'}, NSTART {ns}"
           + (f", PROBING_RATE {c['probing_rate']} B/s" if c.get("probing_rate") else "")
           + f": {c['ok']} of {c['requests']} requests completed ({_pct(c['completion_ratio'])}), "
           f"throughput {_f(c['throughput_ok_per_s'])} ok/s",
           f"Transmissions per request {_f(c['transmissions_per_request'], '.3f')} "
           f"({c['retransmissions']} retransmissions; share of requests by retransmissions {shares})",
           "Spurious retransmissions: "
           + (f"{c['spurious_retransmissions']} (GE)" if c.get("spurious_retransmissions") is not None
              else "not counted by this GE")
           + (f", {c['device_duplicates']} duplicates recognised by the devices (whole run)"
              if c.get("device_duplicates") is not None else "")]
    rto = c.get("rto")
    if rto and rto.get("per_peer"):
        meds = [p["rto_median_us"] for p in rto["per_peer"]]
        out.append(f"RTO over the run ({rto['peers']} peer(s), {rto['events']} logged events): median per peer "
                   f"{_ms(float(np.min(meds)))} .. {_ms(float(np.max(meds)))}")
    elif rto is None:
        out.append("RTO over time: no RTO log (ge/rto-<k>.csv)")
    out += [f"MISSING EVIDENCE: {p}" for p in c.get("problems") or ()]
    return out


def _f(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


def congestion_table(c: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Per GE: strategy, NSTART, completion, response p50/p95/p99, transmissions."""
    head = ["GE", "strategy", "NSTART", "completion", "p50", "p95", "p99", "tx/request", "retx", "spurious",
            "ok/s", "first timer p50"]
    rows = [[str(g["ge"]), str(g["strategy"]), "unlimited" if g["nstart"] is None else str(g["nstart"]),
             _pct(g["completion_ratio"]), _ms(g["response_us"]["p50"]), _ms(g["response_us"]["p95"]),
             _ms(g["response_us"]["p99"]), _f(g["transmissions_per_request"], ".3f"), str(g["retransmissions"]),
             "-" if g["spurious_retransmissions"] is None else str(g["spurious_retransmissions"]),
             _f(g["throughput_ok_per_s"]), _ms((g.get("timer0_us") or {}).get("p50"))] for g in c["ges"]]
    return head, rows


def shown(r: dict[str, Any]) -> bool:
    """Whether a run's report shows the part: a strategy other than RFC
    7252's, NSTART, retransmissions, an impairment, or missing evidence."""
    c = r.get("congestion")
    if not isinstance(c, dict):
        return False
    imp = (r.get("harness") or {}).get("impairment")
    return bool(c.get("strategy") not in (None, "rfc7252") or c.get("nstart") is not None or c.get("retransmissions")
                or imp or c.get("problems"))


def condition(r: dict[str, Any]) -> str:
    """A run's network condition, from what the harness applied (observed.json)."""
    groups = ((r.get("harness") or {}).get("impairment") or {}).get("groups") or {}
    parts = []
    for name, g in sorted(groups.items()):
        bits = ([f"loss {g['loss']:.0%}"] if g.get("loss") else []) + (
            [f"rate {g['rate_bps'] / 1e3:g} kbit/s"] if g.get("rate_bps") else []) + (
            [f"delay {g['delay_us'] / 1e3:g} ms"] if g.get("delay_us") else [])
        parts.append((f"{name}: " if len(groups) > 1 else "") + ", ".join(bits))
    return "; ".join(parts) or "no impairment"


#: The strategies in the GE's order (gateway-emulator/README.md).
ORDER = ("rfc7252", "cocoa", "cocoa-strong", "basic-rto", "linux-rto", "peakhopper-rto")


def side_by_side(rows: Sequence[dict[str, Any]]) -> tuple[list[str], list[list[str]]] | None:
    """The sweep's runs, strategies side by side per condition (a sweep row's
    ``congestion``: :func:`sweep_fields`); None without two strategies."""
    cs = [r for r in rows if r.get("congestion")]
    if len({r["congestion"]["strategy"] for r in cs}) < 2:
        return None

    def key(r: dict[str, Any]) -> tuple[str, int, str]:
        c = r["congestion"]
        s = str(c["strategy"])
        return c["condition"], ORDER.index(s) if s in ORDER else len(ORDER), r["run"]

    head = ["condition", "strategy", "NSTART", "completion", "p50", "p95", "p99", "tx/request", "spurious (GE)",
            "duplicates (devices)", "ok/s", "verdict"]
    body = []
    for r in sorted(cs, key=key):
        c = r["congestion"]
        body.append([c["condition"], str(c["strategy"]), "unlimited" if c["nstart"] is None else str(c["nstart"]),
                     _pct(c["completion_ratio"]), _ms(c["p50"]), _ms(c["p95"]), _ms(c["p99"]),
                     _f(c["transmissions_per_request"], ".3f"),
                     "-" if c["spurious"] is None else str(c["spurious"]),
                     "-" if c["duplicates"] is None else str(c["duplicates"]), _f(c["throughput"]),
                     r["verdict"].upper() + (" (missing evidence)" if c["problems"] else "")])
    return head, body


def sweep_fields(r: dict[str, Any]) -> dict[str, Any] | None:
    """A run's congestion numbers for the sweep's side-by-side table."""
    c = r.get("congestion")
    if not isinstance(c, dict):
        return None
    resp = c.get("response_us") or {}
    return {"condition": condition(r), "strategy": c.get("strategy"), "nstart": c.get("nstart"),
            "completion_ratio": c.get("completion_ratio"), "p50": resp.get("p50"), "p95": resp.get("p95"),
            "p99": resp.get("p99"), "transmissions_per_request": c.get("transmissions_per_request"),
            "spurious": c.get("spurious_retransmissions"), "duplicates": c.get("device_duplicates"),
            "throughput": c.get("throughput_ok_per_s"), "problems": c.get("problems") or []}
