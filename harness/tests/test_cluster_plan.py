"""The per-node plan on a swarm as a pure function of node inventories
built here (plain dataclasses: input data, as the engine would report it)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from wotbench import UserError, spec
from wotbench.engine.inventory import Inventory, NodeInfo
from wotbench.execution.phases._preflight import layout_for, plan_for
from wotbench.execution.placement import ClusterPlan, Plan, make_cluster_plan, make_plan, spread_even, spread_fill


def node(host: str, cores: int = 4, *, role: str = "worker", state: str = "ready",
         availability: str = "active", local: bool = False, **labels: str) -> NodeInfo:
    return NodeInfo(id=f"id-{host}", hostname=host, role=role, state=state, availability=availability,
                    labels=tuple(sorted(labels.items())), cores=tuple(range(cores)),
                    engine_version="20.10.24", local=local)


def swarm(*workers: NodeInfo, mgr_cores: int = 4, **mgr_labels: str) -> Inventory:
    return Inventory(True, (node("mgr", mgr_cores, role="manager", local=True, **mgr_labels),) + workers)


def cplan(inv: Inventory, cluster: spec.Cluster | None = None, **kw):
    args = dict(reserve=[0], ge_instances=1, cd_enabled=True, group_sizes=[10], affinity=True)
    args.update(kw)
    return make_cluster_plan(inv, cluster or spec.Cluster(), **args)  # type: ignore[arg-type]


def sel(*hosts: str, label: str | None = None) -> spec.NodeSelector:
    if label is None:
        return spec.NodeSelector(hostnames=hosts)
    key, _, value = label.partition("=")
    return spec.NodeSelector(label=(key, value if "=" in label else None))


def fails(inv: Inventory, cluster: spec.Cluster | None = None, **kw) -> UserError:
    with pytest.raises(UserError) as ei:
        cplan(inv, cluster, **kw)
    return ei.value


def test_default_ge_on_the_manager_devices_on_the_other_nodes():
    p = cplan(swarm(node("h2", 8)))
    ge, dev = p.nodes
    assert (ge.hostname, ge.ge_instances, ge.device_ids) == ("mgr", 1, ())
    # A node that runs only the GE needs no device core: 4 cores are not degraded.
    assert ge.plan.ge_cores == (1,) and ge.plan.cd_ge_cpuset is None and not ge.plan.degraded
    assert ge.roles() == ["GE"]
    assert (dev.hostname, dev.ge_instances, dev.device_ids) == ("h2", 0, tuple(range(10)))
    # The device node's cores follow the per-host rules: one CD pair with its devices.
    assert dev.plan == make_plan(range(8), reserve=[0], ge_instances=0, cd_enabled=True, devices=10,
                                 affinity=True)
    assert dev.plan.cd_ge_cpuset == "1" and dev.plan.device_cores == (2, 3, 4, 5, 6, 7)
    assert dev.roles() == ["CD pair", "10 devices"] and p.node_of() == ["h2"] * 10
    assert any("cluster.ge not given" in w for w in p.why)
    assert any("cluster.devices not given" in w for w in p.why)


def test_a_one_node_swarm_is_the_single_host_layout():
    p = cplan(Inventory(True, (node("mgr", 2, role="manager", local=True),)))
    (only,) = p.nodes
    assert only.ge_instances == 1 and only.device_ids == tuple(range(10))
    assert only.plan == make_plan([0, 1], reserve=[0], ge_instances=1, cd_enabled=True, devices=10,
                                  affinity=True)
    assert only.plan.degraded and any("one-node swarm" in w for w in p.why)


def test_a_small_device_node_degrades_by_the_per_host_rules():
    (_, dev) = cplan(swarm(node("h2", 2))).nodes
    assert dev.plan.degraded and dev.plan.ge_cores == () and dev.plan.cd_ge_cpuset == "1"
    assert dev.plan.notes[0] == ("2 cores offered, 3 needed for the paper's layout: "
                                 "the CD-GE shares the device cores")


def test_nodes_that_are_not_ready_and_active_are_skipped_and_said():
    p = cplan(swarm(node("h2"), node("h3", state="down"), node("h4", availability="drain"), node("h5")))
    assert [n.hostname for n in p.nodes] == ["mgr", "h2", "h5"]
    assert any(w.startswith("skipped: h3 (down, active), h4 (ready, drain)") for w in p.why)


def test_even_spread_splits_every_group_and_balances_the_nodes():
    p = cplan(swarm(node("h2"), node("h3"), node("h4")), group_sizes=[5, 4, 1])
    ids = {n.hostname: n.device_ids for n in p.nodes[1:]}
    assert ids == {"h2": (0, 1, 5, 9), "h3": (2, 3, 6), "h4": (4, 7, 8)}
    assert sorted(i for n in p.nodes for i in n.device_ids) == list(range(10))
    assert "device ids: a 0-1, b 5, c 9" in p.nodes[1].render([0] * 5 + [1] * 4 + [2], ["a", "b", "c"])


@pytest.mark.parametrize("nodes", [1, 2, 3, 5])
@pytest.mark.parametrize("sizes", [[1], [7], [3, 3, 3], [10, 1, 4, 2], [100, 37]])
def test_even_spread_is_within_one_per_node_and_per_group(nodes, sizes):
    out = spread_even(sizes, nodes)
    assert sorted(i for ids in out for i in ids) == list(range(sum(sizes)))
    totals = [len(ids) for ids in out]
    assert max(totals) - min(totals) <= 1
    first = 0
    for size in sizes:
        per = [len([i for i in ids if first <= i < first + size]) for ids in out]
        assert max(per) - min(per) <= 1
        first += size


def test_fill_fills_nodes_in_order_by_their_device_cores():
    c = spec.Cluster(devices=sel("h3", "h2"), spread="fill", per_core=2)
    p = cplan(swarm(node("h2", 8), node("h3", 4)), c)
    # h3: 4 cores, reserve 0, CD-GE 1 -> 2 device cores -> room for 4.
    assert [(n.hostname, len(n.device_ids)) for n in p.nodes] == [("mgr", 0), ("h3", 4), ("h2", 6)]
    assert any("h3 4 of 4, h2 6 of 12" in w for w in p.why)
    assert spread_fill(3, [2, 5], 1) == [[0, 1], [2]]


def test_fill_beyond_the_room_is_an_error_at_per_core():
    e = fails(swarm(node("h2", 4)), spec.Cluster(spread="fill", per_core=2))
    assert e.field == "cluster.per_core" and "10 devices do not fit" in e.what


def test_a_node_without_devices_runs_nothing_and_says_so():
    p = cplan(swarm(node("h2"), node("h3"), node("h4")), group_sizes=[2])
    assert [n.hostname for n in p.nodes] == ["mgr", "h2", "h3"]
    assert any("no device left for h4" in w for w in p.why)


def test_selection_by_hostname_and_by_label():
    inv = swarm(node("h2", role="manager", zone="a"), node("h3", zone="a", ge="yes"), node("h4"))
    p = cplan(inv, spec.Cluster(ge=sel(label="ge=yes"), devices=sel(label="zone")))
    assert [n.hostname for n in p.nodes] == ["h3", "h2"]
    assert p.nodes[0].ge_instances == 1 and p.nodes[0].device_ids == tuple(range(5, 10))
    assert p.nodes[0].plan.cd_node_cpuset is not None          # GE node with devices: a CD pair too
    p = cplan(inv, spec.Cluster(ge=sel("id-h4"), devices=sel("h4", "mgr")))   # a node ID works too
    assert [n.hostname for n in p.nodes] == ["h4", "mgr"]


@pytest.mark.parametrize("cluster, field, what", [
    (spec.Cluster(ge=sel("nope")), "cluster.ge.node", "the swarm has no node 'nope' (nodes: mgr, h2, h3)"),
    (spec.Cluster(ge=sel(label="role=ge")), "cluster.ge.label", "no node of the swarm has the label role=ge"),
    (spec.Cluster(ge=sel(label="zone=a")), "cluster.ge.label", "2 nodes have the label zone=a (h2, h3)"),
    (spec.Cluster(ge=sel("h3")), "cluster.ge.node", "node h3 is down, active"),
    (spec.Cluster(devices=sel("h2", "x")), "cluster.devices.nodes[1]", "the swarm has no node 'x'"),
    (spec.Cluster(devices=sel(label="zone=b")), "cluster.devices.label",
     "no node of the swarm has the label zone=b (labels: zone=a;"),
    (spec.Cluster(devices=sel(label="zone=a"), ge=sel("h2")), "", ""),
])
def test_nodes_and_labels_the_swarm_lacks_name_the_field(cluster, field, what):
    inv = swarm(node("h2", zone="a"), node("h3", state="down", zone="a"))
    if not field:            # the control: a label with one usable node is fine
        assert [n.hostname for n in cplan(inv, cluster).nodes] == ["h2"]
        return
    e = fails(inv, cluster)
    assert e.field == field and what in e.what, str(e)


def test_no_device_node_left_is_an_error():
    e = fails(swarm(node("h2", availability="drain")))
    assert e.field == "cluster.devices" and "no device node left" in e.what and "h2 (ready, drain)" in e.what
    e = fails(swarm(node("h2", state="down", zone="a")), spec.Cluster(devices=sel(label="zone=a")))
    assert e.field == "cluster.devices.label" and "no device node left" in e.what


def test_more_ges_than_the_ge_node_has_cores_for():
    e = fails(swarm(node("h2"), mgr_cores=3), ge_instances=3)
    assert e.field == "gateway.instances"
    assert "3 GEs would share" in e.what and "at most 2 get a core of their own" in e.what
    assert [n.ge_instances for n in cplan(swarm(node("h2"), mgr_cores=3), ge_instances=2).nodes] == [2, 0]
    # On a node with devices too, the per-host rules keep a core for them.
    one = Inventory(True, (node("mgr", 3, role="manager", local=True),))
    assert "at most 1" in fails(one, ge_instances=2).what


def test_a_reserved_core_a_node_lacks_names_the_node():
    e = fails(swarm(node("h2", 1)), reserve=[0, 1])
    assert e.field == "placement.reserve" and e.what.startswith("node h2: core(s) 1 not offered")


def test_the_plan_is_plain_data_and_renders_per_node():
    p = cplan(swarm(node("h2"), node("h3")), group_sizes=[6, 4])
    d = json.loads(json.dumps(p.to_dict()))
    assert d["spread"] == "even" and [n["hostname"] for n in d["nodes"]] == ["mgr", "h2", "h3"]
    assert d["nodes"][1]["device_ids"] == [0, 1, 2, 6, 7] and d["nodes"][0]["plan"]["ge_cores"] == [1]
    text = p.render([0] * 6 + [1] * 4, ["s", "t"])
    assert text.splitlines()[0] == "node mgr (manager, 4 cores (as the engine reports), engine 20.10.24): GE"
    assert "node h3 (worker, 4 cores (as the engine reports), engine 20.10.24): CD pair, 5 devices" in text
    assert "  device ids: s 3-5, t 8-9" in text and "\nwhy:\n" in text


SPEC = """\
name: t
devices:
  - {name: s, count: 4, rit: exp:100ms, service: exp:5ms}
