"""The node inventory from what the engine reports (its node objects and
``info()``, written here as the Docker API documents them)."""

from __future__ import annotations

import json
import os
import socket

import pytest

from wotbench import UserError
from wotbench.engine.inventory import CORES_AFFINITY, Inventory, NodeInfo, node_from_attrs, swarm_role, this_host

#: A node object as ``GET /nodes`` returns it (Docker Engine API 1.41).
MANAGER = {
    "ID": "24ifsmvkjbyhk",
    "Version": {"Index": 373531},
    "Spec": {"Availability": "active", "Name": "node-name", "Role": "manager",
             "Labels": {"role": "ge", "zone": "a"}},
    "Description": {
        "Hostname": "bf3067039e47",
        "Platform": {"Architecture": "x86_64", "OS": "linux"},
        "Resources": {"NanoCPUs": 4000000000, "MemoryBytes": 8272408576},
        "Engine": {"EngineVersion": "20.10.24", "Labels": {"foo": "bar"}},
    },
    "Status": {"State": "ready", "Message": "", "Addr": "172.17.0.2"},
    "ManagerStatus": {"Leader": True, "Reachability": "reachable", "Addr": "172.17.0.2:2377"},
}
WORKER = {
    "ID": "9w1kq1r3d7c2",
    "Spec": {"Availability": "drain", "Role": "worker"},
    "Description": {"Hostname": "node2", "Resources": {"NanoCPUs": 2000000000},
                    "Engine": {"EngineVersion": "20.10.5"}},
    "Status": {"State": "down", "Addr": "172.17.0.3"},
}


def test_a_swarm_node_from_the_engines_node_object():
    n = node_from_attrs(MANAGER, local_id="24ifsmvkjbyhk", kernel="6.1.0-18-amd64")
    assert (n.id, n.hostname, n.role, n.state, n.availability) == (
        "24ifsmvkjbyhk", "bf3067039e47", "manager", "ready", "active")
    assert n.labels == (("role", "ge"), ("zone", "a")) and n.has_label("role", "ge")
    assert n.has_label("zone", None) and not n.has_label("role", "device") and not n.has_label("x", None)
    assert n.cores == (0, 1, 2, 3) and n.cores_from == "NanoCPUs"
    assert (n.engine_version, n.kernel, n.platform, n.addr) == ("20.10.24", "6.1.0-18-amd64",
                                                                "linux/x86_64", "172.17.0.2")
    assert n.local and n.usable


def test_another_node_has_no_kernel_and_may_be_unusable():
    n = node_from_attrs(WORKER, local_id="24ifsmvkjbyhk", kernel="6.1.0-18-amd64")
    assert (n.hostname, n.role, n.labels, n.cores) == ("node2", "worker", (), (0, 1))
    assert n.kernel is None and n.platform is None and not n.local
    assert (n.state, n.availability, n.usable) == ("down", "drain", False)


def test_this_host_alone_offers_the_cores_of_this_process():
    n = this_host("20.10.24")
    assert n.hostname == socket.gethostname() and n.cores == tuple(sorted(os.sched_getaffinity(0)))
    assert n.cores_from == CORES_AFFINITY and n.local and n.kernel == os.uname().release
    assert n.engine_version == "20.10.24" and this_host().engine_version is None


@pytest.mark.parametrize("swarm, role", [
    ({}, "inactive"),
    ({"LocalNodeState": "inactive"}, "inactive"),
    ({"LocalNodeState": "active", "ControlAvailable": True, "NodeID": "x"}, "manager"),
])
def test_the_swarm_role_from_info(swarm, role):
    assert swarm_role({"Swarm": swarm}) == role


@pytest.mark.parametrize("swarm, what", [
    ({"LocalNodeState": "active", "ControlAvailable": False},
     "this host is a swarm worker: only a manager can list the swarm's nodes"),
    ({"LocalNodeState": "locked"}, "this host's swarm membership is 'locked'"),
    ({"LocalNodeState": "error", "Error": "rpc error"}, "'error' (rpc error)"),
])
def test_a_worker_or_an_unusable_swarm_says_so(swarm, what):
    with pytest.raises(UserError) as ei:
        swarm_role({"Swarm": swarm})
    assert what in str(ei.value) and "\n" not in str(ei.value)


def test_an_inventory_is_checked_and_plain_data():
    mgr = node_from_attrs(MANAGER, local_id="24ifsmvkjbyhk")
    inv = Inventory(True, (mgr, node_from_attrs(WORKER, local_id="24ifsmvkjbyhk")))
    assert inv.local is mgr
    d = json.loads(json.dumps(inv.to_dict()))
    assert d["swarm"] is True and d["nodes"][0]["labels"] == {"role": "ge", "zone": "a"}
    assert d["nodes"][1]["cores"] == [0, 1] and d["nodes"][1]["hostname"] == "node2"
    with pytest.raises(ValueError):
        Inventory(True, ())
    with pytest.raises(ValueError):
        Inventory(True, (mgr, mgr))                              # two local nodes
    with pytest.raises(ValueError):
        Inventory(False, (mgr, NodeInfo("b", "b")))               # one host alone, outside a swarm
