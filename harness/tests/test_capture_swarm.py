"""``capture:`` on a swarm (a spec with ``cluster:`` run by a swarm manager)
is refused at preflight, in one line naming the spec's capture key, before
any node's engine is asked: the client here is a real docker-py client to a
socket with no engine behind it, so any engine call would fail otherwise."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from wotbench import UserError, spec
from wotbench.engine.inventory import Inventory, NodeInfo
from wotbench.execution.runner import preflight

SPEC = """\
name: t
devices:
  - {name: s, count: 4, rit: exp:100ms, service: exp:5ms}
phases: {warmup: 1s, measure: 2s, cooldown: 1s}
gateway: {instances: 1}
cluster: {spread: even}
"""


def _node(host: str, role: str, local: bool) -> NodeInfo:
    return NodeInfo(id=f"id-{host}", hostname=host, role=role, state="ready", availability="active",
                    labels=(), cores=tuple(range(4)), engine_version="20.10.24", local=local)


@pytest.mark.parametrize("capture", ["capture: {max_size: 1MB, files: 3}\n", ""])
def test_capture_on_a_swarm_is_refused_at_preflight(tmp_path: Path, capture: str) -> None:
    rs = spec.loads(SPEC + capture, "exp.yaml")[0]
    inv = Inventory(True, (_node("mgr", "manager", True), _node("h2", "worker", False)))
    gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    with pytest.raises((UserError, docker.errors.DockerException)) as ei:
        preflight(rs.spec, gone, inv)
    if capture:
        assert isinstance(ei.value, UserError)
        line = str(rs.locate(ei.value))
        assert "\n" not in line
        assert line == ("exp.yaml:7: capture: a run across a swarm does not capture itself yet: run it on one "
                        "host, or leave capture out"), line
    else:       # the same spec without capture gets past the check, on to the nodes' engines
        assert getattr(ei.value, "field", None) != "capture" and "capture" not in str(ei.value), ei.value