phases: {measure: 10s}
"""


def test_a_host_not_in_a_swarm_plans_as_before_and_refuses_a_cluster_section():
    hs = spec.loads(SPEC, "exp.yaml")[0].spec
    alone = Inventory(False, (NodeInfo("", "me", cores=(0, 1, 2, 3), local=True),))
    # The scheduler decision depends on the RT budget Docker has free right
    # now (other runs hold some): compare the placement, not that.
    def placement(p: Plan) -> Plan:
        return replace(p, scheduler="normal", ge_rt_budgets=(), cd_ge_rt_budget=None, sched_why=())

    single = layout_for(hs, alone)
    assert isinstance(single, Plan), single
    assert placement(single) == placement(plan_for(hs, [0, 1, 2, 3]))
    rs = spec.loads(SPEC + "cluster:\n  spread: even\n", "exp.yaml")[0]
    with pytest.raises(UserError) as ei:
        layout_for(rs.spec, alone)
    assert str(rs.locate(ei.value)).startswith("exp.yaml:5: cluster: this host is not in a swarm")



def test_on_a_swarm_no_section_means_the_defaults_and_errors_point_at_the_spec():
    hs = spec.loads(SPEC, "exp.yaml")[0].spec
    inv = swarm(node("h2"))
    empty = spec.loads(SPEC + "cluster: {}\n", "exp.yaml")[0].spec
    assert layout_for(hs, inv) == layout_for(empty, inv)            # the issue: a manager runs across the swarm
    across = layout_for(empty, inv)
    assert isinstance(across, ClusterPlan), across
    assert [n.hostname for n in across.nodes] == ["mgr", "h2"]
    rs = spec.loads(SPEC + "cluster:\n  devices:\n    label: role=device\n", "exp.yaml")[0]
    with pytest.raises(UserError) as ei:
        layout_for(rs.spec, swarm(node("h2")))
    e = rs.locate(ei.value)
    assert str(e).startswith("exp.yaml:7: cluster.devices.label: no node of the swarm has the label")
