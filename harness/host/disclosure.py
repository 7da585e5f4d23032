"""Full disclosure (issue 28): what a run's numbers depend on, for
manifest.json's ``disclosure`` (docs/run-layout.md): the CPU (model,
governor, SMT, caches, vulnerabilities and their mitigations), memory, the
kernel with its RT and cgroup settings, the build of each binary the run
ran (compiler, flags, commit: the images' ``org.wotbench.build-info``
label, which docker/build-images.sh takes from the binary's own
``--build-info`` as it copies it in), the image ids, and the checkout's git
commit and dirty state.

Every fact is read from a root (``/`` or a fake /proc and /sys tree in
tests) by pure functions; a fact that cannot be read is None and its reason
is under ``missing`` (fact -> why), never an exception. ``notes`` names a
dirty checkout and binaries built from another commit or from uncommitted
C sources: the verdict's notes show them (summary.json, the report)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from wotbench.base.results import REPO

#: The C sources of the binaries; the Makefile's BI_PATHS (the dirty state
#: a binary's --build-info reports) must name the same.
C_SOURCES = ("gateway-emulator", "device", "Makefile")
#: The roles whose images hold a binary of this repository, and its name.
BINARIES = {"ge": "wotbench-ge", "device": "wotbench-device"}
#: The image label that holds a binary's --build-info line.
BUILD_INFO_LABEL = "org.wotbench.build-info"
#: The keys of a --build-info line (device/buildinfo.h).
BUILD_KEYS = ("program", "compiler", "cflags", "ldflags", "git_commit", "git_dirty")
_CAP = 1 << 16                      # bytes read of one /proc or /sys file
_CPU = "sys/devices/system/cpu"


class _Reader:
    """Reads text facts under ``root``; a failure is None, its reason kept
    in ``missing`` under the fact's name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.missing: dict[str, str] = {}

    def text(self, fact: str, rel: str) -> str | None:
        path = self.root / rel
        try:
            with path.open("rb") as f:
                return f.read(_CAP).decode(errors="replace").strip()
        except OSError as err:
            self.missing[fact] = f"cannot read /{rel}: {err.strerror or err}"
            return None

    def number(self, fact: str, rel: str) -> int | None:
        text = self.text(fact, rel)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            self.missing[fact] = f"/{rel} holds {text[:40]!r}, not a whole number"
            return None

    def lacks(self, fact: str, why: str) -> None:
        self.missing[fact] = why


