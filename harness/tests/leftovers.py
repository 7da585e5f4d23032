"""A swarm a test session left behind, taken down before the Docker tests
(`make test` runs ``python -m wotbench.tests.leftovers`` after the check
tier).

A test that makes a swarm (a one-node swarm, a Swarm lab) labels the swarm
with its pytest session's identity (``TEST_SESSION_LABEL``, from
``TEST_SESSION_ENV``, which the tier plugin sets: boot, pid namespace, pid
and start time, :func:`session_identity`). A session killed while
its swarm was up (a CI job stopped mid-test) left this engine in a swarm,
and every later run then planned for that swarm: 22 tests failed in one CI
run that way. Here a swarm whose label names a process that is gone is
taken down (a lab by :meth:`Lab.down`, which removes only what carries its
label; a one-node swarm by leaving it and removing the docker_gwbridge it
leaves when its labels say none was there before it); any other swarm,
a live session's, and one labelled from another boot or pid namespace, is
left alone."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import docker


def _start_ticks(pid: int) -> str | None:
    """A process's start time (clock ticks after boot), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]       # field 22; the name before ")" may hold spaces


def session_identity(pid: int | None = None) -> str:
    """This boot, pid namespace, pid and start time of a process (this one):
    the value of a test session's swarm label. A pid alone could be another
    namespace's (a CI job in a container on the same engine) or reused."""
    pid = os.getpid() if pid is None else pid
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return f"{boot}/{os.readlink('/proc/self/ns/pid')}/{pid}/{_start_ticks(pid)}"


def _gone(identity: str) -> bool:
    """The session of a label is gone: seen from this boot and pid namespace,
    its pid is dead or another process's. A label from elsewhere (another
    boot: another host's engine; another pid namespace), or one that does
    not parse, is not judged: never gone."""
    try:
        boot, pidns, pid, start = identity.rsplit("/", 3)
        here = session_identity().rsplit("/", 3)
        if (boot, pidns) != (here[0], here[1]):
            return False
        return _start_ticks(int(pid)) != start
    except (ValueError, OSError):
        return False


def remove_gwbridge(c: docker.DockerClient, network_id: str | None = None) -> None:
    """The docker_gwbridge network a swarm leaves behind once its endpoints
    go (with ``network_id``: only that one, the network a caller made)."""
    import docker.errors

    for _ in range(40):         # its endpoints go a moment after the swarm does
        try:
            for net in c.networks.list(names=["docker_gwbridge"]):
                if net.name == "docker_gwbridge" and network_id in (None, net.id):
                    net.remove()
            return
        except docker.errors.NotFound:
            return
        except docker.errors.APIError:
            time.sleep(0.25)
    raise RuntimeError("cannot remove docker_gwbridge after leaving the swarm")


def take_down_dead_sessions_swarm(c: docker.DockerClient) -> str | None:
    """What was taken down (a sentence), or None."""
    import docker.errors

    from wotbench.engine.swarmlab import LABEL_LAB, TEST_SESSION_LABEL, Lab, made_gwbridge
    if c.info()["Swarm"]["LocalNodeState"] != "active":
        return None
    try:
        c.swarm.reload()
    except docker.errors.APIError:
        return None             # a worker: not a swarm a test here made
    labels = c.swarm.attrs["Spec"].get("Labels") or {}
    owner = labels.get(TEST_SESSION_LABEL)
    if owner is None or not _gone(owner):
        return None
    if lab := labels.get(LABEL_LAB):
        with tempfile.TemporaryDirectory() as state:
            Lab.load(lab, state_dir=Path(state)).down()
        return f"took down Swarm lab {lab}, left by test session {owner} (gone)"
    c.swarm.leave(force=True)
    if made_gwbridge(labels):       # else it was there before the swarm: not ours
        remove_gwbridge(c)
    return f"left the one-node swarm of test session {owner} (gone)"


def main() -> int:
    """Never fails `make test`: what it cannot do, it says in one line."""
    import docker
    import docker.errors

    try:
        c = docker.from_env(timeout=120)
        c.ping()
    except docker.errors.DockerException:
        return 0                # no engine: the Docker tests say so themselves
    try:
        done = take_down_dead_sessions_swarm(c)
    except (docker.errors.DockerException, RuntimeError, OSError) as exc:
        print(f"wotbench.tests.leftovers: could not take down a dead test session's swarm: {exc}", file=sys.stderr)
        return 0
    if done:
        print(f"wotbench.tests.leftovers: {done}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
