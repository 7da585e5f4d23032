"""manifest.json's disclosure (harness/host/disclosure.py): the host's facts
read from a fake /proc and /sys tree, every unreadable fact null with its
reason and never an exception, the checkout's git state, the binaries'
build info, and the notes (a dirty checkout, binaries from another commit)
that summary.json and the report show."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from wotbench.base import rundir as layout
from wotbench.base.results import REPO
from wotbench.host import disclosure as dis
from wotbench.reporting._analyze import Analysis
from wotbench.reporting._disclosure import disclosure_notes, disclosure_rows, read_disclosure
from wotbench.reporting._render import _metadata
from wotbench.reporting._tables import run_notes

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz
stepping\t: 4
microcode\t: 0x2006e05
physical id\t: 0

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz
physical id\t: 1
"""
COMMIT = "0123456789abcdef0123456789abcdef01234567"
BUILD = {"program": "wotbench-ge", "compiler": "gcc 12.2.0", "cflags": "-std=c11 -O2 -g",
         "ldflags": "-static -lm", "git_commit": COMMIT, "git_dirty": False}


def fake_host(root: Path, *, cgroup: str = "hybrid") -> Path:
    """A /proc and /sys tree of a two-CPU host."""
    files = {
        "proc/cpuinfo": CPUINFO,
        "proc/meminfo": "MemTotal:        8049012 kB\nMemFree: 1 kB\n",
        "proc/cmdline": "BOOT_IMAGE=/vmlinuz root=/dev/sda1 mitigations=auto\n",
        "proc/sys/kernel/osrelease": "6.1.0-18-amd64\n",
        "proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1\n",
        "proc/sys/kernel/sched_rt_runtime_us": "950000\n",
        "proc/sys/kernel/sched_rt_period_us": "1000000\n",
        "sys/devices/system/cpu/online": "0-1\n",
        "sys/devices/system/cpu/smt/active": "1\n",
        "sys/devices/system/cpu/smt/control": "on\n",
        "sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0-1\n",
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "performance\n",
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
        "sys/devices/system/cpu/vulnerabilities/meltdown": "Mitigation: PTI\n",
        "sys/devices/system/cpu/vulnerabilities/spectre_v1": "Vulnerable: __user pointer sanitization\n",
        "sys/devices/system/cpu/vulnerabilities/l1tf": "Not affected\n",
        "sys/fs/cgroup/cpu/docker/cpu.rt_runtime_us": "950000\n",
        "sys/fs/cgroup/cpu/docker/cpu.rt_period_us": "1000000\n",
    }
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                             (3, "Unified", "22528K")]):
        base = f"sys/devices/system/cpu/cpu0/cache/index{i}"
        files.update({f"{base}/level": f"{level}\n", f"{base}/type": f"{kind}\n", f"{base}/size": f"{size}\n",
                      f"{base}/shared_cpu_list": "0-1\n" if level == 3 else "0\n"})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    if cgroup == "hybrid":
        (root / "sys/fs/cgroup/unified").mkdir(parents=True)
    elif cgroup == "v2":
        for rel in ("sys/fs/cgroup/cpu/docker/cpu.rt_runtime_us", "sys/fs/cgroup/cpu/docker/cpu.rt_period_us"):
            (root / rel).unlink()
        (root / "sys/fs/cgroup/cgroup.controllers").write_text("cpu memory\n")
    return root


