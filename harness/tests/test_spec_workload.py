"""The workload keys of a spec (wotbench.spec), validated with file:line:field errors."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from wotbench import UserError
from wotbench.spec import WorkloadSpec

Load = Callable[[str], WorkloadSpec]

QUICKSTART = """
name: quickstart
workload:
  seed: 7
  duration: 60s
devices:
  - name: sensors
    count: 10
    rit: exp:100ms
    service: exp:5ms
    methods: {GET: 0.9, PUT: 0.1}
    payload_bytes: 16
    resources: 32
    mode: sleep
    threads: 4
    queue: 128
    cpus: 0.5
    memory: 32m
    impairment: {loss: 1%, delay: 10ms}
  - name: actuators
    count: 2
    rit: det:1s
    service: uniform:1ms,3ms
gateway: {instances: 1, type: con, timeout: 5s}
cd: {enabled: true, rit: 2s, service: auto, calibration: 10s}
placement: {affinity: true, reserve: [0]}
repetitions: 1
"""


def test_quickstart(load_spec: Load) -> None:
    s = load_spec(QUICKSTART)
    assert s.seed == 7 and s.duration_us == 60_000_000 and s.requests is None
    assert [g.name for g in s.groups] == ["sensors", "actuators"] and s.n_devices == 12
    g = s.groups[0]
    assert [m for m, _ in g.methods] == ["GET", "PUT"]
    assert [w for _, w in g.methods] == [0.9, pytest.approx(0.1)]
    assert g.payload_bytes == 16 and g.resources == 32
    assert s.cd_rit_us == 2_000_000 and s.cd_service_us is None and s.cd_calibration_us == 10_000_000
    assert list(s.group_of_device()) == [0] * 10 + [1] * 2
    # CD service "auto": devices' mean service time weighted by request rate.
    w = [10 / 100e3, 2 / 1e6]
    want = (w[0] * s.groups[0].resource_mean_us + w[1] * s.groups[1].resource_mean_us) / sum(w)
    assert s.cd_service_effective_us() == round(want)


def test_phases_give_the_length(load_spec: Load) -> None:
    s = load_spec("""
        devices: [{count: 1, rit: exp:1s, service: det:1ms}]
        phases: {warmup: 5s, measure: 60s, cooldown: 2s}
    """)
    assert s.duration_us == 67_000_000 and s.seed == 1 and s.groups[0].name == "group0"


def test_requests_and_gateway_scope(load_spec: Load) -> None:
    s = load_spec("""
        workload: {requests: 1000, rit_scope: gateway, rit: exp:300us}
        devices: [{count: 10, service: exp:5ms}]
    """)
    assert s.requests == 1000 and s.rit is not None and s.rit.mean_us() == 300
    assert s.aggregate_rate_per_us() == pytest.approx(1 / 300)


def _error(load_spec: Load, text: str) -> UserError:
    with pytest.raises(UserError) as ei:
        load_spec(text)
    return ei.value


@pytest.mark.parametrize("text,line,field,needle", [
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: expo:5ms
     """, 5, "devices[0].service", "unknown distribution 'expo'"),
    ("""
     workload: {duration: 10}
     devices: [{count: 1, rit: exp:1s, service: det:1ms}]
     """, 1, "workload.duration", "has no unit"),
    ("""
     workload:
       duration: 10s
     devices:
       - count: 0
         rit: exp:1s
         service: det:1ms
     """, 4, "devices[0].count", "at least 1"),
    ("""
     workload: {duration: 10s}
     devices: []
     """, 2, "devices", "zero devices"),
    ("""
     workload: {duration: 10s}
     """, 1, "devices", "missing 'devices'"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:-5ms
         service: det:1ms
     """, 4, "devices[0].rit", "must not be negative"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
         colour: red
     """, 6, "devices[0].colour", "unknown key"),
    ("""
     workload: {duration: 10s, speed: 3}
     devices: [{count: 1, rit: exp:1s, service: det:1ms}]
     """, 1, "workload.speed", "unknown key"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         service: det:1ms
     """, 3, "devices[0].rit", "missing rit"),
    ("""
     workload: {duration: 10s, rit_scope: gateway}
     devices:
       - count: 1
         service: det:1ms
     """, 1, "workload.rit", "needs workload.rit"),
    ("""
     workload: {duration: 10s, rit_scope: gateway, rit: exp:1ms}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
     """, 4, "devices[0].rit", "set once"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
         methods: {GET: 1, FETCH: 1}
     """, 6, "devices[0].methods.FETCH", "unknown method"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
         methods: {GET: 0}
     """, 6, "devices[0].methods", "share > 0"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
         payload_bytes: 5000
     """, 6, "devices[0].payload_bytes", "at most 1024"),
    ("""
     workload: {duration: 10s, requests: 5}
     devices: [{count: 1, rit: exp:1s, service: det:1ms}]
     """, 1, "workload.requests", "not both"),
    ("""
     workload: {duration: 10s}
     devices:
       - {count: 1, rit: exp:1s, service: det:1ms, name: a}
       - {count: 1, rit: exp:1s, service: det:1ms, name: a}
     """, 4, "devices[1].name", "used twice"),
    ("""
     workload: {duration: 10s}
     devices: [{count: 1, rit: exp:1s, service: "pareto:mean=100s,alpha=1.01"}]
     """, 2, "devices[0].service", "limit"),
    ("""
     workload: {duration: 10s}
     devices:
       - count: 1
         rit: exp:1s
         service: det:1ms
         payload_bytes: 2KB
     """, 6, "devices[0].payload_bytes", "at most 1024"),
    ("""
     workload: {duration: 10s}
     devices:
       - rit: exp:1s
         service: det:1ms
     """, 3, "devices[0].count", "missing"),
    ("""
     workload: {duration: 10s}
     devices: [{count: 1, rit: exp:1s, service: det:1ms}]
     phases: {measure: 20s}
     """, 1, "workload.duration", "differs from phases"),
    ("""
     workload: {duration: 10s}
     devices: [{count: 1, rit: exp:1s, service: det:1ms}]
     cd: {rit: 1}
     """, 3, "cd.rit", "has no unit"),
])
def test_errors_point_at_file_line_and_field(load_spec: Load, text: str, line: int, field: str,
                                             needle: str) -> None:
    err = _error(load_spec, text)
    assert err.file is not None and str(err.file).endswith("exp.yaml")
    assert (err.line, err.field) == (line, field), str(err)
    assert needle in err.what, str(err)
    # One line, in the shared format.
    assert "\n" not in str(err) and str(err).startswith(f"{err.file}:{line}: {field}: ")


def test_spec_must_be_a_mapping(load_spec: Load) -> None:
    assert "must be a mapping" in _error(load_spec, "- 1\n- 2\n").what
