"""The formatters of wotbench.base.units: a value as a person reads it, with
its unit and never an exponent or a "nan" (the report, ``plan`` and the
budget's messages share them)."""

from __future__ import annotations

import math

import pytest

from wotbench.base import units
from wotbench.spec import budget

NAN = float("nan")


@pytest.mark.parametrize(("us", "text"), [
    (0, "0 µs"), (850, "850 µs"), (12.34, "12.3 µs"), (999.7, "1 ms"), (12_345, "12.3 ms"),
    (4.5e6, "4.5 s"), (30e6, "30 s"), (65e6, "1 min 05 s"), (3599e6, "59 min 59 s"),
    (7380e6, "2 h 03 min"), (-56, "-56 µs"), (NAN, "–"), (None, "–"),
])
def test_fmt_duration_us(us, text):
    assert units.fmt_duration_us(us) == text


@pytest.mark.parametrize(("rate", "text"), [
    (99.4, "99.4 /s"), (0.5, "0.5 /s"), (999.4, "999 /s"), (1234, "1.23 k/s"), (12_345, "12.3 k/s"),
    (1.2e6, "1.2 M/s"), (NAN, "–"),
])
def test_fmt_rate(rate, text):
    assert units.fmt_rate(rate) == text


def test_fmt_rate_names_what_it_counts():
    assert units.fmt_rate(12_345, " req/s") == "12.3 kreq/s"
    assert units.fmt_rate(5, "req/s") == "5 req/s"


@pytest.mark.parametrize(("x", "text"), [
    (3980.0, "3,980"), (0.0789, "0.0789"), (12.345, "12.3"), (1e-7, "0.0000001"), (2.0, "2"),
    (-0.5, "-0.5"), (1.5e9, "1,500,000,000"), (NAN, "–"), (None, "–"), (math.inf, "∞"),
])
def test_fmt_num_has_no_exponent_and_no_nan(x, text):
    assert units.fmt_num(x) == text


def test_fmt_count_and_plural():
    assert units.fmt_count(1234.0) == "1,234" and units.fmt_count(None) == "–"
    assert units.plural(1, "GE") == "1 GE" and units.plural(2, "GE") == "2 GEs"
    assert units.plural(0, "core") == "0 cores" and units.plural(1200, "device") == "1,200 devices"
    assert units.plural(2, "is", "are") == "2 are"


def test_fmt_size_moved_from_the_budget():
    assert units.fmt_size(512) == "512 B" and units.fmt_size(1.5 * 2**30) == "1.5 GiB"
    assert units.fmt_size(1023.9 * 1024) == "1024 KiB"      # never 1.02e+03
    assert budget.format_size is units.fmt_size


def test_fmt_epoch_us_is_a_utc_time_of_day():
    assert units.fmt_epoch_us(1_795_667_448_627_666) == "2026-11-26 04:30:48 UTC"
    assert units.fmt_epoch_us(None) == "–"


@pytest.mark.parametrize("fmt", [units.fmt_num, units.fmt_duration_us, units.fmt_rate])
def test_no_formatter_writes_an_exponent(fmt):
    for x in (1e-9, 3.3e-4, 7.7, 123.456, 9.9999e5, 4.2e7, 1.23e12):
        assert "e" not in fmt(x).replace("µs", "").replace("min", "").replace("req", ""), fmt(x)
