"""The ``gateway_under_test:`` section (docs/spec.md): the user's own CoAP
or HTTP gateway, run between the gateway emulators and the devices. Its
image (a Docker reference, or a gateway shipped with wotbench by name), its
command and environment, its own pinned cores, its limits, the protocol the
GEs speak to it (``north``), its port and how to tell that it is ready.
Only the shape is checked here; whether the image exists is preflight's
question, the cores placement's (:mod:`wotbench.execution.placement`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from wotbench.base import units
from wotbench.spec import _read as read
from wotbench.spec._capacity import Objective, _objectives
from wotbench.spec._yaml import KeyPath, YamlSource

__all__ = ["GatewayUnderTest", "SHIPPED", "NORTHS", "read_gateway_ut"]

#: The gateways shipped with wotbench (docker/build-images.sh builds
#: ``wotbench/gw-<name>``; their default command is the image's).
SHIPPED = ("libcoap", "aiocoap", "nodered")
#: What each shipped gateway speaks on its north side, and its port
#: (docker/gw-<name>.Dockerfile, its labels org.wotbench.gateway.*).
SHIPPED_NORTHS = {"libcoap": ("coap-uri", "coap-scheme"), "aiocoap": ("coap-scheme",),
                  "nodered": ("http",)}
SHIPPED_PORTS = {"libcoap": 5683, "aiocoap": 5683, "nodered": 1880}
#: What the GEs speak to the gateway (wotbench-ge --north).
NORTHS = ("coap-uri", "coap-scheme", "http")
#: Whose client the gateway sees over CoAP (wotbench-ge --north-sockets):
#: the GE's shared sockets, or each device's own.
SOCKETS = ("one", "per-device")
#: The shipped gateways that need ``per-device``: libcoap 4.3.1's proxy
#: keeps one upstream session per client endpoint, opened for its first
#: request, and sends all its later requests to that first device.
SHIPPED_PER_DEVICE = ("libcoap",)
#: Readiness checks: a CoAP ping (an empty CON answered by RST), a TCP
#: connect, or ``http:/PATH`` (any HTTP answer to GET PATH).
READY_KINDS = ("coap", "tcp", "http:/PATH")
DEFAULT_PORTS = {"coap-uri": 5683, "coap-scheme": 5683, "http": 8080}
DEFAULT_MEMORY = 512 << 20
DEFAULT_PIDS = 256
MAX_CORES = 64
_KEYS = {"image", "command", "env", "cores", "memory", "pids", "north", "port", "http_path", "http_conns",
         "ready", "ready_timeout", "objective", "sockets"}
#: A Docker image reference: [host[:port]/]path[:tag][@sha256:digest] (lower-case path components).
_IMAGE_RE = re.compile(
    r"(?:[A-Za-z0-9.-]+(?::[0-9]{1,5})?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?", re.ASCII)
_ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*", re.ASCII)
#: A path of an HTTP request target: printable ASCII, no space.
_PATH_RE = re.compile(r"/[\x21-\x7e]*", re.ASCII)


@dataclass(frozen=True)
class GatewayUnderTest:
    """A gateway container between the GEs and the devices."""

    image: str
    """A Docker image reference, or a name of :data:`SHIPPED`."""
    north: str
    port: int
    command: tuple[str, ...] | None = None
    """None: the image's own command."""
    env: tuple[tuple[str, str], ...] = ()
    cores: int = 1
    memory_bytes: int = DEFAULT_MEMORY
    pids: int = DEFAULT_PIDS
    http_path: str | None = None
    """``--north http``: the GE's request-target template (None: the GE's default)."""
    http_conns: int | None = None
    """``--north http``: the GE's keep-alive connections (None: the GE's default)."""
    sockets: str | None = None
    """CoAP north: ``one`` or ``per-device`` (wotbench-ge --north-sockets); None with http."""
    ready: str = "coap"
    """``coap``, ``tcp`` or ``http:/PATH``."""
    ready_timeout_us: int = 30_000_000
    objective: tuple[Objective, ...] = ()
    """The gateway's response-time objective (``{p99: 50ms}``; capacity's
    statistics); empty: the gateway answer judges its errors and faults only."""

    @property
    def shipped(self) -> str | None:
        """The shipped gateway's name, or None for the user's own image."""
        return self.image if self.image in SHIPPED else None

    @property
    def ready_path(self) -> str | None:
        """The path of an ``http:/PATH`` readiness check."""
        return self.ready[len("http:"):] if self.ready.startswith("http:") else None

    def to_dict(self) -> dict[str, Any]:
        return {"image": self.image, "shipped": self.shipped, "command": list(self.command or ()) or None,
                "env": dict(self.env), "cores": self.cores, "memory_bytes": self.memory_bytes,
                "pids": self.pids, "north": self.north, "port": self.port, "http_path": self.http_path,
                "http_conns": self.http_conns, "sockets": self.sockets, "ready": self.ready,
                "ready_timeout_s": self.ready_timeout_us / 1e6,
                "objective": {o.stat: o.limit_us for o in self.objective} or None}

    @classmethod
    def build(cls, v: Any, src: YamlSource, at: KeyPath) -> GatewayUnderTest:
        m = read.mapping(v, src, at, _KEYS)
        if "image" not in m:
            raise src.error(f"missing (a Docker image, or a shipped gateway: {', '.join(SHIPPED)})", *at, "image")
        if "north" not in m:
            raise src.error(f"missing (what the GEs speak to the gateway: {', '.join(NORTHS)})", *at, "north")
        north = read.choice(m["north"], src, at + ("north",), NORTHS)
        image = _image(m["image"], src, at + ("image",))
        if image in SHIPPED and north not in SHIPPED_NORTHS[image]:
            raise src.error(f"the shipped {image} gateway speaks {' or '.join(SHIPPED_NORTHS[image])}, "
                            f"not {north}", *at, "north")
        for key in ("http_path", "http_conns"):
            if key in m and north != "http":
                raise src.error("only with north: http", *at, key)
        if "sockets" in m and north == "http":
            raise src.error("only with north: coap-uri or coap-scheme", *at, "sockets")
        sockets = None if north == "http" else read.choice(
            m.get("sockets", "per-device" if image in SHIPPED_PER_DEVICE else "one"), src, at + ("sockets",),
            SOCKETS)
        ready = _ready(m.get("ready", "tcp" if north == "http" else "coap"), src, at + ("ready",))
        memory = read.value(units.parse_size, m["memory"], src, at + ("memory",)) if "memory" in m \
            else DEFAULT_MEMORY
        if memory < 6 << 20:
            raise src.error("Docker needs at least 6m", *at, "memory")
        timeout = read.duration(m.get("ready_timeout", "30s"), src, at + ("ready_timeout",))
        if not 100_000 <= timeout <= 600_000_000:
            raise src.error(f"expected 100ms .. 10m, got {units.short(m.get('ready_timeout'))}", *at, "ready_timeout")
        return cls(
            image=image,
            north=north,
            port=read.integer(m.get("port", SHIPPED_PORTS.get(image, DEFAULT_PORTS[north])), src, at + ("port",),
                              1, 65535),
            command=_command(m["command"], src, at + ("command",)) if "command" in m else None,
            env=_env(m.get("env"), src, at + ("env",)),
            cores=read.integer(m.get("cores", 1), src, at + ("cores",), 1, MAX_CORES),
            memory_bytes=memory,
            pids=read.integer(m.get("pids", DEFAULT_PIDS), src, at + ("pids",), 8, 1 << 22),
            http_path=_http_path(m["http_path"], src, at + ("http_path",)) if "http_path" in m else None,
            http_conns=read.integer(m["http_conns"], src, at + ("http_conns",), 1, 4096) if "http_conns" in m
            else None,
            sockets=sockets,
            ready=ready,
            ready_timeout_us=timeout,
            objective=_objectives(m["objective"], src, at + ("objective",)) if "objective" in m else (),
        )