def _cpuinfo(r: _Reader) -> dict[str, Any]:
    """/proc/cpuinfo's first processor: model, vendor, family/model/stepping,
    microcode; and the number of sockets (distinct physical ids)."""
    text = r.text("cpu.model", "proc/cpuinfo")
    out: dict[str, Any] = dict.fromkeys(("model", "vendor", "family", "model_number", "stepping", "microcode"))
    out["sockets"] = None
    if text is None:
        return out
    first = text.split("\n\n", 1)[0]
    fields = dict(line.split(":", 1) for line in first.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    for key, name in (("model", "model name"), ("vendor", "vendor_id"), ("family", "cpu family"),
                      ("model_number", "model"), ("stepping", "stepping"), ("microcode", "microcode")):
        out[key] = fields.get(name)
        if out[key] is None:
            r.lacks(f"cpu.{key}", f"/proc/cpuinfo has no '{name}' line")
    ids = set(re.findall(r"^physical id\s*:\s*(\S+)", text, re.M))
    out["sockets"] = len(ids) or None
    if not ids:
        r.lacks("cpu.sockets", "/proc/cpuinfo has no 'physical id' lines")
    return out


def _cpu_list(text: str) -> list[int]:
    """A kernel CPU list ("0-3,5") as numbers; [] when it is not one."""
    out: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if m is None:
            return []
        lo = int(m.group(1))
        out.extend(range(lo, int(m.group(2) or lo) + 1))
    return out


def _governors(r: _Reader, cpus: list[int]) -> dict[str, list[int]] | None:
    """Each cpufreq scaling governor in use and its CPUs."""
    out: dict[str, list[int]] = {}
    for c in cpus:
        path = r.root / _CPU / f"cpu{c}/cpufreq/scaling_governor"
        try:
            gov = path.read_text()[:64].strip()
        except OSError:
            continue
        out.setdefault(gov, []).append(c)
    if not out:
        r.lacks("cpu.governors", f"no /{_CPU}/cpu*/cpufreq/scaling_governor (no cpufreq driver: a VM, "
                                 "or the firmware controls the frequency)")
        return None
    return out


def _caches(r: _Reader) -> list[dict[str, Any]] | None:
    """cpu0's caches: level, type, size and the CPUs sharing each."""
    base = r.root / _CPU / "cpu0/cache"
    try:
        idx = sorted((p for p in base.iterdir() if re.fullmatch(r"index\d+", p.name)),
                     key=lambda p: int(p.name[5:]))
    except OSError as err:
        r.lacks("cpu.caches", f"cannot list /{_CPU}/cpu0/cache: {err.strerror or err}")
        return None
    out = []
    for p in idx:
        rel = f"{_CPU}/cpu0/cache/{p.name}"
        out.append({"level": r.number(f"cpu.caches.{p.name}.level", f"{rel}/level"),
                    "type": r.text(f"cpu.caches.{p.name}.type", f"{rel}/type"),
                    "size": r.text(f"cpu.caches.{p.name}.size", f"{rel}/size"),
                    "shared_cpu_list": r.text(f"cpu.caches.{p.name}.shared_cpu_list", f"{rel}/shared_cpu_list")})
    return out


def _vulnerabilities(r: _Reader) -> dict[str, str] | None:
    """/sys/devices/system/cpu/vulnerabilities/*: each one's state (Not
    affected, Vulnerable, Mitigation: ...)."""
    base = r.root / _CPU / "vulnerabilities"
    try:
        names = sorted(p.name for p in base.iterdir())
    except OSError as err:
        r.lacks("cpu.vulnerabilities", f"cannot list /{_CPU}/vulnerabilities: {err.strerror or err}")
        return None
    return {n: v for n in names if (v := r.text(f"cpu.vulnerabilities.{n}", f"{_CPU}/vulnerabilities/{n}"))
            is not None}


def _smt(r: _Reader) -> dict[str, Any]:
    active = r.number("cpu.smt.active", f"{_CPU}/smt/active")
    return {"active": None if active is None else active == 1,
            "control": r.text("cpu.smt.control", f"{_CPU}/smt/control")}


def cpu_facts(r: _Reader) -> dict[str, Any]:
    online = r.text("cpu.online", f"{_CPU}/online")
    cpus = _cpu_list(online) if online is not None else []
    siblings = r.text("cpu.threads_per_core", f"{_CPU}/cpu0/topology/thread_siblings_list")
    per_core = len(_cpu_list(siblings)) if siblings is not None else 0
    return {**_cpuinfo(r), "online": online, "threads_per_core": per_core or None,
            "smt": _smt(r), "governors": _governors(r, cpus), "caches": _caches(r),
            "vulnerabilities": _vulnerabilities(r)}


def _mem_total_kib(r: _Reader) -> int | None:
    text = r.text("memory.total_kib", "proc/meminfo")
    m = re.search(r"^MemTotal:\s+(\d+) kB", text or "", re.M)
    if text is not None and m is None:
        r.lacks("memory.total_kib", "/proc/meminfo has no 'MemTotal: N kB' line")
    return int(m.group(1)) if m else None


def _cgroup(r: _Reader) -> dict[str, Any]:
    """The cgroup hierarchy (v2 unified, v1, or hybrid: v1 controllers with
    v2 at /sys/fs/cgroup/unified) and dockerd's RT budget (cgroup v1's
    /docker cpu.rt_runtime_us; v2 has none)."""
    fs = r.root / "sys/fs/cgroup"
    if (fs / "cgroup.controllers").is_file():
        version = "v2"
    elif (fs / "cpu").is_dir() or (fs / "memory").is_dir():
        version = "hybrid" if (fs / "unified").is_dir() else "v1"
    else:
        version = None
        r.lacks("kernel.cgroup.version", "/sys/fs/cgroup holds neither cgroup.controllers (v2) nor cpu/ (v1)")
    out: dict[str, Any] = {"version": version, "docker_rt_runtime_us": None, "docker_rt_period_us": None}
    if version == "v2":
        r.lacks("kernel.cgroup.docker_rt_runtime_us", "cgroup v2 has no per-group RT budget (cpu.rt_runtime_us)")
    elif version is not None:
        out["docker_rt_runtime_us"] = r.number("kernel.cgroup.docker_rt_runtime_us",
                                               "sys/fs/cgroup/cpu/docker/cpu.rt_runtime_us")
        out["docker_rt_period_us"] = r.number("kernel.cgroup.docker_rt_period_us",
                                              "sys/fs/cgroup/cpu/docker/cpu.rt_period_us")
    return out


def kernel_facts(r: _Reader) -> dict[str, Any]:
    return {"release": r.text("kernel.release", "proc/sys/kernel/osrelease"),
            "version": r.text("kernel.version", "proc/sys/kernel/version"),
            "cmdline": r.text("kernel.cmdline", "proc/cmdline"),
            "sched_rt_runtime_us": r.number("kernel.sched_rt_runtime_us", "proc/sys/kernel/sched_rt_runtime_us"),
            "sched_rt_period_us": r.number("kernel.sched_rt_period_us", "proc/sys/kernel/sched_rt_period_us"),
            "cgroup": _cgroup(r)}


def host_facts(root: Path = Path("/")) -> tuple[dict[str, Any], dict[str, str]]:
    """(cpu, memory and kernel facts, missing: fact -> why) of the host under ``root``."""
    r = _Reader(root)
    facts = {"cpu": cpu_facts(r), "memory": {"total_kib": _mem_total_kib(r)}, "kernel": kernel_facts(r)}
    return facts, r.missing


def _git(repo: Path, *args: str) -> tuple[str | None, str | None]:
    """(stdout, None) of a git command in ``repo``, or (None, why)."""
    try:
        p = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        return None, f"git {args[0]}: {err}"
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return None, f"git {args[0]}: {last}"
    return p.stdout, None


def changed_paths(porcelain: str) -> list[str]:
    """The paths of ``git status --porcelain`` lines (a rename's new one)."""
    out = []
    for line in porcelain.splitlines():
        if len(line) > 3:
            out.append(line[3:].split(" -> ")[-1].strip('"'))
    return out


def git_facts(repo: Path = REPO) -> tuple[dict[str, Any], dict[str, str]]:
    """The checkout's commit, whether it is dirty (changed or untracked
    files, `git status`), how many files, and whether C_SOURCES are among
    them; (facts, missing)."""
    missing: dict[str, str] = {}
    head, why = _git(repo, "rev-parse", "HEAD")
    if head is None:
        missing["git.commit"] = why or ""
    status, why = _git(repo, "status", "--porcelain", "--untracked-files=normal")
    paths = changed_paths(status) if status is not None else None
    if paths is None:
        for k in ("dirty", "changed_files", "c_sources_dirty"):
            missing[f"git.{k}"] = why or ""
    c_dirty = None if paths is None else any(p == s or p.startswith(s + "/") for p in paths for s in C_SOURCES)
    return {"commit": head.strip() if head else None, "dirty": None if paths is None else bool(paths),
            "changed_files": None if paths is None else len(paths), "c_sources_dirty": c_dirty}, missing


def parse_build_info(text: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """A --build-info line as a dict (BUILD_KEYS), or (None, why)."""
    if text is None:
        return None, (f"the image has no {BUILD_INFO_LABEL} label (built before binaries had --build-info: "
                      "run make images)")
    try:
        got = json.loads(text)
    except ValueError as err:
        return None, f"its {BUILD_INFO_LABEL} label is not JSON: {err}"
    if not isinstance(got, dict) or set(got) != set(BUILD_KEYS):
        return None, f"its {BUILD_INFO_LABEL} label does not hold the keys {', '.join(BUILD_KEYS)}"
    return {k: got[k] for k in BUILD_KEYS}, None


def binary_facts(images: Mapping[str, str], labels: Mapping[str, str | None]
                 ) -> tuple[dict[str, Any], dict[str, str]]:
    """Per role of BINARIES the run's image holds: its image id and the
    binary's build (the image's label); (facts, missing)."""
    out: dict[str, Any] = {}
    missing: dict[str, str] = {}
    for role, program in BINARIES.items():
        if role not in images:
            continue
        build, why = parse_build_info(labels.get(role))
        if why is not None:
            missing[f"binaries.{role}.build"] = why
        out[role] = {"program": program, "image_id": images[role], "build": build}
    return out, missing


def notes(git: Mapping[str, Any], binaries: Mapping[str, Any]) -> list[str]:
    """A dirty checkout, and each binary built from another commit than
    the checkout's or from uncommitted C sources, in a sentence each."""
    out = []
    if git.get("dirty"):
        out.append(f"the checkout has uncommitted changes ({git.get('changed_files')} files changed or untracked, "
                   "git status): the run is not exactly commit " + str(git.get("commit") or "?")[:12])
    head = git.get("commit")
    for b in binaries.values():
        build = b.get("build")
        name = f"{b['program']} (image {str(b['image_id'])[:19]})"
        if build is None:
            out.append(f"{name}: which commit it was built from is unknown (its image has no build info)")
        elif build.get("git_commit") is None:
            out.append(f"{name} was built outside a git checkout: its commit is unknown")
        elif build.get("git_dirty"):
            out.append(f"{name} was built from uncommitted C sources (on commit {str(build.get('git_commit'))[:12]})")
        elif head is not None and build.get("git_commit") != head:
            out.append(f"{name} was built from commit {str(build.get('git_commit'))[:12]}, "
                       f"not the checkout's {head[:12]}")
    return out


def disclosure(images: Mapping[str, str], labels: Mapping[str, str | None], *, root: Path = Path("/"),
               repo: Path = REPO) -> dict[str, Any]:
    """manifest.json's ``disclosure``: host, git and binaries' facts,
    ``images`` (role -> id), ``missing`` (fact -> why) and ``notes``."""
    host, missing = host_facts(root)
    git, git_missing = git_facts(repo)
    binaries, bin_missing = binary_facts(images, labels)
    return {**host, "git": git, "binaries": binaries, "images": dict(images),
            "missing": {**missing, **git_missing, **bin_missing}, "notes": notes(git, binaries)}
