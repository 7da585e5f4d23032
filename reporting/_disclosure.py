"""manifest.json's ``disclosure`` (harness/host/disclosure.py, docs/run-layout.md)
for a person: rows of the report's Run metadata, and its notes (a dirty
checkout, binaries built from another commit) for the verdict's notes. A
manifest without it (an older run) shows nothing; a damaged one what can be
read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.reporting._bounded import read_json

__all__ = ["read_disclosure", "disclosure_notes", "disclosure_rows"]


def read_disclosure(manifest: Path | None) -> dict[str, Any]:
    """The disclosure object of a run's manifest.json; {} when there is none
    or it cannot be read (the placement check names a damaged manifest)."""
    if manifest is None:
        return {}
    try:
        m = read_json(manifest)
    except UserError:
        return {}
    d = m.get("disclosure") if isinstance(m, dict) else None
    return d if isinstance(d, dict) else {}


def _at(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def disclosure_notes(d: dict[str, Any]) -> list[str]:
    """The notes the harness wrote: a dirty checkout, binaries that differ from the commit."""
    notes = d.get("notes")
    return [str(n) for n in notes] if isinstance(notes, list) else []


def _unknown(d: dict[str, Any], fact: str) -> str:
    why = _at(d, "missing", fact)
    return f"unknown ({why})" if why else "unknown"


def _cpu(d: dict[str, Any]) -> list[list[str]]:
    c = _dict(d.get("cpu"))
    ident = ", ".join(f"{k.replace('_number', '')} {c[k]}" for k in ("family", "model_number", "stepping", "microcode")
                      if c.get(k) is not None)
    smt = _dict(c.get("smt"))
    active = smt.get("active")
    govs = c.get("governors")
    caches = _list(c.get("caches"))
    vul = _dict(c.get("vulnerabilities"))
    vulnerable = sorted(k for k, v in vul.items() if str(v).startswith("Vulnerable"))
    mitigated = sorted(k for k, v in vul.items() if str(v).startswith("Mitigation"))
    return [
        ["CPU", f"{c.get('model') or _unknown(d, 'cpu.model')}" + (f" ({ident})" if ident else "")],
        ["CPUs online", f"{c.get('online') or '?'}; sockets {c.get('sockets') or '?'}, "
                        f"threads per core {c.get('threads_per_core') or '?'}"],
        ["SMT", _unknown(d, "cpu.smt.active") if active is None else
         f"{'active' if active else 'not active'} (control: {smt.get('control') or '?'})"],
        ["CPU governor", "; ".join(f"{g} on {len(v) if isinstance(v, list) else '?'} CPUs" for g, v in govs.items())
         if isinstance(govs, dict) else _unknown(d, "cpu.governors")],
        ["CPU caches (cpu0)", ", ".join(f"L{x.get('level')} {x.get('type')} {x.get('size')}" for x in caches
                                        if isinstance(x, dict)) or _unknown(d, "cpu.caches")],
        ["CPU vulnerabilities", f"{len(vul)} listed; vulnerable: {', '.join(vulnerable) or 'none'}; "
                                f"mitigated: {', '.join(mitigated) or 'none'}" if vul
         else _unknown(d, "cpu.vulnerabilities")]]


def _kernel(d: dict[str, Any]) -> list[list[str]]:
    k = _dict(d.get("kernel"))
    cg = _dict(k.get("cgroup"))
    mem = _at(d, "memory", "total_kib")
    docker_rt = (f"{cg.get('docker_rt_runtime_us')} of {cg.get('docker_rt_period_us')} us"
                 if cg.get("docker_rt_runtime_us") is not None else _unknown(d, "kernel.cgroup.docker_rt_runtime_us"))
    return [
        ["memory", units.fmt_size(mem * 1024) if isinstance(mem, int) else _unknown(d, "memory.total_kib")],
        ["kernel", f"{k.get('release') or '?'} {k.get('version') or ''}".strip()],
        ["kernel command line", str(k.get("cmdline") or _unknown(d, "kernel.cmdline"))],
        ["RT throttling", f"sched_rt_runtime_us {k.get('sched_rt_runtime_us')} of "
                          f"sched_rt_period_us {k.get('sched_rt_period_us')}"],
        ["cgroups", f"{cg.get('version') or _unknown(d, 'kernel.cgroup.version')}; dockerd's cgroup "
                    f"cpu.rt_runtime_us: {docker_rt}"]]


def _binaries(d: dict[str, Any]) -> list[list[str]]:
    rows = []
    bins = _at(d, "binaries")
    for role, b in (bins.items() if isinstance(bins, dict) else ()):
        if not isinstance(b, dict):
            continue
        build = b.get("build")
        name = str(b.get("program") or role)
        if not isinstance(build, dict):
            rows.append([name, f"image {str(b.get('image_id'))[:19]}; build "
                               + _unknown(d, f"binaries.{role}.build")])
            continue
        built_dirty = build.get("git_dirty")
        dirty = ("" if built_dirty is False else ", uncommitted C sources" if built_dirty is True
                 else ", dirty state unknown")
        rows.append([name, f"{build.get('compiler')}; cflags {build.get('cflags')}; ldflags {build.get('ldflags')}; "
                           f"commit {str(build.get('git_commit'))[:12]}{dirty}; "
                           f"image {str(b.get('image_id'))[:19]}"])
    return rows


def _git(d: dict[str, Any]) -> list[list[str]]:
    g = _dict(d.get("git"))
    if g.get("commit") is None:
        return [["checkout", _unknown(d, "git.commit")]]
    dirty = g.get("dirty")
    state = (_unknown(d, "git.dirty") if not isinstance(dirty, bool) else
             f"dirty ({g.get('changed_files')} files changed or untracked)" if dirty else "clean")
    return [["checkout", f"commit {g['commit']}, {state}"]]


def disclosure_rows(d: dict[str, Any]) -> list[list[str]]:
    """(fact, value) rows of the disclosure for the Run metadata table; [] without one."""
    if not d:
        return []
    return _cpu(d) + _kernel(d) + _git(d) + _binaries(d)
