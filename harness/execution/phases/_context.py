"""What the phases of one test share: the spec, the options, the engine,
the run folder, the monitors, the manifest being built, and the record of
what the harness observed (observed.json: it records, reporting judges)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from wotbench.base import results as res
from wotbench.base.rundir import RunDir
from wotbench.engine import Backend, ContainerState, Started
from wotbench.execution.monitor import Collectl, ContainerSampler
from wotbench.host.selfmon import HarnessSampler

if TYPE_CHECKING:
    from wotbench.spec import RunSpec, Spec

OBSERVED_FORMAT = 1


@dataclass
class RunOptions:
    results_root: Path = Path("results")
    progress: bool = True
    log: TextIO = field(default=sys.stderr)

    def say(self, msg: str) -> None:
        print(msg, file=self.log, flush=True)


@dataclass
class Observations:
    """Facts only the harness can see, as observed.json (docs/run-layout.md):
    container states at the end of the load, GE exit codes, output rows vs
    trace lines, when the GEs were up, the impairment applied, whether
    collectl ran. Nothing here is a verdict."""

    containers: dict[str, dict[str, Any]] = field(default_factory=dict)   # by container name
    ges: dict[str, dict[str, Any]] = field(default_factory=dict)          # by GE key: ge-<k>, cd-ge
    start: dict[str, Any] | None = None
    impairment: dict[str, Any] | None = None
    collectl: bool | dict[str, bool] | None = None     # per hostname on a swarm
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)   # swarm: hostname -> state, lost
    probe: dict[str, dict[str, Any]] = field(default_factory=dict)   # swarm: hostname -> probe counts
    partial: dict[str, int] = field(default_factory=dict)   # output kept of a GE killed before its end -> rows

    def started(self, st: Started) -> None:
        self.containers[st.name] = {"key": st.key, "role": st.role,
                                    **({"node": st.node} if st.node is not None else {}),
                                    **({"address": st.address} if st.address else {})}

    def states(self, states: Mapping[str, ContainerState]) -> None:
        for name, s in states.items():
            self.containers.setdefault(name, {}).update(
                status=s.status, exit_code=s.exit_code, oom_killed=s.oom_killed,
                **({"started_at": s.started_at} if s.started_at else {}),
                **({"restarts": s.restarts} if s.restarts is not None else {}),
                **({"addresses": list(s.addresses)} if s.addresses is not None else {}))

    def ge(self, key: str, **facts: Any) -> None:
        self.ges.setdefault(key, {}).update(facts)

    def to_json(self) -> dict[str, Any]:
        out = {"format": OBSERVED_FORMAT, "containers": self.containers, "ges": self.ges,
               "start": self.start, "impairment": self.impairment, "collectl": self.collectl}
        if self.nodes:
            out.update(nodes=self.nodes, probe=self.probe)
        if self.partial:
            out["partial"] = self.partial
        return out

    def write(self, run: RunDir) -> None:
        res.write_json(run.observed, self.to_json())


@dataclass
class RunContext:
    rs: RunSpec
    opts: RunOptions
    backend: Backend
    run: RunDir
    observed: Observations = field(default_factory=Observations)
    sampler: ContainerSampler = field(default_factory=ContainerSampler)
    self_sampler: HarnessSampler = field(default_factory=HarnessSampler)
    collectl: Collectl | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    gateway: Started | None = None
    """The gateway under test, once started and ready (None: the GEs talk to the devices)."""
    captures: list[Started] = field(default_factory=list)
    """The captures running (``capture:``): stopped after the load, or at teardown."""

    @property
    def hs(self) -> Spec:
        return self.rs.spec

    @property
    def run_id(self) -> str:
        return self.backend.run_id

    def say(self, msg: str) -> None:
        self.opts.say(msg)

    def clock_us(self, node: str | None) -> int:
        """How far ``node``'s clock is ahead of this host's (its engine's
        estimate; 0 on this host): add it to an instant of ours to get the
        same instant on that node's clock."""
        off = self.backend.clocks.get(node) if node is not None else None
        return int(off.offset_us) if off is not None else 0

    def started(self, containers: Iterable[Started]) -> None:
        """Records new containers and samples their cgroups from now on."""
        for st in containers:
            self.observed.started(st)
            if not self.backend.remote(st.node):          # the sampler reads this host's cgroups
                self.sampler.add(st.id, st.name, st.role)
