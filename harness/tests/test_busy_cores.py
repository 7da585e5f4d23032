"""Two runs at once on one host (issue W2 5/5): a run whose GE would share a
core with the running GE of another run is refused before anything starts."""

from __future__ import annotations

import os
import socket

import pytest

from wotbench import _dockerenv as dockerenv, _results as res


@pytest.mark.docker
def test_run_refuses_a_core_held_by_another_runs_ge(docker_client, spec_file, make_spec, tmp_path, wotbench_cli):
    other = res.new_run_id("othersge")
    cores = sorted(os.sched_getaffinity(0))
    ge_core = cores[-1] if len(cores) > 1 else cores[0]          # where the plan puts this host's GE
    ct = docker_client.containers.run(
        dockerenv.IMAGES["nettools"], ["sleep", "60"], detach=True, cpuset_cpus=str(ge_core),
        network_mode="none", name=f"wb-test-{other[-6:]}-ge-0",
        labels={dockerenv.LABEL_RUN: other, dockerenv.LABEL_ROLE: "ge",
                dockerenv.LABEL_OWNER: f"{socket.gethostname()}:{os.getpid()}"})
    try:
        assert dockerenv.busy_ge_cores(docker_client).get(ge_core) == other
        r = wotbench_cli("run", str(spec_file(make_spec(count=2, measure="4s", name="busy"))),
                         "--results", str(tmp_path / "res"), "--no-progress", timeout=300)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert f"core(s) {ge_core} already run the GE of run {other}" in lines[0]
        assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
    finally:
        ct.remove(force=True)
