"""The workload (paper section 4.2): device groups' request streams and
service times, the trace length and seed, the CD workload. The dataclasses
:func:`wotbench.tracegen.generate` takes, validated when built (also when
built from command-line flags), and the readers of their spec keys:
``workload`` and the workload keys of each ``devices`` group (docs/spec.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.base.formats import MAX_PAYLOAD_BYTES, MAX_SERVICE_US, METHODS
from wotbench.spec import _read as read
from wotbench.spec._observe import ObserveSpec, read_observe
from wotbench.spec._sums import numpy_sum
from wotbench.spec._yaml import KeyPath, YamlSource
from wotbench.spec.distributions import DistributionSpec, parse_distribution
from wotbench.spec.replayspec import ReplaySpec, check_count, read_replay

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

#: Keys of a ``devices`` group read here (``name`` and ``count`` are read with the group).
GROUP_KEYS: frozenset[str] = frozenset({"rit", "service", "methods", "payload_bytes", "resources", "observe"})
#: Keys of the ``workload`` section.
WORKLOAD_KEYS: frozenset[str] = frozenset({"seed", "duration", "requests", "rit_scope", "rit", "replay"})
RIT_SCOPES = ("device", "gateway")

DEFAULT_RESOURCES = 64
MAX_RESOURCES = 65536
MAX_DEVICES = 2**31 - 2          # device ids 0..N-1 plus the CD node's id N
SEED_MAX = 2**63 - 1             # workload.seed's limit (tracegen --seed, validate-cd's per-trial seeds)
DEFAULT_CD_RIT_US = 1_000_000


@dataclass(frozen=True)
class GroupWorkload:
    """One group of identical devices: how many, how often, how long each request takes."""

    name: str
    count: int
    service: DistributionSpec | None
    """None only in a replay (``workload.replay``): the capture gives the service times."""
    rit: DistributionSpec | None = None
    """Per-device RIT (``rit_scope: device``); None with ``rit_scope: gateway``."""
    methods: tuple[tuple[str, float], ...] = (("GET", 1.0),)
    """(method, share) pairs, shares normalised to sum 1."""
    payload_bytes: int = 0
    """Request payload size for PUT and POST."""
    resources: int = DEFAULT_RESOURCES
    observe: ObserveSpec | None = None
    """Observable resources /o/<j> of each device (RFC 7641); None: none."""
    resource_table_us: tuple[int, ...] = field(init=False, compare=False, repr=False)
    """Service time (us) of resource /r/<k>, ascending; see :func:`resource_service_times`."""

    def __post_init__(self) -> None:
        if not _is_name(self.name):
            raise UserError(f"group name must be a non-empty string without commas, got {self.name!r}",
                            field="name")
        if not _is_int(self.count, 1):
            raise UserError(f"a group needs at least 1 device, got {self.count!r}", field="count")
        if self.service is not None and self.service.kind == "mmpp2":
            raise UserError("mmpp2 is an arrival process: not allowed for service times", field="service")
        if self.rit is not None and not self.rit.mean_us() > 0:
            raise UserError("the mean inter-arrival time must be > 0", field="rit")
        object.__setattr__(self, "methods", _normalised(self.methods))
        if not _is_int(self.payload_bytes, 0, MAX_PAYLOAD_BYTES):
            raise UserError(f"must be an integer 0..{MAX_PAYLOAD_BYTES}, got {self.payload_bytes!r}",
                            field="payload_bytes")
        if not _is_int(self.resources, 1, MAX_RESOURCES):
            raise UserError(f"must be an integer 1..{MAX_RESOURCES}, got {self.resources!r}",
                            field="resources")
        if self.service is None:        # a replayed group: the capture's resources
            object.__setattr__(self, "resource_table_us", ())
            return
        table = resource_service_times(self.service, self.resources)
        if table[-1] > MAX_SERVICE_US:
            raise UserError(
                f"{self.service.text}: its slowest resource would take {int(table[-1])} us, "
                f"more than the device's limit of {MAX_SERVICE_US} us (use fewer resources or a lighter tail)",
                field="service")
        object.__setattr__(self, "resource_table_us", table)

    @property
    def resource_service_us(self) -> npt.NDArray[np.int64]:
        """``resource_table_us`` as an int64 array, for the trace generator and
        reports (NumPy is imported here, when asked: reading a spec does not)."""
        import numpy as np

        return np.array(self.resource_table_us, dtype=np.int64)

    @property
    def method_shares(self) -> tuple[float, ...]:
        """Share of each of formats.METHODS (GET, PUT, POST, DELETE), summing to 1."""
        shares = dict(self.methods)
        return tuple(shares.get(m, 0.0) for m in METHODS)

    @property
    def resource_mean_us(self) -> float:
        """Mean service time of a request (resources are chosen uniformly);
        NaN for a replayed group (no distribution: the capture's resources)."""
        if not self.resource_table_us:
            return math.nan
        return sum(self.resource_table_us) / len(self.resource_table_us)


def _is_name(v: object) -> bool:
    """A group name: a non-empty string without commas or newlines."""
    return isinstance(v, str) and bool(v) and not any(c in v for c in ",\n")


def _is_int(v: object, lo: int, hi: int | None = None, *, bool_ok: bool = False) -> bool:
    """An int (a bool only if ``bool_ok``) in lo..hi: the dataclasses are
    built from flags and code too, not only from checked spec keys."""
    return isinstance(v, int) and (bool_ok or not isinstance(v, bool)) and v >= lo and (hi is None or v <= hi)


def _is_share(v: object) -> bool:
    """A method's share: a finite number >= 0."""
    return isinstance(v, (int, float)) and math.isfinite(v) and v >= 0


def _normalised(methods: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
    """(method, share) pairs checked, their shares divided by their sum."""
    if not methods:
        raise UserError("at least one method needs a share > 0", field="methods")
    total = 0.0
    for m, share in methods:
        if m not in METHODS:
            raise UserError(f"unknown method {m!r} (one of {', '.join(METHODS)})", field="methods")
        if not _is_share(share):
            raise UserError(f"share of {m} must be a number >= 0, got {units.short(share)}", field="methods")
        total += share
    if not total > 0:
        raise UserError("at least one method needs a share > 0", field="methods")
    return tuple((m, s / total) for m, s in methods)


def resource_service_times(service: DistributionSpec, k: int) -> tuple[int, ...]:
    """Service times (whole us, ascending) of k resources that reproduce ``service``.

    Resource j gets the conditional mean of the j-th of k equal-probability
    bins of the distribution (``DistributionSpec.bin_means``), and each request
    picks one resource uniformly at random. The per-request service times
    then have exactly the target mean (up to rounding to whole us) and a CDF
    within 1/k of the target's everywhere.
    """
    return tuple(_whole_us(float(m)) for m in service.bin_means(k))


def _whole_us(mean: float) -> int:
    """A bin mean rounded to whole us (half to even), at most 2**62, at least 0;
    one that is not finite is the largest."""
    return max(round(min(mean if math.isfinite(mean) else math.inf, 2.0**62)), 0)


@dataclass(frozen=True)
class WorkloadSpec:
    """A whole workload: device groups (ids 0..N-1 in group order), length, seed, CD workload."""

    groups: tuple[GroupWorkload, ...]
    seed: int = 1
    duration_us: int | None = None
    requests: int | None = None
    rit_scope: str = "device"
    rit: DistributionSpec | None = None
    """Aggregate RIT of the GE (``rit_scope: gateway``)."""
    cd_rit_us: int = DEFAULT_CD_RIT_US
    cd_service_us: int | None = None
    """None: the mean service time of the devices under test (weighted by request rate)."""
    cd_calibration_us: int = 0
    """The CD trace also covers this long CD-only period before the devices' t0."""
    phase_us: tuple[int, int, int] | None = None
    """(warmup, measure, cooldown) when the spec has phases (and observe groups or a replay):
    observations register in the first half of warmup and deregister in the first half of
    cooldown; a replay's expected.json ``observe`` counts the events of the measure phase."""
    replay: ReplaySpec | None = None
    """A captured workload replayed (``workload.replay``); the groups then give names and counts only."""

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
        if not _is_int(self.seed, 0, SEED_MAX):
            raise UserError(f"seed must be an integer >= 0, got {self.seed!r}", field="workload.seed")
        self._check_length()
        if self.replay is not None:
            self._check_replay()
        else:
            self._check_rits()
        self._check_cd()

    def _check_length(self) -> None:
        if (self.duration_us is None) == (self.requests is None):
            raise UserError("give exactly one of duration and requests", field="workload.duration")
        if self.duration_us is not None and not _is_int(self.duration_us, 1, bool_ok=True):
            raise UserError(f"duration must be > 0, got {self.duration_us!r}", field="workload.duration")
        if self.requests is not None and not _is_int(self.requests, 1, bool_ok=True):
            raise UserError(f"requests must be > 0, got {self.requests!r}", field="workload.requests")

    def _check_replay(self) -> None:
        """A replay: a duration, no synthetic stream, and (a folder) as many devices as it emulates."""
        assert self.replay is not None
        if self.requests is not None:
            raise UserError("a replay is as long as the phases (or workload.duration), not a request count",
                            field="workload.requests")
        if self.rit is not None or self.rit_scope != "device":
            raise UserError("a replay takes its request times from the capture: no rit or rit_scope",
                            field="workload.rit" if self.rit is not None else "workload.rit_scope")
        for i, g in enumerate(self.groups):
            if g.service is not None or g.rit is not None or g.observe is not None:
                raise UserError("a replayed group gives a name and a count only", field=f"devices[{i}]")
        if self.replay.captured_devices is not None:
            check_count(self.replay, self.replay.captured_devices, self.n_devices)

    def _check_rits(self) -> None:
        """The RITs are set where ``rit_scope`` says: once (gateway), or per group
        (device; a group with ``observe`` may have none: it is then not polled)."""
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
                if g.rit is None and g.observe is None:
                    raise UserError("missing rit (per-device RIT distribution)", field=f"devices[{i}].rit")
        for i, g in enumerate(self.groups):
            if g.service is None:
                raise UserError("missing (the service-time distribution, e.g. exp:5ms)",
                                field=f"devices[{i}].service")
        if self.observed and self.requests is not None:
            i = next(i for i, g in enumerate(self.groups) if g.observe is not None)
            raise UserError("observe needs a duration (phases or workload.duration), not workload.requests",
                            field=f"devices[{i}].observe")

    def _check_cd(self) -> None:
        if not _is_int(self.cd_rit_us, 1, bool_ok=True):
            raise UserError(f"must be > 0, got {self.cd_rit_us!r}", field="cd.rit")
        if self.cd_service_us is not None and not _is_int(self.cd_service_us, 0, MAX_SERVICE_US, bool_ok=True):
            raise UserError(f"must be 0..{MAX_SERVICE_US} us, got {self.cd_service_us!r}", field="cd.service")
        if not _is_int(self.cd_calibration_us, 0, bool_ok=True):
            raise UserError(f"must be >= 0, got {self.cd_calibration_us!r}", field="cd.calibration")

    @property
    def n_devices(self) -> int:
        return sum(g.count for g in self.groups)

    @property
    def observed(self) -> bool:
        """Whether some group has observable resources (OBS/UNOBS rows, /o/<j> resources)."""
        return any(g.observe is not None for g in self.groups)

    @property
    def polled(self) -> bool:
        """Whether the trace has polling rows (GET/PUT/POST/DELETE)."""
        return self.rit_scope == "gateway" or any(g.rit is not None for g in self.groups)

    def observations(self) -> int:
        """Observations of the whole workload: one per (device, observable resource)."""
        return sum(g.count * g.observe.resources for g in self.groups if g.observe is not None)

    def notification_rate_per_us(self) -> float:
        """Events (notifications) per us of all observations together."""
        return numpy_sum([g.count * g.observe.resources / g.observe.mean_us
                          for g in self.groups if g.observe is not None])

    @property
    def cd_device_id(self) -> int:
        """Device id of the CD node in the CD trace: one past the last device."""
        return self.n_devices

    def group_of_device(self) -> tuple[int, ...]:
        """Group index (into ``groups``) of each device id 0..N-1."""
        return tuple(i for i, g in enumerate(self.groups) for _ in range(g.count))

    def device_rate_per_us(self) -> tuple[float, ...]:
        """Intended request rate of each group's devices (requests per us), by group.
        A replay: the captured rate scaled, the same for every device (0 while a
        capture file is not derived yet)."""
        if self.replay is not None:
            rate = self.replay.rate_per_us()
            return (0.0 if rate is None else rate / self.n_devices,) * len(self.groups)
        if self.rit_scope == "gateway":
            assert self.rit is not None
            per = 1.0 / self.rit.mean_us() / self.n_devices
            return (per,) * len(self.groups)
        return tuple(0.0 if g.rit is None else 1.0 / g.rit.mean_us() for g in self.groups)

    def _group_rates(self) -> list[float]:
        """Intended request rate of each group (all its devices)."""
        return [rate * g.count for rate, g in zip(self.device_rate_per_us(), self.groups, strict=True)]

    def aggregate_rate_per_us(self) -> float:
        return numpy_sum(self._group_rates())

    def mean_service_us(self) -> float:
        """Mean service time of a request over all devices (weighted by intended request rate).
        A replay: the captured samples' mean (0 while a capture file is not derived yet);
        the replayed trace's own mean is what tracegen writes (expected.json)."""
        if self.replay is not None:
            src = self.replay.source
            return 0.0 if src is None or src.service_mean_us is None else src.service_mean_us
        w = self._group_rates()
        if not numpy_sum(w) > 0:        # observe only: no polling, every device alike
            w = [float(g.count) for g in self.groups]
        return numpy_sum([wg * g.resource_mean_us for wg, g in zip(w, self.groups, strict=True)]) / numpy_sum(w)

    def cd_service_effective_us(self) -> int:
        """The CD node's service time: as given, else the devices' mean (paper section 6.2)."""
        if self.cd_service_us is not None:
            return self.cd_service_us
        return int(round(self.mean_service_us()))


# ---------------------------------------------------------------------------
# spec readers


def parse_methods(value: object, field_: str) -> tuple[tuple[str, float], ...]:
    """``{GET: 0.9, PUT: 0.1}`` (shares, normalised later); a bare ``GET`` means all GET."""
    if isinstance(value, str):
        value = {value: 1.0}
    if not isinstance(value, Mapping) or not value:
        raise UserError(f"expected a mapping of method to share like {{GET: 0.9, PUT: 0.1}}, got {units.short(value)}",
                        field=field_)
    out = []
    for m, share in value.items():
        if not isinstance(m, str) or m not in METHODS:
            raise UserError(f"unknown method {m!r} (one of {', '.join(METHODS)})", field=f"{field_}.{m}")
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or share < 0:
            raise UserError(f"share must be a number >= 0, got {units.short(share)}", field=f"{field_}.{m}")
        out.append((m, float(share)))
    return tuple(out)


def distribution(v: Any, src: YamlSource, at: KeyPath, role: str) -> DistributionSpec:
    """A distribution (``exp:300us``); relative file paths are relative to the spec's folder."""
    return read.value(lambda x, f: parse_distribution(x, f, role=role, base_dir=src.base_dir), v, src, at)


def parse_payload(v: Any, field_: str) -> int:
    """A request payload in bytes: an integer or a size (``16``, ``"512B"``, ``"1KB"``)."""
    return units.parse_count(units.parse_size(v, field_), field_, minimum=0, maximum=MAX_PAYLOAD_BYTES)


def read_group(item: Mapping[str, Any], name: str, count: int, src: YamlSource,
               at: KeyPath, replay: bool = False) -> GroupWorkload:
    """The workload of the device group at ``at`` (its keys are checked by the
    caller). In a replay (``replay``) a group has a name and a count only."""
    if replay:
        for key in sorted(GROUP_KEYS):
            if key in item:
                raise src.error("not with workload.replay: the capture gives the requests and service times "
                                "(a group gives name, count and its containers' keys)", *at, key)
        return GroupWorkload(name, count, None)
    if "service" not in item:
        raise src.error("missing (the service-time distribution, e.g. exp:5ms)", *at, "service")
    kw: dict[str, Any] = {"service": distribution(item["service"], src, at + ("service",), "service")}
    if "rit" in item:
        kw["rit"] = distribution(item["rit"], src, at + ("rit",), "rit")
    if "methods" in item:
        kw["methods"] = read.value(parse_methods, item["methods"], src, at + ("methods",))
    if "payload_bytes" in item:
        kw["payload_bytes"] = read.value(parse_payload, item["payload_bytes"], src, at + ("payload_bytes",))
    if "resources" in item:
        kw["resources"] = read.integer(item["resources"], src, at + ("resources",), 1, MAX_RESOURCES)
    if "observe" in item:
        kw["observe"] = read_observe(item["observe"], src, at + ("observe",))
    try:
        return GroupWorkload(name, count, **kw)
    except UserError as err:
        # GroupWorkload names its own key ("service"): place it in the spec.
        sub = (err.field,) if err.field in GROUP_KEYS | {"name", "count"} else ()
        raise src.error(err.what, *at, *sub) from None


def _length(wl: Mapping[str, Any], measured_us: int | None, src: YamlSource, at: KeyPath) -> dict[str, int]:
    """``duration_us`` or ``requests`` of the ``workload`` section ``wl`` (the phases' length by default)."""
    kw: dict[str, int] = {}
    if "duration" in wl and "requests" in wl:
        raise src.error("give either duration or requests, not both", *at, "requests")
    if "duration" in wl:
        kw["duration_us"] = read.duration(wl["duration"], src, at + ("duration",))
    if "requests" in wl:
        kw["requests"] = read.integer(wl["requests"], src, at + ("requests",), 1)
    if measured_us is not None and "requests" not in wl:
        if kw.get("duration_us", measured_us) != measured_us:
            raise src.error(f"{wl['duration']} differs from phases warmup+measure+cooldown "
                            f"({measured_us} us); omit one", *at, "duration")
        kw["duration_us"] = measured_us
    if "duration_us" not in kw and "requests" not in kw:
        raise src.error("missing duration (or requests, or phases)", *at)
    return kw


def read_workload(v: Any, groups: tuple[GroupWorkload, ...], measured_us: int | None,
                  cd: dict[str, Any], src: YamlSource, phase_us: tuple[int, int, int] | None = None
                  ) -> WorkloadSpec:
    """The ``workload`` section. ``measured_us``: the length the ``phases``
    give (warmup + measure + cooldown), if any; ``cd``: the CD workload
    (``cd_rit_us``, ``cd_service_us``, ``cd_calibration_us``) read with ``cd``;
    ``phase_us``: (warmup, measure, cooldown) of the phases, if any."""
    at: KeyPath = ("workload",)
    wl = read.mapping(v, src, at, WORKLOAD_KEYS)
    kw: dict[str, Any] = dict(cd)
    if phase_us is not None and "requests" not in wl and (
            "replay" in wl or any(g.observe is not None for g in groups)):     # a replay's observe: the measure window
        kw["phase_us"] = phase_us
    if "seed" in wl:
        kw["seed"] = read.integer(wl["seed"], src, at + ("seed",), 0, SEED_MAX)
    kw.update(_length(wl, measured_us, src, at))
    if "rit_scope" in wl:
        kw["rit_scope"] = read.choice(wl["rit_scope"], src, at + ("rit_scope",), RIT_SCOPES)
    if "rit" in wl:
        kw["rit"] = distribution(wl["rit"], src, at + ("rit",), "rit")
    if "replay" in wl:
        kw["replay"] = read_replay(wl["replay"], src, at + ("replay",))
    try:
        return WorkloadSpec(groups, **kw)
    except UserError as err:
        raise src.locate(err) from None
