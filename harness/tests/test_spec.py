"""Spec validation: every bad value is one UserError naming file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from wotbench import UserError, spec

REPO = Path(__file__).resolve().parents[2]

BASE = """\
name: t
workload: {seed: 1}
devices:
  - name: a
    count: 4
    rit: exp:100ms
    service: exp:5ms
    mode: sleep
    threads: 2
    memory: 48m
    cpus: 0.5
gateway: {instances: 1, type: con, timeout: 2s}
cd: {enabled: true, rit: 500ms, calibration: 3s}
placement: {affinity: false, reserve: [0]}
phases: {warmup: 1s, measure: 10s, cooldown: 1s}
"""


def load(spec_file, text):
    return spec.load(spec_file(text))


def err(spec_file, text) -> UserError:
    with pytest.raises(UserError) as ei:
        load(spec_file, text)
    return ei.value


def test_quickstart_is_valid():
    runs = spec.load(REPO / "experiments" / "quickstart.yaml")
    assert len(runs) == 1
    hs = runs[0].spec
    assert hs.device_count == 10 and hs.groups[0].mode == "sleep"
    assert hs.cd.enabled and hs.phases is not None and hs.phases.measure_us == 60_000_000


def test_values_are_converted(spec_file):
    hs = load(spec_file, BASE)[0].spec
    g = hs.groups[0]
    assert (g.count, g.threads, g.memory_bytes, g.nano_cpus) == (4, 2, 48 << 20, 500_000_000)
    assert hs.gateway.timeout_us == 2_000_000 and hs.cd.calibration_us == 3_000_000
    assert hs.placement == spec.Placement(affinity=False, reserve=(0,))
    assert hs.phases.windows() == {"warmup": [0, 1_000_000], "measure": [1_000_000, 11_000_000],
                                   "cooldown": [11_000_000, 12_000_000]}


@pytest.mark.parametrize("old,new,field,line", [
    ("mode: sleep", "mode: sleepy", "devices[0].mode", 8),
    ("threads: 2", "threads: 0", "devices[0].threads", 9),
    ("memory: 48m", "memory: lots", "devices[0].memory", 10),
    ("memory: 48m", "memory: 1m", "devices[0].memory", 10),
    ("cpus: 0.5", "cpus: fast", "devices[0].cpus", 11),
    ("type: con", "type: tcp", "gateway.type", 12),
    ("timeout: 2s", "timeout: 2", "gateway.timeout", 12),
    ("instances: 1", "instances: 9", "gateway.instances", 12),
    ("enabled: true", "enabled: yes please", "cd.enabled", 13),
    ("reserve: [0]", "reserve: 0", "placement.reserve", 14),
    ("reserve: [0]", "reserve: [0, 0]", "placement.reserve", 14),
    ("measure: 10s", "measure: 0s", "phases.measure", 15),
    ("    cpus: 0.5\n", "    cpus: 0.5\n    colour: red\n", "devices[0].colour", 12),
    ("name: t\n", "name: t\nplacment: {}\n", "placment", 2),
])
def test_bad_value_names_key_and_line(spec_file, old, new, field, line):
    assert old in BASE
    e = err(spec_file, BASE.replace(old, new, 1))
    assert e.field == field and e.line == line and str(e.file).endswith("exp.yaml")
    assert str(e).startswith(f"{e.file}:{line}: {field}: ")


def test_impairment_values(spec_file):
    text = BASE.replace(
        "    cpus: 0.5\n", "    cpus: 0.5\n    impairment: {loss: 2.5%, delay: 10ms, jitter: 1ms, rate: 1mbit}\n")
    imp = load(spec_file, text)[0].spec.groups[0].impairment
    assert imp == spec.Impairment(loss=0.025, delay_us=10_000, jitter_us=1_000, rate_bps=1_000_000)
    assert imp.needs_netem


@pytest.mark.parametrize("imp,field", [
    ("{loss: 120%}", "devices[0].impairment.loss"),
    ("{jitter: 1ms}", "devices[0].impairment.jitter"),
    ("{rate: fast}", "devices[0].impairment.rate"),
    ("{rate: 1kbit}", "devices[0].impairment.rate"),
    ("{rate: 200gbit}", "devices[0].impairment.rate"),
    ("{los: 1%}", "devices[0].impairment.los"),
])
def test_bad_impairment(spec_file, imp, field):
    e = err(spec_file, BASE.replace("    cpus: 0.5\n", f"    cpus: 0.5\n    impairment: {imp}\n"))
    assert e.field == field and e.line == 12


def test_workload_keys_are_checked_with_the_rest(spec_file):
    e = err(spec_file, BASE.replace("service: exp:5ms", "service: expo:5ms"))
    assert e.field == "devices[0].service" and e.line == 7


def test_validity_is_checked_with_the_rest(spec_file):
    e = err(spec_file, BASE + "validity: {rate_tolerance: lots}\n")
    assert e.field == "validity.rate_tolerance" and e.line == 16
    e = err(spec_file, BASE + "validity: {no_such_limit: 1}\n")
    assert e.field == "validity.no_such_limit"


def test_report_options(spec_file):
    """report.drift: auto by default, always where asked; nothing in a name
    decides it (a spec named soak without the key is auto)."""
    assert load(spec_file, BASE)[0].spec.report.drift == "auto"
    assert load(spec_file, BASE.replace("name: t", "name: soak"))[0].spec.report.drift == "auto"
    assert load(spec_file, BASE + "report: {drift: always}\n")[0].spec.report.drift == "always"
    assert spec.load(REPO / "experiments" / "soak.yaml", scale="ci")[0].spec.report.drift == "always"
    e = err(spec_file, BASE + "report: {drift: sometimes}\n")
    assert (e.field, e.line) == ("report.drift", 16) and e.what.startswith("expected one of auto, always")
    e = err(spec_file, BASE + "report: {timeline: no}\n")
    assert e.field == "report.timeline"


def test_sweep_makes_one_run_per_value(spec_file):
    runs = load(spec_file, BASE + "sweep: {key: 'devices[0].count', values: [1, 5, 10]}\n")
    assert [r.spec.device_count for r in runs] == [1, 5, 10]
    assert [r.label for r in runs] == ["devices[0].count=1", "devices[0].count=5",
                                       "devices[0].count=10"]
    assert "sweep" not in runs[0].doc and "count: 5" in runs[1].yaml()


def test_sweep_times_repetitions(spec_file):
    runs = load(spec_file, BASE + "repetitions: 2\nsweep: {key: gateway.type, values: [con, non]}\n")
    assert [(r.spec.gateway.type, r.repetition) for r in runs] == [
        ("con", 1), ("con", 2), ("non", 1), ("non", 2)]


def test_bad_sweep_value_points_at_the_value(spec_file):
    e = err(spec_file, BASE + "sweep:\n  key: devices[0].mode\n  values:\n    - sleep\n    - dozing\n")
    assert e.field == "devices[0].mode" and e.line == 20


@pytest.mark.parametrize("sweep,field", [
    ("{key: 'devices[3].count', values: [1]}", "sweep.values[0]"),
    ("{key: 'devices[0]..count', values: [1]}", "sweep.key"),
    ("{key: 'devices[0].count', values: []}", "sweep.values"),
    ("{key: repetitions, values: [1, 2]}", "sweep.key"),
])
def test_bad_sweep(spec_file, sweep, field):
    e = err(spec_file, BASE + f"sweep: {sweep}\n")
    assert e.field == field


def test_yaml_syntax_error_has_a_line(spec_file):
    e = err(spec_file, BASE + "gateway: {type: con\n")
    assert e.line is not None and "YAML" in e.what


def test_empty_and_missing_devices(spec_file):
    assert err(spec_file, "name: x\n").field == "devices"


def test_a_swept_key_needs_no_valid_value_in_the_body(spec_file):
    text = BASE.replace("    rit: exp:100ms\n", "") + "sweep: {key: 'devices[0].rit', values: [exp:10ms, det:20ms]}\n"
    runs = load(spec_file, text)
    assert [r.spec.groups[0].rit.text for r in runs] == ["exp:10ms", "det:20ms"]
    assert runs[0].experiment.sweep.key == "devices[0].rit" and runs[0].spec.sweep is None
    e = err(spec_file, text.replace("det:20ms", "det:20"))
    assert e.field == "devices[0].rit" and e.line == 15 and "has no unit" in e.what


def test_unknown_key_suggests_the_close_one(spec_file):
    e = err(spec_file, BASE.replace("    rit: exp:100ms\n", "    rti: exp:100ms\n"))
    assert e.field == "devices[0].rti" and e.line == 6
    assert e.what.startswith("unknown key: did you mean 'rit'? (allowed: ")
    e = err(spec_file, BASE + "validity: {require_monitr: true}\n")
    assert "did you mean 'require_monitor'?" in e.what
    e = err(spec_file, BASE.replace("name: t\n", "name: t\ncolour: red\n"))  # nothing close ('cluster'?): no guess
    assert e.field == "colour" and e.what.startswith("unknown key (allowed: ")


def test_a_misindented_spec_names_line_column_and_the_fix(spec_file, capsys, monkeypatch):
    import io
    import sys

    from wotbench.commands.main import main

    text = BASE.replace("    count: 4\n", "     count: 4\n")          # one space too many
    e = err(spec_file, text)
    assert e.line == 5 and "(line 5, column 11)" in e.what and "indent this line" in e.what
    assert e.what.startswith("invalid YAML: ")
    # In a log or a pipe: the one line, no text of the spec.
    assert main(["plan", str(spec_file(text))]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: ") and ":5: invalid YAML: " in line and "count: 4" not in line

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    # On a terminal: the line, then only the offending source line and a caret under its column.
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["plan", str(spec_file(text))]) == 2
    out = tty.getvalue().splitlines()
    assert out[0] == line and out[1:] == ["    5 |      count: 4", "      |           ^"]
