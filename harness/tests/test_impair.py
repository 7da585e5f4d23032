"""Network impairment: the achieved loss rate, the netem fallback, the
commands given to tc and Pumba, and the subnet choice."""

from __future__ import annotations

import contextlib
import ipaddress
import math
from pathlib import Path

import pytest

from wotbench import UserError
from wotbench.base import results as res
from wotbench.engine import COAP_PORT, DockerBackend, dockerenv
from wotbench.engine import netimpair as impair
from wotbench.engine import readiness as probe
from wotbench.execution.phases._provision import device_spec
from wotbench.spec import DeviceGroup, Impairment


def test_iptables_splits_loss_over_both_directions():
    script = impair.sidecar_script(Impairment(loss=0.19), netem=False)
    p = float(script.split("--probability ")[1].split()[0])
    assert math.isclose(1 - (1 - p) ** 2, 0.19, rel_tol=1e-4)
    assert "OUTPUT -o eth0" in script and "INPUT -i eth0" in script


def test_netem_gets_delay_and_loss_and_tbf_the_rate():
    imp = Impairment(loss=0.01, delay_us=10_000, jitter_us=2_000, rate_bps=1_000_000)
    assert impair.sidecar_script(imp, netem=True) == (
        "tc qdisc add dev eth0 root handle 1: tbf rate 1000000bit burst 3028 latency 1000ms && "
        "tc qdisc add dev eth0 parent 1:1 handle 10: netem delay 10000us 2000us loss 1.0000%")
    assert impair.sidecar_script(Impairment(delay_us=5_000), netem=True) == (
        "tc qdisc add dev eth0 root netem delay 5000us")


def test_without_netem_rate_is_tbf_and_loss_iptables():
    """Issue W2 5/5: a rate was refused although this kernel has tbf."""
    script = impair.sidecar_script(Impairment(loss=0.1, rate_bps=50_000_000), netem=False)
    tbf, out_rule, in_rule = script.split(" && ")
    assert tbf == "tc qdisc add dev eth0 root handle 1: tbf rate 50000000bit burst 62500 latency 1000ms"
    assert out_rule.startswith("iptables -A OUTPUT -o eth0") and in_rule.startswith("iptables -A INPUT -i eth0")
    impair.check_supported([("devices[0].impairment", Impairment(rate_bps=100_000))], netem=False, pumba=False)
    assert impair.sidecar_how({"iptables", "tbf"}) == "sidecar-tbf+iptables"


def test_without_netem_delay_is_refused_before_anything_starts():
    with pytest.raises(UserError) as ei:
        impair.check_supported([("devices[1].impairment", Impairment(delay_us=5000, rate_bps=10**6))],
                               netem=False, pumba=False)
    assert ei.value.field == "devices[1].impairment" and "netem" in ei.value.what
    impair.check_supported([("devices[0].impairment", Impairment(loss=0.1))], netem=False, pumba=False)


def test_pumba_commands_use_the_local_image():
    cmds = impair.pumba_commands(["wb-x-dev-0"], Impairment(loss=0.1, delay_us=20_000), 90, netem=True)
    assert len(cmds) == 2
    for c in cmds:
        assert "--pull-image=false" in c and dockerenv.IMAGES["nettools"] in c and c[-1] == "wb-x-dev-0"
    assert cmds[0][3] == "netem" and "delay" in cmds[0] and cmds[1][3] == "iptables"


def test_free_subnets_avoid_everything_in_use():
    used = [ipaddress.IPv4Network("10.210.0.0/22"), ipaddress.IPv4Network("10.210.8.0/21"),
            ipaddress.IPv4Network("172.17.0.0/16")]
    got = dockerenv.free_subnets(used, 3)
    assert len(got) == 3 and all(g.prefixlen == 22 for g in got)
    assert not any(g.overlaps(u) for g in got for u in used)
    assert not any(a.overlaps(b) for i, a in enumerate(got) for b in got[i + 1:])


