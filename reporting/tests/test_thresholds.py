"""Validity thresholds: one documented place, overridable from the spec."""

from __future__ import annotations

import pytest

from wotbench import UserError, _yamlsrc as yamlsrc
from wotbench.reporting import Thresholds, parse_validity


def test_defaults_when_no_mapping():
    assert parse_validity(None) == Thresholds()
    assert parse_validity({}) == Thresholds()


def test_overrides_with_units():
    th = parse_validity({"rate_tolerance": "2%", "min_measure": "2m", "max_error_rate": 0.001,
                         "cd_alpha": 0.05, "cd_window": "30s", "require_monitor": False, "min_requests": 10})
    assert th.rate_tolerance == pytest.approx(0.02)
    assert th.min_measure_us == 120e6
    assert th.max_error_rate == pytest.approx(0.001)
    assert th.cd_alpha == 0.05 and th.cd_window_us == 30e6
    assert th.require_monitor is False and th.min_requests == 10


@pytest.mark.parametrize("mapping, field, what", [
    ({"rate_tol": "5%"}, "validity.rate_tol", "unknown key"),
    ({"min_measure": 30}, "validity.min_measure", "duration"),
    ({"rate_tolerance": "150%"}, "validity.rate_tolerance", "outside"),
    ({"cd_alpha": 1.5}, "validity.cd_alpha", "between 0 and 1"),
    ({"require_cd": "yes"}, "validity.require_cd", "true or false"),
    ({"min_requests": 1.5}, "validity.min_requests", "integer"),
])
def test_bad_values_name_the_field(mapping, field, what):
    with pytest.raises(UserError) as err:
        parse_validity(mapping)
    assert err.value.field == field
    assert what in err.value.what


def test_errors_point_at_the_spec_line():
    src = yamlsrc.loads("name: x\nvalidity:\n  rate_tolerance: 5%\n  min_measure: soon\n", "exp.yaml")
    with pytest.raises(UserError) as err:
        parse_validity(src.data["validity"], src)
    assert str(err.value).startswith("exp.yaml:4: validity.min_measure: ")


def test_thresholds_are_validated_when_built():
    with pytest.raises(UserError, match="at most 100%"):
        Thresholds(rit_ks_max=2.0)
    with pytest.raises(UserError, match="non-negative"):
        Thresholds(min_measure_us=-1.0)
