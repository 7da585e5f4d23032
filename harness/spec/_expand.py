"""From a spec file to its tests: the scale applied, every sweep value
substituted, repetitions counted, each test's document validated into a
:class:`Spec` before anything runs; and back, from a run's saved spec.yaml."""

from __future__ import annotations

import copy
import itertools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from wotbench.base.errors import UserError
from wotbench.spec import _scales as scales
from wotbench.spec import _yaml, budget
from wotbench.spec._model import Spec
from wotbench.spec._sections import Sweep
from wotbench.spec._yaml import KeyPath, YamlSource


@dataclass(frozen=True)
class RunSpec:
    """One test: its validated spec and the document it was built from
    (what the run saves as spec.yaml; :func:`load_saved` reads it back to
    an equal :class:`Spec`)."""

    spec: Spec
    source: YamlSource = field(compare=False, repr=False)
    """The test's document and the line of every key in the spec file."""
    label: str = ""                 # e.g. "devices[0].count=10 rep=1"
    sweep_value: Any = None
    repetition: int = 1
    scale: str = scales.FULL        # the spec's scale (``scales:``)
    experiment: Spec | None = field(default=None, compare=False, repr=False)
    """The whole file at this scale (with its first test's values): sweep
    axes, repetitions, capacity, the scales it offers."""

    @property
    def doc(self) -> Mapping[str, Any]:
        data = self.source.data
        assert isinstance(data, Mapping), "Spec.build took the document as a mapping"
        return data

    def yaml(self) -> str:
        return yaml.safe_dump(dict(self.doc), sort_keys=False)

    def locate(self, err: UserError) -> UserError:
        """``err`` placed at the spec line of the key its ``field`` names
        (an error found later, e.g. by a preflight check)."""
        return self.source.locate(err)

    def with_value(self, path: KeyPath, value: Any, at: KeyPath) -> RunSpec:
        """This test with the value at ``path`` replaced, validated; errors
        about the value point at ``at`` (e.g. ``capacity.vary``)."""
        src = _normalized(self.source.with_value(path, value, at))
        return replace(self, spec=Spec.build(src), source=src)


def expand(src: YamlSource, scale: str | None = None) -> list[RunSpec]:
    """Every test the spec asks for (sweep values x repetitions) at ``scale``
    (default the body as written, ``full``), each validated, in run order.
    Nothing is started before all are valid."""
    offered = tuple(scales.names(src))
    scaled, scale_name, axes, experiment = _at_scale(src, scale, offered)
    # Every other scale is checked too: a typo under `scales: {ci: ...}` is
    # found by the run that does not use it, not by CI days later.
    for other in offered:
        if other != scale_name:
            try:
                _at_scale(src, other, offered)
            except UserError as err:
                raise UserError(f"{err.what} (at scale {other})", err.file, err.line, err.field) from None
    _check_tests(scaled, axes, experiment.repetitions)
    base = scaled.without("sweep", "capacity")
    runs: list[RunSpec] = []
    for idx in itertools.product(*(range(len(a.values)) for a in axes)):
        vsrc = _substituted(base, axes, idx)
        spec = Spec.build(vsrc)
        values = tuple(a.values[i] for a, i in zip(axes, idx, strict=True))
        label = " ".join(f"{a.key}={v}" for a, v in zip(axes, values, strict=True))
        value = None if not values else values[0] if len(values) == 1 else values
        for rep in range(1, experiment.repetitions + 1):
            text = " ".join(x for x in (label, f"rep={rep}" if experiment.repetitions > 1 else "") if x)
            runs.append(RunSpec(spec, vsrc, text, value, rep, scale_name, experiment))
    return runs


def _check_tests(src: YamlSource, axes: tuple[Sweep, ...], repetitions: int) -> None:
    """At most budget.MAX_TESTS tests, counted (never built) before the first
    is: a grid of three axes of 100 values is a million."""
    n = math.prod(len(a.values) for a in axes) * repetitions
    how = " x ".join([f"{len(a.values)} values of {a.key}" for a in axes]
                     + ([f"{repetitions} repetitions"] if repetitions > 1 else []))
    with src.at("sweep" if axes else "repetitions"):
        budget.check_tests(n, how)


