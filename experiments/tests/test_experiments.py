"""The paper's experiments as specs: every spec is valid at every scale, and
the `ci` scale of each runs end to end through `wotbench run` and
`wotbench report` (Docker; bounded: 8-10 s phases, 1-2 tests per spec)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wotbench import spec

EXP = Path(__file__).resolve().parents[1]
REPO = EXP.parent
PAPER = ["ge-bottleneck", "affinity", "contention", "rd-vs-devices", "packet-loss", "heterogeneous"]
ALL = sorted(p.stem for p in EXP.glob("*.yaml"))


def test_every_paper_experiment_has_a_spec():
    assert set(PAPER) <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_spec_is_valid_at_every_scale(name):
    full = spec.load(EXP / f"{name}.yaml")
    experiment = full[0].experiment
    assert experiment is not None
    names = experiment.scales
    assert yaml.safe_load((EXP / f"{name}.yaml").read_text())["name"] == full[0].spec.name == name
    if name != "quickstart":
        assert {"full", "small", "ci"} <= set(names)
    for s in names:
        runs = spec.load(EXP / f"{name}.yaml", s)
        assert runs and all(r.scale == s for r in runs)


def _phases_us(rs: spec.RunSpec) -> int:
    """The length of a test's phases (every experiment's test has them)."""
    assert rs.spec.phases is not None
    return rs.spec.phases.total_us


@pytest.mark.parametrize("name", [n for n in PAPER])
def test_scales_get_smaller(name):
    """The small and ci scales are scale-downs of the full one: no more tests,
    no longer measurement, no more devices per test."""
    by = {s: spec.load(EXP / f"{name}.yaml", s) for s in ("full", "small", "ci")}
    for big, small in (("full", "small"), ("small", "ci")):
        assert len(by[small]) <= len(by[big])
        assert max(_phases_us(r) for r in by[small]) <= max(_phases_us(r) for r in by[big])
        assert max(r.spec.device_count for r in by[small]) <= max(
            r.spec.device_count for r in by[big])
    ci_time = sum(_phases_us(r) + r.spec.cd.calibration_us for r in by["ci"]) / 1e6
    assert ci_time <= 30, f"{name}: ci scale has {ci_time:.0f} s of load"


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wotbench.commands.main", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("name", PAPER)
def test_ci_scale_runs_and_reports(name, docker_client, tmp_path):
    proc = _cli("run", str(EXP / f"{name}.yaml"), "--scale", "ci", "--results", str(tmp_path),
                "--no-progress", timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    dirs = [Path(line) for line in proc.stdout.split()]
    assert len(dirs) == len(spec.load(EXP / f"{name}.yaml", "ci"))
    for d in dirs:
        summary = json.loads((d / "summary.json").read_text())
        manifest = json.loads((d / "manifest.json").read_text())
        assert summary["complete"] and summary["scale"] == "ci" and manifest["scale"] == "ci"
        assert summary["verdict"] in ("valid", "invalid") and summary["measure_counts"]["requests"] > 0
        assert not (d / "INCOMPLETE").exists()
    rep = _cli("report", *map(str, dirs), "-o", str(tmp_path / "report"), timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    for d in dirs:
        assert (d / "report" / "index.html").is_file() and list((d / "report").rglob("*.png"))
    if len(dirs) > 1:        # several runs: also the sweep report (paper Figs. 7-9)
        assert (tmp_path / "report" / "index.html").is_file()
        assert list((tmp_path / "report").rglob("*.png"))
    # Nothing of the runs is left behind.
    left = docker_client.containers.list(all=True, filters={"label": "org.wotbench.run"})
    assert not [c for c in left if any(d.name.endswith(c.labels["org.wotbench.run"]) for d in dirs)]


@pytest.mark.parametrize("cmd", ["run", "plan", "capacity"])
def test_unknown_scale_is_one_error_line_and_exit_2(cmd, tmp_path):
    spec_path = EXP / ("capacity.yaml" if cmd == "capacity" else "contention.yaml")
    proc = _cli(cmd, str(spec_path), "--scale", "huge", *(["--results", str(tmp_path)] if cmd != "plan" else []),
                timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec_path}:")
    assert ": scales: unknown scale 'huge' (the spec has: full, small, ci)" in lines[0]
    assert not list(tmp_path.iterdir())             # nothing written


@pytest.mark.parametrize("scale", ["full", "small", "ci"])
@pytest.mark.parametrize("cores, gateway_core, ge_core", [("0-1", "1", "0"), ("0-7", "7", "1")])
def test_the_gateway_experiment_plans_its_gateway_on_a_core_of_its_own(scale, cores, gateway_core, ge_core):
    proc = _cli("plan", str(EXP / "gateway.yaml"), "--scale", scale, "--cores", cores, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert f"gateway under test: cpuset {gateway_core} (its own)" in proc.stdout
    assert f"GE 0: core {ge_core}," in proc.stdout
    g = spec.load(EXP / "gateway.yaml", scale)[0].spec
    assert g.gateway_under_test is not None and g.gateway_under_test.shipped == "aiocoap"
    assert g.device_count == 20


@pytest.mark.parametrize("scale", ["full", "small", "ci"])
def test_the_congestion_experiment_plans_the_six_strategies_over_four_conditions(scale):
    """experiments/congestion.yaml (docs/congestion.md): every strategy of
    the GE under no impairment, 5 % and 20 % loss and an 8 kbit/s link,
    NSTART unlimited; ci: one test, CoCoA with NSTART 1 at 20 % loss."""
    proc = _cli("plan", str(EXP / "congestion.yaml"), "--scale", scale, "--cores", "0-1", timeout=60)
    assert proc.returncode == 0, proc.stderr
    runs = spec.load(EXP / "congestion.yaml", scale)
    got = {(r.spec.gateway.congestion, r.spec.groups[0].impairment) for r in runs}
    if scale == "ci":
        assert len(runs) == 1 and [(s, i.loss if i else None) for s, i in got] == [("cocoa", 0.2)]
        assert runs[0].spec.gateway.nstart == 1
        return
    assert all(r.spec.gateway.nstart is None for r in runs)
    assert len(runs) == len(got) == 24 and proc.stdout.count("gateway.congestion=") == 24
    assert {s for s, _ in got} == {"rfc7252", "cocoa", "cocoa-strong", "basic-rto", "linux-rto", "peakhopper-rto"}
    imps = {i for _, i in got}
    assert None in imps and {i.loss for i in imps if i} == {0.0, 0.05, 0.2}
    assert {i.rate_bps for i in imps if i and i.rate_bps} == {8000}
    # The rate-limited link is offered more than it carries: ~25 requests/s per device, replies of >= 60 bytes
    # on the wire (12 kbit/s) against 8 kbit/s.
    g = runs[0].spec.groups[0]
    assert g.workload is not None and g.workload.rit is not None
    assert 8 * 60 * 1e6 / g.workload.rit.mean_us() > 8000


def test_observe_plan_sweeps_the_observations():
    """experiments/observe.yaml: loss and latency against the observations per
    device (and NON vs CON); small reaches 1,000 observations, ci is one test."""
    by = {s: spec.load(EXP / "observe.yaml", s) for s in ("full", "small", "ci")}

    def point(r: spec.RunSpec) -> tuple[str, int]:
        g, w = r.spec.groups[0].workload, r.spec.workload
        assert g is not None and g.observe is not None and w is not None
        return g.observe.type, w.observations()

    assert [point(r) for r in by["full"]] == [(t, 20 * k) for t in ("non", "con") for k in (1, 10, 50, 100)]
    assert max(point(r)[1] for r in by["small"]) >= 1000
    (ci,) = by["ci"]
    assert ci.spec.phases is not None and ci.spec.phases.measure_us <= 8_000_000 and ci.spec.device_count <= 2
    assert _phases_us(ci) + ci.spec.cd.calibration_us <= 30_000_000
    w = ci.spec.workload
    assert w is not None and w.notification_rate_per_us() * ci.spec.phases.measure_us >= 1000  # in measure


@pytest.mark.docker
@pytest.mark.slow
def test_observe_ci_runs_and_reports(docker_client, tmp_path):
    """The one Observe run end to end: every observation registered and
    cancelled, notifications received with a latency, the observe check
    judged, the report's Observe section and CDF written."""
    proc = _cli("run", str(EXP / "observe.yaml"), "--scale", "ci", "--results", str(tmp_path), "--no-progress",
                timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (d,) = [Path(line) for line in proc.stdout.split()]
    summary = json.loads((d / "summary.json").read_text())
    o = summary["observe"]
    assert o["observations"] == 20 and (d / "ge" / "notify-0.csv").is_file()
    t = o["total"]
    assert t["received"] > 1000 and t["latency_us"]["n"] > 0 and 0 < t["latency_us"]["p50"] < 50_000
    assert t["device_events"] == pytest.approx(t["expected_events"], rel=0.1)
    ge = o["ges"][0]
    assert ge["registered"] == ge["observations"] == 20 and ge["cancelled"] == 20 and ge["refused"] == 0
    check = next(c for c in summary["checks"] if c["check"] == "observe")
    assert check["ok"], check["reason"]
    rep = _cli("report", str(d), timeout=300)
    assert rep.returncode == 0, rep.stderr[-3000:]
    assert "## Observe" in (d / "report" / "summary.md").read_text()
    assert (d / "report" / "figures" / "observe-cdf.png").is_file()
