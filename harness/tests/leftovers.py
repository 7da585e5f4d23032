"""A swarm a test session left behind, taken down before the Docker tests
(`make test` runs ``python -m wotbench.tests.leftovers`` after the check
tier).

A test that makes a swarm (a one-node swarm, a Swarm lab) labels the swarm
with the pid of its pytest session (``TEST_SESSION_LABEL``, from
``TEST_SESSION_ENV``, which the tier plugin sets). A session killed while
its swarm was up (a CI job stopped mid-test) left this engine in a swarm,
and every later run then planned for that swarm: 22 tests failed in one CI
run that way. Here a swarm whose label names a process that is gone is
taken down (a lab by :meth:`Lab.down`, which removes only what carries its
label; a one-node swarm by leaving it and removing the docker_gwbridge it
leaves); any other swarm, and a live session's, is left alone."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import docker
import docker.errors

from wotbench.engine.swarmlab import LABEL_LAB, TEST_SESSION_LABEL, Lab


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, PermissionError):
        return True             # not a pid we can judge, or someone else's: not ours to take down
    return True


def _remove_gwbridge(c: docker.DockerClient) -> None:
    for _ in range(40):         # its endpoints go a moment after the swarm does
        try:
            for net in c.networks.list(names=["docker_gwbridge"]):
                if net.name == "docker_gwbridge":
                    net.remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            time.sleep(0.25)
    raise RuntimeError("cannot remove docker_gwbridge after leaving the swarm")


def take_down_dead_sessions_swarm(c: docker.DockerClient) -> str | None:
    """What was taken down (a sentence), or None."""
    if c.info()["Swarm"]["LocalNodeState"] != "active":
        return None
    try:
        c.swarm.reload()
    except docker.errors.APIError:
        return None             # a worker: not a swarm a test here made
    labels = c.swarm.attrs["Spec"].get("Labels") or {}
    owner = labels.get(TEST_SESSION_LABEL)
    if owner is None or _alive(owner):
        return None
    if lab := labels.get(LABEL_LAB):
        with tempfile.TemporaryDirectory() as state:
            Lab.load(lab, state_dir=Path(state)).down()
        return f"took down Swarm lab {lab}, left by test session {owner} (gone)"
    c.swarm.leave(force=True)
    _remove_gwbridge(c)
    return f"left the one-node swarm of test session {owner} (gone)"


def main() -> int:
    try:
        c = docker.from_env(timeout=120)
        c.ping()
    except docker.errors.DockerException:
        return 0                # no engine: the Docker tests say so themselves
    done = take_down_dead_sessions_swarm(c)
    if done:
        print(f"wotbench.tests.leftovers: {done}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
