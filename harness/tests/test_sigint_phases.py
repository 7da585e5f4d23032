"""Ctrl-C at every phase of `wotbench run` leaves nothing behind (issue 23:
a SIGINT in the measurement phase left the run's bridge with a stale
endpoint, moby#42119, that only a dockerd restart freed). Each case sends
SIGINT while the run is in one phase (provision, calibration, warmup,
measure, cooldown, collect, teardown) and then counts what the run left:
containers, networks, host-guard rules. Once per phase here;
``WOTBENCH_SIGINT_REPEAT=20`` repeats each."""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wotbench.host import hostguard

pytestmark = pytest.mark.docker

PHASES = ("provision", "calibration", "warmup", "measure", "cooldown", "collect", "teardown")
REPEAT = int(os.environ.get("WOTBENCH_SIGINT_REPEAT", "1"))
#: The smallest run with every phase: calibration 2 s, warmup 1 s, measure 4 s, cooldown 1 s.
WINDOWS = {"calibration": ("calibration", 0.5), "warmup": ("warmup", 0.5), "measure": ("measure", 0.5),
           "cooldown": ("cooldown", 0.5)}


def _sleep_until(epoch_s: float) -> None:
    while time.time() < epoch_s:
        time.sleep(min(0.02, max(0.0, epoch_s - time.time())))


def _in_window(live: Any, results: Path, run_id: str, phase: str) -> None:
    """Sleeps into the middle of ``phase``'s window (phases.json, from t0)."""
    live.wait_for(r"test starts at", 120)
    phases = json.loads((results / run_id / "phases.json").read_text())
    start, end = phases[WINDOWS[phase][0]]
    _sleep_until((phases["t0_epoch_us"] + start + (end - start) * WINDOWS[phase][1]) / 1e6)


def _wait(cond: Callable[[], bool], live: Any, timeout_s: float, poll_s: float = 0.02) -> None:
    end = time.monotonic() + timeout_s
    while not cond():
        if live.proc.poll() is not None or time.monotonic() > end:
            raise AssertionError("the run ended before the phase was reached:\n" + "\n".join(live.lines))
        time.sleep(poll_s)


def _reach(phase: str, live: Any, results: Path, run_id: str, client: Any) -> None:
    """Returns once the live run is in ``phase``."""
    name = f"wb-{run_id[-6:]}-ge-0"
    if phase == "provision":
        live.wait_for(r"^starting \d+ containers", 120)
    elif phase in WINDOWS:
        _in_window(live, results, run_id, phase)
    elif phase == "collect":                    # the GE has exited: collect stops the rest
        live.wait_for(r"test starts at", 120)
        _wait(lambda: client.api.inspect_container(name)["State"]["Status"] == "exited", live, 60)
    else:                                       # summary.json written: teardown is next
        _wait(lambda: (results / run_id / "summary.json").exists(), live, 120)


@pytest.mark.parametrize("rep", range(REPEAT))
@pytest.mark.parametrize("phase", PHASES)
def test_sigint_in_each_phase_leaves_nothing(phase, rep, live_run, docker_client, spec_file, make_spec,
                                             tmp_path, run_objects):
    results = tmp_path / "res"
    live = live_run(spec_file(make_spec(count=2, measure="4s", name=f"int{phase[:4]}")), results)
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    _reach(phase, live, results, run_id, docker_client)
    live.proc.send_signal(signal.SIGINT)
    rc = live.finish(timeout=120)
    assert rc in ((0, 130) if phase == "teardown" else (130,)), "\n".join(live.lines)
    stale = [ln for ln in live.lines if "stale endpoint" in ln or "moby#42119" in ln]
    cts, nets = run_objects(run_id)
    rules = [r for r in hostguard.rules() if r[1] == run_id]
    assert (cts, nets, rules, stale) == ([], [], [], []), (
        f"left by a SIGINT in {phase}: {[c.name for c in cts]} {[n.name for n in nets]} {rules}\n"
        + "\n".join(live.lines))
    if phase != "teardown":
        assert "interrupted" in (results / run_id / "INCOMPLETE").read_text()
