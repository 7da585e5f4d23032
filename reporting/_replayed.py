"""A replay run (``workload.replay``) in the report: what was replayed, from
workload/expected.json's ``replay`` object (tracegen/_replay.py; the source as
given, its sha256, k, r, the service mode, the map), and what the RIT
section's "expected" rows then are (the replayed trace: no target distribution)."""

from __future__ import annotations

import json
from typing import Any

from wotbench.base import rundir as layout
from wotbench.base import units
from wotbench.reporting._load import RunFiles

__all__ = ["replay_section", "replay_sentence", "REPLAY_RIT_NOTE"]

_EXPECTED_JSON = "expected.json"
_KEYS = ("from", "capture", "sha256", "devices", "rate", "service", "map", "captured_devices", "period_us",
         "observations", "observations_cut", "observations_dropped", "service_mean_us")
#: Under the RIT table of a replay.
REPLAY_RIT_NOTE = ("A replay (rit_scope: replay) has no target distribution: the expected RITs are those of the "
                   "replayed trace, the captured times scaled by the rate, copied and repeated.")


def replay_section(files: RunFiles) -> dict[str, Any] | None:
    """expected.json's ``replay`` object (its known keys), None for a run that is not a replay
    or whose expected.json cannot be read."""
    try:
        doc = json.loads((files.root / layout.WORKLOAD / _EXPECTED_JSON).read_text())
    except (OSError, ValueError):
        return None
    rp = doc.get("replay") if isinstance(doc, dict) else None
    if not isinstance(rp, dict) or not isinstance(rp.get("from"), str):
        return None
    return {k: rp.get(k) for k in _KEYS}


def _n(v: Any) -> str:
    return units.fmt_num(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else "?"


def replay_sentence(rp: dict[str, Any]) -> str:
    """"replay of SOURCE (sha256 ...): C captured devices x k, rate x r, service median"."""
    sha = rp.get("sha256")
    what = "capture" if rp.get("capture") else "derived folder"
    head = f"replay of {rp['from']} ({what}, sha256 {sha[:16] + '…' if isinstance(sha, str) else '?'})"
    c = rp.get("captured_devices")
    dev = f"{_n(c)} captured device{'' if c == 1 else 's'}"
    mp, k = rp.get("map"), rp.get("devices")
    default = (isinstance(c, int) and isinstance(k, int) and isinstance(mp, list)
               and mp == [e % c for e in range(k * c)])
    if isinstance(mp, list) and mp and not default:
        shown = mp if len(mp) <= 16 else [*mp[:16], "..."]
        dev += f" mapped onto {len(mp)} emulated (map {shown})"
    else:
        dev += f" x {_n(k)}"
    tail = f", rate x {_n(rp.get('rate'))}, service {rp.get('service') or '?'}"
    obs = rp.get("observations")
    if isinstance(obs, int) and obs:
        tail += f", {units.plural(obs, 'observation')}"
        cut, dropped = rp.get("observations_cut"), rp.get("observations_dropped")
        said = [f"{_n(cut)} cut at the test's edges"] if cut else []
        said += [f"{_n(dropped)} dropped"] if dropped else []
        tail += f" ({', '.join(said)})" if said else ""
    return f"{head}: {dev}{tail}"
