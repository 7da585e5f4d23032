"""Two runs at once on one host (issue W2 5/5): a run whose GE would share a
core with the running GE of another run is refused before anything starts,
also when both start at the same moment (host-wide claims, _coreclaim)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from wotbench.base import results as res
from wotbench.engine import dockerenv

REPO = Path(__file__).resolve().parents[2]


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
        assert f"core(s) {ge_core} already run the GE or gateway under test of run {other}" in lines[0]
        assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
    finally:
        ct.remove(force=True)


def test_claims_exclude_each_other_and_die_with_their_holder(tmp_path):
    """Two claims on one core (flock on the core's file): the second is a
    UserError naming the core and the holder; a killed holder frees it."""
    from wotbench.base.errors import UserError
    from wotbench.host.coreclaim import claim_ge_cores

    with claim_ge_cores([1, 3], "run of a", folder=tmp_path):
        with pytest.raises(UserError, match=r"core 3 is claimed by the GE or gateway under test of a run in "
                                            rf"progress on this host \(run of a, harness pid {os.getpid()}, since"
                           ) as err:
            with claim_ge_cores([3, 5], "run of b", folder=tmp_path):
                pass
        assert err.value.field == "placement"
        with claim_ge_cores([5], "run of b", folder=tmp_path):    # b held nothing after its refusal
            pass
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from wotbench.host.coreclaim import claim_ge_cores\n"
        f"with claim_ge_cores([3], 'run of c', folder=Path({str(tmp_path)!r})):\n"
        "    print('held', flush=True); time.sleep(600)")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UserError, match="run of c"):
            with claim_ge_cores([3], "run of d", folder=tmp_path):
                pass
    finally:
        holder.kill()
        holder.wait()
    with claim_ge_cores([3], "run of d", folder=tmp_path):        # SIGKILL released it
        pass


def test_a_gateway_under_tests_cores_are_claimed_with_the_ges(tmp_path):
    """A run claims its gateway's cores too: another run whose GE the plan
    puts on them is refused, naming the core."""
    from wotbench.base.errors import UserError
    from wotbench.execution.placement import make_plan
    from wotbench.execution.runner import claimed_cores
    from wotbench.host.coreclaim import claim_ge_cores

    def plan(gateway: int):
        return make_plan(range(6), reserve=(0,), ge_instances=1, cd_enabled=True, devices=4, affinity=True,
                         gateway_cores=gateway)
    with_gw, without = plan(1), plan(0)
    assert claimed_cores(with_gw) == {*with_gw.ge_cores, *with_gw.gateway_cores} and with_gw.gateway_cores == (5,)
    assert claimed_cores(without) == set(without.ge_cores)
    with claim_ge_cores(claimed_cores(with_gw), "run of gw", folder=tmp_path):
        with pytest.raises(UserError, match=r"core 5 is claimed by the GE or gateway under test .*run of gw"):
            with claim_ge_cores([5], "run of other", folder=tmp_path):
                pass


@pytest.mark.docker
def test_two_runs_started_together_one_refused(docker_client, spec_file, make_spec, tmp_path, run_objects):
    """Two `wotbench run` of specs whose GE takes the same core, started at
    the same moment (issue W2 5/5): one runs, the other is refused at once
    (exit 2, one line naming the core), before it creates anything."""
    spec = spec_file(make_spec(count=2, measure="4s", name="twins"))
    cmd = [sys.executable, "-m", "wotbench.commands.main", "run", str(spec), "--no-progress"]
    procs = [subprocess.Popen([*cmd, "--results", str(tmp_path / f"res{i}")], cwd=REPO, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=400) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outs
    refused = next(err for p, (_, err) in zip(procs, outs, strict=True) if p.returncode == 2)
    lines = refused.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:"), lines
    assert ("is claimed by the GE or gateway under test of a run in progress on this host (run of twins, harness pid"
            in lines[0])
    i = next(i for i, p in enumerate(procs) if p.returncode == 2)
    assert not (tmp_path / f"res{i}").exists() or not any((tmp_path / f"res{i}").iterdir())
    ran = Path(next(out for p, (out, _) in zip(procs, outs, strict=True) if p.returncode == 0).strip().splitlines()[-1])
    assert run_objects(ran.name) == ([], [])


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
#: A core number no host here has: the real claims' folder is shared with real runs.
FAR_CORE = 4093


def _root() -> None:
    if os.getuid() != 0:
        pytest.skip("acting as another user (nobody) needs root")


def _hold(path: Path, *prefix: str) -> subprocess.Popen[str]:
    """``flock -s path`` held by a process (as ``prefix``'s user) until killed."""
    p = subprocess.Popen([*prefix, "flock", "-s", str(path), "sh", "-c", "echo held; exec sleep 600"],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_user_holding_the_old_world_writable_lock_blocks_no_run():
    """Issue 23: any user could hold a read flock on
    /tmp/wotbench-ge-cores/core-N.lock (mode 1777) and refuse every run.
    The claims now live in a folder of root's, mode 0700, that nobody
    else can open a file in; a holder on the old path does not matter."""
    _root()
    from wotbench.host.coreclaim import CLAIM_DIR, claim_ge_cores

    old = Path("/tmp/wotbench-ge-cores")
    made = not old.exists()
    if made:                      # an older wotbench's folder is used as it is, never changed
        old.mkdir()
        old.chmod(0o1777)
    lock = old / f"core-{FAR_CORE}.lock"
    made_lock = not lock.exists()
    holder = _hold(lock, *NOBODY)
    try:
        with claim_ge_cores([FAR_CORE], "run of old-path"):
            pass
        st = CLAIM_DIR.stat()
        assert (st.st_uid, st.st_mode & 0o777) == (0, 0o700)
        denied = subprocess.run([*NOBODY, "flock", "-s", str(CLAIM_DIR / f"core-{FAR_CORE}.lock"), "true"],
                                check=False, capture_output=True, text=True)
        assert denied.returncode != 0 and "Permission denied" in denied.stderr
    finally:
        holder.kill()
        holder.wait()
        if made_lock:
            lock.unlink(missing_ok=True)
        if made:
            old.rmdir()


def test_a_foreign_holder_is_named(tmp_path):
    """A process that is not a wotbench run holding a core's lock: the run
    is refused naming its pid, user and command."""
    from wotbench.base.errors import UserError
    from wotbench.host.coreclaim import claim_folder, claim_ge_cores

    folder = tmp_path / "claims" / "cores"
    os.close(claim_folder(folder) or -1)
    holder = _hold(folder / "core-2.lock")
    try:
        with pytest.raises(UserError) as err, claim_ge_cores([2], "run of e", folder=folder):
            pass
        user = __import__("pwd").getpwuid(os.getuid()).pw_name
        assert (f"core 2 is claimed by a process that is not a wotbench run (pid {holder.pid}, user {user}, "
                f"command 'flock -s {folder}/core-2.lock sh -c") in str(err.value)
    finally:
        holder.kill()
        holder.wait()


@pytest.mark.parametrize("tamper", ["symlink", "world-writable", "foreign-owner", "file", "lock-symlink"])
def test_an_unsafe_claims_folder_is_refused_and_not_followed(tmp_path, tamper):
    """The claims' folder (or a lock file in it) that is a symlink, a file,
    writable by others or another user's: refused in one line naming it;
    nothing is created through it."""
    from wotbench.base.errors import UserError
    from wotbench.host.coreclaim import claim_ge_cores

    base = tmp_path / "claims"
    base.mkdir()
    folder, elsewhere = base / "cores", tmp_path / "elsewhere"
    elsewhere.mkdir()
    if tamper == "symlink":
        folder.symlink_to(elsewhere)
    elif tamper == "world-writable":
        folder.mkdir()
        folder.chmod(0o1777)
    elif tamper == "foreign-owner":
        _root()
        folder.mkdir(mode=0o700)
        os.chown(folder, 65534, 65534)
    elif tamper == "file":
        folder.write_text("")
    else:
        folder.mkdir(mode=0o700)
        (folder / "core-1.lock").symlink_to(elsewhere / "target")
    with pytest.raises(UserError, match=r"refusing to keep the GE core claims there") as err, \
            claim_ge_cores([1], "run of t", folder=folder):
        pass
    assert str(folder) in str(err.value) and "\n" not in str(err.value)
    assert list(elsewhere.iterdir()) == []
