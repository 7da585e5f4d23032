"""Workload description: validated dataclasses and the YAML spec parser.

``parse_workload(doc, src)`` reads the keys tracegen owns (docs/spec.md):
``workload`` and the workload keys of each ``devices`` group; it reads (but
does not own) ``cd.rit``, ``cd.service``, ``cd.calibration`` and ``phases``
because they decide the CD trace and the trace length. Harness-owned keys of
a device group are accepted and ignored; any other key is an error.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wotbench._errors import UserError
from wotbench.formats import MAX_PAYLOAD_BYTES, MAX_SERVICE_US, METHODS
from wotbench.tracegen._distribution import Distribution, parse_distribution
from wotbench.tracegen._units import parse_count, parse_duration
from wotbench._yamlsrc import YamlSource, field_name

__all__ = [
    "Distribution", "GroupWorkload", "WorkloadSpec", "parse_workload", "parse_duration",
    "parse_distribution", "parse_methods", "from_source", "spec_from_file", "GROUP_KEYS",
    "HARNESS_GROUP_KEYS", "WORKLOAD_KEYS",
]

#: Keys of a ``devices`` group that tracegen validates.
GROUP_KEYS: frozenset[str] = frozenset(
    {"name", "count", "rit", "service", "methods", "payload_bytes", "resources"})
#: Keys of a ``devices`` group that belong to the harness (accepted, not read here).
HARNESS_GROUP_KEYS: frozenset[str] = frozenset(
    {"mode", "threads", "queue", "cpus", "memory", "impairment"})
#: Keys of the ``workload`` section.
WORKLOAD_KEYS: frozenset[str] = frozenset({"seed", "duration", "requests", "rit_scope", "rit"})

DEFAULT_RESOURCES = 64
MAX_RESOURCES = 65536
MAX_DEVICES = 2**31 - 2          # device ids 0..N-1 plus the CD node's id N
DEFAULT_CD_RIT_US = 1_000_000


@dataclass(frozen=True)
class GroupWorkload:
    """One group of identical devices: how many, how often, how long each request takes."""

    name: str
    count: int
    service: Distribution
    rit: Distribution | None = None
    """Per-device RIT (``rit_scope: device``); None with ``rit_scope: gateway``."""
    methods: tuple[tuple[str, float], ...] = (("GET", 1.0),)
    """(method, share) pairs, shares normalised to sum 1."""
    payload_bytes: int = 0
    """Request payload size for PUT and POST."""
    resources: int = DEFAULT_RESOURCES
    resource_service_us: np.ndarray = field(init=False, compare=False, repr=False)
    """Service time (us) of resource /r/<k>, ascending; see :func:`resource_service_times`."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c in self.name for c in ",\n"):
            raise UserError(f"group name must be a non-empty string without commas, got {self.name!r}",
                            field="name")
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise UserError(f"a group needs at least 1 device, got {self.count!r}", field="count")
        if self.service.kind == "mmpp2":
            raise UserError("mmpp2 is an arrival process: not allowed for service times", field="service")
        if self.rit is not None and not self.rit.mean_us() > 0:
            raise UserError("the mean inter-arrival time must be > 0", field="rit")
        if not self.methods:
            raise UserError("at least one method needs a share > 0", field="methods")
        total = 0.0
        for m, share in self.methods:
            if m not in METHODS:
                raise UserError(f"unknown method {m!r} (one of {', '.join(METHODS)})", field="methods")
            if not (isinstance(share, (int, float)) and math.isfinite(share) and share >= 0):
                raise UserError(f"share of {m} must be a number >= 0, got {share!r}", field="methods")
            total += share
        if not total > 0:
            raise UserError("at least one method needs a share > 0", field="methods")
        object.__setattr__(self, "methods", tuple((m, s / total) for m, s in self.methods))
        if isinstance(self.payload_bytes, bool) or not isinstance(self.payload_bytes, int) \
                or not 0 <= self.payload_bytes <= MAX_PAYLOAD_BYTES:
            raise UserError(f"must be an integer 0..{MAX_PAYLOAD_BYTES}, got {self.payload_bytes!r}",
                            field="payload_bytes")
        if isinstance(self.resources, bool) or not isinstance(self.resources, int) \
                or not 1 <= self.resources <= MAX_RESOURCES:
            raise UserError(f"must be an integer 1..{MAX_RESOURCES}, got {self.resources!r}",
                            field="resources")
        table = resource_service_times(self.service, self.resources)
        if table[-1] > MAX_SERVICE_US:
            raise UserError(
                f"{self.service.text}: its slowest resource would take {int(table[-1])} us, "
                f"more than the device's limit of {MAX_SERVICE_US} us (use fewer resources or a lighter tail)",
                field="service")
        object.__setattr__(self, "resource_service_us", table)

    @property
    def method_shares(self) -> np.ndarray:
        """Share of each of formats.METHODS (GET, PUT, POST, DELETE), summing to 1."""
        shares = dict(self.methods)
        return np.array([shares.get(m, 0.0) for m in METHODS])

    @property
    def resource_mean_us(self) -> float:
        """Mean service time of a request (resources are chosen uniformly)."""
        return float(self.resource_service_us.mean())


