"""The pre-flight budget (harness/spec/budget.py, issue W2 5/5): small specs that
ask for more than the host has are one-line errors with exit 2, from `plan`
and from `run` before anything is generated or started, in bounded memory."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wotbench.base.errors import UserError
from wotbench.spec import budget, load

BASE = """\
name: b
workload: {seed: 1, rit_scope: gateway, rit: exp:10ms}
devices: [{name: d, count: 2, service: exp:1ms}]
placement: {affinity: true, reserve: [0]}
phases: {warmup: 1s, measure: 30s}
"""
HOST = budget.Host(memory_bytes=24 << 30, threads_max=190_000, pid_max=32_768)


def spec(tmp_path: Path, old: str = "", new: str = "") -> Path:
    p = tmp_path / "b.yaml"
    p.write_text(BASE.replace(old, new) if old else BASE)
    return p


def the_test(path: Path):
    runs = load(path)
    return runs[0].spec


def test_cost_of_a_small_spec(tmp_path):
    hs = the_test(spec(tmp_path))
    c = budget.check(hs, tmp_path, HOST)
    # 100 requests/s for 31 s, and the CD pair's 1 per 100 ms (the default cd.rit) over that and its calibration
    cd = (31e6 + hs.workload.cd_calibration_us) / 100e3
    assert c.requests == pytest.approx(3100 + cd, rel=0.01)
    assert c.disk_bytes == c.requests * budget.BYTES_PER_REQUEST + 2 * budget.BYTES_PER_DEVICE
    assert c.containers == 3 and c.threads == 2 * (4 + budget.THREADS_PER_CONTAINER)


@pytest.mark.parametrize("old,new,field,what", [
    ("rit: exp:10ms", "rit: exp:1ns", "workload.rit", "requests in one test"),
    ("measure: 30s", "measure: 1000000h", "workload.rit", "requests in one test"),
    ("count: 2,", "count: 100000,", "devices[0].count", "threads"),
    ("service: exp:1ms}", "service: exp:1ms, memory: 99999g}", "devices[0].memory", "more than this host's"),
])
def test_over_budget_names_the_field(tmp_path, old, new, field, what):
    with pytest.raises(UserError, match=what) as ei:
        budget.check(the_test(spec(tmp_path, old, new)), tmp_path, HOST)
    assert ei.value.field == field


def test_disk_for_trace_and_results_is_checked_where_results_go(tmp_path):
    need = 2_000_000_000 * budget.BYTES_PER_REQUEST          # the most requests a test may have
    if shutil.disk_usage(tmp_path).free > need:
        pytest.skip("this disk holds even the largest test")
    hs = the_test(spec(tmp_path, "rit: exp:10ms", "rit: exp:16ns"))     # ~1.94e9 requests in 31 s
    with pytest.raises(UserError, match=r"of disk for trace and results, but .* free") as ei:
        budget.check(hs, tmp_path / "results", HOST)
    assert ei.value.field == "workload.rit"


@pytest.mark.parametrize("old,new", [
    ("rit: exp:10ms", "rit: exp:1ns"),
    ("measure: 30s", "measure: 1000000h"),
    ("count: 2,", "count: 100000,"),
    ("service: exp:1ms}", "service: exp:1ms, memory: 99999g}"),
])
def test_plan_refuses_in_one_line_in_bounded_memory(tmp_path, old, new):
    path = spec(tmp_path, old, new)
    code = textwrap.dedent("""\
        import resource, subprocess, sys
        p = subprocess.run([sys.executable, '-m', 'wotbench.commands.main', 'plan', sys.argv[1]],
                           capture_output=True, text=True)
        print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
        sys.stderr.write(p.stderr)
        """)
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    rc, rss_kb = map(int, r.stdout.split())
    lines = r.stderr.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"error: {path}:"), r.stderr
    assert rss_kb < 300 * 1024          # it grew to 8-12 GB before


def test_run_refuses_before_making_anything(tmp_path):
    path = spec(tmp_path, "rit: exp:10ms", "rit: exp:1ns")
    results = tmp_path / "results"
    r = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "run", str(path), "--results", str(results)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "requests in one test" in r.stderr
    assert not results.exists()                    # nothing made


def test_format_size():
    assert budget.format_size(512) == "512 B" and budget.format_size(1.5 * 2**30) == "1.5 GiB"


def test_cpus_above_the_hosts_cores_is_refused_at_plan(tmp_path):
    """Issue 23: `cpus: 1000` on a 2-core host passed plan; Docker refused
    it at container create, half-way through the run."""
    hs = the_test(spec(tmp_path, "service: exp:1ms}", "service: exp:1ms, cpus: 3}"))
    with pytest.raises(UserError, match="3 CPUs per container, more than this host's 2 cores") as ei:
        budget.check(hs, tmp_path, budget.Host(24 << 30, 190_000, 32_768, cores=2))
    assert ei.value.field == "devices[0].cpus"
    budget.check(hs, tmp_path, budget.Host(24 << 30, 190_000, 32_768, cores=4))


def test_tracegens_memory_is_held_against_the_hosts(tmp_path):
    """The trace is built in memory: 2^30 requests need ~48 GiB, refused on a 24 GiB host."""
    hs = the_test(spec(tmp_path, "rit: exp:10ms", "rit: exp:29ns"))          # ~1.07e9 requests
    small = budget.Host(memory_bytes=24 << 30, threads_max=190_000, pid_max=32_768)
    with pytest.raises(UserError, match="tracegen would need about .* of memory") as ei:
        budget.check(hs, None, small)
    assert ei.value.field == "workload.rit"


def test_tracegen_flags_get_the_same_budget(tmp_path):
    from wotbench.commands.main import build_parser
    from wotbench.tracegen.tracegen_cmd import spec_from_args

    def wl(*argv: str):
        return spec_from_args(build_parser().parse_args(
            ["tracegen", "--rit", "exp:1s", "--service", "exp:1ms", "--out", str(tmp_path / "o"), *argv]))

    with pytest.raises(UserError, match="in one group") as ei:
        budget.check_trace(wl("--devices", "1000000000", "--duration", "1s"), tmp_path, HOST)
    assert ei.value.field == "devices[0].count"
    with pytest.raises(UserError, match="requests in one test") as ei:
        budget.check_trace(wl("--devices", "2", "--requests", "1000000000000"), tmp_path, HOST)
    assert ei.value.field == "workload.requests"
    c = budget.check_trace(wl("--devices", "2", "--requests", "1000"), tmp_path, HOST)
    # 1000 requests at 2/s span 500 s, and the CD trace's 1/s (the default cd.rit) over them
    assert c.requests == pytest.approx(1500) and c.devices == 2


def test_tests_are_counted_before_any_is_built():
    budget.check_tests(budget.MAX_TESTS, "x")
    with pytest.raises(UserError, match="1,000,000 tests: more than the 1,000"):
        budget.check_tests(10**6, "100 x 100 x 100 values")