def _image(v: Any, src: YamlSource, at: KeyPath) -> str:
    if not isinstance(v, str) or len(v) > 255 or not (v in SHIPPED or _IMAGE_RE.fullmatch(v)):
        raise src.error(f"expected a Docker image (name[:tag][@sha256:digest]) or a shipped gateway "
                        f"({', '.join(SHIPPED)}), got {units.short(v)}", *at)
    return v


def _command(v: Any, src: YamlSource, at: KeyPath) -> tuple[str, ...]:
    if not isinstance(v, list) or not v:
        raise src.error("expected a non-empty list of arguments, e.g. [coap-server, -P]", *at)
    for i, arg in enumerate(v):
        if not isinstance(arg, str) or "\x00" in arg:
            raise src.error(f"expected a string, got {units.short(arg)}", *at, i)
    return tuple(v)


def _env(v: Any, src: YamlSource, at: KeyPath) -> tuple[tuple[str, str], ...]:
    if v is None:
        return ()
    if not isinstance(v, dict):
        raise src.error("expected a mapping of variable names to values", *at)
    out = []
    for k, val in v.items():
        if not isinstance(k, str) or not _ENV_RE.fullmatch(k):
            raise src.error(f"not an environment variable name: {units.short(k)}", *at)
        if isinstance(val, bool) or not isinstance(val, (str, int, float)) or "\x00" in str(val):
            raise src.error(f"expected a string or a number, got {units.short(val)}", *at, k)
        out.append((k, str(val)))
    return tuple(out)


def _http_path(v: Any, src: YamlSource, at: KeyPath) -> str:
    if not isinstance(v, str) or len(v) > 1024 or not _PATH_RE.fullmatch(v):
        raise src.error(f"expected a request target starting with /, e.g. /proxy/{{coap_uri}}, "
                        f"got {units.short(v)}", *at)
    return v


def _ready(v: Any, src: YamlSource, at: KeyPath) -> str:
    if v in ("coap", "tcp") or (isinstance(v, str) and v.startswith("http:/") and len(v) <= 1024
                                and _PATH_RE.fullmatch(v[len("http:"):])):
        return str(v)
    raise src.error(f"expected {', '.join(READY_KINDS)}, got {units.short(v)}", *at)


def read_gateway_ut(v: Any, src: YamlSource) -> GatewayUnderTest | None:
    """The section, or None when the spec has none (the GEs talk to the devices)."""
    if v is None:
        return None
    if not isinstance(v, dict) or not v:
        raise src.error("expected a mapping with at least 'image' and 'north'", "gateway_under_test")
    return GatewayUnderTest.build(v, src, ("gateway_under_test",))
