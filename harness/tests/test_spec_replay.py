"""``workload.replay`` in a spec (wotbench.spec.replayspec): a derived folder
checked when the spec is built, a capture file found; the groups give names
and counts only; every bad value one line naming file, line and key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench import UserError
from wotbench.execution import estimate
from wotbench.execution.phases import plan_for
from wotbench.spec import load, load_saved
from wotbench.tracegen.tests.derived import write_derived

SpecFile = Callable[..., Path]

SPEC = """
name: r
workload:
  seed: 1
  replay:
    from: {src}
    {replay}
devices:
  - name: field
    count: {count}
    {group}
phases: {{warmup: 1s, measure: 8s, cooldown: 1s}}
{extra}
"""


def _load(spec_file: SpecFile, src: str = "derived/", replay: str = "devices: 2", count: int = 4,
          group: str = "", extra: str = "") -> Path:
    return spec_file(SPEC.format(src=src, replay=replay, count=count, group=group, extra=extra))


def _err(path: Path) -> UserError:
    with pytest.raises(UserError) as ei:
        load(path)
    return ei.value


def test_a_derived_folder(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    spec = load(_load(spec_file, replay="devices: 2\n    rate: 2.5\n    service: empirical"))[0].spec
    wl = spec.workload
    assert wl is not None and wl.replay is not None
    rp = wl.replay
    assert (rp.path, rp.is_capture, rp.devices, rp.rate, rp.service) == (tmp_path / "derived", False, 2, 2.5,
                                                                         "empirical")
    assert rp.captured_devices == 2 and wl.n_devices == 4 and spec.groups[0].service is None
    # 5 requests over 250 us, 2 copies at 2.5 times the rate
    assert wl.aggregate_rate_per_us() == pytest.approx(5 / 250 * 2.5 * 2)
    assert wl.duration_us == 10_000_000
    assert rp.render().startswith(f"replay: {tmp_path / 'derived'} (a derived folder: 2 captured devices, 5 requests")


def test_a_capture_file_is_found_not_read(spec_file: SpecFile, tmp_path: Path) -> None:
    (tmp_path / "gw.pcapng").write_bytes(b"checked when the test is prepared")
    spec = load(_load(spec_file, src="gw.pcapng", count=3, replay="map: [0, 1, 1]"))[0].spec
    wl = spec.workload
    assert wl is not None and wl.replay is not None
    assert wl.replay.is_capture and wl.replay.source is None and wl.replay.map == (0, 1, 1)
    assert wl.aggregate_rate_per_us() == 0.0 and "derived when the test is prepared" in wl.replay.render()
    text = estimate.estimate(spec, plan_for(spec, [0, 1]), None).render()   # the plan: when, not "0 req/s"
    assert "load: known once the capture is derived (when the test is prepared" in text
    assert "device cores: known once" in text and "req/s" not in text


@pytest.mark.parametrize(("kw", "line", "field", "said"), [
    ({"count": 3}, 7, "devices", "sum to 3, but the replay emulates replay.devices 2 x 2 captured devices = 4"),
    ({"replay": "map: [0, 2]", "count": 2}, None, "workload.replay.map", "captured device 2, but the capture has 2"),
    ({"replay": "devices: 2\n    map: [0]"}, 7, "workload.replay.map", "either devices"),
    ({"replay": "rate: 0"}, 6, "workload.replay.rate", "positive number"),
    ({"replay": "service: mean"}, 6, "workload.replay.service", "mean"),
    ({"group": "rit: exp:1s"}, 10, "devices[0].rit", "not with workload.replay"),
    ({"group": "service: exp:1ms"}, 10, "devices[0].service", "not with workload.replay"),
    ({"src": "nowhere/"}, 5, "workload.replay.from", "no such folder or capture file"),
    ({"extra": "capacity: {vary: count, range: [1, 4], objective: {p95: 10ms}}"}, 12, "capacity", "capacity"),
])
def test_bad_replays(spec_file: SpecFile, tmp_path: Path, kw: dict[str, object], line: int | None, field: str,
                     said: str) -> None:
    write_derived(tmp_path / "derived")
    e = _err(_load(spec_file, **kw))  # type: ignore[arg-type]
    assert e.field == field and said in e.what, str(e)
    assert str(e.file).endswith("exp.yaml") and (line is None or e.line == line), str(e)


def test_a_synthetic_workload_is_not_a_derived_folder(spec_file: SpecFile, tmp_path: Path) -> None:
    from wotbench.spec import GroupWorkload, WorkloadSpec
    from wotbench.spec.distributions import parse_distribution
    from wotbench.tracegen import generate

    ms = parse_distribution("exp:1ms", "service")
    generate(WorkloadSpec((GroupWorkload("g", 2, ms, rit=ms),), duration_us=10_000), tmp_path / "derived")
    e = _err(_load(spec_file))
    assert e.field == "workload.replay.from" and "no capture.json" in e.what and e.line == 5


def test_requests_are_refused(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    p = spec_file(SPEC.format(src="derived/", replay="devices: 2", count=4, group="", extra="")
                  .replace("  seed: 1\n", "  seed: 1\n  requests: 100\n").replace("phases:", "#"))
    e = _err(p)
    assert e.field == "workload.requests" and "not a request count" in e.what


def test_the_saved_spec_finds_the_folder(spec_file: SpecFile, tmp_path: Path) -> None:
    write_derived(tmp_path / "derived")
    rs = load(_load(spec_file))[0]
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "spec.yaml").write_text(rs.yaml())
    saved = load_saved(tmp_path / "run" / "spec.yaml")
    assert saved.workload is not None and saved.workload.replay is not None
    assert saved.workload.replay.path == tmp_path / "derived"
    assert saved.workload == rs.spec.workload


def test_the_estimate_of_a_busy_replay(spec_file: SpecFile, tmp_path: Path) -> None:
    """A busy group's demand takes the capture's mean service time (a replayed group has no distribution)."""
    from wotbench.execution import estimate

    write_derived(tmp_path / "derived")
    spec = load(_load(spec_file, group="mode: busy"))[0].spec
    assert spec.workload is not None and spec.workload.replay is not None
    rate = spec.workload.aggregate_rate_per_us() * 1e6
    base = estimate._device_demand(spec, 5) - rate * estimate.DEVICE_CPU_US_PER_REQ / 1e6
    assert base == pytest.approx(rate * 1300 / 3 / 1e6 + 5 * estimate.IDLE_CPU_PER_CONTAINER)
