"""The container engine behind a run: the :class:`Backend` interface the run
phases use, and its one implementation today, :class:`DockerBackend` (one
local Docker engine)."""

from wotbench.backend._api import (GE_ROLES, NODE_ROLES, Backend, ContainerSpec, ContainerState, Mount, Removed,
                                   Started)
from wotbench.backend._docker import COAP_PORT, DockerBackend

__all__ = ["Backend", "ContainerSpec", "ContainerState", "Mount", "Removed", "Started", "DockerBackend",
           "COAP_PORT", "NODE_ROLES", "GE_ROLES"]
