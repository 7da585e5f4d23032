"""The report of a replay (``workload.replay``): its groups have no synthetic
distribution, so the CD node's service time S is the one the CD node echoes
unless ``cd.service`` sets it (a replay's ``auto`` S is of the replayed trace);
the run folder stands alone (its spec.yaml refers to the source's copy in
workload/); the report names the replay; its observations are judged by the
replay's expected.json ``observe``."""

from __future__ import annotations

import hashlib
import html
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench.base.rundir import RunDir
from wotbench.reporting import analyze_run
from wotbench.reporting._analyze import analyze
from wotbench.reporting._multihost import cd_service_us
from wotbench.reporting._render import html_page, markdown, terminal_text
from wotbench.reporting._replayed import REPLAY_RIT_NOTE, replay_sentence
from wotbench.reporting.tests.test_observe_report import _add_observe
from wotbench.spec import load, load_saved
from wotbench.spec.replayspec import KEPT_SOURCE, standalone_yaml
from wotbench.tracegen import generate
from wotbench.tracegen.tests.derived import write_derived

SPEC = """
workload:
  replay: {{from: derived/, devices: 2}}
devices: [{{name: field, count: 4, mode: busy}}]
phases: {{warmup: 1s, measure: 2s, cooldown: 1s}}
cd: {{service: {service}}}
"""


@pytest.mark.parametrize(("service", "want"), [("auto", None), ("2ms", 2000.0)])
def test_cd_service_of_a_replay(tmp_path: Path, service: str, want: float | None) -> None:
    write_derived(tmp_path / "derived")
    (tmp_path / "exp.yaml").write_text(SPEC.format(service=service))
    spec = load(tmp_path / "exp.yaml")[0].spec
    assert cd_service_us(spec) == want


#: Captured device d observes /o for 5 s three times over a 40 s capture (polled every second).
OBSERVED = ([(d, t * 1_000_000 + d, "GET", "/a" if d == 0 else "/b") for d in (0, 1) for t in range(41)]
            + [(d, (2 + 12 * i) * 1_000_000 + 7, "OBS", "/o") for d in (0, 1) for i in range(3)]
            + [(d, (7 + 12 * i) * 1_000_000 + 7, "UNOBS", "/o") for d in (0, 1) for i in range(3)])


REPLAY = """
workload:
  seed: 1
  replay: {from: derived/, devices: 2, rate: 2}
devices: [{name: sensors, count: 4}]
phases: {warmup: 2s, measure: 40s, cooldown: 1s}
cd: {rit: 100ms}
"""


def _replay_run(run: Path, tmp_path: Path, observe_rit: str | None = None) -> str:
    """The synthetic run ``run`` made a replay's: its workload/ gets the replay's expected.json
    and capture.json and the source's copy, its spec.yaml the test's document as a run saves it
    (execution/phases/_preflight.py); then the source is deleted. Returns the source's sha256."""
    write_derived(tmp_path / "derived", OBSERVED, observe_rit=observe_rit)
    sha = hashlib.sha256((tmp_path / "derived" / "trace.csv").read_bytes()).hexdigest()
    (tmp_path / "exp.yaml").write_text(REPLAY)
    rs = load(tmp_path / "exp.yaml")[0]
    assert rs.spec.workload is not None
    generate(rs.spec.workload, tmp_path / "wl")
    for name in ("expected.json", "capture.json", KEPT_SOURCE):
        shutil.move(tmp_path / "wl" / name, RunDir(run).workload / name)
    RunDir(run).spec.write_text(standalone_yaml(rs.doc, f"workload/{KEPT_SOURCE}"))
    shutil.rmtree(tmp_path / "derived")
    shutil.rmtree(tmp_path / "wl")
    return sha


def test_a_replay_run_stands_alone_and_names_the_replay(make_run: Callable[..., Path], tmp_path: Path) -> None:
    """The report (its analysis reloads spec.yaml) of a replay run whose source is gone."""
    run = make_run("run")
    sha = _replay_run(run, tmp_path)
    saved = load_saved(RunDir(run).spec).workload
    assert saved is not None and saved.replay is not None
    assert saved.replay.path == RunDir(run).workload / KEPT_SOURCE       # not the deleted source
    an = analyze(run)
    want = (f"replay of {tmp_path / 'derived'} (derived folder, sha256 {sha[:16]}…): 2 captured devices x 2, "
            "rate x 2, service median, 26 observations (2 cut at the test's edges)")
    text = terminal_text(an)
    assert f"workload: {want}" in text and REPLAY_RIT_NOTE in text
    md = markdown(an, [], None)
    assert f"Workload: {want}." in md and REPLAY_RIT_NOTE in md
    page = html_page(an, [])
    assert f'<p id="replay">Workload: {html.escape(want)}.</p>' in page and html.escape(REPLAY_RIT_NOTE) in page


def test_a_replay_report_names_a_map() -> None:
    rp = {"from": "/x/field.pcap", "capture": True, "sha256": "ab" * 32, "devices": 1, "rate": 0.5,
          "service": "empirical", "map": [1, 1, 0], "captured_devices": 2, "observations": 3,
          "observations_cut": 2, "observations_dropped": 1}
    assert replay_sentence(rp) == ("replay of /x/field.pcap (capture, sha256 abababababababab…): 2 captured devices "
                                   "mapped onto 3 emulated (map [1, 1, 0]), rate x 0.5, service empirical, "
                                   "3 observations (2 cut at the test's edges, 1 dropped)")


@pytest.mark.parametrize(("share", "ok"), [(1.0, True), (0.5, False)])
def test_a_replay_with_observations_is_judged(make_run: Callable[..., Path], tmp_path: Path, share: float,
                                              ok: bool) -> None:
    """The replay's expected.json observe (its observations' live time over det:100ms, + 1
    each): the devices drawing that many events pass, half as many fail; never missing evidence."""
    run = make_run("run")
    _replay_run(run, tmp_path, observe_rit="det:100000")
    exp = json.loads((RunDir(run).workload / "expected.json").read_text())["observe"]
    assert exp["observations"] > 0 and exp["groups"][0]["device_rit"] == "det:100000"
    assert exp["measure_us"] == [2_000_000, 42_000_000] and 0 < exp["expected_events_measure"] < exp["expected_events"]
    # the GE and devices' side of an Observe run (test_observe_report.py), with the events drawn
    expected_json = (RunDir(run).workload / "expected.json").read_text()
    _add_observe(run, events=round(exp["expected_events"] * share), impaired=True)
    (RunDir(run).workload / "expected.json").write_text(expected_json)
    c = next(c for c in analyze_run(run)["checks"] if c["check"] == "observe")
    assert c["ok"] is ok and "missing evidence" not in c["reason"], c["reason"]
    assert ok or "events vs" in c["reason"]
