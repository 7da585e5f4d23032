"""Shared fixtures of the harness tests: spec files (specfiles.py), the `wotbench` CLI as a
subprocess, and a Docker engine with the images (tests that need it fail
when it is missing and CI=true, and skip otherwise)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wotbench.base import rundir as layout
from wotbench.engine.dockerenv import IMAGES, LABEL_RUN
from wotbench.tests.specfiles import load_spec, spec_file  # noqa: F401  (re-exported fixtures)

REPO = Path(__file__).resolve().parents[2]
#: Files that run first, in one piece: long indivisible tests (mypy over the
#: package, ~10 s of a core from a cold cache) and costly module fixtures
#: (mypy's cache for the folders outside the package; test_report's sweep of
#: two reported runs, ~3.5 s). Under xdist (make check: -n auto, --dist load)
#: the first worker's first batch takes them whole, so a fixture is not built
#: again on another worker and the run does not end on a 10 s test.
FIRST = ("harness/tests/test_tools.py", "reporting/tests/test_report.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of FIRST first, every other test in its order (a stable sort)."""
    items.sort(key=lambda item: not item.nodeid.startswith(FIRST))


def _need(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI=true: Docker tests must run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    import docker
    import docker.errors

    try:
        c = docker.from_env(timeout=120)
        c.ping()
    except docker.errors.DockerException as exc:
        _need(f"no Docker engine: {exc}")
    for role in ("device", "ge", "nettools"):
        try:
            c.images.get(IMAGES[role])
        except docker.errors.ImageNotFound:
            _need(f"image {IMAGES[role]} missing (make images)")
    yield c
    c.close()


@pytest.fixture(scope="session")
def swarm_lab_host(docker_client: Any) -> Any:
    """The Docker client, on a host fit for a Swarm lab (wotbench.engine.swarmlab):
    the node image built (make images-swarm) and the host in no swarm."""
    import docker.errors

    from wotbench.engine.swarmlab import NODE_IMAGE

    try:
        docker_client.images.get(NODE_IMAGE)
    except docker.errors.ImageNotFound:
        _need(f"image {NODE_IMAGE} missing (make images-swarm)")
    state = docker_client.info()["Swarm"]["LocalNodeState"]
    if state != "inactive":
        _need(f"the host is in a swarm ({state}); the Swarm lab makes its own")
    return docker_client


def small_spec(count: int = 3, measure: str = "8s", *, name: str = "t", extra: str = "",
               group_extra: str = "", rit: str = "exp:100ms") -> str:
    """A short, valid experiment for Docker tests."""
    return textwrap.dedent(f"""\
        name: {name}
        workload: {{seed: 3}}
        devices:
          - name: s
            count: {count}
            rit: {rit}
            service: exp:2ms
            mode: sleep
            threads: 2
        """) + textwrap.indent(textwrap.dedent(group_extra), "    ") + textwrap.dedent(f"""\
        gateway: {{type: con, timeout: 1s, ack_timeout: 500ms, max_retransmit: 2}}
        cd: {{enabled: true, rit: 200ms, calibration: 2s}}
        phases: {{warmup: 1s, measure: {measure}, cooldown: 1s}}
        validity: {{min_measure: 1s, min_requests: 10}}
        """) + textwrap.dedent(extra)


@pytest.fixture
def wotbench_cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs ``python -m wotbench.commands.main ARGS`` to completion."""

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "wotbench.commands.main", *args], cwd=REPO,
                              capture_output=True, text=True, timeout=timeout)

    return run


def labelled(client: Any, run_id: str | None = None) -> tuple[list[Any], list[Any]]:
    """Containers and networks carrying the run label (of one run or any)."""
    flt = {"label": f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN}
    return (client.containers.list(all=True, filters=flt, ignore_removed=True),
            client.networks.list(filters=flt))


@pytest.fixture
def make_spec() -> Callable[..., str]:
    return small_spec


@pytest.fixture
def run_objects(docker_client: Any) -> Callable[[str | None], tuple[list[Any], list[Any]]]:
    def objects(run_id: str | None = None) -> tuple[list[Any], list[Any]]:
        return labelled(docker_client, run_id)

    return objects


def headlines(run_dir: Path, terminal: str) -> dict[str, tuple[str, str | None]]:
    """(VERDICT, the check of the first reason) as summary.json, the terminal
    report, summary.md and index.html each state it (the outputs lead each
    reason with its check and a plain sentence; summary.json keeps the
    check's own reason)."""
    run = layout.RunDir(run_dir)
    summary = json.loads(run.summary.read_text())
    bad = [c["check"] for c in summary.get("checks", []) if not c["ok"]]
    term_reasons = re.findall(r"^   x (\w+):", terminal, re.M)
    md = (run.report_dir / layout.REPORT_MD).read_text()
    md_reasons = re.findall(r"^- (\w+):", md.split("Reasons:", 1)[1], re.M) if "Reasons:" in md else []
    page = (run.report_dir / layout.REPORT_HTML).read_text()
    li = re.search(r'<ul class="reasons"><li><a href="#check-\w+">(\w+)</a>', page)
    return {
        "summary.json": (summary["verdict"].upper(), bad[0] if summary["reasons"] and bad else None),
        "terminal": (re.search(r"^== \S+: (\w+)$", terminal, re.M).group(1),   # type: ignore[union-attr]
                     term_reasons[0] if term_reasons else None),
        "summary.md": (re.search(r"\*\*Verdict: (\w+)\*\*", md).group(1),      # type: ignore[union-attr]
                       md_reasons[0] if md_reasons else None),
        "index.html": (re.search(r'<span class="verdict \w+">(\w+)</span>', page).group(1),  # type: ignore[union-attr]
                       li.group(1) if li else None),
    }


@pytest.fixture
def one_headline(capsys: pytest.CaptureFixture[str]) -> Callable[[Path], tuple[str, str | None]]:
    """Runs `wotbench report RUN_DIR` (in-process: the command line itself is
    tested end to end in reporting/tests/test_missing_evidence.py), asserts
    that the four outputs state the same verdict and first failed check, and
    returns summary.json's verdict and first reason."""

    def check(run_dir: Path) -> tuple[str, str | None]:
        from wotbench.commands.main import main

        capsys.readouterr()                         # what the test printed before
        rc = main(["report", str(run_dir)])
        out, err = capsys.readouterr()
        assert rc == 0, err
        got = headlines(run_dir, out)
        assert len(set(got.values())) == 1, got
        summary = json.loads(layout.RunDir(run_dir).summary.read_text())
        return summary["verdict"].upper(), (summary["reasons"] or [None])[0]

    return check


class LiveRun:
    """`wotbench run` in the background, its stderr read line by line."""

    def __init__(self, spec: Path, results: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "wotbench.commands.main", "run", str(spec), "--results", str(results),
             "--no-progress", *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for line in list(self.lines):
                m = re.search(pattern, line)
                if m:
                    return m
            if self.proc.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.1)
        raise AssertionError(f"no line matching {pattern!r}; stderr:\n" + "\n".join(self.lines))

    def finish(self, timeout: float) -> int:
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running after {timeout} s; stderr:\n"
                                 + "\n".join(self.lines)) from None
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
                self._remove_leftovers()
        self._reader.join(timeout=5)
        return rc

    def _remove_leftovers(self) -> None:
        """A harness killed by the test cannot tear down: do it for it."""
        from wotbench.engine import dockerenv

        for line in self.lines:
            m = re.match(r"run (\S+)", line)
            if m:
                dockerenv.remove_labelled(dockerenv.client(), m.group(1))


@pytest.fixture
def live_run() -> Iterator[Callable[..., LiveRun]]:
    """``live_run(spec, results, *args)``: `wotbench run` in the background;
    one the test left running (it failed midway) is interrupted and its
    leftovers removed at the end of the test."""
    runs: list[LiveRun] = []

    def start(spec: Path, results: Path, *args: str) -> LiveRun:
        runs.append(LiveRun(spec, results, *args))
        return runs[-1]

    yield start
    for run in runs:
        if run.proc.poll() is None:
            run.proc.send_signal(signal.SIGINT)
            try:
                run.finish(timeout=60)
            except AssertionError:
                pass
