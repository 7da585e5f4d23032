"""`wotbench clean --restart-engine` (issue 23): the one thing that frees a
network whose stale endpoint (moby#42119) the engine keeps, offered with
the user's consent because it stops every container on the engine. Its
refusals come before anything is removed; without the flag, clean names
the network and the flag. The real restart is tested like the dockerd
restart mid-run (test_teardown_engine.py): same command line, output
files and a `docker info` that answers again."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from wotbench.base import results as res
from wotbench.base.errors import UserError
from wotbench.engine import daemon as engine
from wotbench.engine import dockerenv
from wotbench.engine.cleanup import stale_message

REPO = Path(__file__).resolve().parents[2]
DEAD_PID = 4_194_303                          # above any pid_max: no such process


def _clean(*args: str, env: dict[str, str] | None = None, user: list[str] | None = None,
           ) -> subprocess.CompletedProcess[str]:
    """`wotbench clean ARGS` with stdin not a terminal."""
    return subprocess.run([*(user or []), sys.executable, "-m", "wotbench.commands.main", "clean", *args], cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)


def _one_error(r: subprocess.CompletedProcess[str], *words: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --restart-engine: "), r.stderr
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.docker
def test_restart_refused_without_a_terminal_before_anything_is_removed(docker_client):
    """No terminal, no --yes: nobody can confirm; exit 2 in one line, and
    not even the leftovers of a dead run are removed."""
    dead = res.new_run_id("deadclean")
    ct = docker_client.containers.create(dockerenv.IMAGES["device"], ["--help"], name=f"wb-test-{dead[-6:]}",
                                         labels={dockerenv.LABEL_RUN: dead,
                                                 dockerenv.LABEL_OWNER: f"{socket.gethostname()}:{DEAD_PID}"})
    try:
        _one_error(_clean("--restart-engine"), "stdin is not a terminal", "--yes", "stops every container")
        ct.reload()                            # still there: nothing was done
    finally:
        ct.remove(force=True)


def test_restart_refused_for_an_engine_of_another_host():
    _one_error(_clean("--restart-engine", "--yes", env={"DOCKER_HOST": "tcp://192.0.2.1:2376"}),
               "tcp://192.0.2.1:2376", "not on this host")


def test_restart_refused_when_nothing_of_this_host_answers_on_the_socket(tmp_path):
    _one_error(_clean("--restart-engine", "--yes", env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock"}),
               f"{tmp_path}/none.sock", "nothing listens")


def test_yes_alone_is_refused():
    r = _clean("--yes")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "error: --yes: consents to an engine restart: it goes only with --restart-engine"], r.stderr


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
#: The same user with one capability, CAP_DAC_READ_SEARCH (ambient, so that
#: the Python it executes keeps it): not root, but it may enter every
#: folder, so a checkout or a venv under a folder others may not enter (the
#: 0700 folder of `mktemp -d` a clean clone may live in) still runs.
NOBODY_READING = [*NOBODY, "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
CAP_DAC_READ_SEARCH = 2


def _may_grant_read_search() -> bool:
    """CAP_DAC_READ_SEARCH is in this process's bounding set (not so for
    root in a container with Docker's default capabilities)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapBnd:"):
            return bool(int(line.split()[1], 16) >> CAP_DAC_READ_SEARCH & 1)
    return False


def _not_runnable_by_nobody() -> str | None:
    """Why uid 65534 cannot run wotbench from this checkout (None when it
    can): a folder above the checkout, or above the Python it runs, that
    others may not enter."""
    why = []
    exe = Path(sys.executable)
    for what, flag, path, fix in (
            (f"read the checkout {REPO}", "-r", REPO / "harness" / "__init__.py",
             "`chmod 755 {}`, or clone under a folder others may enter"),
            (f"run its Python {exe} ({exe.resolve()})", "-x", exe,
             "`chmod o+x {}`, or make the venv from a Python others may run")):
        if subprocess.run([*NOBODY, "test", flag, str(path)], check=False).returncode == 0:
            continue
        real = path.resolve()
        shut = next((d for d in (*reversed(real.parents), real) if not d.stat().st_mode & 0o001), None)
        why.append(what + (f" ({shut} is mode {shut.stat().st_mode & 0o777:o}: {fix.format(shut)})" if shut else ""))
    return ("uid 65534, which this test runs wotbench as, cannot " + " nor ".join(why)) if why else None


def test_restart_refused_to_a_user_who_is_not_root():
    if os.getuid() != 0:
        pytest.skip("acting as another user (nobody) needs root")
    user = NOBODY_READING if _may_grant_read_search() else NOBODY
    why = None if user is NOBODY_READING else _not_runnable_by_nobody()
    if why is not None:          # the host's set-up, not the code: plain, and never silent in CI
        (pytest.fail if os.environ.get("CI") == "true" else pytest.skip)(
            why + " (and CAP_DAC_READ_SEARCH, which would let it, is not in this process's bounding set)")
    r = _clean("--restart-engine", "--yes", user=user, env={"HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1"})
    _one_error(r, "needs root")


