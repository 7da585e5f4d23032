"""Restarting this host's Docker engine: the one thing that frees a network
whose stale endpoint (moby#42119) the engine will not let go. It stops
every container on the engine, so `wotbench clean --restart-engine` asks
first (or takes ``--yes`` when stdin is not a terminal) and lists what
runs. With systemd: ``systemctl restart docker``. Without an init system
(as .ci/setup.sh starts it): the dockerd process at the other end of the
engine's socket (SO_PEERCRED: not any process named dockerd) is stopped
(SIGTERM; it stops its containers), and started again with the same command line,
environment and output files, in its own session, without any of this
process's descriptors; then ``docker info`` must answer."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from wotbench.base.errors import UserError

if TYPE_CHECKING:
    from docker import DockerClient

#: How long dockerd may take to stop (it stops its containers) and to answer again.
STOP_WAIT_S, START_WAIT_S = 120.0, 60.0
FIELD = "--restart-engine"


@dataclass(frozen=True)
class Dockerd:
    """A dockerd process to restart the way it was started."""

    pid: int
    started: str                    # its start time (/proc/<pid>/stat field 22): a reused pid is not it
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdout: str                     # where its output went (a file, else /dev/null)
    stderr: str


@dataclass(frozen=True)
class Plan:
    """How the engine is restarted: ``systemctl restart docker``, or a process."""

    systemd: bool
    dockerd: Dockerd | None = None

    def describe(self) -> str:
        if self.dockerd is None:
            return "systemctl restart docker"
        return f"dockerd pid {self.dockerd.pid} stopped, then started again as `{' '.join(self.dockerd.argv)}`"


def _start_time(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]
    except (OSError, IndexError):
        return None


def _gone(pid: int, started: str) -> bool:
    """Has process ``pid`` (started at ``started``) ended? A zombie has: its
    parent has not reaped it yet (reaped here when that parent is us)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return True
    if len(fields) < 20 or fields[19] != started:
        return True
    if fields[0] != "Z":
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    return True


def _output(pid: int, fd: int) -> str:
    """Where fd ``fd`` of ``pid`` writes: a regular file's path, else /dev/null."""
    try:
        target = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return os.devnull
    return target if target.startswith("/") and Path(target).is_file() else os.devnull


def _cwd(pid: int) -> str:
    """Where ``pid`` runs: its working folder, or ``/`` when that folder is
    gone (the kernel then names it "PATH (deleted)"): a restarted dockerd
    must not fail because the folder it was started from was removed."""
    cwd = os.readlink(f"/proc/{pid}/cwd")
    return cwd if Path(cwd).is_dir() else "/"


def _peer_pid(sock: str) -> int | None:
    """The pid of the process that answers on the unix socket ``sock``
    (SO_PEERCRED of a connection to it); None if nothing listens."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(5)
        try:
            s.connect(sock)
        except OSError:
            return None
        pid, _, _ = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid or None


def _socket() -> str:
    """The engine's socket path; a UserError when DOCKER_HOST names another host's."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        raise UserError(f"the engine is at {host} (DOCKER_HOST), not on this host's socket: restart that "
                        "engine on its own host", field=FIELD)
    return host[len("unix://"):]


def _process(sock: str) -> Dockerd:
    """The dockerd that answers on ``sock``, as it was started; a
    UserError when no dockerd of this pid namespace does."""
    pid = _peer_pid(sock)
    try:
        if pid is None or Path(f"/proc/{pid}/comm").read_text().strip() != "dockerd":
            raise OSError
        if os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid"):
            raise OSError
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        cwd = _cwd(pid)
    except OSError:
        raise UserError(f"no dockerd process of this host answers on {sock} "
                        f"({'nothing listens' if pid is None else f'pid {pid} is not one'}): restart the Docker "
                        "engine yourself", field=FIELD) from None
    pairs = (e.decode(errors="surrogateescape").partition("=") for e in env if b"=" in e)
    return Dockerd(pid, _start_time(pid) or "", tuple(a.decode(errors="surrogateescape") for a in argv),
                   {k: v for k, _, v in pairs}, cwd, _output(pid, 1), _output(pid, 2))


