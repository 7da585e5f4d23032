"""Teardown deletes a run's endpoints one at a time, before its containers
exit (issue 23: hundreds of containers of one bridge exiting at once left
Docker 20.10 with a stale endpoint, moby#42119, that only a dockerd
restart frees). Real engine: the engine's own event stream says in which
order it disconnected and killed them."""

from __future__ import annotations

import os
import socket
import time

import docker.types
import pytest

from wotbench.base import results as res
from wotbench.engine import dockerenv

pytestmark = pytest.mark.docker


def _network(client, run_id: str):
    sub = dockerenv.free_subnets(dockerenv.used_subnets(client), 1)[0]
    ipam = docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(sub),
                                                                       gateway=str(next(sub.hosts())))])
    return client.networks.create(f"wb-{run_id[-6:]}-net0", driver="bridge", internal=True, ipam=ipam,
                                  labels={dockerenv.LABEL_RUN: run_id})


def test_every_endpoint_is_deleted_before_any_container_exits(docker_client, tmp_path):
    run_id = res.new_run_id("endpoints")
    resources = tmp_path / "res.csv"
    resources.write_text("path,service_us\n/r,1000\n")
    net = _network(docker_client, run_id)
    labels = {dockerenv.LABEL_RUN: run_id, dockerenv.LABEL_OWNER: f"{socket.gethostname()}:{os.getpid()}"}
    cts = [docker_client.containers.run(dockerenv.IMAGES["device"], ["--resources", "/r.csv", "--threads", "1"],
                                        name=f"wb-{run_id[-6:]}-dev-{i}", detach=True, network=net.name,
                                        labels=labels, volumes={str(resources): {"bind": "/r.csv", "mode": "ro"}},
                                        **dockerenv.hardening(memory_bytes=32 << 20, pids=8))
           for i in range(6)]
    for ct in cts:
        ct.reload()
        assert ct.status == "running", ct.logs()
    since = int(time.time()) - 1
    try:
        n_ct, n_net, stuck = dockerenv.remove_labelled(docker_client, run_id)
    finally:
        for ct in cts:
            try:
                ct.remove(force=True)
            except docker.errors.NotFound:
                pass
    assert (n_ct, n_net, stuck) == (6, 1, [])
    events = docker_client.events(since=since, until=int(time.time()) + 1, decode=True)
    order = [(e["Type"], e["Action"], e["Actor"]["Attributes"].get("container") or e["Actor"]["ID"])
             for e in events if e["Type"] in ("network", "container")
             and e["Action"] in ("disconnect", "die", "destroy")]
    ids = {ct.id for ct in cts}
    disconnects = [cid for kind, action, cid in order if kind == "network" and action == "disconnect" and cid in ids]
    assert set(disconnects) == ids, order        # (the engine reports each disconnect twice)
    first_exit = min(i for i, (kind, action, cid) in enumerate(order) if kind == "container" and cid in ids)
    last_disconnect = max(i for i, (kind, action, cid) in enumerate(order) if action == "disconnect" and cid in ids)
    assert last_disconnect < first_exit, f"a container exited before every endpoint was deleted: {order}"
