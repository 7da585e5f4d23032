"""Synthetic run directories with known properties (reporting._synth)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from wotbench.reporting.bench.synth import SwarmSynth, SynthSpec, synth_run, synth_swarm_run

#: Small and fast, but long enough to pass the default measurement checks.
BASE = SynthSpec(devices=4, rit_us=20_000.0, measure_s=40.0, warmup_s=2.0, cooldown_s=1.0, calibration_s=15.0)


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """make_run(name, **SynthSpec fields) -> run directory."""

    def make(name: str = "run", **kw) -> Path:
        return synth_run(tmp_path / name, replace(BASE, **kw))

    return make


@pytest.fixture
def make_swarm(tmp_path: Path) -> Callable[..., Path]:
    """make_swarm(name, SwarmSynth(...), **SynthSpec fields) -> the run folder of a run across a swarm."""

    def make(name: str = "swarm", sw: SwarmSynth | None = None, **kw) -> Path:
        return synth_swarm_run(tmp_path / name, replace(BASE, **kw), sw or SwarmSynth())

    return make