def restart_plan(yes: bool, tty: bool) -> Plan:
    """How this host's engine would be restarted; a UserError (before
    anything is removed) when it cannot or may not be: no one to confirm
    (stdin not a terminal, no ``--yes``), another host's engine, not
    root, no single dockerd process to restart."""
    if not yes and not tty:
        raise UserError("stdin is not a terminal, so nobody can confirm: add --yes to restart the Docker engine "
                        "without asking (it stops every container on the engine)", field=FIELD)
    sock = _socket()
    if os.geteuid() != 0:
        raise UserError("restarting the Docker engine needs root", field=FIELD)
    if Path("/run/systemd/system").is_dir() and shutil.which("systemctl"):
        return Plan(systemd=True)
    return Plan(systemd=False, dockerd=_process(sock))


def running_containers(c: DockerClient) -> list[str]:
    """``name (image)`` of every running container of the engine."""
    return sorted(f"{ct['Names'][0].lstrip('/')} ({ct.get('Image', '?')})" for ct in c.api.containers())


def consent(plan: Plan, stuck: list[str], running: list[str], args: argparse.Namespace,
            live: set[str], ask: Callable[[str], str] = input) -> bool:
    """Lists what a restart stops and asks (unless ``--yes``). Runs in
    progress are a UserError: their containers would stop."""
    if live and not args.all:
        raise UserError(f"wotbench run(s) in progress would lose their containers: {', '.join(sorted(live))}; "
                        "wait for them (or add --all)", field=FIELD)
    print(f"{', '.join(stuck)}: the engine keeps a stale endpoint (moby#42119); only a restart frees it")
    print(f"restarting the Docker engine ({plan.describe()}) STOPS these {len(running)} running container(s):"
          + "".join(f"\n  {r}" for r in running))
    if args.yes:
        return True
    try:
        answer = ask("restart the Docker engine now? [y/N] ")
    except EOFError:                       # Ctrl-D: no
        print()
        return False
    return answer.strip().lower() in ("y", "yes")


def _engine_up(timeout_s: float) -> DockerClient | None:
    import docker
    import docker.errors

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            c = docker.from_env(timeout=120)
            c.ping()
            return c
        except docker.errors.DockerException:
            time.sleep(0.3)
    return None


def _restart_process(d: Dockerd) -> None:
    os.kill(d.pid, signal.SIGTERM)
    end = time.monotonic() + STOP_WAIT_S
    while not _gone(d.pid, d.started):
        if time.monotonic() > end:
            raise UserError(f"dockerd pid {d.pid} did not stop within {STOP_WAIT_S:.0f} s of SIGTERM; "
                            "it was left running", field=FIELD)
        time.sleep(0.1)
    with open(d.stdout, "ab") as out, open(d.stderr, "ab") as err:
        # Detached as .ci/setup.sh starts it (setsid forks it off and
        # exits): never a child of this process, which would otherwise hold
        # it as a zombie after its next stop.
        subprocess.run(["setsid", "-f", *d.argv], env=d.env, cwd=d.cwd, stdin=subprocess.DEVNULL, stdout=out,
                       stderr=err, close_fds=True, check=True, timeout=10)


def restart(plan: Plan, say: Callable[[str], None]) -> DockerClient:
    """Restarts the engine as ``plan`` says; returns a client once it
    answers (a UserError naming where to look if it does not)."""
    t = time.monotonic()
    if plan.dockerd is None:
        r = subprocess.run(["systemctl", "restart", "docker"], check=False, capture_output=True, text=True,
                           timeout=STOP_WAIT_S + START_WAIT_S)
        if r.returncode != 0:
            raise UserError(f"systemctl restart docker failed: {r.stderr.strip()[:200]}", field=FIELD)
    else:
        _restart_process(plan.dockerd)
    c = _engine_up(START_WAIT_S)
    if c is None:
        log = plan.dockerd.stdout if plan.dockerd else "journalctl -u docker"
        raise UserError(f"the Docker engine did not answer within {START_WAIT_S:.0f} s of its restart "
                        f"(see {log})", field=FIELD)
    say(f"the Docker engine was restarted and answers again after {time.monotonic() - t:.1f} s")
    return c
