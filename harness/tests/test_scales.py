"""Spec scales (`scales:`, `--scale`) and grid sweeps (a list under `sweep:`)."""

from __future__ import annotations

import pytest

from wotbench import UserError, spec

BASE = """\
name: t
workload: {seed: 1}
devices:
  - name: a
    count: 4
    rit: exp:100ms
    service: exp:5ms
gateway: {instances: 1, type: con, timeout: 2s}
phases: {warmup: 1s, measure: 60s, cooldown: 1s}
scales:
  small:
    devices[0].count: 2
    phases: {warmup: 1s, measure: 10s}
  ci:
    devices[0].count: 1
    gateway: null
"""


def load(spec_file, text, scale=None):
    return spec.load(spec_file(text), scale)


def test_full_is_the_body(spec_file):
    for scale in (None, "full"):
        (rs,) = load(spec_file, BASE, scale)
        assert rs.scale == "full" and rs.spec.device_count == 4
        assert rs.spec.phases.measure_us == 60_000_000 and "scales" not in rs.doc


def test_small_overrides_key_paths_and_replaces_mappings_whole(spec_file):
    (rs,) = load(spec_file, BASE, "small")
    assert rs.scale == "small" and rs.spec.device_count == 2
    p = rs.spec.phases
    assert (p.warmup_us, p.measure_us, p.cooldown_us) == (1_000_000, 10_000_000, 0)
    assert "scales" not in rs.yaml() and "count: 2" in rs.yaml()


def test_null_removes_a_key(spec_file):
    (rs,) = load(spec_file, BASE, "ci")
    assert "gateway" not in rs.doc and rs.spec.gateway.timeout_us == 5_000_000


def test_unknown_scale_names_the_key_and_the_choices(spec_file):
    with pytest.raises(UserError) as ei:
        load(spec_file, BASE, "huge")
    e = ei.value
    assert e.field == "scales" and e.line == 10 and "full, small, ci" in e.what


def test_a_scale_without_scales_is_an_error(spec_file):
    text = BASE.split("scales:")[0]
    with pytest.raises(UserError, match="no scale 'small'") as ei:
        load(spec_file, text, "small")
    assert ei.value.field == "scales"
    assert load(spec_file, text, "full")[0].scale == "full"


def test_bad_override_value_points_into_scales(spec_file):
    text = BASE.replace("devices[0].count: 2", "devices[0].count: -2")
    with pytest.raises(UserError) as ei:
        load(spec_file, text, "small")
    assert ei.value.line == 12 and ei.value.field == "devices[0].count"
    # Every scale is checked whichever is run: a bad value in one unused is
    # found at once, naming its scale (the full body itself is fine).
    with pytest.raises(UserError) as ei:
        load(spec_file, text, "full")
    assert ei.value.line == 12 and ei.value.what.endswith("(at scale small)")


@pytest.mark.parametrize("override,what", [
    ("devices[3].count: 2", "devices[3] does not exist"),
    ("'devices[0]..count': 2", "cannot override"),
    ("scales.x: 1", "cannot override"),
    ("nothere.deep: 1", "nothere does not exist"),
])
def test_bad_override_path(spec_file, override, what):
    text = BASE.replace("devices[0].count: 2", override)
    with pytest.raises(UserError, match=what.replace("[", r"\[").replace("]", r"\]")) as ei:
        load(spec_file, text, "small")
    assert ei.value.line == 12


def test_names():
    (rs,) = spec.loads(BASE, "x.yaml")
    assert rs.experiment is not None
    assert rs.experiment.scales == ("full", "small", "ci") and rs.spec.scales == ()


def test_scale_can_add_a_sweep(spec_file):
    text = BASE.replace("    gateway: null\n", "    sweep: {key: gateway.type, values: [con, non]}\n")
    runs = load(spec_file, text, "ci")
    assert [r.spec.gateway.type for r in runs] == ["con", "non"]
    assert all(r.scale == "ci" and r.spec.device_count == 1 for r in runs)


# --- grid sweeps ---------------------------------------------------------------------

GRID = BASE.split("scales:")[0] + """\
sweep:
  - {key: gateway.type, values: [con, non]}
  - {key: 'devices[0].count', values: [1, 2, 3]}
"""


def test_grid_is_every_combination_first_key_slowest(spec_file):
    runs = load(spec_file, GRID)
    got = [(r.spec.gateway.type, r.spec.device_count) for r in runs]
    assert got == [("con", 1), ("con", 2), ("con", 3), ("non", 1), ("non", 2), ("non", 3)]
    assert runs[4].label == "gateway.type=non devices[0].count=2"
    assert runs[4].sweep_value == ("non", 2)


def test_grid_bad_value_points_at_its_line(spec_file):
    text = GRID.replace("values: [1, 2, 3]", "values: [1, -2, 3]")
    with pytest.raises(UserError) as ei:
        load(spec_file, text)
    assert ei.value.line == 12 and ei.value.field == "devices[0].count"


def test_grid_axes_must_not_overlap(spec_file):
    text = GRID.replace("key: gateway.type, values: [con, non]", "key: 'devices[0]', values: [{count: 1}]")
    with pytest.raises(UserError, match="overlaps") as ei:
        load(spec_file, text)
    assert ei.value.field == "sweep[1].key"


def test_empty_grid(spec_file):
    text = BASE.split("scales:")[0] + "sweep: []\n"
    with pytest.raises(UserError) as ei:
        load(spec_file, text)
    assert ei.value.field == "sweep"
