"""The container engine behind a run: the :class:`Backend` interface the run
phases use, and its implementations: :class:`DockerBackend` (one local
Docker engine) and :class:`SwarmBackend` (the nodes of a Docker Swarm)."""

from wotbench.engine._api import (
    ENGINE_GONE,
    GATEWAY_ROLE,
    GE_ROLES,
    HOG_ROLE,
    NODE_ROLES,
    Backend,
    ContainerSpec,
    ContainerState,
    Mount,
    Removed,
    Started,
)
from wotbench.engine._docker import COAP_PORT, DockerBackend
from wotbench.engine._remote import IO, ClockOffset
from wotbench.engine._swarm import SwarmBackend
from wotbench.engine._timing import PhaseTimes

__all__ = ["ENGINE_GONE", "Backend", "ContainerSpec", "ContainerState", "Mount", "Removed", "Started", "DockerBackend",
           "SwarmBackend", "ClockOffset", "IO", "COAP_PORT", "NODE_ROLES", "GE_ROLES", "HOG_ROLE", "GATEWAY_ROLE",
           "PhaseTimes"]
