"""Teardown when the Docker engine stops answering (issue W2 5/5: dockerd
restarted mid-run left 9 containers and no hint). Real docker-py clients: one
on a socket where no engine listens, then the real engine; and a real
restart of this host's dockerd during a run."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import docker
import pytest

from wotbench.engine import Removed, dockerenv
from wotbench.execution.phases._teardown import with_engine
from wotbench.host import hostguard


def _remove(client) -> Removed:
    n_ct, n_net, stuck = dockerenv.remove_labelled(client, "20261124-000000-none-000000")
    return Removed(n_ct, n_net, tuple(stuck))


@pytest.mark.docker
def test_teardown_waits_for_the_engine_to_come_back(docker_client, tmp_path):
    gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    clients = iter([gone, gone, docker_client])
    said: list[str] = []
    assert with_engine(lambda: _remove(next(clients)), said.append, wait_s=30, retry_s=0.01) == Removed(0, 0, ())
    assert len(said) == 1 and "retrying the teardown" in said[0]


def test_teardown_gives_up_naming_wotbench_clean(tmp_path):
    gone = docker.DockerClient(base_url=f"unix://{tmp_path}/no-engine.sock", version="1.41")
    said: list[str] = []
    assert with_engine(lambda: _remove(gone), said.append, wait_s=0.2, retry_s=0.05) is None
    assert said[-1].startswith("error: the Docker engine did not answer") and "`wotbench clean`" in said[-1]


def _host_dockerd() -> int:
    """The pid of this host's dockerd (not a Swarm-lab node's: those run in
    other pid namespaces)."""
    own = os.readlink("/proc/self/ns/pid")
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "dockerd" and os.readlink(d / "ns/pid") == own:
                    return int(d.name)
            except OSError:
                continue
    raise AssertionError("no dockerd runs on this host")


def _alive(pid: int) -> bool:
    """``pid`` runs: it exists and is no zombie (a dockerd this process
    started and that has exited stays a zombie until it is reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    if state != "Z":
        return True
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return False


def _engine_up(timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
            return True
        time.sleep(0.3)
    return False


def _restart_dockerd() -> float:
    """Stops this host's dockerd (SIGTERM: it stops its containers, as
    `systemctl restart docker` does) and starts it again with the same
    command line, as .ci/setup.sh did. Returns the seconds it was away."""
    pid = _host_dockerd()
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    t = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    try:
        while _alive(pid):
            assert time.monotonic() - t < 60, "dockerd did not stop within 60 s"
            time.sleep(0.1)
    finally:                  # never leave the host without its engine
        with open("/var/log/dockerd.log", "ab") as log:
            subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        assert _engine_up(60), "dockerd did not come back within 60 s (see /var/log/dockerd.log)"
    return time.monotonic() - t


@pytest.mark.docker
def test_dockerd_restarted_mid_run(docker_client, live_run, spec_file, make_spec, tmp_path, run_objects):
    """The real fault (issue W2 5/5: the harness exited within ~3 s with a
    ConnectionError and no teardown line; 9 containers, 1 network and 3
    iptables rules stayed): dockerd is restarted in the measurement phase.
    The run fails in one line that says the engine went away, its folder
    says so in INCOMPLETE, and the teardown, retried until the engine is
    back, leaves no container, network or host-guard rule of the run."""
    if os.getuid() != 0:
        pytest.fail("restarting dockerd needs root")
    live = live_run(spec_file(make_spec(count=3, measure="30s", name="dockerd")), tmp_path / "res")
    run_id = live.wait_for(r"^run (\S+)", 60).group(1)
    live.wait_for(r"test starts at", 90)
    time.sleep(3)
    assert run_objects(run_id)[0], "the run's containers should be up"
    away = _restart_dockerd()
    assert live.finish(timeout=120) == 1, "\n".join(live.lines)
    errors = [ln for ln in live.lines if ln.startswith("error:")]
    assert len(errors) == 1 and "the Docker engine stopped answering during the run" in errors[0], live.lines
    assert any(ln.startswith("teardown: removed") for ln in live.lines), live.lines
    assert "Docker engine stopped answering" in (tmp_path / "res" / run_id / "INCOMPLETE").read_text()
    assert run_objects(run_id) == ([], []), f"left behind after dockerd was away {away:.1f} s"
    assert run_id not in {rid for _, rid, _ in hostguard.rules()}
