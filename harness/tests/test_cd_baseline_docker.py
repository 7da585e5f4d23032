"""A CD node frozen (`docker pause`) for 6 s during the CD calibration
(issue 23): the baseline then holds the frozen node's 6-s responses (or
its unanswered requests), so a threshold learnt from it would hide any
contention. The baseline is checked before anything is judged against
it: the contention check says it cannot judge, naming the baseline's
numbers, and the run is not valid. Real Docker."""

from __future__ import annotations

import json
import textwrap
import time

import pytest

pytestmark = pytest.mark.docker

SPEC = textwrap.dedent("""\
    name: cdpause
    workload: {seed: 3}
    devices:
      - {name: s, count: 2, rit: exp:100ms, service: exp:2ms, mode: sleep, threads: 2}
    gateway: {type: con, timeout: 1s, ack_timeout: 500ms, max_retransmit: 2}
    cd: {enabled: true, rit: 100ms, calibration: 10s}
    phases: {warmup: 1s, measure: 8s, cooldown: 1s}
    validity: {min_measure: 1s, min_requests: 10}
    """)


def test_cd_node_frozen_during_calibration_makes_the_run_not_valid(docker_client, spec_file, tmp_path, live_run,
                                                                   run_objects):
    results = tmp_path / "res"
    live = live_run(spec_file(SPEC), results)
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 90)
    phases = json.loads((results / run_id / "phases.json").read_text())
    start_us = phases["t0_epoch_us"] + phases["calibration"][0]     # the CD-GE's first request
    assert phases["calibration"] == [-10_000_000, 0]
    while time.time() * 1e6 < start_us + 1e6:
        time.sleep(0.05)
    node = docker_client.containers.get(f"wb-{run_id[-6:]}-cd-node")
    node.pause()
    try:
        time.sleep(6)
    finally:
        node.unpause()
    assert live.finish(timeout=180) == 0, "\n".join(live.lines)
    summary = json.loads((results / run_id / "summary.json").read_text())
    c = summary["cd"]["contention"]
    assert c["status"] == "disturbed", c["reason"]
    assert summary["verdict"] == "invalid"
    reason = next(r for r in summary["reasons"] if r.startswith("contention"))
    assert reason.startswith("contention cannot be judged: the CD baseline is disturbed: "), reason
    assert "calibration" in reason and ("got no answer" in reason or "calibration R_d median" in reason), reason
    cts, nets = run_objects(run_id)
    assert not cts and not nets
