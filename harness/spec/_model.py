"""The experiment spec: one frozen dataclass holding every section, built
and validated from one document (docs/spec.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wotbench.spec import _read as read
from wotbench.spec._capacity import CapacitySpec
from wotbench.spec._cluster import Cluster
from wotbench.spec._devices import DeviceGroup, read_groups
from wotbench.spec._gateway_ut import GatewayUnderTest, read_gateway_ut
from wotbench.spec._interference import Interference, read_interference
from wotbench.spec._runcapture import RunCapture, read_run_capture
from wotbench.spec._sections import ContentionDetection, Gateway, Phases, Placement, ReportOptions, Sweep
from wotbench.spec._validity import Thresholds, parse_validity
from wotbench.spec._workload import WorkloadSpec, read_workload
from wotbench.spec._yaml import YamlSource

TOP_KEYS = ("name", "workload", "devices", "gateway", "cd", "placement", "phases", "repetitions",
            "sweep", "validity", "capacity", "cluster", "interference", "gateway_under_test", "report",
            "capture", "validate_cd")   # read by `wotbench validate-cd` only (harness/studies/validate_cd.py)


@dataclass(frozen=True)
class Spec:
    """A validated experiment spec. The spec of one test has no sweep (its
    value is substituted) and no capacity section; the spec of a whole file
    (:attr:`wotbench.spec.RunSpec.experiment`) has them."""

    name: str
    groups: tuple[DeviceGroup, ...]
    gateway: Gateway
    cd: ContentionDetection
    placement: Placement
    phases: Phases | None
    """None when the trace is given as a request count (``workload.requests``)."""
    repetitions: int
    sweep: Sweep | None
    """The first (or only) sweep axis."""
    validity: Thresholds
    sweep_axes: tuple[Sweep, ...] = ()
    """Every axis of a grid sweep."""
    workload: WorkloadSpec | None = None
    """What :func:`wotbench.tracegen.generate` takes: the groups' workloads, length, seed, CD workload."""
    capacity: CapacitySpec | None = None
    scales: tuple[str, ...] = ()
    """The scales the file offers (``full`` first); empty in a test's spec."""
    cluster: Cluster | None = None
    """Where the parts go on a swarm; None: one host (or the swarm's defaults)."""
    interference: tuple[Interference, ...] = ()
    """Noisy neighbours during the measurement phase (docs/interference.md)."""
    gateway_under_test: GatewayUnderTest | None = None
    """The user's gateway between the GEs and the devices; None: the GEs talk to the devices."""
    report: ReportOptions = ReportOptions()
    """What the run's report shows beyond its defaults (the drift analysis)."""
    capture: RunCapture | None = None
    """tcpdump of each workload GE's traffic into the run folder (docs/capture.md); None: no capture."""

    @property
    def device_count(self) -> int:
        return sum(g.count for g in self.groups)

    def group_of(self) -> list[int]:
        """Group index of every device id, in tracegen's numbering (groups in order)."""
        return [gi for gi, g in enumerate(self.groups) for _ in range(g.count)]

    @classmethod
    def build(cls, src: YamlSource, scales: tuple[str, ...] = ()) -> Spec:
        """The spec of the document ``src``: every value checked, every error
        a :class:`wotbench.UserError` naming the file, line and key."""
        m = read.mapping(src.data, src, (), TOP_KEYS)
        if not m:
            raise src.error("the spec is empty")
        wl_doc = m.get("workload")
        replay = isinstance(wl_doc, dict) and "replay" in wl_doc
        if replay and "capacity" in m:
            raise src.error("the capacity search scales a synthetic rate: not with workload.replay "
                            "(sweep workload.replay.rate instead)", "capacity")
        groups = read_groups(m.get("devices"), src, replay)
        cd = ContentionDetection.build(m.get("cd"), src, ("cd",))
        phases = Phases.build(m.get("phases"), src, ("phases",))
        workload = read_workload(m.get("workload"), tuple(g.workload for g in groups if g.workload),
                                 phases.total_us if phases else None, cd.workload(), src,
                                 (phases.warmup_us, phases.measure_us, phases.cooldown_us) if phases else None)
        if phases is None and workload.duration_us is not None:
            phases = Phases(0, workload.duration_us, 0)
        axes = Sweep.build_axes(m.get("sweep"), src, ("sweep",))
        spec = cls(
            name=read.name(m.get("name", Path(src.name).stem), src, ("name",)),
            groups=groups,
            gateway=Gateway.build(m.get("gateway"), src, ("gateway",)),
            cd=cd,
            placement=Placement.build(m.get("placement"), src, ("placement",)),
            phases=phases,
            repetitions=read.integer(m.get("repetitions", 1), src, ("repetitions",), 1, 1000),
            sweep=axes[0] if axes else None,
            validity=parse_validity(m.get("validity"), src),
            sweep_axes=axes,
            workload=workload,
            capacity=(CapacitySpec.build(m["capacity"], src, groups, workload.rit_scope)
                      if "capacity" in m else None),
            scales=scales,
            cluster=Cluster.build(m["cluster"], src, ("cluster",)) if "cluster" in m else None,
            interference=read_interference(m.get("interference"), src,
                                           phases.measure_us if "phases" in m and phases else None),
            gateway_under_test=read_gateway_ut(m.get("gateway_under_test"), src),
            report=ReportOptions.build(m.get("report"), src, ("report",)),
            capture=read_run_capture(m["capture"], src) if "capture" in m else None,
        )
        gut, gw = spec.gateway_under_test, spec.gateway
        if gut is not None and gut.north == "http" and (gw.nstart is not None or gw.probing_rate is not None):
            raise src.error("NSTART and PROBING_RATE are CoAP's: not with gateway_under_test.north http",
                            "gateway", "nstart" if gw.nstart is not None else "probing_rate")
        if spec.gateway.instances > spec.device_count:
            raise src.error(f"{spec.gateway.instances} GEs for {spec.device_count} devices",
                            "gateway", "instances")
        return spec