@contextlib.contextmanager
def _two_devices(docker_client, tmp_path: Path, resources: str, imp: Impairment, name: str):
    """Two devices on a run network, ``imp`` applied to the second (the
    first is the control): yields their (address, port) targets."""
    (tmp_path / "r.csv").write_text(resources)
    backend = DockerBackend(docker_client, res.new_run_id(name))
    try:
        backend.create_networks(2)
        group = DeviceGroup("g", 2, threads=1)
        nodes = backend.start_nodes([device_spec(f"dev-{i}", i, group, "0", tmp_path / "r.csv", None)
                                     for i in range(2)], progress=False)
        assert backend.wait_ready(nodes, 20) == []
        netem = backend.check_impairment([("devices[0].impairment", imp)])
        applied = backend.impair([(nodes[1], imp)], netem, 60, tmp_path / "pumba.log")
        assert applied["containers"] == 1
        yield applied, [(n.address, COAP_PORT) for n in nodes]
    finally:
        backend.teardown()


@pytest.mark.docker
def test_achieved_loss_rate(docker_client, tmp_path: Path):
    """20% configured loss on one device, none on the other: measure both."""
    with _two_devices(docker_client, tmp_path, "path,service_us\n/r0,0\n", Impairment(loss=0.2),
                      "losstest") as (_, targets):
        n = 1000
        clean = probe.answered_fraction(targets[0], n)
        lossy = probe.answered_fraction(targets[1], n)
    sd = math.sqrt(0.2 * 0.8 / n)
    print(f"achieved loss: {1 - lossy:.3f} (configured 0.200), control {1 - clean:.3f}")
    assert clean > 0.99
    assert abs((1 - lossy) - 0.2) < 4 * sd + 0.01


@pytest.mark.docker
def test_achieved_rate(docker_client, tmp_path: Path):
    """Rate shaping (issue W2 5/5: refused before, though this kernel has
    tbf): 200 kbit/s on one device, none on the other; both offered ~1.7
    Mbit/s of 1 KiB replies; measure the bit rate each delivers."""
    rate = 200_000
    with _two_devices(docker_client, tmp_path, "path,service_us,payload_bytes\n/r0,0,1024\n",
                      Impairment(rate_bps=rate), "ratetest") as (applied, targets):
        assert applied["how"].endswith("tbf")
        n, clean_bps = probe.delivered_rate(targets[0], "/r0", 600, 0.005)
        m, shaped_bps = probe.delivered_rate(targets[1], "/r0", 600, 0.005)
    print(f"achieved rate: {shaped_bps / 1e3:.1f} kbit/s (set {rate / 1e3:g}), {m} of 600 answered; "
          f"control {clean_bps / 1e3:.0f} kbit/s, {n} answered")
    assert n >= 594 and clean_bps > 5 * rate
    assert abs(shaped_bps - rate) < 0.1 * rate
    assert 60 < m < 300                      # the rest waited longer than tbf's queue and were dropped


def test_sidecar_keeps_net_admin_only_read_only_limited_on_the_harness_cores():
    """The impairment sidecar (issue W2 5/5): it ran as root with a writable
    root, no limits and no cpuset; now only NET_ADMIN, a read-only root,
    memory and pids limits, and the harness's (reserved) cores."""
    from wotbench.engine import netimpair as impair

    a = impair.sidecar_args("20261124-000000-t-abcdef", "nettools", impair.local_cores())
    assert (a["cap_drop"], a["cap_add"], a["security_opt"]) == (["ALL"], ["NET_ADMIN"], ["no-new-privileges"])
    tmpfs, labels = a["tmpfs"], a["labels"]
    assert isinstance(tmpfs, dict) and isinstance(labels, dict), (tmpfs, labels)
    assert a["read_only"] is True and set(tmpfs) == {"/run"}
    assert a["mem_limit"] == a["memswap_limit"] == impair.SIDECAR_MEMORY and a["pids_limit"] == impair.SIDECAR_PIDS
    import os
    assert a["cpuset_cpus"] == ",".join(map(str, sorted(os.sched_getaffinity(0))))
    assert labels["org.wotbench.run"] == "20261124-000000-t-abcdef"
    assert "cpuset_cpus" not in impair.sidecar_args("r", "nettools")      # a swarm node's engine chooses
