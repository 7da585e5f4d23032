"""A run's spec.yaml (``RunSpec.yaml()``) reloads, from inside the run
folder, to the same spec objects: every experiment at every scale, and
specs whose distributions read files relative to the spec's folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from wotbench import spec
from wotbench.spec.distributions import Empirical, Mmpp2

REPO = Path(__file__).resolve().parents[2]
EXPERIMENTS = [*sorted((REPO / "experiments").glob("*.yaml")),
               REPO / "experiments" / "tests" / "capacity-fast.yaml"]


def _saved(rs: spec.RunSpec, run_dir: Path) -> Path:
    run_dir.mkdir(parents=True)
    (run_dir / "spec.yaml").write_text(rs.yaml())
    return run_dir / "spec.yaml"


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.stem)
def test_every_test_of_every_experiment_round_trips(path, tmp_path, monkeypatch):
    experiment = spec.load(path)[0].experiment
    assert experiment is not None
    scales = experiment.scales
    for scale in scales:
        for i, rs in enumerate(spec.load(path, scale)):
            run_dir = tmp_path / scale / str(i)
            _saved(rs, run_dir)
            monkeypatch.chdir(run_dir)
            saved = spec.load_saved("spec.yaml")
            assert saved == rs.spec, f"{path.name} {scale} {rs.label}"
            assert saved.workload == rs.spec.workload and saved.validity == rs.spec.validity


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    values = np.random.default_rng(0).exponential(2000, 500).round() + 1
    (folder / "rits.csv").write_text("\n".join(str(int(v)) for v in values) + "\n")
    (folder / "svc.csv").write_text("us\n" + "\n".join(str(int(v) % 900 + 100) for v in values) + "\n")
    p = folder / "exp.yaml"
    p.write_text(text)
    return p


EMPIRICAL = """\
devices:
  - count: 2
    rit: empirical:rits.csv
    service: empirical:./svc.csv
  - name: bursty
    count: 1
    rit: mmpp2:on=empirical:rits.csv,off=exp:10ms,t_on=50ms,t_off=200ms
    service: det:1ms
phases: {measure: 10s}
sweep: {key: 'devices[1].service', values: ['det:1ms', 'empirical:svc.csv']}
"""


def test_relative_files_round_trip_from_another_folder(tmp_path, monkeypatch):
    _write(tmp_path / "specs", EMPIRICAL)
    monkeypatch.chdir(tmp_path)
    runs = spec.load(Path("specs") / "exp.yaml")                  # a relative spec path, too
    assert len(runs) == 2
    for i, rs in enumerate(runs):
        saved_at = _saved(rs, tmp_path / "results" / f"run-{i}")
        text = saved_at.read_text()
        assert "empirical:rits.csv" not in text and f"empirical:{tmp_path / 'specs' / 'rits.csv'}" in text
        monkeypatch.chdir(saved_at.parent)
        saved = spec.load_saved("spec.yaml")
        assert saved == rs.spec and saved.name == "exp"        # the name the spec file gave it
        monkeypatch.chdir(tmp_path)
    g = runs[1].spec.groups
    rit0, rit1 = g[0].rit, g[1].rit
    assert isinstance(rit0, Empirical) and isinstance(rit1, Mmpp2), (rit0, rit1)
    assert rit0.path == tmp_path / "specs" / "rits.csv"
    svc0, svc1 = g[0].service, g[1].service
    assert svc0 is not None and svc1 is not None
    assert svc1.kind == "empirical" and rit1.on.kind == "empirical"
    assert svc0.mean_us() == pytest.approx(np.mean(
        [int(v) for v in (tmp_path / "specs" / "svc.csv").read_text().split()[1:]]))


def test_equal_means_equal_everywhere_that_matters(tmp_path):
    (rs,) = spec.load(REPO / "experiments" / "quickstart.yaml")
    other = rs.with_value(("devices", 0, "threads"), 3, ("devices", 0, "threads"))
    assert other.spec != rs.spec and other.spec.workload == rs.spec.workload
    assert dataclasses.replace(rs.spec, validity=spec.Thresholds(min_requests=1)) != rs.spec
    saved = spec.load_saved(_saved(other, tmp_path / "r"))
    assert saved == other.spec and saved.groups[0].threads == 3


def test_a_tests_spec_is_the_harness_view_and_has_the_workload():
    (rs,) = spec.load(REPO / "experiments" / "quickstart.yaml")
    s = rs.spec
    assert s.workload is not None
    assert [g.workload for g in s.groups] == list(s.workload.groups)
    g = s.groups[0]
    assert (g.rit, g.service, g.methods, g.payload_bytes, g.resources) == (
        s.workload.groups[0].rit, s.workload.groups[0].service, s.workload.groups[0].methods,
        s.workload.groups[0].payload_bytes, s.workload.groups[0].resources)
    assert g.resource_mean_us == pytest.approx(g.resource_service_us.mean())
    assert s.sweep is None and s.sweep_axes == () and s.capacity is None and s.scales == ()
