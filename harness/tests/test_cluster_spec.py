"""The spec's ``cluster`` section: its shape, its defaults, and every bad
value as one UserError naming file, line and field."""

from __future__ import annotations

import dataclasses

import pytest

from wotbench import UserError, spec

BASE = """\
name: t
workload: {seed: 1}
devices:
  - {name: a, count: 6, rit: exp:100ms, service: exp:5ms}
  - {name: b, count: 3, rit: exp:100ms, service: exp:5ms}
phases: {measure: 10s}
"""


def cluster_of(text: str) -> spec.Cluster | None:
    return spec.loads(BASE + text, "exp.yaml")[0].spec.cluster


def section(s: spec.Spec) -> spec.Cluster:
    """The cluster section of a spec that has one."""
    assert s.cluster is not None
    return s.cluster


def cluster(text: str) -> spec.Cluster:
    return section(spec.loads(BASE + text, "exp.yaml")[0].spec)


def bad(text: str) -> UserError:
    with pytest.raises(UserError) as ei:
        cluster_of(text)
    return ei.value


def test_no_section_is_one_host():
    assert cluster_of("") is None


@pytest.mark.parametrize("text", ["cluster:\n", "cluster: {}\n"])
def test_an_empty_section_means_every_default(text):
    c = cluster(text)
    assert c == spec.Cluster() and (c.ge, c.devices, c.spread, c.per_core) == (None, None, "even", 20)


def test_hostnames_and_order_are_kept():
    c = cluster("cluster:\n  ge: {node: mgr}\n  devices: {nodes: [h3, h2]}\n  spread: even\n")
    assert c.ge == spec.NodeSelector(hostnames=("mgr",))
    assert c.devices is not None and c.devices.hostnames == ("h3", "h2") and c.devices.label is None


@pytest.mark.parametrize("label, pair", [("role=ge", ("role", "ge")), ("org.x-y_z=a=b", ("org.x-y_z", "a=b")),
                                         ("gpu", ("gpu", None)), ("role=", ("role", ""))])
def test_labels_are_key_value_or_key(label, pair):
    c = cluster(f"cluster: {{ge: {{label: '{label}'}}, devices: {{label: '{label}'}}}}\n")
    assert c.ge is not None and c.devices is not None
    assert c.ge.label == pair and c.devices.label == pair and c.ge.label_text == label


def test_fill_takes_devices_per_core():
    c = cluster("cluster: {spread: fill, per_core: 8}\n")
    assert (c.spread, c.per_core) == ("fill", 8)
    assert c.to_dict() == {"ge": None, "devices": None, "spread": "fill", "per_core": 8}


def test_the_section_is_frozen_and_checked_when_built_directly():
    c = cluster("cluster: {ge: {node: mgr}}\n")
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.spread = "fill"               # type: ignore[misc]
    with pytest.raises(ValueError):
        spec.NodeSelector()
    with pytest.raises(ValueError):
        spec.NodeSelector(hostnames=("a",), label=("k", None))
    with pytest.raises(ValueError):
        spec.Cluster(spread="random")


@pytest.mark.parametrize("text, line, field, what", [
    ("cluster: {nodes: [a]}\n", 7, "cluster.nodes", "unknown key"),
    ("cluster: [a]\n", 7, "cluster", "must be a mapping"),
    ("cluster:\n  ge: {}\n", 8, "cluster.ge", "give either 'node' or 'label'"),
    ("cluster:\n  ge: {node: a, label: r=g}\n", 8, "cluster.ge", "give either 'node' or 'label'"),
    ("cluster:\n  ge: {nodes: [a]}\n", 8, "cluster.ge.nodes", "unknown key"),
    ("cluster:\n  ge: {node: [a]}\n", 8, "cluster.ge.node", "expected a node's hostname"),
    ("cluster:\n  ge:\n    node: ' a'\n", 9, "cluster.ge.node", "expected a node's hostname"),
    ("cluster:\n  devices: {node: a}\n", 8, "cluster.devices.node", "unknown key"),
    ("cluster:\n  devices: {nodes: []}\n", 8, "cluster.devices.nodes", "non-empty list"),
    ("cluster:\n  devices: {nodes: a}\n", 8, "cluster.devices.nodes", "non-empty list"),
    ("cluster:\n  devices:\n    nodes:\n      - a\n      - 7\n", 11, "cluster.devices.nodes[1]",
     "expected a node's hostname"),
    ("cluster:\n  devices:\n    nodes:\n      - a\n      - a\n", 11, "cluster.devices.nodes[1]", "listed twice"),
    ("cluster:\n  devices: {label: '=x'}\n", 8, "cluster.devices.label", "expected a node label"),
    ("cluster:\n  devices: {label: 5}\n", 8, "cluster.devices.label", "expected a node label"),
    ("cluster:\n  spread: random\n", 8, "cluster.spread", "expected one of even, fill"),
    ("cluster:\n  per_core: 5\n", 8, "cluster.per_core", "only with spread: fill"),
    ("cluster:\n  spread: fill\n  per_core: 0\n", 9, "cluster.per_core", ""),
])
def test_bad_values_name_file_line_and_field(text, line, field, what):
    e = bad(text)
    assert (e.file, e.line, e.field) == ("exp.yaml", line, field), str(e)
    assert what in e.what and str(e).startswith(f"exp.yaml:{line}: {field}: ")


def test_a_scale_or_sweep_may_change_the_section():
    text = BASE + "cluster: {spread: even}\nscales:\n  small: {cluster: {spread: fill}}\n"
    assert section(spec.loads(text, "exp.yaml", "small")[0].spec).spread == "fill"
    runs = spec.loads(BASE + "cluster: {}\nsweep: {key: cluster.spread, values: [even, fill]}\n", "exp.yaml")
    assert [section(r.spec).spread for r in runs] == ["even", "fill"]
    e = bad("cluster: {}\nsweep: {key: cluster.spread, values: [even, odd]}\n")
    assert (e.line, e.field) == (8, "cluster.spread")


def test_the_saved_spec_reloads_to_the_same_cluster(tmp_path):
    rs = spec.loads(BASE + "cluster:\n  ge: {label: role=ge}\n  devices: {nodes: [h2, h3]}\n", "exp.yaml")[0]
    saved = tmp_path / "spec.yaml"
    saved.write_text(rs.yaml())
    ge = section(rs.spec).ge
    assert spec.load_saved(saved) == rs.spec and ge is not None and ge.label == ("role", "ge")
