"""The experiment spec (docs/spec.md): one model, parsed once.

A spec file is read once, into frozen dataclasses validated when built;
every bad value is a :class:`wotbench.UserError` reading
``FILE:LINE: FIELD: what``. The objects travel (harness, tracegen,
reporting, capacity take them); the YAML does not::

    from wotbench.spec import load, load_saved
    runs = load("experiments/quickstart.yaml", scale="small")   # list[RunSpec]
    spec = runs[0].spec                   # Spec: groups, gateway, cd, phases, validity, ...
    spec.workload                         # what wotbench.tracegen.generate takes
    runs[0].yaml()                        # the test's document, saved as spec.yaml
    load_saved("results/<run>/spec.yaml") == spec

Values with units have one grammar (:mod:`wotbench.base.units`).
"""

from wotbench.base.errors import UserError
from wotbench.spec._capacity import CapacitySpec, Objective
from wotbench.spec._cluster import Cluster, NodeSelector
from wotbench.spec._devices import DeviceGroup, Impairment
from wotbench.spec._expand import RunSpec, load, load_saved, loads
from wotbench.spec._gateway_ut import NORTHS, SHIPPED, GatewayUnderTest
from wotbench.spec._interference import MIN_BUFFER, Interference
from wotbench.spec._model import Spec
from wotbench.spec._runcapture import RunCapture
from wotbench.spec._sections import MAX_GES, ContentionDetection, Gateway, Phases, Placement, Sweep
from wotbench.spec._validate import (
    QUIET,
    SEEDS,
    EpisodeClass,
    ValidateSpec,
    is_quiet,
    quiet_class,
    read_validate,
    spec_mode,
    trial_specs,
    with_seed,
)
from wotbench.spec._validity import Thresholds
from wotbench.spec._workload import (
    SEED_MAX,
    GroupWorkload,
    WorkloadSpec,
    parse_methods,
    parse_payload,
    resource_service_times,
)
from wotbench.spec._yaml import field_name, parse_key_path
from wotbench.spec.distributions import DistributionSpec

__all__ = [
    "load", "loads", "load_saved", "Spec", "RunSpec", "DeviceGroup", "Impairment", "Gateway",
    "ContentionDetection", "Placement", "Phases", "Sweep", "Thresholds", "CapacitySpec", "Objective",
    "Cluster", "NodeSelector", "Interference", "MIN_BUFFER", "MAX_GES",
    "WorkloadSpec", "GroupWorkload", "DistributionSpec", "parse_methods", "parse_payload",
    "resource_service_times", "parse_key_path", "field_name", "UserError",
    "GatewayUnderTest", "SHIPPED", "NORTHS", "RunCapture",
    "QUIET", "SEEDS", "EpisodeClass", "ValidateSpec", "read_validate", "trial_specs", "is_quiet", "quiet_class",
    "spec_mode", "with_seed", "SEED_MAX",
]