def test_the_host_facts_of_a_fake_tree(tmp_path: Path) -> None:
    facts, missing = dis.host_facts(fake_host(tmp_path))
    cpu = facts["cpu"]
    assert cpu["model"] == "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz" and cpu["vendor"] == "GenuineIntel"
    assert (cpu["family"], cpu["model_number"], cpu["stepping"], cpu["microcode"]) == ("6", "85", "4", "0x2006e05")
    assert cpu["sockets"] == 2 and cpu["online"] == "0-1" and cpu["threads_per_core"] == 2
    assert cpu["smt"] == {"active": True, "control": "on"}
    assert cpu["governors"] == {"performance": [0], "powersave": [1]}
    assert [(c["level"], c["type"], c["size"]) for c in cpu["caches"]] == [
        (1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"), (3, "Unified", "22528K")]
    assert cpu["caches"][3]["shared_cpu_list"] == "0-1"
    assert cpu["vulnerabilities"] == {"l1tf": "Not affected", "meltdown": "Mitigation: PTI",
                                      "spectre_v1": "Vulnerable: __user pointer sanitization"}
    assert facts["memory"] == {"total_kib": 8049012}
    k = facts["kernel"]
    assert k["release"] == "6.1.0-18-amd64" and "mitigations=auto" in k["cmdline"]
    assert (k["sched_rt_runtime_us"], k["sched_rt_period_us"]) == (950000, 1000000)
    assert k["cgroup"] == {"version": "hybrid", "docker_rt_runtime_us": 950000, "docker_rt_period_us": 1000000}
    assert missing == {}


def test_cgroup_v2_has_no_docker_rt_budget_and_says_why(tmp_path: Path) -> None:
    facts, missing = dis.host_facts(fake_host(tmp_path, cgroup="v2"))
    assert facts["kernel"]["cgroup"] == {"version": "v2", "docker_rt_runtime_us": None, "docker_rt_period_us": None}
    assert "no per-group RT budget" in missing["kernel.cgroup.docker_rt_runtime_us"]


def test_an_empty_root_gives_nulls_with_reasons_not_an_exception(tmp_path: Path) -> None:
    facts, missing = dis.host_facts(tmp_path)
    assert facts["cpu"]["model"] is None and facts["cpu"]["governors"] is None and facts["cpu"]["caches"] is None
    assert facts["memory"]["total_kib"] is None and facts["kernel"]["sched_rt_runtime_us"] is None
    assert facts["kernel"]["cgroup"]["version"] is None
    for fact in ("cpu.model", "cpu.governors", "cpu.caches", "cpu.vulnerabilities", "cpu.smt.active",
                 "memory.total_kib", "kernel.release", "kernel.sched_rt_runtime_us", "kernel.cgroup.version"):
        assert missing[fact], fact
    assert "cannot read /proc/cpuinfo" in missing["cpu.model"]


def test_a_damaged_fact_is_null_with_its_reason(tmp_path: Path) -> None:
    root = fake_host(tmp_path)
    (root / "proc/sys/kernel/sched_rt_runtime_us").write_text("lots\n")
    (root / "proc/meminfo").write_text("nothing here\n")
    facts, missing = dis.host_facts(root)
    assert facts["kernel"]["sched_rt_runtime_us"] is None and "'lots'" in missing["kernel.sched_rt_runtime_us"]
    assert facts["memory"]["total_kib"] is None and "MemTotal" in missing["memory.total_kib"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    (r / "device").mkdir(parents=True)
    (r / "device" / "main.c").write_text("int main(void) { return 0; }\n")
    (r / "README.md").write_text("x\n")
    git(r, "init", "-q")
    git(r, "add", ".")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    return r


def test_git_state_clean_then_dirty_docs_then_dirty_c_sources(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD").strip()
    facts, missing = dis.git_facts(repo)
    assert facts == {"commit": head, "dirty": False, "changed_files": 0, "c_sources_dirty": False} and not missing
    (repo / "README.md").write_text("y\n")
    (repo / "new.txt").write_text("untracked\n")
    facts, _ = dis.git_facts(repo)
    assert facts == {"commit": head, "dirty": True, "changed_files": 2, "c_sources_dirty": False}
    (repo / "device" / "main.c").write_text("int main(void) { return 1; }\n")
    assert dis.git_facts(repo)[0]["c_sources_dirty"] is True


def test_no_git_checkout_gives_nulls_with_why(tmp_path: Path) -> None:
    facts, missing = dis.git_facts(tmp_path)
    assert facts == {"commit": None, "dirty": None, "changed_files": None, "c_sources_dirty": None}
    assert "git rev-parse" in missing["git.commit"] and "git status" in missing["git.dirty"]


def test_build_info_labels_are_parsed_and_checked() -> None:
    assert dis.parse_build_info(json.dumps(BUILD)) == (BUILD, None)
    assert "no org.wotbench.build-info label" in (dis.parse_build_info(None)[1] or "")
    assert "not JSON" in (dis.parse_build_info("{")[1] or "")
    assert "keys" in (dis.parse_build_info(json.dumps({"program": "x"}))[1] or "")
    facts, missing = dis.binary_facts({"ge": "sha256:aa", "device": "sha256:bb", "nettools": "sha256:cc"},
                                      {"ge": json.dumps(BUILD), "device": None})
    assert facts["ge"] == {"program": "wotbench-ge", "image_id": "sha256:aa", "build": BUILD}
    assert facts["device"]["build"] is None and "make images" in missing["binaries.device.build"]
    assert "nettools" not in facts


def notes_of(git_state: dict[str, object], build: dict[str, object] | None) -> list[str]:
    return dis.notes(git_state, {"ge": {"program": "wotbench-ge", "image_id": "sha256:aa", "build": build}})


CLEAN = {"commit": COMMIT, "dirty": False, "changed_files": 0, "c_sources_dirty": False}


def test_a_clean_checkout_with_its_own_binaries_has_no_note() -> None:
    assert notes_of(CLEAN, BUILD) == []


def test_the_notes_name_a_dirty_tree_and_binaries_that_differ() -> None:
    dirty = notes_of({**CLEAN, "dirty": True, "changed_files": 3}, BUILD)
    assert len(dirty) == 1 and "uncommitted changes (3 files" in dirty[0] and COMMIT[:12] in dirty[0]
    other = notes_of(CLEAN, {**BUILD, "git_commit": "f" * 40})
    assert other == [f"wotbench-ge (image sha256:aa) was built from commit {'f' * 12}, not the checkout's "
                     f"{COMMIT[:12]}"]
    assert "uncommitted C sources" in notes_of(CLEAN, {**BUILD, "git_dirty": True})[0]
    assert "unknown" in notes_of(CLEAN, None)[0]
    assert "outside a git checkout" in notes_of(CLEAN, {**BUILD, "git_commit": None})[0]


def test_the_whole_object_and_the_report_rows_and_notes(tmp_path: Path, repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    d = dis.disclosure({"ge": "sha256:aa", "device": "sha256:bb"}, {"ge": json.dumps(BUILD), "device": None},
                       root=fake_host(tmp_path / "root"), repo=repo)
    assert set(d) == {"cpu", "memory", "kernel", "git", "binaries", "images", "missing", "notes"}
    assert set(d["missing"]) == {"binaries.device.build"}
    assert len(d["notes"]) == 3            # dirty tree, ge from another commit, device unknown
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1, "disclosure": d}))
    got = read_disclosure(manifest)
    assert disclosure_notes(got) == d["notes"]
    rows = dict(disclosure_rows(got))
    assert rows["CPU governor"] == "performance on 1 CPUs; powersave on 1 CPUs"
    assert rows["SMT"] == "active (control: on)" and rows["memory"] == "7.68 GiB"
    assert "vulnerable: spectre_v1; mitigated: meltdown" in rows["CPU vulnerabilities"]
    assert "L3 Unified 22528K" in rows["CPU caches (cpu0)"]
    assert "-std=c11 -O2 -g" in rows["wotbench-ge"] and "unknown (the image has no" in rows["wotbench-device"]
    assert "hybrid; dockerd's cgroup cpu.rt_runtime_us: 950000 of 1000000 us" == rows["cgroups"]


def test_a_manifest_without_disclosure_shows_nothing(tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"format": 1}))
    assert read_disclosure(manifest) == {} and disclosure_rows({}) == [] and disclosure_notes({}) == []
    manifest.write_text("{damaged")
    assert read_disclosure(manifest) == {} and read_disclosure(None) == {}


