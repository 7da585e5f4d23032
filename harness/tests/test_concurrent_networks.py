"""Runs started at the same moment on one host (issue W2 5/5): they used to
race for the first free subnet ("Pool overlaps with other one on this
address space", 6 of 18 starts failed). Real Docker: six backends create
their networks at once, all succeed on distinct subnets; a subnet taken
behind the backend's back is skipped."""

from __future__ import annotations

import ipaddress
from concurrent.futures import ThreadPoolExecutor

import docker
import docker.types
import pytest

from wotbench.base import results as res
from wotbench.engine import DockerBackend, dockerenv


@pytest.mark.docker
def test_six_runs_create_networks_at_once(docker_client):
    backends = [DockerBackend(docker_client, res.new_run_id(f"race{i}")) for i in range(6)]
    try:
        with ThreadPoolExecutor(6) as pool:
            counts = list(pool.map(lambda b: b.create_networks(3), backends))
        assert counts == [1] * 6
        subnets = [b.subnets[0] for b in backends]
        assert len(set(subnets)) == 6
        assert not any(a.overlaps(b) for i, a in enumerate(subnets) for b in subnets[i + 1:])
    finally:
        for b in backends:
            b.teardown()


@pytest.mark.docker
def test_subnet_taken_behind_the_backs_is_skipped(docker_client, monkeypatch):
    """The listing misses a network made by someone else (as if created after
    it): the create fails with a pool overlap and the next subnet is used."""
    backend = DockerBackend(docker_client, res.new_run_id("overlap"))
    first = dockerenv.free_subnets(dockerenv.used_subnets(docker_client), 1)[0]
    other = docker_client.networks.create(
        f"wb-test-overlap-{backend.short}", driver="bridge", internal=True,
        labels={dockerenv.LABEL_RUN: backend.run_id + "-other"},      # wotbench clean finds it if left
        ipam=docker.types.IPAMConfig(pool_configs=[docker.types.IPAMPool(subnet=str(first))]))
    real = dockerenv.used_subnets
    monkeypatch.setattr(dockerenv, "used_subnets",
                        lambda c: [n for n in real(c) if n != ipaddress.IPv4Network(first)])
    try:
        assert backend.create_networks(3) == 1
        assert backend.subnets[0] != first and not backend.subnets[0].overlaps(first)
    finally:
        backend.teardown()
        other.remove()
