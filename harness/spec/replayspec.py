"""The replay workload (``workload.replay``, docs/spec.md "Replaying a
capture"): a captured workload, a folder ``wotbench tracegen --from-pcap``
wrote or the capture itself, replayed with k times the devices, r times the
rate and a map of captured devices onto emulated ones.

A folder is checked here, when the spec is built (its marker and
capture.json, its device count against the groups' counts); a capture file
is only found here and derived when the test is prepared
(``wotbench.tracegen.replay``)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from wotbench.base import inputfile
from wotbench.base.errors import UserError
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource

__all__ = ["ReplaySpec", "ReplaySource", "read_replay", "REPLAY_KEYS", "SERVICE_MODES", "CAPTURE_JSON",
           "MARKER", "MARKER_TEXT", "KEPT_SOURCE", "KEPT_FILES", "check_count", "copies", "standalone_yaml"]

REPLAY_KEYS = frozenset({"from", "devices", "rate", "service", "map"})
SERVICE_MODES = ("median", "empirical")
#: What a ``--from-pcap`` folder holds: its summary and tracegen's marker.
CAPTURE_JSON = "capture.json"
MARKER = ".wotbench-made"
MARKER_TEXT = "wotbench tracegen"
#: The replayed source's derived folder (a capture's, derived first), kept inside the
#: replay's output folder (a run's workload/): a run folder stands alone.
KEPT_SOURCE = "source"
#: What of a derived folder is kept there (a capture file never is: its path and sha256 are).
KEPT_FILES = ("trace.csv", "devices.csv", CAPTURE_JSON, MARKER, "resources", "service")
_CAPTURE_JSON_MAX = 64 << 20
MAX_COPIES = 1 << 20


@dataclass(frozen=True)
class ReplaySource:
    """What a derived folder's capture.json says (read when the spec is built)."""

    devices: int
    """Captured devices C."""
    requests: int
    """Requests of its trace."""
    duration_us: int
    """First to last request."""
    service_mean_us: float | None
    """Mean of the service-time samples (None: no answered request)."""

    @classmethod
    def read(cls, folder: Path, field: str | None = None) -> ReplaySource:
        """capture.json of ``folder``; a UserError (naming ``folder`` in its
        text) when it is not a folder tracegen derived from a capture."""
        shown = inputfile.shown(folder)
        marker = folder / MARKER
        if not folder.is_dir():
            raise UserError(f"{shown}: not a folder", field=field)
        if not marker.is_file() or inputfile.read_text(marker, 1024, field).strip() != MARKER_TEXT:
            raise UserError(f"{shown}: not a folder wotbench tracegen wrote (no .wotbench-made marker)",
                            field=field)
        path = folder / CAPTURE_JSON
        if not path.is_file():
            raise UserError(f"{shown}: no capture.json: not a folder of `wotbench tracegen --from-pcap` "
                            "(a synthetic workload is not replayed)", field=field)
        try:
            doc = json.loads(inputfile.read_text(path, _CAPTURE_JSON_MAX, field))
        except json.JSONDecodeError as err:
            raise UserError(f"{shown}: capture.json is not JSON (line {err.lineno})", field=field) from None
        try:
            svc = doc.get("service", {}).get("mean_us")
            src = cls(int(doc["devices"]), int(doc.get("requests_in_trace", doc.get("requests"))),
                      int(doc["duration_us"]), None if svc is None else float(svc))
        except (AttributeError, KeyError, TypeError, ValueError):
            raise UserError(f"{shown}: capture.json lacks devices, requests_in_trace or duration_us",
                            field=field) from None
        if src.devices < 1 or src.requests < 1 or src.duration_us < 0:
            raise UserError(f"{shown}: capture.json says {src.devices} devices, {src.requests} requests: "
                            "nothing to replay", field=field)
        return src


@dataclass(frozen=True)
class ReplaySpec:
    """``workload.replay``: what is replayed and how it is scaled."""

    path: Path
    """The derived folder or the capture file (absolute)."""
    is_capture: bool
    """True: a pcap/pcapng file, derived when the test is prepared."""
    text: str
    """``from`` as written."""
    devices: int = 1
    """k: copies of each captured device (without ``map``)."""
    rate: float = 1.0
    """r: captured times are divided by r."""
    service: str = "median"
    map: tuple[int, ...] | None = None
    """The captured device each emulated device replays; None: copy j of device d is id j*C + d."""
    source: ReplaySource | None = None
    """The folder's capture.json (None for a capture file: known once derived)."""

    @property
    def captured_devices(self) -> int | None:
        return None if self.source is None else self.source.devices

    def emulated(self, captured: int) -> int:
        """Emulated devices for ``captured`` captured devices."""
        return len(self.map) if self.map is not None else self.devices * captured

    def sources(self, captured: int) -> list[int]:
        """The captured device each emulated device 0..N-1 replays."""
        if self.map is not None:
            return list(self.map)
        return [e % captured for e in range(self.devices * captured)]

    def rate_per_us(self) -> float | None:
        """The replay's request rate (all emulated devices), when the source is known."""
        s = self.source
        if s is None:
            return None
        return s.requests / max(s.duration_us, 1) * self.rate * self.emulated(s.devices) / s.devices

    def render(self) -> str:
        """One line for ``wotbench plan`` and the run's log."""
        how = f"map {list(self.map)}" if self.map is not None else f"devices x{self.devices}"
        s = self.source
        if s is None:
            what = "a capture, derived when the test is prepared: its rate is known then"
        else:
            what = (f"a derived folder: {s.devices} captured device{'s' if s.devices != 1 else ''}, "
                    f"{s.requests} requests over {s.duration_us / 1e6:.3g} s")
        rate = self.rate_per_us()
        return (f"replay: {self.text} ({what}); {how}, rate x{self.rate:g}, service {self.service}"
                + (f": about {rate * 1e6:.4g} requests/s" if rate is not None else ""))

    def describe(self) -> dict[str, object]:
        """What the manifest and expected.json name."""
        return {"from": str(self.path), "capture": self.is_capture, "devices": self.devices,
                "rate": self.rate, "service": self.service, "map": list(self.map) if self.map else None}