def test_the_makefile_embeds_the_dirty_state_of_the_same_paths() -> None:
    m = re.search(r"^BI_PATHS\s*:=\s*(.+)$", (REPO / "Makefile").read_text(), re.M)
    assert m is not None and tuple(m.group(1).split()) == dis.C_SOURCES


def test_the_report_shows_the_disclosure_in_run_metadata_and_its_notes(tmp_path: Path, repo: Path) -> None:
    (repo / "device" / "main.c").write_text("changed\n")
    d = dis.disclosure({"ge": "sha256:aa"}, {"ge": json.dumps(BUILD)}, root=fake_host(tmp_path / "root"), repo=repo)
    run = tmp_path / "run"
    (run / layout.GE).mkdir(parents=True)
    (run / layout.GE / layout.ge_output(0)).write_text("")
    (run / layout.MANIFEST).write_text(json.dumps({"format": 1, "run_id": "r1", "disclosure": d}))
    an = Analysis(run, {"verdict": "valid", "reasons": []})
    assert run_notes(an) == d["notes"] and len(d["notes"]) == 2      # the dirty tree, ge from another commit
    html = "".join(_metadata(an))
    assert "Run metadata" in html and "CPU governor" in html and "performance on 1 CPUs" in html
    assert "Intel(R) Xeon(R) Gold 6130" in html and "sched_rt_runtime_us 950000" in html
