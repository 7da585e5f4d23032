"""Fixtures of the experiment tests: the Docker engine with the images (the
harness's fixture: fails when missing and CI=true, skips otherwise)."""

from wotbench.tests.conftest import docker_client  # noqa: F401  (re-exported fixture)
