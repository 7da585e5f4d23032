"""Teardown when the Docker engine stops answering (issue W2 5/5: dockerd
restarted mid-run left 9 containers and no hint). Real docker-py clients: one
on a socket where no engine listens, then the real engine."""

from __future__ import annotations

import docker
import pytest

from wotbench import _dockerenv as dockerenv
from wotbench.backend import Removed
from wotbench.phases._teardown import with_engine


def _remove(client) -> Removed:
    n_ct, n_net, stuck = dockerenv.remove_labelled(client, "20261124-000000-none-000000")
    return Removed(n_ct, n_net, tuple(stuck))


@pytest.mark.docker
def test_teardown_waits_for_the_engine_to_come_back(docker_client, tmp_path):
    gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    clients = iter([gone, gone, docker_client])
    said: list[str] = []
    assert with_engine(lambda: _remove(next(clients)), said.append, wait_s=30, retry_s=0.01) == Removed(0, 0, ())
    assert len(said) == 1 and "retrying the teardown" in said[0]


def test_teardown_gives_up_naming_wotbench_clean(tmp_path):
    gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    said: list[str] = []
    assert with_engine(lambda: _remove(gone), said.append, wait_s=0.2, retry_s=0.05) is None
    assert said[-1].startswith("error: the Docker engine did not answer") and "`wotbench clean`" in said[-1]
