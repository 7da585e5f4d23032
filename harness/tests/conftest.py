"""Shared fixtures of the harness tests: spec files, the `wotbench` CLI as a
subprocess, and a Docker engine with the images (tests that need it fail
when it is missing and CI=true, and skip otherwise)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from wotbench._dockerenv import IMAGES, LABEL_RUN

REPO = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def spec_file(tmp_path: Path) -> Callable[..., Path]:
    """Writes a dedented YAML spec to tmp_path and returns its path."""

    def write(text: str, name: str = "exp.yaml") -> Path:
        p = tmp_path / name
        p.write_text(textwrap.dedent(text).lstrip("\n"))
        return p

    return write


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
    """Runs ``python -m wotbench.cli ARGS`` to completion."""

    def run(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "wotbench.cli", *args], cwd=REPO,
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
    return lambda run_id=None: labelled(docker_client, run_id)