def resource_service_times(service: Distribution, k: int) -> np.ndarray:
    """Service times (whole us, ascending) of k resources that reproduce ``service``.

    Resource j gets the conditional mean of the j-th of k equal-probability
    bins of the distribution (``Distribution.bin_means``), and each request
    picks one resource uniformly at random. The per-request service times
    then have exactly the target mean (up to rounding to whole us) and a CDF
    within 1/k of the target's everywhere.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        means = service.bin_means(k)
    means = np.where(np.isfinite(means), means, np.inf)
    return np.maximum(np.rint(np.minimum(means, 2.0**62)), 0).astype(np.int64)


@dataclass(frozen=True)
class WorkloadSpec:
    """A whole workload: device groups (ids 0..N-1 in group order), length, seed, CD workload."""

    groups: tuple[GroupWorkload, ...]
    seed: int = 1
    duration_us: int | None = None
    requests: int | None = None
    rit_scope: str = "device"
    rit: Distribution | None = None
    """Aggregate RIT of the GE (``rit_scope: gateway``)."""
    cd_rit_us: int = DEFAULT_CD_RIT_US
    cd_service_us: int | None = None
    """None: the mean service time of the devices under test (weighted by request rate)."""
    cd_calibration_us: int = 0
    """The CD trace also covers this long CD-only period before the devices' t0."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        if not self.groups:
            raise UserError("at least one device group is needed (zero devices)", field="devices")
        names = [g.name for g in self.groups]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise UserError(f"group name {sorted(dup)[0]!r} is used twice", field="devices")
        if self.n_devices > MAX_DEVICES:
            raise UserError(f"too many devices ({self.n_devices})", field="devices")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise UserError(f"seed must be an integer >= 0, got {self.seed!r}", field="workload.seed")
        if (self.duration_us is None) == (self.requests is None):
            raise UserError("give exactly one of duration and requests", field="workload.duration")
        if self.duration_us is not None and not (isinstance(self.duration_us, int) and self.duration_us > 0):
            raise UserError(f"duration must be > 0, got {self.duration_us!r}", field="workload.duration")
        if self.requests is not None and not (isinstance(self.requests, int) and self.requests > 0):
            raise UserError(f"requests must be > 0, got {self.requests!r}", field="workload.requests")
        if self.rit_scope not in ("device", "gateway"):
            raise UserError(f"must be 'device' or 'gateway', got {self.rit_scope!r}", field="workload.rit_scope")
        if self.rit_scope == "gateway":
            if self.rit is None:
                raise UserError("rit_scope gateway needs workload.rit (the GE's aggregate RIT)",
                                field="workload.rit")
            for i, g in enumerate(self.groups):
                if g.rit is not None:
                    raise UserError("with rit_scope gateway the RIT is set once, in workload.rit",
                                    field=f"devices[{i}].rit")
        else:
            if self.rit is not None:
                raise UserError("workload.rit needs rit_scope: gateway (else give each group a rit)",
                                field="workload.rit")
            for i, g in enumerate(self.groups):
                if g.rit is None:
                    raise UserError("missing rit (per-device RIT distribution)", field=f"devices[{i}].rit")
        if not (isinstance(self.cd_rit_us, int) and self.cd_rit_us > 0):
            raise UserError(f"must be > 0, got {self.cd_rit_us!r}", field="cd.rit")
        if self.cd_service_us is not None and not (
                isinstance(self.cd_service_us, int) and 0 <= self.cd_service_us <= MAX_SERVICE_US):
            raise UserError(f"must be 0..{MAX_SERVICE_US} us, got {self.cd_service_us!r}", field="cd.service")
        if not (isinstance(self.cd_calibration_us, int) and self.cd_calibration_us >= 0):
            raise UserError(f"must be >= 0, got {self.cd_calibration_us!r}", field="cd.calibration")

    @property
    def n_devices(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def cd_device_id(self) -> int:
        """Device id of the CD node in the CD trace: one past the last device."""
        return self.n_devices

    def group_of_device(self) -> np.ndarray:
        """Group index (into ``groups``) of each device id 0..N-1."""
        return np.repeat(np.arange(len(self.groups)), [g.count for g in self.groups])

    def device_rate_per_us(self) -> np.ndarray:
        """Intended request rate of each group's devices (requests per us), by group."""
        if self.rit_scope == "gateway":
            assert self.rit is not None
            per = 1.0 / self.rit.mean_us() / self.n_devices
            return np.full(len(self.groups), per)
        return np.array([1.0 / g.rit.mean_us() for g in self.groups])  # type: ignore[union-attr]

    def aggregate_rate_per_us(self) -> float:
        return float((self.device_rate_per_us() * [g.count for g in self.groups]).sum())

    def mean_service_us(self) -> float:
        """Mean service time of a request over all devices (weighted by intended request rate)."""
        w = self.device_rate_per_us() * np.array([g.count for g in self.groups])
        s = np.array([g.resource_mean_us for g in self.groups])
        return float((w * s).sum() / w.sum())

    def cd_service_effective_us(self) -> int:
        """The CD node's service time: as given, else the devices' mean (paper section 6.2)."""
        if self.cd_service_us is not None:
            return self.cd_service_us
        return int(round(self.mean_service_us()))


# ---------------------------------------------------------------------------
# YAML spec


def parse_methods(value: object, field_: str) -> tuple[tuple[str, float], ...]:
    """``{GET: 0.9, PUT: 0.1}`` (shares, normalised later); a bare ``GET`` means all GET."""
    if isinstance(value, str):
        value = {value: 1.0}
    if not isinstance(value, Mapping) or not value:
        raise UserError(f"expected a mapping of method to share like {{GET: 0.9, PUT: 0.1}}, got {value!r}",
                        field=field_)
    out = []
    for m, share in value.items():
        if not isinstance(m, str) or m not in METHODS:
            raise UserError(f"unknown method {m!r} (one of {', '.join(METHODS)})", field=f"{field_}.{m}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or share < 0:
            raise UserError(f"share must be a number >= 0, got {share!r}", field=f"{field_}.{m}")
        out.append((m, float(share)))
    return tuple(out)


def _check_keys(src: YamlSource, section: Mapping[str, Any], allowed: frozenset[str],
                *path: str | int) -> None:
    for key in section:
        if key not in allowed:
            raise src.error(f"unknown key (expected one of {', '.join(sorted(allowed))})", *path, key)


def _payload(value: object, field_: str) -> int:
    """A byte count: an integer, or a string with B or KB (``16``, ``"512B"``, ``"1KB"``)."""
    if isinstance(value, str):
        text = value.strip()
        for unit, mult in (("KB", 1024), ("B", 1)):
            if text.upper().endswith(unit) and text[: -len(unit)].strip().isdigit():
                value = int(text[: -len(unit)].strip()) * mult
                break
    return parse_count(value, field_, minimum=0, maximum=MAX_PAYLOAD_BYTES)


def _harness_group_keys() -> frozenset[str]:
    """The harness owns these keys; its own list is the authority when it is importable."""
    try:
        from wotbench._spec import HARNESS_GROUP_KEYS as theirs
    except ImportError:
        return HARNESS_GROUP_KEYS
    return HARNESS_GROUP_KEYS | frozenset(theirs)


def _group(src: YamlSource, item: object, i: int) -> GroupWorkload:
    path = ("devices", i)
    if not isinstance(item, Mapping):
        raise src.error("a device group must be a mapping (count, rit, service, ...)", *path)
    _check_keys(src, item, GROUP_KEYS | _harness_group_keys(), *path)
    for key in ("count", "service"):
        if key not in item:
            raise src.error("missing", *path, key)

    def fname(key: str) -> str:
        return f"devices[{i}].{key}"

    with src.at(*path, "name"):
        name = item.get("name", f"group{i}")
        if not isinstance(name, str):
            raise UserError(f"must be a string, got {name!r}", field=fname("name"))
    with src.at(*path, "count"):
        count = parse_count(item["count"], fname("count"), minimum=1, maximum=MAX_DEVICES)
    with src.at(*path, "service"):
        service = parse_distribution(item["service"], fname("service"), role="service",
                                     base_dir=src.base_dir)
    rit = None
    if "rit" in item:
        with src.at(*path, "rit"):
            rit = parse_distribution(item["rit"], fname("rit"), role="rit", base_dir=src.base_dir)
    methods: tuple[tuple[str, float], ...] = (("GET", 1.0),)
    if "methods" in item:
        with src.at(*path, "methods"):
            methods = parse_methods(item["methods"], fname("methods"))
    payload = 0
    if "payload_bytes" in item:
        with src.at(*path, "payload_bytes"):
            payload = _payload(item["payload_bytes"], fname("payload_bytes"))
    resources = DEFAULT_RESOURCES
    if "resources" in item:
        with src.at(*path, "resources"):
            resources = parse_count(item["resources"], fname("resources"), minimum=1, maximum=MAX_RESOURCES)
    try:
        return GroupWorkload(name, count, service, rit, methods, payload, resources)
    except UserError as err:
        # GroupWorkload names its own key ("count"); place it in the spec.
        sub = (err.field,) if err.field in GROUP_KEYS else ()
        err.field = field_name(path + sub)
        err.file, err.line = src.name, src.line(*path, *sub)
        raise


def parse_workload(doc: object, src: YamlSource) -> WorkloadSpec:
    """Build the WorkloadSpec of a whole loaded spec (``doc`` is ``src.data``)."""
    if not isinstance(doc, Mapping):
        raise src.error("the spec must be a mapping with 'workload' and 'devices' sections")
    wl = doc.get("workload", {})
    if wl is None:
        wl = {}
    if not isinstance(wl, Mapping):
        raise src.error("must be a mapping", "workload")
    _check_keys(src, wl, WORKLOAD_KEYS, "workload")

    devices = doc.get("devices")
    if devices is None:
        raise src.error("missing 'devices' (a list of device groups)", "devices")
    if not isinstance(devices, list):
        raise src.error("must be a list of device groups", "devices")
    if not devices:
        raise src.error("zero devices: give at least one device group", "devices")
    groups = tuple(_group(src, item, i) for i, item in enumerate(devices))

    kw: dict[str, Any] = {}
    if "seed" in wl:
        with src.at("workload", "seed"):
            kw["seed"] = parse_count(wl["seed"], "workload.seed", minimum=0, maximum=2**63 - 1)
    if "duration" in wl and "requests" in wl:
        raise src.error("give either duration or requests, not both", "workload", "requests")
    if "duration" in wl:
        with src.at("workload", "duration"):
            kw["duration_us"] = parse_duration(wl["duration"], "workload.duration")
    if "requests" in wl:
        with src.at("workload", "requests"):
            kw["requests"] = parse_count(wl["requests"], "workload.requests", minimum=1)
    phases_us = _phases_total(doc, src)
    if phases_us is not None and "requests" not in wl:
        if "duration_us" in kw and kw["duration_us"] != phases_us:
            raise src.error(f"{wl['duration']} differs from phases warmup+measure+cooldown "
                            f"({phases_us} us); omit one", "workload", "duration")
        kw["duration_us"] = phases_us
    if "duration_us" not in kw and "requests" not in kw:
        raise src.error("missing duration (or requests, or phases)", "workload")
    if "rit_scope" in wl:
        kw["rit_scope"] = wl["rit_scope"]
        if wl["rit_scope"] not in ("device", "gateway"):
            raise src.error(f"must be 'device' or 'gateway', got {wl['rit_scope']!r}", "workload", "rit_scope")
    if "rit" in wl:
        with src.at("workload", "rit"):
            kw["rit"] = parse_distribution(wl["rit"], "workload.rit", role="rit", base_dir=src.base_dir)
    kw.update(_cd(doc, src))
    try:
        return WorkloadSpec(groups, **kw)
    except UserError as err:
        path = _path_of(err.field)
        err.file, err.line = src.name, src.line(*path)
        raise


def _phases_total(doc: Mapping[str, Any], src: YamlSource) -> int | None:
    phases = doc.get("phases")
    if phases is None:
        return None
    if not isinstance(phases, Mapping):
        raise src.error("must be a mapping {warmup, measure, cooldown}", "phases")
    total = 0
    for key in ("warmup", "measure", "cooldown"):
        if key in phases:
            with src.at("phases", key):
                total += parse_duration(phases[key], f"phases.{key}")
    return total if total > 0 else None


def _cd(doc: Mapping[str, Any], src: YamlSource) -> dict[str, Any]:
    cd = doc.get("cd")
    if cd is None:
        return {}
    if not isinstance(cd, Mapping):
        raise src.error("must be a mapping", "cd")
    out: dict[str, Any] = {}
    if "rit" in cd:
        with src.at("cd", "rit"):
            out["cd_rit_us"] = parse_duration(cd["rit"], "cd.rit")
    if "service" in cd and cd["service"] != "auto":
        with src.at("cd", "service"):
            out["cd_service_us"] = parse_duration(cd["service"], "cd.service")
    if "calibration" in cd:
        with src.at("cd", "calibration"):
            out["cd_calibration_us"] = parse_duration(cd["calibration"], "cd.calibration")
    return out


def _path_of(field_: str | None) -> tuple[str | int, ...]:
    """``devices[1].rit`` -> ("devices", 1, "rit")."""
    if not field_:
        return ()
    out: list[str | int] = []
    for part in field_.replace("]", "").replace("[", ".").split("."):
        if part:
            out.append(int(part) if part.isdigit() else part)
    return tuple(out)


def from_source(src: YamlSource) -> WorkloadSpec:
    """``parse_workload(src.data, src)``."""
    return parse_workload(src.data, src)


def spec_from_file(path: str | Path) -> WorkloadSpec:
    """Load a YAML spec file and build its WorkloadSpec."""
    from wotbench import _yamlsrc as yamlsrc

    src = yamlsrc.load(path)
    return parse_workload(src.data, src)
