"""Validity thresholds: one documented place (wotbench.spec), overridable from the spec."""

from __future__ import annotations

import dataclasses

import pytest

from wotbench import UserError
from wotbench.reporting import Thresholds as ReportingThresholds
from wotbench.spec import Thresholds, loads

BASE = """\
name: x
devices: [{count: 1, rit: exp:1s, service: det:1ms}]
phases: {measure: 10s}
"""


def validity(text: str) -> Thresholds:
    return loads(BASE + text, "exp.yaml")[0].spec.validity


def test_defaults_when_no_mapping():
    assert validity("") == Thresholds()
    assert validity("validity: {}\n") == Thresholds()
    assert validity("validity:\n") == Thresholds()
    assert ReportingThresholds is Thresholds                 # the verdict takes the spec's


def test_overrides_with_units():
    th = validity("validity: {rate_tolerance: 2%, min_measure: 2m, max_error_rate: 0.001, cd_alpha: 0.05,\n"
                  "           cd_window: 30s, require_monitor: false, min_requests: 10}\n")
    assert th.rate_tolerance == pytest.approx(0.02)
    assert th.min_measure_us == 120e6
    assert th.max_error_rate == pytest.approx(0.001)
    assert th.cd_alpha == 0.05 and th.cd_window_us == 30e6
    assert th.require_monitor is False and th.min_requests == 10


def test_sender_and_overload_limits():
    th = Thresholds()
    assert (th.late_send_us, th.max_late_sends, th.max_send_errors, th.allow_overload) == (
        1000, 0.01, 0, False)
    th = validity("validity: {late_send: 250us, max_late_sends: 0.5%, max_send_errors: 3,\n"
                  "           allow_overload: true}\n")
    assert th.late_send_us == 250 and th.max_late_sends == pytest.approx(0.005)
    assert th.max_send_errors == 3 and th.allow_overload is True
    assert validity("validity: {late_send: 2µs}\n").late_send_us == 2.0


@pytest.mark.parametrize("mapping, field, what", [
    ("{rate_tol: 5%}", "validity.rate_tol", "unknown key"),
    ("{min_measure: 30}", "validity.min_measure", "duration"),
    ("{rate_tolerance: 150%}", "validity.rate_tolerance", "outside"),
    ("{cd_alpha: 1.5}", "validity.cd_alpha", "between 0 and 1"),
    ("{require_cd: 'yes'}", "validity.require_cd", "true or false"),
    ("{min_requests: 1.5}", "validity.min_requests", "integer"),
    ("{late_send: 0ms}", "validity.late_send", "positive"),
    ("{late_send: 5}", "validity.late_send", "no unit"),
    ("{max_late_sends: 2}", "validity.max_late_sends", "outside"),
    ("{max_send_errors: -1}", "validity.max_send_errors", "at least 0"),
    ("{max_send_errors: 0.5}", "validity.max_send_errors", "integer"),
    ("{allow_overload: 1}", "validity.allow_overload", "true or false"),
])
def test_bad_values_name_the_file_line_and_field(mapping, field, what):
    with pytest.raises(UserError) as err:
        validity(f"validity: {mapping}\n")
    assert err.value.field == field and err.value.line == 4 and err.value.file == "exp.yaml"
    assert what in err.value.what


def test_errors_point_at_the_spec_line():
    with pytest.raises(UserError) as err:
        validity("validity:\n  rate_tolerance: 5%\n  min_measure: soon\n")
    assert str(err.value).startswith("exp.yaml:6: validity.min_measure: ")


def test_thresholds_are_validated_when_built():
    with pytest.raises(UserError, match="at most 100%"):
        Thresholds(rit_ks_max=2.0)
    with pytest.raises(UserError, match="non-negative"):
        Thresholds(min_measure_us=-1.0)
    with pytest.raises(UserError, match="at most 100%"):
        Thresholds(max_late_sends=1.5)
    with pytest.raises(UserError, match="true or false"):
        Thresholds(allow_overload=0)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="non-negative"):
        Thresholds(max_send_errors=-1)


def test_every_threshold_is_documented():
    from wotbench.spec import _validity

    for f in dataclasses.fields(Thresholds):
        assert f"``{_validity.spec_key(f.name)}``" in _validity.__doc__, f.name
