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

import copy
from collections.abc import Mapping
from typing import Any

from wotbench._yamlsrc import YamlSource

SCALES_KEY = "scales"
FULL = "full"

KeyPath = tuple[str | int, ...]


def names(src: YamlSource) -> list[str]:
    """The scales a spec offers, ``full`` first."""
    doc = src.data
    defined = doc.get(SCALES_KEY) if isinstance(doc, Mapping) else None
    extra = [str(k) for k in defined if k != FULL] if isinstance(defined, Mapping) else []
    return [FULL, *extra]


def apply(src: YamlSource, scale: str | None) -> tuple[YamlSource, str]:
    """The document at ``scale`` (default ``full``) and the scale's name."""
    from wotbench._spec import parse_key_path

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
                raise src.error(f"cannot override {key!r} (expected a key path such as "
                                "devices[0].count)", SCALES_KEY, k, key)
    if name not in defined and name != FULL:
        raise src.error(f"unknown scale {name!r} (the spec has: {', '.join(names(src))})", SCALES_KEY)
    out = {k: copy.deepcopy(v) for k, v in doc.items() if k != SCALES_KEY}
    lines = {p: ln for p, ln in src.lines.items() if not p or p[0] != SCALES_KEY}
    for key, value in (defined.get(name) or {}).items():
        path = parse_key_path(key)
        assert path is not None            # checked above
        at: KeyPath = (SCALES_KEY, name, key)
        _set(out, path, copy.deepcopy(value), src, at)
        for p in [p for p in lines if p[: len(path)] == path]:
            del lines[p]
        if value is not None:
            for p, ln in src.lines.items():
                if p[: len(at)] == at:
                    lines[path + p[len(at):]] = ln
    return YamlSource(src.name, out, src.base_dir, lines), name


def _set(doc: dict[str, Any], path: KeyPath, value: Any, src: YamlSource, at: KeyPath) -> None:
    node: Any = doc
    for i, part in enumerate(path[:-1]):
        ok = (isinstance(node, Mapping) and isinstance(part, str) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node))
        if not ok:
            from wotbench._yamlsrc import field_name

            raise src.error(f"{field_name(path[: i + 1])} does not exist in the spec", *at)
        node = node[part]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise src.error("that list item does not exist in the spec", *at)
        if value is None:
            raise src.error("a list item cannot be removed (give a value)", *at)
        node[last] = value
    elif not isinstance(node, dict):
        raise src.error("the key's parent is not a mapping", *at)
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value
