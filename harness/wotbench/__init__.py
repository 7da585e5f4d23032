"""WoTbench: a containerized CoAP device-emulation testbed."""

from wotbench._errors import UserError

__all__ = ["UserError"]
__version__ = "0.1.0"
