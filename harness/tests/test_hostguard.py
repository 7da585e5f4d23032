"""The host guard (issue W2 5/5): a probe in a run's network reached a
listener of the host on the bridge's gateway address. Real Docker, a real
listener: from a run's network, TCP and UDP to the host (on the run
bridge's gateway and on another address of the host) are dropped; the
same probe from an unguarded internal network gets through (so the
listener was reachable and the guard is what blocks); the rules go with
the run's networks."""

from __future__ import annotations

import socket
import threading

import pytest

from wotbench.base import results as res
from wotbench.engine import DockerBackend
from wotbench.engine.dockerenv import IMAGES, LABEL_RUN, hardening
from wotbench.host import hostguard

PROBE = ("for a in {addrs}; do "
         "if timeout 3 bash -c \"exec 3<>/dev/tcp/$a/{tcp}\" 2>/dev/null; then echo tcp-open $a; "
         "else echo tcp-blocked $a; fi; "
         "echo udp-$a > /dev/udp/$a/{udp}; done")


class Listener:
    """A TCP and a UDP listener on every address of the host."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("0.0.0.0", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 0))
        self.udp.settimeout(0.2)
        self.tcp.settimeout(0.2)
        self.accepted: list[str] = []
        self.datagrams: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def ports(self) -> tuple[int, int]:
        return self.tcp.getsockname()[1], self.udp.getsockname()[1]

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self.tcp.accept()
                self.accepted.append(peer[0])
                conn.close()
            except OSError:
                pass
            try:
                data, _ = self.udp.recvfrom(512)
                self.datagrams.append(data.decode(errors="replace").strip())
            except OSError:
                pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.tcp.close()
        self.udp.close()


def _probe(client, network: str, run_id: str, addrs: list[str], ports: tuple[int, int]) -> str:
    ct = client.containers.run(
        IMAGES["nettools"], ["bash", "-c", PROBE.format(addrs=" ".join(addrs), tcp=ports[0], udp=ports[1])],
        network=network, labels={LABEL_RUN: run_id}, user="65534", detach=True,
        **hardening(memory_bytes=64 << 20, pids=32))
    try:
        assert ct.wait(timeout=60)["StatusCode"] == 0
        logs: bytes = ct.logs()
        return logs.decode()
    finally:
        ct.remove(force=True)


@pytest.mark.docker
def test_a_run_network_cannot_reach_the_host(docker_client):
    if hostguard.available() is not None:
        pytest.fail(f"the host guard cannot be applied here: {hostguard.available()}")
    backend = DockerBackend(docker_client, res.new_run_id("guard"))
    control = res.new_run_id("guardctl")
    lst = Listener()
    try:
        backend.create_networks(1)
        guard = backend.host_changes["host_guard"]
        net = backend.networks[0]
        assert net.id is not None and net.name is not None
        assert guard["bridges"] == [f"br-{net.id[:12]}"] and "iptables" in guard["tools"]
        assert {rid for _, rid, _ in hostguard.rules()} >= {backend.run_id}
        ctl = docker_client.networks.create(f"wb-{control[-6:]}-ctl", driver="bridge", internal=True,
                                            labels={LABEL_RUN: control})
        ctl.reload()
        ctl_gw = ctl.attrs["IPAM"]["Config"][0]["Gateway"]
        run_gw = str(next(backend.subnets[0].hosts()))
        # From the run's network: its gateway and another address of the host.
        out = _probe(docker_client, net.name, backend.run_id, [run_gw, ctl_gw], lst.ports)
        assert out.split().count("tcp-blocked") == 2, out
        # The control: the same probe from an internal network without the guard gets through.
        out_ctl = _probe(docker_client, ctl.name, control, [ctl_gw], lst.ports)
        assert f"tcp-open {ctl_gw}" in out_ctl, out_ctl
        threading.Event().wait(0.5)
        assert lst.datagrams == [f"udp-{ctl_gw}"], lst.datagrams
        assert len(lst.accepted) == 1
    finally:
        lst.close()
        backend.teardown()
        from wotbench.engine import dockerenv
        dockerenv.remove_labelled(docker_client, control)
    assert backend.run_id not in {rid for _, rid, _ in hostguard.rules()}


def test_rules_are_found_and_removed_by_run(tmp_path):
    """guard / rules / drop against the real iptables (root): two runs'
    rules, one run's dropped, the other kept, then dropped as not kept."""
    why_not = hostguard.available()
    if why_not is not None:
        pytest.skip(why_not)
    a, b = res.new_run_id("ga"), res.new_run_id("gb")
    try:
        assert "iptables" in hostguard.guard("wbtestnoif0", a)
        hostguard.guard("wbtestnoif1", b)
        mine = {(rid, args[args.index("-i") + 1]) for _, rid, args in hostguard.rules() if rid in (a, b)}
        assert (a, "wbtestnoif0") in mine and (b, "wbtestnoif1") in mine
        assert hostguard.drop(a) >= 1
        left = {rid for _, rid, _ in hostguard.rules()}
        assert a not in left and b in left
        others = left - {b}
        assert hostguard.drop(None, keep=others) >= 1
        assert b not in {rid for _, rid, _ in hostguard.rules()}
    finally:
        hostguard.drop(a)
        hostguard.drop(b)