def _at_scale(src: YamlSource, scale: str | None,
              offered: tuple[str, ...]) -> tuple[YamlSource, str, tuple[Sweep, ...], Spec]:
    """The document at ``scale``, its sweep axes and the whole file's spec
    there (with the first test's values: a swept key need not have a valid
    value in the body)."""
    scaled, scale_name = scales.apply(src, scale)
    scaled = _normalized(scaled)
    sweep = scaled.data.get("sweep") if isinstance(scaled.data, Mapping) else None
    axes = Sweep.build_axes(sweep, scaled, ("sweep",))
    if axes and "capacity" in scaled.data:
        raise scaled.error("capacity cannot be combined with a sweep (remove one)", "capacity", "vary")
    return scaled, scale_name, axes, Spec.build(_substituted(scaled, axes, (0,) * len(axes)), offered)


def _substituted(src: YamlSource, axes: tuple[Sweep, ...], idx: tuple[int, ...]) -> YamlSource:
    """The document with the ``idx``-th value of every sweep axis; a bad
    value is reported at its line under ``sweep``."""
    for a, i in zip(axes, idx, strict=True):
        src = src.with_value(a.path, a.values[i], a.at + ("values", i))
    return _normalized(src)


def load(path: str | Path, scale: str | None = None) -> list[RunSpec]:
    """The tests of the spec file at ``path`` (see :func:`expand`)."""
    return expand(_yaml.load(path), scale)


def loads(text: str, name: str = "<string>", scale: str | None = None,
          base_dir: str | Path | None = None) -> list[RunSpec]:
    """The tests of a spec given as text; ``name`` is the file name errors
    show, ``base_dir`` the folder relative paths start from (default: the
    working directory)."""
    return expand(_yaml.loads(text, name, base_dir=Path(base_dir or ".").absolute()), scale)


def load_saved(path: str | Path) -> Spec:
    """The spec of a run from its saved spec.yaml (``RunSpec.yaml()``)."""
    return Spec.build(_normalized(_yaml.load(path)))


# --- the saved document reloads to the same spec ---------------------------

#: Keys that hold distributions (whose ``empirical:`` files may be relative).
_DIST_KEYS = ("rit", "service")


def _normalized(src: YamlSource) -> YamlSource:
    """The document with what depends on where it is written made explicit:
    ``name`` (else the file's stem) and the files of ``empirical:``
    distributions (else relative to the spec's folder). A run's spec.yaml,
    elsewhere and under another name, then means the same."""
    if not isinstance(src.data, Mapping):
        return src
    doc = copy.deepcopy(dict(src.data))
    if "name" not in doc:          # first, as a user writes it
        doc = {"name": Path(src.name).stem, **doc}
    sections = [doc.get("workload")] + (doc["devices"] if isinstance(doc.get("devices"), list) else [])
    for section in sections:
        for key in _DIST_KEYS:
            if isinstance(section, dict) and isinstance(section.get(key), str):
                section[key] = _absolute_files(section[key], src.base_dir)
    replay = doc["workload"].get("replay") if isinstance(doc.get("workload"), dict) else None
    if isinstance(replay, dict) and isinstance(replay.get("from"), str):     # workload.replay.from
        replay["from"] = _absolute(replay["from"], src.base_dir)
    return YamlSource(src.name, doc, src.base_dir, src.lines)


_EMPIRICAL = re.compile(r"(?i)(\bempirical\s*:\s*)([^,]+)")


def _absolute_files(text: str, base_dir: Path) -> str:
    """``empirical:rits.csv`` -> ``empirical:/abs/dir/rits.csv`` (also
    inside ``mmpp2:on=...,off=...``, whose parts end at a comma)."""
    kind, sep, body = text.partition(":")
    if kind.strip().lower() == "empirical":     # the whole rest is the path
        return f"{kind}{sep}{_absolute(body, base_dir)}"

    def fix(m: re.Match[str]) -> str:
        return m.group(1) + _absolute(m.group(2), base_dir)

    return _EMPIRICAL.sub(fix, text)


def _absolute(path: str, base_dir: Path) -> str:
    p = Path(path.strip()).expanduser()
    return path if p.is_absolute() or not path.strip() else str(base_dir.absolute() / p)
