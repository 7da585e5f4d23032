"""One unit grammar (wotbench.base.units): a value means the same in every spec
field and command-line flag that takes it."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import yaml

from wotbench import UserError, spec
from wotbench.base import units
from wotbench.commands.main import build_parser
from wotbench.tracegen.tracegen_cmd import spec_from_args

BASE: dict[str, Any] = {
    "name": "u",
    "workload": {"seed": 1},
    "devices": [{"name": "a", "count": 2, "rit": "exp:100ms", "service": "exp:5ms",
                 "impairment": {"delay": "10ms", "jitter": "1ms"}}],
    "gateway": {"timeout": "2s", "ack_timeout": "500ms"},
    "cd": {"rit": "1s", "service": "5ms", "calibration": "3s"},
    "phases": {"warmup": "1s", "measure": "10s", "cooldown": "1s"},
    "validity": {"min_measure": "1s"},
    "capacity": {"vary": "devices[0].count", "start": 1, "max": 4, "objective": {"p95": "50ms"}},
}

T = TypeVar("T")


def present(value: T | None) -> T:
    """A section or value the spec of these tests always has."""
    assert value is not None
    return value


#: A spec's value of a duration (None: a field the spec left out, which fails the test).
Get = Callable[[spec.Spec], float | None]

#: Every duration of a spec: where it is written, and every object that holds it.
DURATIONS: list[tuple[str, tuple[Any, ...], list[Get]]] = [
    ("workload.duration", ("workload", "duration"),
     [lambda s: present(s.workload).duration_us, lambda s: present(s.phases).measure_us]),
    ("gateway.timeout", ("gateway", "timeout"), [lambda s: s.gateway.timeout_us]),
    ("gateway.ack_timeout", ("gateway", "ack_timeout"), [lambda s: s.gateway.ack_timeout_us]),
    ("cd.rit", ("cd", "rit"), [lambda s: s.cd.rit_us, lambda s: present(s.workload).cd_rit_us]),
    ("cd.service", ("cd", "service"), [lambda s: s.cd.service_us, lambda s: present(s.workload).cd_service_us]),
    ("cd.calibration", ("cd", "calibration"),
     [lambda s: s.cd.calibration_us, lambda s: present(s.workload).cd_calibration_us]),
    ("phases.warmup", ("phases", "warmup"), [lambda s: present(s.phases).warmup_us]),
    ("phases.measure", ("phases", "measure"), [lambda s: present(s.phases).measure_us]),
    ("phases.cooldown", ("phases", "cooldown"), [lambda s: present(s.phases).cooldown_us]),
    ("impairment.delay", ("devices", 0, "impairment", "delay"), [lambda s: present(s.groups[0].impairment).delay_us]),
    ("impairment.jitter", ("devices", 0, "impairment", "jitter"),
     [lambda s: present(s.groups[0].impairment).jitter_us]),
    ("validity.min_measure", ("validity", "min_measure"), [lambda s: s.validity.min_measure_us]),
    ("validity.rit_slack", ("validity", "rit_slack"), [lambda s: s.validity.rit_slack_us]),
    ("validity.send_lag_p99_max", ("validity", "send_lag_p99_max"),
     [lambda s: s.validity.send_lag_p99_max_us]),
    ("validity.late_send", ("validity", "late_send"), [lambda s: s.validity.late_send_us]),
    ("validity.cd_window", ("validity", "cd_window"), [lambda s: s.validity.cd_window_us]),
    ("capacity.objective", ("capacity", "objective", "p95"), [lambda s: present(s.capacity).objectives[0].limit_us]),
    ("devices.rit", ("devices", 0, "rit"), [lambda s: present(s.groups[0].rit).mean_us()]),
    ("devices.service", ("devices", 0, "service"), [lambda s: present(s.groups[0].service).mean_us()]),
    ("workload.rit", ("workload", "rit"), [lambda s: present(present(s.workload).rit).mean_us()]),
]
#: Distributions take the duration as a parameter.
_DIST = {"devices.rit", "devices.service", "workload.rit"}

TWO_MS = ["2ms", "2000us", "2000µs", "2000μs", "2e3us", "2000000ns", "0.002s", "2MS", ".002s", "2.ms"]
TWO_US = ["2us", "2µs", "2μs", "0.002ms", "2000ns", "2e0us", "2US", "2E+0us"]
#: Not in the grammar (docs/spec.md): a space, other digits, separators, signs, other bases.
NOT_TWO_MS = ["2 ms", " 2ms", "2ms ", "２ms", "٢ms", "2_000us", "+2ms", "0x2ms", "2,0ms", "nanms", "infms"]


def _spec_with(name: str, path: tuple[Any, ...], text: str) -> spec.Spec:
    doc = copy.deepcopy(BASE)
    if name == "workload.duration":
        del doc["phases"]
    if name == "workload.rit":
        doc["workload"]["rit_scope"] = "gateway"
        del doc["devices"][0]["rit"]
        del doc["capacity"]                    # a rate capacity needs per-device RITs; count does not
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = f"det:{text}" if name in _DIST else text
    (rs,) = spec.loads(yaml.safe_dump(doc, allow_unicode=True), "u.yaml")
    assert rs.experiment is not None
    return rs.experiment


@pytest.mark.parametrize("name,path,getters", DURATIONS, ids=[d[0] for d in DURATIONS])
@pytest.mark.parametrize("text", TWO_MS)
def test_every_duration_field_reads_every_spelling_the_same(name, path, getters, text):
    s = _spec_with(name, path, text)
    assert [g(s) for g in getters] == [2000] * len(getters)


@pytest.mark.parametrize("name,path,getters", [d for d in DURATIONS if d[0] != "gateway.timeout"],
                         ids=[d[0] for d in DURATIONS if d[0] != "gateway.timeout"])
@pytest.mark.parametrize("text", TWO_US)
def test_2us_means_2us_everywhere(name, path, getters, text):
    s = _spec_with(name, path, text)
    assert [g(s) for g in getters] == [2] * len(getters)


def test_gateway_timeout_2us_is_refused_for_its_range_not_its_spelling():
    with pytest.raises(UserError, match="at least 1ms") as ei:
        _spec_with("gateway.timeout", ("gateway", "timeout"), "2µs")
    assert ei.value.field == "gateway.timeout" and ei.value.file == "u.yaml"


@pytest.mark.parametrize("name,path,getters", DURATIONS, ids=[d[0] for d in DURATIONS])
@pytest.mark.parametrize("text,needle", [("2", "has no unit"), ("2weeks", "unknown unit"),
                                         ("-2ms", "must not be negative"), ("soon", "invalid"),
                                         ("2 ms", "with no space"), ("２ms", "ASCII digits")])
def test_every_duration_field_refuses_the_same_way(name, path, getters, text, needle):
    with pytest.raises(UserError) as ei:
        _spec_with(name, path, text)
    assert needle in ei.value.what and ei.value.file == "u.yaml" and ei.value.line is not None


@pytest.mark.parametrize("text", ["2ms", "2000µs", "2e3us", "0.002s"])
def test_tracegen_flags_read_durations_as_the_spec_does(text):
    args = build_parser().parse_args(
        ["tracegen", "--devices", "1", "--duration", text, "--rit", f"det:{text}", "--service", f"det:{text}",
         "--cd-rit", text, "--cd-service", text, "--cd-calibration", text, "--out", "unused"])
    w = spec_from_args(args)
    assert (w.duration_us, w.cd_rit_us, w.cd_service_us, w.cd_calibration_us) == (2000,) * 4
    assert present(w.groups[0].rit).mean_us() == present(w.groups[0].service).mean_us() == 2000


def test_sizes_fractions_rates_counts():
    assert units.parse_size("64m") == units.parse_size("64MB") == units.parse_size("65536k") == 64 << 20
    assert units.parse_size("1GB") == 1 << 30 and units.parse_size(4096) == units.parse_size("4096B") == 4096
    assert units.parse_fraction("1%") == 0.01 and units.parse_fraction(0.2) == 0.2
    assert units.parse_fraction("12.5%") == 0.125
    assert units.parse_rate("1mbit") == 1_000_000 and units.parse_rate("1kbps") == 8000
    assert units.parse_count("12") == units.parse_count(12.0) == 12
    assert units.parse_duration("1.5s") == 1_500_000 and units.parse_duration("2m") == 120_000_000
    assert units.parse_duration("500ns") == 0 and units.parse_time_us("500ns") == 0.5
    assert units.parse_duration("1h") == 3_600_000_000


@pytest.mark.parametrize("fn,bad,needle", [
    (units.parse_duration, "5", "has no unit (use ns, us, ms, s, m or h)"),
    (units.parse_duration, True, "expected a duration"),
    (units.parse_duration, "1e20s", "too large"),
    (units.parse_size, "x", "invalid size"),
    (units.parse_size, "3parsecs", "unknown unit"),
    (units.parse_size, "3 MB", "with no space"),
    (units.parse_fraction, "12.5 %", "with no space"),
    (units.parse_rate, "1 mbit", "with no space"),
    (units.parse_count, "1_000", "expected an integer"),
    (units.parse_count, "010", "expected an integer"),
    (units.parse_count, "１０", "expected an integer"),
    (units.parse_count, " 10", "expected an integer"),
    (units.parse_number, "nan", "is not a number"),
    (units.parse_number, "1_0", "is not a number"),
    (units.parse_number, "١", "is not a number"),
    (units.parse_number, "1e999", "not a finite number"),
    (units.parse_fraction, "101%", "outside 0%..100%"),
    (units.parse_fraction, "5ms", "expected a fraction"),
    (units.parse_rate, "0mbit", "must be positive"),
    (units.parse_rate, "1", "has no unit"),
    (units.parse_count, "1.5", "expected an integer"),
])
def test_bad_values_name_their_field(fn, bad, needle):
    with pytest.raises(UserError) as ei:
        fn(bad, "x.y")
    assert ei.value.field == "x.y" and needle in ei.value.what


def test_size_fields_share_the_grammar():
    doc = copy.deepcopy(BASE)
    doc["devices"][0].update(memory="0.0625GB", payload_bytes="1KB", methods={"PUT": 1})
    g = spec.loads(yaml.safe_dump(doc), "u.yaml")[0].spec.groups[0]
    assert g.memory_bytes == 64 << 20 and g.payload_bytes == 1024


#: (field, path, text); a distribution's own syntax may space its parts (`det: 2ms`).
_NOT_IN_GRAMMAR = [(n, p, t) for n, p, _ in DURATIONS for t in NOT_TWO_MS if n not in _DIST or t == t.strip()]


@pytest.mark.parametrize("name,path,text", _NOT_IN_GRAMMAR, ids=[f"{n}-{t}" for n, _, t in _NOT_IN_GRAMMAR])
def test_every_duration_field_refuses_what_the_grammar_does_not_hold(name, path, text):
    """Issue 23: `１０s`, `١٠s`, `10 s` were read as 10 s; the grammar is ASCII
    digits, '.', an exponent and a unit right after them, nothing else."""
    with pytest.raises(UserError, match="invalid") as ei:
        _spec_with(name, path, text)
    assert ei.value.file == "u.yaml" and ei.value.line is not None


@pytest.mark.parametrize("text", ["0x2", "1_000", "010", "1:30", "0b10", "0o7", ".inf", ".nan", "١٠", "+4", "４"])
def test_yaml_numbers_are_decimal_ascii_only(text):
    """YAML 1.1 reads `0x2`, `1_000`, `010` (8), `1:30` (90) as numbers;
    the spec's loader keeps them strings, and a count refuses them."""
    doc = yaml.safe_dump(BASE).replace("count: 2", f"count: '{text}'").replace(f"'{text}'", text)
    with pytest.raises(UserError, match="expected an integer") as ei:
        spec.loads(doc, "u.yaml")
    assert ei.value.field == "devices[0].count" and ei.value.line is not None
