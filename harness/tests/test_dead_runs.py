"""Leftovers of a harness that died (SIGKILL, crash): `wotbench run` removes
them before it starts (issue W2 5/5), but never what a live harness or
another host's harness owns. Real Docker, labelled containers."""

from __future__ import annotations

import os
import socket

import pytest

from wotbench.base import results as res
from wotbench.engine import dockerenv


def _labelled(client, run_id: str, owner: str):
    return client.containers.create(dockerenv.IMAGES["device"], ["--help"], name=f"wb-test-{run_id[-6:]}",
                                    labels={dockerenv.LABEL_RUN: run_id, dockerenv.LABEL_OWNER: owner})


@pytest.mark.docker
def test_only_runs_of_dead_local_harnesses_are_cleaned(docker_client):
    dead_pid = 4_194_303                         # above any pid_max: no such process
    assert not os.path.exists(f"/proc/{dead_pid}")
    here = socket.gethostname()
    dead = res.new_run_id("deadrun")
    live = res.new_run_id("liverun")
    foreign = res.new_run_id("otherhost")
    made = [_labelled(docker_client, dead, f"{here}:{dead_pid}"),
            _labelled(docker_client, live, f"{here}:{os.getpid()}"),
            _labelled(docker_client, foreign, f"another-host-{here}:{dead_pid}")]
    try:
        assert dead in dockerenv.dead_local_runs(docker_client)
        assert not {live, foreign} & dockerenv.dead_local_runs(docker_client)
        runs, n_ct, _, stuck = dockerenv.clean_dead_runs(docker_client)
        assert dead in runs and n_ct >= 1 and stuck == []
        left = {c.labels[dockerenv.LABEL_RUN] for c in docker_client.containers.list(
            all=True, filters={"label": dockerenv.LABEL_RUN})}
        assert dead not in left and {live, foreign} <= left
    finally:
        for c in made:
            try:
                c.remove(force=True)
            except Exception:       # the dead one is gone already
                pass
