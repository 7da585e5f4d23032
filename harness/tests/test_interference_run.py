"""End to end (Docker): a short run with a 2-thread CPU hog on the devices'
cores for the second half of the measurement phase. The hog container is
hardened like the devices and pinned to their cores, it started and
stopped at its planned instants (a correctness tolerance of the absolute
start of 0.5 s, not a performance claim), interference.json and
summary.json list the interval, and nothing of the run is left behind.
The detector's verdict is printed, not asserted (its own tests judge it)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from wotbench.base import rundir as layout
from wotbench.engine.dockerenv import LABEL_ROLE, LABEL_RUN
from wotbench.execution.placement import cpuset
from wotbench.execution.runner import run

#: The observed start and end must be this close to the planned instants.
TOLERANCE_US = 500_000


class HogWatcher(threading.Thread):
    """Inspects the run's hog container while it exists (teardown removes it)."""

    def __init__(self, client: Any) -> None:
        super().__init__(daemon=True)
        self.client, self.done = client, threading.Event()
        self.attrs: dict[str, Any] | None = None

    def run(self) -> None:
        while not self.done.is_set() and self.attrs is None:
            for ct in self.client.containers.list(all=True, filters={"label": f"{LABEL_ROLE}=hog"}):
                self.attrs = self.client.api.inspect_container(ct.id)
                return
            time.sleep(0.2)


@pytest.mark.docker
def test_cpu_hog_episode(docker_client: Any, make_spec, spec_file, tmp_path: Path) -> None:
    spec = spec_file(make_spec(count=3, measure="12s", extra="""\
        interference:
          - {name: hog, kind: cpu, threads: 2, cores: devices, start: 6s, end: 12s}
        """))
    watcher = HogWatcher(docker_client)
    watcher.start()
    try:
        (run_dir,) = run(spec, results=tmp_path / "results", progress=False)
    finally:
        watcher.done.set()
        watcher.join(timeout=5)
    rd = layout.RunDir(run_dir)
    run_id = rd.name

    # Hardened like the devices, on the devices' cores, no network.
    a = watcher.attrs
    assert a is not None, "no hog container was seen"
    hc = a["HostConfig"]
    assert hc["CapDrop"] == ["ALL"] and hc["ReadonlyRootfs"] is True
    assert "no-new-privileges" in hc["SecurityOpt"]
    assert 0 < hc["Memory"] <= 64 << 20 and 0 < hc["PidsLimit"] <= 64
    assert hc["NetworkMode"] == "none" and a["Config"]["User"] == "65534:65534"
    assert a["Config"]["Labels"][LABEL_RUN] == run_id
    manifest = json.loads(rd.manifest.read_text())
    devices = cpuset(manifest["placement"]["device_cores"])
    assert hc["CpusetCpus"] == devices

    # The episode on t0, as planned (warm-up 1 s + 6 s .. 1 s + 12 s).
    (e,) = json.loads(rd.interference.read_text())
    assert (e["name"], e["kind"], e["threads"], e["cores"]) == ("hog", "cpu", 2, devices)
    assert (e["planned_start_us"], e["planned_end_us"]) == (7_000_000, 13_000_000)
    assert e["exit_code"] == 0 and e["reason"] is None and e["loops"] > 0
    assert abs(e["start_us"] - e["planned_start_us"]) <= TOLERANCE_US, e
    assert abs(e["end_us"] - e["planned_end_us"]) <= TOLERANCE_US, e
    phases = json.loads(rd.phases.read_text())
    assert phases["measure"][0] <= e["start_us"] < e["end_us"] <= phases["measure"][1] + TOLERANCE_US

    summary = json.loads(rd.summary.read_text())
    assert [(x["name"], x["start_us"]) for x in summary["interference"]] == [("hog", e["start_us"])]
    assert manifest["interference"][0]["name"] == "hog"
    c = (summary.get("cd") or {}).get("contention") or {}
    print(f"hog observed {e['start_us'] / 1e6:.6f} s .. {e['end_us'] / 1e6:.6f} s (planned 7 .. 13 s); "
          f"verdict {summary['verdict']}; contention {c.get('status')} onset {c.get('onset_us')}")

    # Nothing of the run is left.
    flt = {"label": f"{LABEL_RUN}={run_id}"}
    assert docker_client.containers.list(all=True, filters=flt) == []
    assert docker_client.networks.list(filters=flt) == []
