"""Named scales of one experiment spec (``scales:``, ``wotbench run --scale``).

A paper experiment is stated at the scale the paper ran it (the spec's
body, scale ``full``) and at smaller scales that fit a small host, written
as overrides of key paths::

    scales:
      small: {devices[0].count: 5, phases: {warmup: 2s, measure: 20s}}
      ci:    {'sweep.values': [1, 5], phases: {warmup: 1s, measure: 8s}}

Each override replaces the value at that key path (a mapping value is
replaced whole, not merged); ``null`` removes the key. The path must lead
through keys that exist; only its last key may be new. ``full`` is always a
scale (the body as written); defining ``full`` under ``scales`` adds
overrides to it. The scaled document has no ``scales`` key; error lines of
an overridden value point into ``scales``.
"""

from __future__ import annotations

from collections.abc import Mapping

from wotbench.base import units
from wotbench.spec._yaml import YamlSource, parse_key_path

SCALES_KEY = "scales"
FULL = "full"


def names(src: YamlSource) -> list[str]:
    """The scales a spec offers, ``full`` first."""
    doc = src.data
    defined = doc.get(SCALES_KEY) if isinstance(doc, Mapping) else None
    extra = [str(k) for k in defined if k != FULL] if isinstance(defined, Mapping) else []
    return [FULL, *extra]


def apply(src: YamlSource, scale: str | None) -> tuple[YamlSource, str]:
    """The document at ``scale`` (default ``full``) and the scale's name."""
    doc = src.data
    name = FULL if scale is None else scale
    if not isinstance(doc, Mapping) or SCALES_KEY not in doc:
        if name != FULL:
            raise src.error(f"the spec defines no scale {name!r} (it has: {FULL})", SCALES_KEY)
        return src, name
    defined = doc[SCALES_KEY]
    if not isinstance(defined, Mapping):
        raise src.error(f"expected a mapping of scale name to overrides, got {type(defined).__name__}",
                        SCALES_KEY)
    for k, v in defined.items():
        if not isinstance(k, str) or not k:
            raise src.error("a scale name must be a non-empty string", SCALES_KEY, k)
        if v is not None and not isinstance(v, Mapping):
            raise src.error(f"expected a mapping of key path to value, got {type(v).__name__}",
                            SCALES_KEY, k)
        for key in v or {}:
            path = parse_key_path(key) if isinstance(key, str) else None
            if path is None or path[0] == SCALES_KEY:
                raise src.error(f"cannot override {units.short(key)} (expected a key path such as "
                                "devices[0].count)", SCALES_KEY, k, key)
    if name not in defined and name != FULL:
        raise src.error(f"unknown scale {name!r} (the spec has: {', '.join(names(src))})", SCALES_KEY)
    out = src
    for key, value in (defined.get(name) or {}).items():
        path = parse_key_path(key)
        assert path is not None            # checked above
        out = out.with_value(path, value, (SCALES_KEY, name, key))
    return out.without(SCALES_KEY), name