def copies(sources: list[int]) -> tuple[list[int], list[int]]:
    """For each emulated device: its copy number j among those replaying the
    same captured device, and how many replay that device (k_d)."""
    seen: dict[int, int] = {}
    j = []
    for d in sources:
        j.append(seen.get(d, 0))
        seen[d] = j[-1] + 1
    return j, [seen[d] for d in sources]


def check_count(replay: ReplaySpec, captured: int, n_devices: int, field: str = "devices") -> None:
    """The groups' counts against the replay's devices; ``map`` entries against the captured devices."""
    if replay.map is not None:
        bad = [x for x in replay.map if x >= captured]
        if bad:
            raise UserError(f"map names captured device {bad[0]}, but the capture has {captured} "
                            f"(ids 0..{captured - 1})", field="workload.replay.map")
    want = replay.emulated(captured)
    if want != n_devices:
        how = (f"len(map) = {want}" if replay.map is not None
               else f"replay.devices {replay.devices} x {captured} captured devices = {want}")
        raise UserError(f"the groups' counts sum to {n_devices}, but the replay emulates {how}", field=field)


def standalone_yaml(doc: Mapping[str, Any], kept: str) -> str:
    """A test's document (spec.yaml) whose ``workload.replay.from`` is ``kept``, the
    source's copy in the run folder (relative to it): the saved spec reloads when
    the source is moved or gone. The source as given stays named in expected.json
    and manifest.json (``replay.from``, ``sha256``)."""
    out = dict(doc)
    wl = out.get("workload")
    if isinstance(wl, Mapping) and isinstance(wl.get("replay"), Mapping):
        out["workload"] = {**wl, "replay": {**wl["replay"], "from": kept}}
    return yaml.safe_dump(out, sort_keys=False)


def _number(v: Any, src: YamlSource, at: KeyPath) -> float:
    x = read.number(v, src, at, positive=True)
    if not math.isfinite(x) or x > 1e6:
        raise src.error(f"must be a number > 0 and at most 1e6, got {v!r}", *at)
    return x


def read_replay(v: Any, src: YamlSource, at: KeyPath) -> ReplaySpec:
    """``workload.replay``; a folder's capture.json is read here."""
    m = read.mapping(v, src, at, REPLAY_KEYS)
    if "from" not in m:
        raise src.error("missing (a folder of `wotbench tracegen --from-pcap`, or a .pcap/.pcapng file)", *at)
    text = m["from"]
    if not isinstance(text, str) or not text.strip():
        raise src.error(f"expected a path, got {text!r}", *at, "from")
    path = src.resolve(Path(text.strip()).expanduser()).absolute()
    if "devices" in m and "map" in m:
        raise src.error("give either devices (copies of each captured device) or map, not both", *at, "map")
    kw: dict[str, Any] = {}
    if "devices" in m:
        kw["devices"] = read.integer(m["devices"], src, at + ("devices",), 1, MAX_COPIES)
    if "rate" in m:
        kw["rate"] = _number(m["rate"], src, at + ("rate",))
    if "service" in m:
        kw["service"] = read.choice(m["service"], src, at + ("service",), SERVICE_MODES)
    if "map" in m:
        mv = m["map"]
        if not isinstance(mv, list) or not mv:
            raise src.error("expected a list of captured device ids, one per emulated device", *at, "map")
        kw["map"] = tuple(read.integer(x, src, at + ("map", i), 0, 2**31 - 2) for i, x in enumerate(mv))
    if path.is_dir():
        with src.at(*at, "from"):
            source = ReplaySource.read(path)
        return ReplaySpec(path, False, text, source=source, **kw)
    if not path.exists():
        raise src.error(f"{text}: no such folder or capture file", *at, "from")
    if not path.is_file():
        raise src.error(f"{text}: not a folder or a regular file", *at, "from")
    return ReplaySpec(path, True, text, **kw)
