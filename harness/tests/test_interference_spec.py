"""The ``interference`` spec section: valid forms, every error one line
naming the key (exit 2 through `wotbench plan`), and the plan-time
resolution of cores (a layout of fake CPU lists, no Docker)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from wotbench.execution.phases import layout_of, render_schedule, schedule
from wotbench.execution.placement import make_plan
from wotbench.spec import Interference, UserError, loads

BASE = """\
name: t
devices:
  - {name: s, count: 2, rit: exp:100ms, service: exp:5ms}
phases: {warmup: 2s, measure: 20s, cooldown: 1s}
"""


def spec(extra: str, base: str = BASE):
    return loads(base + textwrap.dedent(extra), "exp.yaml")[0].spec


def error(extra: str, base: str = BASE) -> UserError:
    with pytest.raises(UserError) as exc:
        spec(extra, base)
    return exc.value


def test_defaults_and_forms() -> None:
    s = spec("""\
        interference:
          - kind: cpu
          - {name: mem, kind: membw, threads: 2, cores: [1, 0], start: 5s, end: 15s, buffer: 128m}
          - {kind: membw, cores: cd, buffer: auto, start: 1s}
        """)
    a, b, c = s.interference
    assert a == Interference("cpu-0", "cpu", 1, "devices", 0, 20_000_000, None, None, 0)
    assert (b.name, b.threads, b.cores, b.start_us, b.end_us, b.buffer) == ("mem", 2, (0, 1), 5_000_000,
                                                                           15_000_000, 128 << 20)
    assert (c.name, c.cores, c.buffer, c.index) == ("membw-2", "cd", None, 2)
    assert spec("").interference == ()


@pytest.mark.parametrize("extra, line, field, what", [
    ("interference: {kind: cpu}", 5, "interference", "expected a list"),
    ("interference:\n  - {kind: gpu}", 6, "interference[0].kind", "expected one of cpu, membw"),
    ("interference:\n  - {threads: 2}", 6, "interference[0]", "missing key 'kind'"),
    ("interference:\n  - {kind: cpu, start: 10s, end: 10s}", 6, "interference[0].start", "must be before end"),
    ("interference:\n  - {kind: cpu, start: 25s}", 6, "interference[0].start", "must be before end"),
    ("interference:\n  - {kind: cpu, end: 21s}", 6, "interference[0].end", "past the end of the measurement"),
    ("interference:\n  - {kind: cpu, start: 10}", 6, "interference[0].start", ""),
    ("interference:\n  - {kind: cpu, threads: 0}", 6, "interference[0].threads", ""),
    ("interference:\n  - {kind: cpu, cores: gpu}", 6, "interference[0].cores", "expected one of devices"),
    ("interference:\n  - {kind: cpu, cores: [1, 1]}", 6, "interference[0].cores", "listed twice"),
    ("interference:\n  - {kind: cpu, buffer: 1m}", 6, "interference[0].buffer", "only for kind membw"),
    ("interference:\n  - {kind: membw, buffer: 10}", 6, "interference[0].buffer", "at least 4KB"),
    ("interference:\n  - {kind: cpu, colour: red}", 6, "interference[0].colour", "unknown key"),
    ("interference:\n  - {kind: cpu}\n  - {kind: cpu, name: cpu-0}", 7, "interference[1].name", "used twice"),
])
def test_errors_name_the_key(extra: str, line: int, field: str, what: str) -> None:
    err = error(extra + "\n")
    assert (err.file, err.line, err.field) == ("exp.yaml", line, field)
    assert what in err.what and "\n" not in str(err)


def test_needs_phases() -> None:
    base = "name: t\nworkload: {requests: 100}\ndevices:\n  - {name: s, count: 2, rit: exp:100ms, service: exp:5ms}\n"
    err = error("interference:\n  - {kind: cpu}\n", base)
    assert err.field == "interference" and "phases" in err.what


def _layout(hs, cores=(0, 1, 2, 3)):
    plan = make_plan(cores, reserve=hs.placement.reserve, ge_instances=1, cd_enabled=hs.cd.enabled,
                     devices=hs.device_count, affinity=hs.placement.affinity)
    return layout_of(plan, hs.device_count, 1, hs.placement.reserve)


def test_schedule_resolves_cores_and_instants(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (cache / "index3").mkdir(parents=True)
    (cache / "index3" / "level").write_text("3\n")
    (cache / "index3" / "size").write_text("260M\n")
    hs = spec("""\
        interference:
          - {kind: cpu, threads: 2, start: 5s, end: 15s}
          - {kind: membw, cores: cd}
          - {kind: cpu, cores: ge, name: g}
          - {kind: cpu, cores: [3], name: three}
        """)
    lay = _layout(hs)
    eps = schedule(hs, lay, cache)
    plan = lay.parts[0].plan
    assert eps[0].cores == plan.device_cores and (eps[0].planned_start_us, eps[0].planned_end_us) == (7e6, 17e6)
    assert eps[1].buffer == 520 << 20 and eps[1].memory_bytes == 2 * (260 << 20) + (64 << 20)
    assert eps[2].cores == plan.ge_cores and eps[3].cores == (3,)
    assert eps[0].argv(100, 200) == ("--kind", "cpu", "--threads", "2", "--start-at", "100", "--end-at", "200")
    text = render_schedule(eps)
    assert "cpu-0: 2 cpu thread(s) on cpuset" in text and "7 s to 17 s" in text


def test_small_llc_gives_the_minimum_buffer(tmp_path: Path) -> None:
    hs = spec("interference:\n  - {kind: membw}\n")
    assert schedule(hs, _layout(hs), tmp_path / "none")[0].buffer == 64 << 20


@pytest.mark.parametrize("extra, field, what", [
    ("interference:\n  - {kind: cpu, cores: [7]}\n", "interference[0].cores", "not offered by this host"),
    ("interference:\n  - {kind: cpu, node: other}\n", "interference[0].node", "not in a swarm"),
])
def test_plan_time_errors(extra: str, field: str, what: str) -> None:
    hs = spec(extra)
    with pytest.raises(UserError) as exc:
        schedule(hs, _layout(hs))
    assert exc.value.field == field and what in exc.value.what


def test_cli_plan_exit_2_and_schedule(spec_file, wotbench_cli) -> None:
    bad = spec_file(BASE + "interference:\n  - {kind: cpu, cores: [4000]}\n")
    r = wotbench_cli("plan", str(bad), "--cores", "0-1")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [f"error: {bad}:6: interference[0].cores: core(s) 4000 not offered "
                                             "by this host (offered: 0-1)"]
    bad = spec_file(BASE + "interference:\n  - {kind: cpu, start: 1s, end: 30s}\n", "b.yaml")
    r = wotbench_cli("plan", str(bad))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"{bad}:6: interference[0].end: past the end" in r.stderr
    ok = spec_file(BASE + "interference:\n  - {kind: cpu, threads: 2, start: 5s, end: 15s}\n", "ok.yaml")
    r = wotbench_cli("plan", str(ok), "--cores", "0-1")
    assert r.returncode == 0, r.stderr
    assert "cpu-0: 2 cpu thread(s) on cpuset 0, 7 s to 17 s" in r.stdout