@pytest.mark.docker
def test_restart_not_done_when_no_network_is_stuck(docker_client):
    """--restart-engine --yes for a run with nothing stuck: removes, says
    the engine was not restarted, and dockerd is the same process."""
    plan = engine.restart_plan(yes=True, tty=False)
    before = plan.dockerd.pid if plan.dockerd else None
    r = _clean("--run", res.new_run_id("nothingstuck"), "--restart-engine", "--yes")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "no network is stuck: the Docker engine was not restarted" in r.stdout
    after = engine.restart_plan(yes=True, tty=False)
    assert (after.dockerd.pid if after.dockerd else None) == before


@pytest.mark.docker
def test_the_plan_restarts_this_hosts_dockerd_as_it_was_started(docker_client):
    """Without systemd: the dockerd serving the socket, its command line
    and where its output goes (no restart here)."""
    plan = engine.restart_plan(yes=True, tty=False)
    if plan.systemd:
        assert plan.describe() == "systemctl restart docker"
        return
    assert plan.dockerd is not None
    cmdline = Path(f"/proc/{plan.dockerd.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    assert list(plan.dockerd.argv) == [a.decode() for a in cmdline]
    assert Path(f"/proc/{plan.dockerd.pid}/comm").read_text().strip() == "dockerd"


def test_clean_names_the_stale_network_and_the_flag():
    line = stale_message(["wb-abc123-net1"], ["wb-x-dev-1 (wotbench/device:latest)", "db (postgres)"])
    assert "wb-abc123-net1" in line and "moby#42119" in line and "\n" not in line
    assert "`wotbench clean --restart-engine`" in line and "stops every container on the engine (2 running now)" in line
    remote = stale_message(["node-2: wb-abc123-net0"], [])
    assert "--restart-engine" not in remote and "node named" in remote


def _args(**kw: bool) -> argparse.Namespace:
    return argparse.Namespace(**{"yes": False, "all": False, **kw})


def test_consent_lists_what_stops_and_takes_only_a_yes(capsys):
    plan = engine.Plan(systemd=True)
    running = ["db (postgres)", "wb-x-dev-1 (wotbench/device:latest)"]
    assert not engine.consent(plan, ["wb-a-net0"], running, _args(), set(), ask=lambda _: "")
    assert not engine.consent(plan, ["wb-a-net0"], running, _args(), set(), ask=lambda _: "no")
    assert engine.consent(plan, ["wb-a-net0"], running, _args(), set(), ask=lambda _: "y")

    def eof(_: str) -> str:
        raise EOFError                                  # Ctrl-D at the question: no
    assert not engine.consent(plan, ["wb-a-net0"], running, _args(), set(), ask=eof)
    out = capsys.readouterr().out
    assert "STOPS these 2 running container(s):\n  db (postgres)\n  wb-x-dev-1" in out
    with pytest.raises(UserError, match="run\\(s\\) in progress would lose their containers: 2026"):
        engine.consent(plan, ["wb-a-net0"], running, _args(yes=True), {"20261126-000000-live-abcdef"})


@pytest.mark.docker
@pytest.mark.slow
def test_a_real_restart_brings_dockerd_back_as_it_was(docker_client):
    """The restart itself, on this host's engine (it stops every container
    on it: run only under the host's Docker lock, as CI does): dockerd is a
    new process with the same command line, and the engine answers."""
    if os.getuid() != 0:
        pytest.fail("restarting dockerd needs root")
    plan = engine.restart_plan(yes=True, tty=False)
    if plan.systemd:
        pytest.skip("systemd restarts it: nothing of ours to check")
    assert plan.dockerd is not None
    said: list[str] = []
    client = engine.restart(plan, said.append)
    assert client.ping()
    again = engine.restart_plan(yes=True, tty=False)
    assert again.dockerd is not None and again.dockerd.pid != plan.dockerd.pid
    assert (again.dockerd.argv, again.dockerd.stdout) == (plan.dockerd.argv, plan.dockerd.stdout)
    assert said and said[0].startswith("the Docker engine was restarted and answers again after")


def test_a_dockerd_whose_folder_was_removed_restarts_from_the_root(tmp_path):
    """A process's working folder that no longer exists reads as "PATH
    (deleted)"; the restart must then start dockerd in / instead of failing
    (found when a CI clone that had started dockerd was removed)."""
    gone = tmp_path / "clone"
    gone.mkdir()
    child = subprocess.Popen(["sleep", "30"], cwd=gone)
    try:
        assert engine._cwd(child.pid) == str(gone)
        gone.rmdir()
        assert os.readlink(f"/proc/{child.pid}/cwd").endswith("(deleted)")
        assert engine._cwd(child.pid) == "/"
    finally:
        child.kill()
        child.wait()
