"""The reaper: removes a run's containers and networks when its harness dies
without tearing down (SIGKILL, OOM kill, a crash of the interpreter).

Every run starts one (:func:`start`): a small process in its own session, so
that a signal to the harness's process group does not reach it. It polls
whether the harness is alive (its pid, and the start time of that pid, so a
reused pid does not fool it) every ``POLL_S``; once the harness is gone it
removes everything labelled with the run id (what a normal teardown left is
nothing, so this is then a no-op) and exits. The harness stops it at the
end of its teardown. Measured: containers of a SIGKILLed harness are gone
within about POLL_S plus the removal time (harness/tests/test_reaper.py).

    python -m wotbench.engine.reaper RUN_ID HARNESS_PID RUN_DIR

It also rewrites the run's INCOMPLETE marker (if the run never finished)
to say that the harness died.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: How often the reaper looks whether its harness still runs.
POLL_S = 1.0


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def start(run_id: str, run_dir: Path) -> subprocess.Popen[bytes] | None:
    """Starts the reaper of ``run_id`` for this process; None if it cannot
    (the run goes on: `wotbench clean` and the next run still clean up)."""
    try:
        return subprocess.Popen([sys.executable, "-m", "wotbench.engine.reaper", run_id, str(os.getpid()),
                                 str(run_dir)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True, close_fds=True)
    except OSError:
        return None


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    """The harness tore down itself: the reaper is not needed."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


def reap(run_id: str, harness_pid: int, run_dir: Path, poll_s: float = POLL_S) -> int:
    born = _start_time(harness_pid)
    while born is not None and _start_time(harness_pid) == born:
        time.sleep(poll_s)
    from wotbench.base import results as res
    from wotbench.base import rundir as layout
    from wotbench.engine import dockerenv

    if (run_dir / layout.INCOMPLETE).exists():
        with contextlib.suppress(OSError):
            res.mark_incomplete(run_dir, f"the harness (pid {harness_pid}) died during the run without "
                                         "tearing down; its reaper removed the run's containers")

    try:
        dockerenv.remove_labelled(dockerenv.client(), run_id)
    except Exception:       # the engine is gone too: `wotbench clean` / the next run do it
        return 1
    return 0


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)          # a Ctrl-C is the harness's to handle
    run_id, pid, run_dir = argv[0], int(argv[1]), Path(argv[2])
    return reap(run_id, pid, run_dir)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
