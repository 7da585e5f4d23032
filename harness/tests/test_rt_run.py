"""Real-time GEs (wotbench.host.rt): the budget split, the decision of
gateway.scheduler on a fake cpu cgroup tree (fallback notes, `fifo` refused
at plan time), and a real run whose GE and CD-GE ran SCHED_FIFO inside
their budgets with the plan recorded in the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wotbench.base.errors import UserError
from wotbench.execution import rtplan
from wotbench.execution.placement import Plan, make_plan
from wotbench.host import rt


def fake_cgroup(root: Path, runtime: int, period: int = 1_000_000, held: tuple[int, ...] = ()) -> Path:
    d = root / "docker"
    d.mkdir(parents=True)
    (d / "cpu.rt_runtime_us").write_text(f"{runtime}\n")
    (d / "cpu.rt_period_us").write_text(f"{period}\n")
    for i, r in enumerate(held):
        c = d / f"c{i}"
        c.mkdir()
        (c / "cpu.rt_runtime_us").write_text(f"{r}\n")
        (c / "cpu.rt_period_us").write_text(f"{period}\n")
    return root


def plan(n_ge: int = 1) -> Plan:
    return make_plan([0, 1], reserve=[0], ge_instances=n_ge, cd_enabled=True, devices=4, affinity=True)


def decide(scheduler: str, avail: rt.RtAvailable) -> Plan:
    """``gateway.scheduler`` decided for one host's plan: one host's plan."""
    p = rtplan.decide(plan(), scheduler, avail=avail)
    assert isinstance(p, Plan), p
    return p


def test_available_subtracts_what_other_containers_hold(tmp_path):
    a = rt.rt_available(fake_cgroup(tmp_path, 950_000, held=(100_000, 50_000)), uid=0)
    assert a.ok and (a.free_us, a.period_us) == (800_000, 1_000_000)


@pytest.mark.parametrize("runtime, held, uid, why", [
    (0, (), 0, "--cpu-rt-runtime"),
    (950_000, (500_000, 450_000), 0, "hold Docker's whole RT budget"),
    (950_000, (), 1000, "uid 1000"),
])
def test_unavailable_says_why(tmp_path, runtime, held, uid, why):
    a = rt.rt_available(fake_cgroup(tmp_path, runtime, held=held), uid=uid)
    assert not a.ok and why in a.why


def test_no_rt_group_scheduling(tmp_path):
    a = rt.rt_available(tmp_path, uid=0)
    assert not a.ok and "RT group scheduling" in a.why


def test_split_cd_ge_small_share_rest_equal():
    ges, cd = rt.split_budget(rt.RtAvailable(1_000_000, 950_000), 2, True)
    assert cd == rt.RtBudget(50_000, 1_000_000)
    assert [g.arg for g in ges] == ["447500/1000000"] * 2
    assert sum(g.runtime_us for g in ges) + cd.runtime_us <= 950_000
    with pytest.raises(ValueError, match="under 20%"):
        rt.split_budget(rt.RtAvailable(1_000_000, 300_000), 2, True)


def test_decide_auto_fifo_and_fallback(tmp_path):
    avail = rt.rt_available(fake_cgroup(tmp_path / "a", 950_000), uid=0)
    p = decide("auto", avail)
    assert p.scheduler == "fifo" and p.ge_rt_budgets == ("895000/1000000",)
    assert p.cd_ge_rt_budget == "50000/1000000"
    assert "SCHED_FIFO, RT budget 895000/1000000" in p.render()
    assert list(p.to_dict()["ge_rt_budgets"]) == ["895000/1000000"]
    none = rt.rt_available(fake_cgroup(tmp_path / "b", 0), uid=0)
    q = decide("auto", none)
    assert q.scheduler == "normal" and q.ge_rt_budgets == () and q.cd_ge_rt_budget is None
    assert "normal scheduler: dockerd has no RT budget" in q.render()
    with pytest.raises(UserError) as err:
        rtplan.decide(plan(), "fifo", avail=none)
    assert err.value.field == "gateway.scheduler" and "--cpu-rt-runtime" in str(err.value)
    assert decide("normal", avail).scheduler == "normal"


def test_budget_reaches_argv_and_container():
    from wotbench.execution.phases._ge import ge_argv
    from wotbench.spec._sections import Gateway
    argv = ge_argv(Gateway(), trace="t", hosts="h", out="o", summary="s", start_at_us=1, late_us=100,
                   rt_budget="895000/1000000")
    assert argv[-6:] == ["--sched", "fifo", "--rt-prio", "50", "--rt-budget", "895000/1000000"]
    from wotbench.engine import ContainerSpec, DockerBackend
    be = DockerBackend(None, "20261123-000000-t-abcdef")  # type: ignore[arg-type]  # create_args needs no engine
    spec = ContainerSpec("ge-0", "ge", tuple(argv), "1", 1 << 30, 16, rt_budget=rt.RtBudget.parse(argv[-1]))
    args = be.create_args(spec, "0:0")
    assert (args["cpu_rt_runtime"], args["cpu_rt_period"]) == (895_000, 1_000_000)
    assert "cap_add" not in args and args["cap_drop"] == ["ALL"]     # FIFO is given from the host
    plain = be.create_args(ContainerSpec("ge-0", "ge", tuple(argv[:-6]), "1", 1 << 30, 16), "0:0")
    assert "cpu_rt_runtime" not in plain and "cap_add" not in plain


@pytest.mark.docker
def test_run_ge_and_cd_ge_fifo(docker_client, spec_file, make_spec, tmp_path, wotbench_cli, run_objects):
    avail = rt.rt_available()
    if not avail.ok:
        pytest.fail(f"this host gives Docker no RT budget: {avail.why} (.ci/setup.sh configures it)")
    spec = spec_file(make_spec(count=3, measure="4s", name="rt",
                               extra="").replace("gateway: {", "gateway: {scheduler: fifo, instances: 1, "))
    r = wotbench_cli("run", str(spec), "--results", str(tmp_path / "res"), "--no-progress", timeout=400)
    assert r.returncode in (0, 1), r.stderr
    run_dir = Path(r.stdout.strip().splitlines()[-1])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    placement = manifest["placement"]
    assert placement["scheduler"] == "fifo"
    budget = placement["ge_rt_budgets"][0]
    for summary, want in ((run_dir / "ge" / "ge-0.summary.json", budget),
                          (run_dir / "cd" / "cd-ge.summary.json", placement["cd_ge_rt_budget"])):
        s = json.loads(summary.read_text())["sched"]
        assert (s["policy"], s["set_by"], s["priority"]) == ("fifo", "outside", rt.RT_PRIO), s
        assert f"{s['budget_us']}/{s['period_us']}" == want
        assert summary.stat().st_uid == 65534, "a FIFO GE runs unprivileged too (issue W2 5/5)"
    assert run_objects(run_dir.name) == ([], [])


def test_send_lag_check_fails_on_fifo_stalls_and_reports_yields():
    from wotbench.reporting._checks import check_send_lag
    from wotbench.reporting._tables import sched_cell
    from wotbench.spec import Thresholds
    th = Thresholds()
    lag = {"p99": 5.0}
    fifo = {"policy": "fifo", "requested": "fifo", "budget_us": 895000, "period_us": 1000000,
            "yields": 7, "yield_us": 700, "stalls": 0, "stall_max_us": 0, "holds": 0, "hold_max_us": 0}
    ok, why = check_send_lag({"ges": [{"ge": 0, "send_lag_us": lag, "sched": fifo}]}, th)
    assert ok and "GE 0 yielded 7 times" in why
    stalled = dict(fifo, stalls=3, stall_max_us=98_000)
    ok, why = check_send_lag({"ges": [{"ge": 0, "send_lag_us": lag, "sched": stalled}]}, th)
    assert not ok and "GE 0 lost its core 3 time(s) for over 1 ms under SCHED_FIFO, up to 98.0 ms" in why
    # under the normal scheduler a stall is the send lag's business only
    other = dict(stalled, policy="other", error="sched_setscheduler(SCHED_FIFO, 50): Operation not permitted")
    assert check_send_lag({"ges": [{"ge": 0, "send_lag_us": lag, "sched": other}]}, th)[0]
    assert sched_cell(other).startswith("normal (FIFO refused: sched_setscheduler")
    assert sched_cell(fifo) == "FIFO 90% budget, 7 yields, 0 stalls"
