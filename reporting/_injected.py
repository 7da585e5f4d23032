"""A run's injected interference (interference.json, written by the
harness: each noisy neighbour planned and observed, microseconds on t0):
loaded for summary.json, marked as shaded spans on every timeline figure,
and tabled in the reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wotbench.base import rundir as layout
from wotbench.reporting._shape import ListOf, Obj, read_record

__all__ = ["read_interference", "mark_interference", "interference_table", "span_s"]

_COLORS = {"cpu": "#ff7f0e", "membw": "#9467bd"}


_ENTRY = ListOf(Obj({"planned_start_us": float, "planned_end_us": float, "start_us": (float, type(None)),
                     "end_us": (float, type(None))}, required=("planned_start_us", "planned_end_us")))


def read_interference(run_dir: Path) -> list[dict[str, Any]] | None:
    """interference.json's entries; None when the run injected none. A
    damaged file is a UserError naming it and the field."""
    path = Path(run_dir) / layout.INTERFERENCE
    if not path.exists():
        return None
    doc: list[dict[str, Any]] = read_record(path, _ENTRY)
    return doc


def span_s(e: dict[str, Any]) -> tuple[float, float, bool]:
    """(start, end) in seconds since t0: observed when the hog reported, else
    planned; and whether it is the observed span."""
    observed = e.get("start_us") is not None and e.get("end_us") is not None
    a, b = (e["start_us"], e["end_us"]) if observed else (e["planned_start_us"], e["planned_end_us"])
    return a / 1e6, b / 1e6, observed


def _label(e: dict[str, Any], observed: bool) -> str:
    where = f"cpuset {e.get('cores')}" + (f" of {e['node']}" if e.get("node") else "")
    return (f"interference {e.get('name')}: {e.get('threads')} {e.get('kind')} thread(s) on {where}"
            + ("" if observed else " (planned; not reported)"))


def mark_interference(ax: Any, intervals: Sequence[dict[str, Any]] | None) -> None:
    """Shades each interference episode on a time axis (seconds since t0),
    with a legend entry naming its kind, threads and cores."""
    for e in intervals or ():
        a, b, observed = span_s(e)
        ax.axvspan(a, b, color=_COLORS.get(str(e.get("kind")), "#8c564b"), alpha=0.18 if observed else 0.08,
                   hatch=None if observed else "//", zorder=0.5, label=_label(e, observed))


def _num(v: Any, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def _seconds(e: dict[str, Any], key: str) -> float | None:
    """``e[key]`` (us) in seconds; None when absent."""
    return None if e.get(key) is None else e[key] / 1e6


def interference_table(r: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """One row per episode: where, planned and observed instants (s since t0), work done."""
    entries = r.get("interference")
    if not entries:
        return None
    head = ["name", "kind", "threads", "cores", "node", "planned (s)", "observed (s)", "work", "note"]
    rows = []
    for e in entries:
        work = (f"{e['gbps']:.2f} GB/s" if e.get("gbps") is not None
                else f"{e['loops']:.3g} loops" if e.get("loops") is not None else "-")
        rows.append([str(e.get("name")), str(e.get("kind")), str(e.get("threads")), str(e.get("cores")),
                     str(e.get("node") or "-"),
                     f"{_num(_seconds(e, 'planned_start_us'), '.3f')} - {_num(_seconds(e, 'planned_end_us'), '.3f')}",
                     f"{_num(_seconds(e, 'start_us'), '.3f')} - {_num(_seconds(e, 'end_us'), '.3f')}", work,
                     e.get("reason") or ""])
    return head, rows
