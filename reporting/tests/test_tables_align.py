"""Every table of the reports has one cell per header in every row (a row
one cell longer makes tabulate pad the header on the left, which shifts
every column name in the terminal and in Markdown: the swarm Hosts table
did, issue 27), and its cells read as a person reads them: units, no
exponent, no "nan", no raw field names."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from wotbench.base import rundir as layout
from wotbench.reporting._analyze import Analysis, analyze
from wotbench.reporting._congestion import congestion_table, side_by_side
from wotbench.reporting._gatewaylatency import gateway_latency_table
from wotbench.reporting._injected import interference_table
from wotbench.reporting._notify import observe_table
from wotbench.reporting._render import terminal_text
from wotbench.reporting._tables import (
    HOSTS_NOTE,
    Table,
    cd_blocks,
    cd_table,
    check_table,
    checks_table,
    device_table,
    group_table,
    hosts_table,
    latency_table,
    md_table,
    rate_table,
    rit_table,
    sweep_row,
    sweep_table,
    text_table,
    thresholds_table,
)
from wotbench.reporting._timeline import drift_table, run_timeline, timeline_table
from wotbench.reporting.bench.synth import SwarmSynth, synth_run, synth_swarm_run
from wotbench.reporting.tests.conftest import BASE
from wotbench.reporting.tests.test_congestion import _congestion_run
from wotbench.reporting.tests.test_gatewaysection import _gateway_samples
from wotbench.reporting.tests.test_interference_report import ENTRIES
from wotbench.reporting.tests.test_observe_report import _add_observe

#: Two device groups and a gateway under test: the group and gateway tables.
SPEC = ("name: spec\ndevices: [{name: a, count: 2, rit: exp:20ms, service: det:1ms},\n"
        "          {name: b, count: 2, rit: exp:20ms, service: det:1ms}]\nphases: {measure: 40s}\n"
        "gateway_under_test: {image: libcoap, north: coap-uri}\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Analysis]:
    """One analysis per kind of run, made once for the module."""
    root = tmp_path_factory.mktemp("align")

    def make(name: str, **kw: Any) -> Path:
        return synth_run(root / name, replace(BASE, **kw))

    single = make("single")
    (single / "spec.yaml").write_text(SPEC)
    (single / layout.INTERFERENCE).write_text(json.dumps(ENTRIES))
    _gateway_samples(single)
    (single / layout.GE / layout.ge_devices(0)).write_text(
        "device_id,group,container,address\n" + "".join(f"{i},{'ab'[i // 2]},wb-x-dev-{i},10.0.0.{i + 2}\n"
                                                        for i in range(4)))
    cc = _congestion_run(make, "cc")
    _add_observe(cc)
    swarm = synth_swarm_run(root / "swarm", BASE, SwarmSynth(device_hosts=("node-b", "node-c"), ge_node="node-a"))
    return {"single": analyze(single), "cc": analyze(cc), "swarm": analyze(swarm)}


def _tables(an: Analysis) -> dict[str, Table | None]:
    r = an.result
    tl = run_timeline(an)
    out: dict[str, Table | None] = {
        "checks": checks_table(r), "rit": rit_table(r), "rate": rate_table(r), "latency": latency_table(r),
        "hosts": hosts_table(r), "device": device_table(r)[:2], "group": group_table(r),
        "drift": drift_table(tl), "timeline": timeline_table(tl) if tl is not None else None,
        "observe": observe_table(r), "interference": interference_table(r), "thresholds": thresholds_table(r),
        "gateway_latency": gateway_latency_table(r["gateway"]) if r.get("gateway") else None,
        "congestion": congestion_table(r["congestion"]) if r.get("congestion") else None,
    }
    out.update({f"cd {title}": cd_table(cd) for title, cd in cd_blocks(r)})
    return out


def test_every_row_of_every_table_has_one_cell_per_header(runs: dict[str, Analysis]) -> None:
    seen = set()
    for kind, an in runs.items():
        for name, t in _tables(an).items():
            if t is None:
                continue
            seen.add(name.split()[0])
            head, rows = t
            for i, row in enumerate(rows):
                assert len(row) == len(head), (kind, name, i, head, row)
            assert all(isinstance(c, str) for row in rows for c in row), (kind, name)
    sweep_rows = [sweep_row(an) for an in runs.values()]
    for name, t in (("sweep", sweep_table(sweep_rows)), ("side_by_side", side_by_side(sweep_rows))):
        if t is not None:
            seen.add(name)
            assert all(len(row) == len(t[0]) for row in t[1]), name
    assert seen >= {"checks", "rit", "rate", "latency", "cd", "hosts", "device", "group", "sweep", "drift",
                    "timeline", "congestion", "gateway_latency", "observe", "interference", "thresholds"}, seen


def test_the_ge_node_without_a_probe_has_an_aligned_hosts_row(runs: dict[str, Analysis]) -> None:
    """The regression: a GE-only node (no CD pair, no probe) had 12 cells under 11 headers."""
    r = runs["swarm"].result
    assert r["hosts"]["node-a"]["cross_host"] is None
    head, rows = check_table(hosts_table(r))          # type: ignore[arg-type]
    text = terminal_text(runs["swarm"])
    lines = text.splitlines()
    at = lines.index("Hosts (a run across a swarm)")
    header, rule = lines[at + 1], lines[at + 2]
    groups = [m.start() for m in re.finditer(r"-+", rule)]
    assert len(groups) == len(head) == 11
    assert header.index("clock offset") == groups[9]
    ge_row = next(ln for ln in lines[at + 3:] if ln.startswith("node-a (GE node)"))
    assert ge_row[groups[9]:].startswith("GE node's clock")


def test_a_misaligned_table_is_refused_naming_it() -> None:
    bad: Table = (["host", "a", "b"], [["x", "1", "2"], ["y", "1", "2", "3"]])
    for render in (check_table, text_table, md_table):
        with pytest.raises(ValueError, match=r"table 'host': row 1 has 4 cells for 3 headers"):
            render(bad)
    assert text_table((["n", "v"], [["1", "007"]])).splitlines()[-1].endswith("007")   # cells stay text


def test_checks_lead_with_a_meaning_then_the_statistics(runs: dict[str, Analysis]) -> None:
    r = runs["single"].result
    head, rows = checks_table(r)
    assert head == ["check", "result", "what it means", "statistics"]
    assert [row[3] for row in rows] == [c["reason"] for c in r["checks"]]
    assert all(row[2] and row[2] != row[3] for row in rows)


_RAW = re.compile(r"\bnan\b|\d[eE][+-]?\d|_us\b|_ms\b|_s\b|_per_s\b|_pct\b")


def test_timeline_threshold_and_drift_cells_read_with_units(runs: dict[str, Analysis]) -> None:
    an = runs["single"]
    tl = run_timeline(an)
    assert tl is not None
    for t in (timeline_table(tl), thresholds_table(an.result), drift_table(tl)):
        assert t is not None
        head, rows = t
        cells = head + [c for row in rows for c in row]
        bad = [c for c in cells if _RAW.search(c)]
        assert not bad, bad
    th = dict(thresholds_table(an.result)[1])
    assert th["validity.min_measure"] == "30 s" and th["validity.rate_tolerance"] == "5 %"
    assert th["validity.allow_overload"] == "no" and th["validity.min_requests"] == "1,000"
    assert th["validity.send_lag_p99_max"] == "1 ms"
    head, rows = timeline_table(tl)
    assert head[:3] == ["window start (s since t0)", "sent", "answered ok"]
    assert any(c.endswith(" /s") for c in rows[len(rows) // 2])


def _with_extra(r: dict[str, Any], extra: float, err: float) -> dict[str, Any]:
    hosts = {h: dict(s) for h, s in r["hosts"].items()}
    hosts["node-b"]["cross_host"] = {**hosts["node-b"]["cross_host"], "extra_us": extra, "extra_err_us": err}
    return {**r, "hosts": hosts}


def test_the_path_latency_carries_its_error(runs: dict[str, Analysis]) -> None:
    r = runs["swarm"].result
    x = r["hosts"]["node-b"]["cross_host"]
    assert x["extra_us"] == pytest.approx(200, abs=15) and 0 < x["extra_err_us"] < 100
    i = hosts_table(r)[0].index("extra (path)")                   # type: ignore[index]

    def cell(rr: dict[str, Any]) -> str:
        return next(row[i] for row in hosts_table(rr)[1] if row[0] == "node-b")  # type: ignore[index]

    assert re.fullmatch(r"\+\d+ µs ± \d+(\.\d+)? µs", cell(r)), cell(r)
    assert cell(_with_extra(r, -56.0, 80.0)) == "≈ 0 (-56 µs ± 80 µs)"
    assert cell(_with_extra(r, -56.0, 20.0)) == "-56 µs ± 20 µs"
    assert "a negative extra is estimate noise" in HOSTS_NOTE
