"""The ``validate_cd:`` section (docs/validate-cd.md): the episode classes
`wotbench validate-cd` injects, each with the devices' mode it runs in,
and the run spec of every class and of the quiet trials of every mode,
each validated like any spec."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wotbench.base.errors import UserError
from wotbench.spec import _read as read
from wotbench.spec._devices import MODES
from wotbench.spec._expand import RunSpec, expand
from wotbench.spec._model import Spec
from wotbench.spec._yaml import YamlSource
from wotbench.spec._yaml import load as load_yaml

__all__ = ["QUIET", "SECTION", "SEEDS", "EpisodeClass", "ValidateSpec", "read_validate", "trial_specs", "is_quiet",
           "quiet_class", "spec_mode", "with_seed"]

#: The class name of the trials without interference (``quiet-<mode>`` per
#: devices' mode; a plain ``quiet`` in folders written before modes).
QUIET = "quiet"
SECTION = "validate_cd"
#: ``validate_cd.seeds``: every trial replays the spec's ``workload.seed``
#: (fixed), or trial i of a batch replays the batch's first seed + i - 1.
SEEDS = ("fixed", "per-trial")


def is_quiet(cls: str) -> bool:
    """Whether ``cls`` names trials without interference."""
    return cls == QUIET or cls.startswith(QUIET + "-")


def quiet_class(mode: str) -> str:
    """The quiet trials' class of the devices' mode ``mode``."""
    return f"{QUIET}-{mode}"


@dataclass(frozen=True)
class EpisodeClass:
    name: str
    interference: tuple[Mapping[str, Any], ...]   # as written (interference: entries)
    index: int
    mode: str | None = None
    """The devices' mode in its trials (every group's); None: the spec's."""


@dataclass(frozen=True)
class ValidateSpec:
    trials: int
    quiet: int
    """Quiet trials per devices' mode of the classes."""
    classes: tuple[EpisodeClass, ...]
    seeds: str = "fixed"
    """One of :data:`SEEDS`: whether the trials replay one trace or a trace each."""


def read_validate(src: YamlSource) -> ValidateSpec:
    """The ``validate_cd`` section; errors name its file, line and field."""
    data = src.data if isinstance(src.data, Mapping) else {}
    if SECTION not in data:
        raise src.error("missing: the section listing the episode classes (docs/validate-cd.md)", SECTION)
    at = (SECTION,)
    m = read.mapping(data[SECTION], src, at, {"trials", "quiet", "classes", "seeds"})
    raw = m.get("classes")
    if not isinstance(raw, list) or not raw:
        raise src.error("expected a non-empty list of {name, interference, mode}", *at, "classes")
    classes, seen = [], set()
    for i, c in enumerate(raw):
        cat = at + ("classes", i)
        cm = read.mapping(c, src, cat, {"name", "interference", "mode"})
        if "name" not in cm:
            raise src.error("missing key 'name'", *cat)
        name = read.name(cm["name"], src, cat + ("name",))
        if name.startswith(QUIET) or name in seen:
            raise src.error(f"must be unique and not start with {QUIET!r} (the trials without interference), "
                            f"got {name!r}", *cat, "name")
        seen.add(name)
        eps = cm.get("interference")
        if not isinstance(eps, list) or not eps:
            raise src.error("expected a non-empty interference list (docs/interference.md)", *cat, "interference")
        mode = read.choice(cm["mode"], src, cat + ("mode",), MODES) if "mode" in cm else None
        classes.append(EpisodeClass(name, tuple(eps), i, mode))
    seeds = read.choice(m["seeds"], src, at + ("seeds",), SEEDS) if "seeds" in m else SEEDS[0]
    return ValidateSpec(read.integer(m.get("trials", 20), src, at + ("trials",), 0),
                        read.integer(m.get("quiet", 20), src, at + ("quiet",), 0), tuple(classes), seeds)


def spec_mode(spec: Spec) -> str:
    """The devices' mode of a test: its groups' modes, '+'-joined when they differ."""
    return "+".join(sorted({g.mode for g in spec.groups}))


def _in_mode(base: RunSpec, mode: str | None, at: tuple[str | int, ...]) -> RunSpec:
    """``base`` with every device group in ``mode`` (None: as it is)."""
    if mode is None:
        return base
    out = base
    groups = base.doc.get("devices")
    for i in range(len(groups) if isinstance(groups, list) else 0):
        out = out.with_value(("devices", i, "mode"), mode, at)
    return out


def trial_specs(path: str | os.PathLike[str], scale: str | None,
                only: Sequence[str] | None = None) -> tuple[ValidateSpec, dict[str, RunSpec]]:
    """The section and the run spec of every class and of the quiet trials
    of every devices' mode among them (``quiet-<mode>``), each validated."""
    src = load_yaml(Path(path))
    vs = read_validate(src)
    if only:
        unknown = [c for c in only if c not in {k.name for k in vs.classes}]
        if unknown:
            raise UserError(f"unknown class {unknown[0]!r}; the spec has "
                            f"{', '.join(k.name for k in vs.classes)}", file=os.fspath(path), field="--classes")
        vs = ValidateSpec(vs.trials, vs.quiet, tuple(c for c in vs.classes if c.name in only), vs.seeds)
    runs = expand(src.without(SECTION), scale)
    if len(runs) != 1:
        raise src.error(f"validate-cd runs one test per trial; the spec has {len(runs)} (remove sweep "
                        "and repetitions)", "sweep" if "sweep" in src.data else "repetitions")
    base = runs[0].with_value(("interference",), None, ("interference",))
    wl = base.spec.workload
    if vs.seeds != SEEDS[0] and (wl is None or wl.replay is not None):
        raise src.error("per-trial seeds need a synthetic workload (a replayed capture has no seed to vary)",
                        SECTION, "seeds")
    out: dict[str, RunSpec] = {}
    quiet: dict[str, RunSpec] = {}
    for c in vs.classes:
        cat = (SECTION, "classes", c.index)
        q = _in_mode(base, c.mode, cat + ("mode",))
        quiet.setdefault(quiet_class(spec_mode(q.spec)), q)
        out[c.name] = q.with_value(("interference",), list(c.interference), cat + ("interference",))
    return vs, {**out, **quiet}


def with_seed(rs: RunSpec, seed: int) -> RunSpec:
    """``rs`` replaying the trace of ``workload.seed`` ``seed`` (``validate_cd.seeds: per-trial``)."""
    wl = rs.doc.get("workload")
    if isinstance(wl, Mapping):
        return rs.with_value(("workload", "seed"), seed, (SECTION, "seeds"))
    return rs.with_value(("workload",), {"seed": seed}, (SECTION, "seeds"))
