"""validate-cd's validation.md and roc.png from validation.json's document
(harness/studies/validate_cd.py)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from wotbench.spec import is_quiet

__all__ = ["markdown", "roc_png"]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _ci(ci: Sequence[float]) -> str:
    return f"{100 * ci[0]:.0f}-{100 * ci[1]:.0f} %"


def _rate(r: Mapping[str, Any] | None) -> str:
    """k / n = rate (95 % CI), or - without trials."""
    if r is None or not r["n"]:
        return "-"
    return f"{r['k']} / {r['n']} = {_pct(r['rate'])} ({_ci(r['ci'])})"


def _detector(doc: Mapping[str, Any]) -> list[str]:
    lines = ["## The detector at the runs' thresholds, against the injected interval", "",
             "| class | N | detection | 95 % CI | onset within 1 window | 95 % CI | onset error median / max |"
             " inconclusive | failed |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in doc["classes"]:
        if is_quiet(s["cls"]):
            continue
        med, mx = s["onset_error_median_s"], s["onset_error_max_abs_s"]
        err = "-" if med is None else f"{med:+.1f} s / {mx:.1f} s"
        lines.append(f"| {s['cls']} | {s['n']} | {_pct(s['rate'])} | {_ci(s['rate_ci'])} | "
                     f"{_pct(s['onset_ok_rate'])} | {_ci(s['onset_ok_ci'])} | {err} | {s['inconclusive']} | "
                     f"{s['failed']} |")
    quiet = [s for s in doc["classes"] if is_quiet(s["cls"])]
    if quiet:
        lines += ["", "| quiet | N | false alarms | 95 % CI | inconclusive | failed |", "|---|---|---|---|---|---|"]
        lines += [f"| {s['cls']} | {s['n']} | {_pct(s['rate'])} | {_ci(s['rate_ci'])} | {s['inconclusive']} | "
                  f"{s['failed']} |" for s in quiet]
    return lines


def _agreement(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["| class | mode | N | distorted | detected (of distorted) | onset within 1 window (of distorted) | "
             "alarms on undistorted | false alarms (quiet) |", "|---|---|---|---|---|---|---|---|"]
    for a in rows:
        dist = f"{a['distorted']} ({a['distorted_p99']})" + (f", {a['unjudged']} unjudged" if a["unjudged"] else "")
        lines.append(f"| {a['cls']} | {a['mode']} | {a['n']} | {dist} | {_rate(a['detected_distorted'])} | "
                     f"{_rate(a['onset_ok_distorted'])} | {_rate(a['alarms_undistorted'])} | "
                     f"{_rate(a['false_alarms'])} |")
    return lines


def _selection(sel: Mapping[str, Any] | None, title: str = "## Thresholds chosen on the training trials, scored "
               "on the held-out ones") -> list[str]:
    if sel is None:
        return []
    c = sel["chosen"]
    lines = [title, "",
             f"Split: {sel['split_rule']}. Training trials: {', '.join(map(str, sel['train'])) or '-'}; "
             f"held out: {', '.join(map(str, sel['test'])) or '-'}.", "",
             f"Rule: {sel['selection_rule']}.", "",
             *([f"Truth: {sel['truth_rule']}.", ""] if sel.get("truth_rule") else []),
             f"**Chosen: {c['name']} {c['setting']:g}, cd_alpha {c['alpha']:g}** (training false alarms "
             f"{_rate(c['fa'])}, distorted training trials detected with onset within one window "
             f"{_rate(c['hit'])}, sees an episode within one window on {_rate(c.get('power'))}"
             f"{'' if c['meets_fa'] else '; it does NOT meet the false-alarm bound'}).", "",
             "Held out, at the chosen thresholds:", ""]
    lines += _agreement(sel["heldout"])
    lines += ["", "Held out, at the runs' own thresholds (for comparison):", ""]
    lines += _agreement(sel["heldout_run_thresholds"])
    lines += ["", "<details><summary>every setting on the training trials</summary>", "",
              f"| {c['name']} | cd_alpha | training false alarms | distorted detected, onset within 1 window "
              "| sees an episode within one window |",
              "|---|---|---|---|---|"]
    lines += [f"| {g['setting']:g} | {g['alpha']:g} | {_rate(g['fa'])} | {_rate(g['hit'])} | {_rate(g.get('power'))} |"
              for g in sel["grid"]]
    return lines + ["", "</details>"]


def _ratio(d: Mapping[str, Any] | None, ref: str, q: str) -> str:
    if d is None or d[ref][f"{q}_ratio"] is None:
        return "-"
    return f"{d[ref][f'{q}_ratio']:.2f}"


def _scan(s: Mapping[str, Any] | None) -> str:
    if s is None:
        return "-"
    seg = "" if s["start_us"] is None else f" ({s['start_us'] / 1e6:.1f}-{s['end_us'] / 1e6:.1f})"
    return f"p {s['p_value']:.3f}{seg}"


def _change(c: Mapping[str, Any] | None) -> str:
    if c is None:
        return "-"
    return str(c["status"]) + ("" if c["onset_us"] is None else f" {c['onset_us'] / 1e6:.1f}")


def _quiet_devices(doc: Mapping[str, Any]) -> list[str]:
    """The quiet trials' alarms split by what their devices' own data show (older results: nothing)."""
    tests = [("run verdict", doc.get("quiet_devices")), ("change test", (doc.get("change") or {}).get("quiet_devices"))]
    rows = [(name, q) for name, qs in tests if qs for q in qs]
    if not rows:
        return []
    lines = ["", "### Quiet trials: alarms where the devices' own data changed, and where they did not", "",
             "Nothing was injected into a quiet trial, but the host is not always quiet: the devices' own change "
             "test (above) finds a change of their R - S tail in some. An alarm where it found none is a false "
             "alarm proper; an alarm where it found one, with its onset within one window of the devices' "
             "change, saw what the devices felt. Fisher: one-sided exact p-value of \"the test alarms more often "
             "where the devices changed\".", "",
             "| test | class | mode | N | alarms, devices steady | alarms, devices changed | of them onset within "
             "1 window | Fisher p |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {name} | {q['cls']} | {q['mode']} | {q['n']} | {_rate(q['steady'])} | {_rate(q['changed'])} | "
              f"{_rate(q['changed_in_time'])} | {q['fisher_p']:.3g} |" for name, q in rows]
    return lines


def _trials(doc: Mapping[str, Any]) -> list[str]:
    lines = ["## Trials", "",
             "R - S ratios: the episode's median (p50) and p99 of the devices' R - S over the pre-episode's "
             "and over the quiet trials' of the same mode (pooled, same window).", "",
             "Change: the change test alone (against the warm-up) and its onset. Own data: the devices' own "
             "change test's p-value and segment, in s from the measurement start (onsets and injected: in s "
             "from t0).", "",
             "| # | class | mode | seed | set | status | onset (s) | change | injected (s) | p50 / p99 vs pre | "
             "p50 / p99 vs quiet | distorted | own data | verdict | run |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for t in doc["trials"]:
        inj = ("-" if t["injected_start_us"] is None else
               f"{t['injected_start_us'] / 1e6:.1f}-{t['injected_end_us'] / 1e6:.1f}"
               + ("" if t["injected_observed"] else " (planned)"))
        on = "-" if t["onset_us"] is None else f"{t['onset_us'] / 1e6:.1f}"
        d = t.get("distortion")
        dist = ("-" if d is None or d["distorted"] is None else
                ("no" if not d["distorted"] else "p99" if d["distorted_p99"] else "p50"))
        seed = "-" if t.get("seed") is None else str(t["seed"])
        lines.append(f"| {t['index']} | {t['cls']} | {t.get('mode') or '-'} | {seed} | {t.get('set') or '-'} | "
                     f"{t['status']} | {on} | {_change(t.get('change'))} | {inj} | "
                     f"{_ratio(d, 'vs_pre', 'p50')} / {_ratio(d, 'vs_pre', 'p99')} | "
                     f"{_ratio(d, 'vs_quiet', 'p50')} / {_ratio(d, 'vs_quiet', 'p99')} | {dist} | "
                     f"{_scan(t.get('device_scan'))} | {t['verdict']} | "
                     f"{Path(t['run_dir']).name} |")
    return lines


def _seeds(doc: Mapping[str, Any]) -> str:
    seeds = doc.get("seeds", "fixed")
    if seeds == "fixed":
        return " Every trial replays one trace (workload.seed)."
    if seeds != "per-trial":
        return (" The trials of batches with fixed seeds replay one trace (workload.seed; seed -), the others "
                "a trace each (seed column).")
    base = doc.get("seed_base")
    return (" Each trial replays a trace of its own (seed column" + ("" if base is None else f"; first seed {base}")
            + ").")


def markdown(doc: Mapping[str, Any]) -> str:
    """validation.md: the tables of validation.json."""
    lines = [f"# Contention detector validation: {doc['spec']} (scale {doc['scale']})", "",
             f"{'complete' if doc['complete'] else 'INCOMPLETE'}; {len(doc['trials'])} trials; detector "
             f"alpha {doc['alpha']:g}" + (f", cd_min_effect {doc['min_effect']:g}" if "min_effect" in doc else "")
             + "; onset within one window: |detector onset - observed hog start| <= the window; 95 % Wilson "
             "intervals." + _seeds(doc), ""]
    lines += _detector(doc)
    if "agreement" in doc:
        tg = doc["targets"]
        lines += ["", "## Against the devices' own distortion (the runs' thresholds, all trials)", "",
                  f"A trial is distorted when its episode's p99 or median of the devices' R - S is >= "
                  f"{tg['distorted_ratio']:g} x the quiet trials' of its mode (pooled, same window; in brackets: by "
                  "the p99 alone, the issue's rule). Targets: "
                  f">= {_pct(tg['detect_min'])} of the distorted trials detected with onset within one window, "
                  f"<= {_pct(tg['fa_max'])} false alarms on quiet trials. Without a single miss (false alarm) "
                  f"the 95 % Wilson interval clears the target only from n = {tg['n_needed']} trials.", ""]
        lines += _agreement(doc["agreement"])
        lines += [""] + _selection(doc.get("selection"))
    if doc.get("change"):
        ch = doc["change"]
        lines += ["", "## The change test alone (the CD against the warm-up), the runs' thresholds", "",
                  f"The test: {ch['rule']}. At cd_change_exceed {ch['exceed']:g}, all trials:", ""]
        lines += _agreement(ch["agreement"])
        lines += [""] + _selection(ch.get("selection"), "### The change test's thresholds chosen on the training "
                                   "trials, scored on the held-out ones")
    if doc.get("device_scan"):
        lines += ["", "## What the devices' own requests show (a reference, not the CD)", "",
                  f"Whether an episode could be seen in a trial at all: {doc['device_scan']['rule']}. Its "
                  "parameters are fixed in advance (harness/studies/vcd_scan.py), so every trial scores it.", ""]
        lines += _agreement(doc["device_scan"]["agreement"])
    lines += _quiet_devices(doc)
    lines += [""] + _trials(doc)
    return "\n".join(lines) + "\n"


def roc_png(points: Sequence[Mapping[str, Any]]) -> bytes:
    import matplotlib  # on use: `wotbench --help` loads this module

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 5.0), constrained_layout=True)
    classes = sorted({c for p in points for c in p["detection"]})
    for c in classes:
        xs = [p["fa_rate"] if p["fa_rate"] is not None else np.nan for p in points]
        ys = [p["detection"].get(c, np.nan) for p in points]
        ax.plot(xs, ys, "o-", label=c, alpha=0.8)
        for p, x, y in zip(points, xs, ys, strict=True):
            if c == classes[0]:
                ax.annotate(f"{p['alpha']:g}", (x, y), textcoords="offset points", xytext=(4, -10), fontsize=6)
    ax.plot([0, 1], [0, 1], ":", color="0.6", lw=1)
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("false-alarm rate (quiet trials)")
    ax.set_ylabel("detection rate (trials with interference)")
    ax.set_title("contention detector: detection vs false alarms as alpha is swept")
    ax.legend(fontsize=7, loc="lower right")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    plt.close(fig)
    return buf.getvalue()
