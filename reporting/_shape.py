"""The shape of a run's JSON records: which fields the checks read and of
what type, so that a damaged record (a field of the wrong type, an object
where a list belongs) is evidence missing, said in one line naming the file
and the field, instead of an AttributeError deep in a check.

A shape is a Python type or tuple of types (``int`` never matches a bool),
:class:`Obj` (an object; listed keys are checked where present, ``required``
ones must be), :class:`MapOf` (an object whose every value has one shape),
:class:`ListOf`, or a tuple of shapes (any of them). ``ANY`` matches
everything."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wotbench.base.errors import UserError
from wotbench.reporting._load import read_json

__all__ = ["ANY", "ListOf", "MapOf", "Obj", "read_record", "shape_problem"]

ANY = object()


@dataclass(frozen=True)
class Obj:
    fields: dict[str, Any]
    required: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class MapOf:
    value: Any


@dataclass(frozen=True)
class ListOf:
    item: Any


_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}


def _name(shape: Any) -> str:
    if isinstance(shape, (Obj, MapOf)):
        return "an object"
    if isinstance(shape, ListOf):
        return "a list"
    if isinstance(shape, tuple):
        return " or ".join(dict.fromkeys(_name(s) for s in shape))
    return _NAMES.get(shape, getattr(shape, "__name__", "?"))


def _is(x: Any, t: type) -> bool:
    if t is float:                  # a JSON number: 3 or 3.5
        return isinstance(x, (int, float)) and not isinstance(x, bool)
    if t is int:
        return isinstance(x, int) and not isinstance(x, bool)
    return isinstance(x, t)


def _got(x: Any) -> str:
    if isinstance(x, bool) or x is None:
        return "true or false" if isinstance(x, bool) else "null"
    return {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}.get(
        type(x), type(x).__name__)


def _key(at: str, k: Any) -> str:
    return f"{at}.{k}" if at else str(k)


def shape_problem(x: Any, shape: Any, at: str = "") -> tuple[str, str] | None:
    """(field, what) of the first place ``x`` does not have ``shape``, else None."""
    if shape is ANY:
        return None
    if isinstance(shape, tuple) and not all(isinstance(s, type) for s in shape):
        return _alternatives_problem(x, shape, at)
    if isinstance(shape, (Obj, MapOf)):
        return _object_problem(x, shape, at)
    if isinstance(shape, ListOf):
        return _list_problem(x, shape, at)
    types = shape if isinstance(shape, tuple) else (shape,)
    if any(_is(x, t) for t in types):
        return None
    return at or "(top)", f"expected {_name(shape)}, got {_got(x)}"


def _alternatives_problem(x: Any, shapes: tuple[Any, ...], at: str) -> tuple[str, str] | None:
    """None if ``x`` has one of ``shapes``; else the deepest complaint of an
    alternative of the right kind, else the kinds."""
    problems = [shape_problem(x, s, at) for s in shapes]
    if any(p is None for p in problems):
        return None
    kind = [p for s, p in zip(shapes, problems, strict=True) if p is not None and _kind_matches(x, s)]
    return kind[0] if kind else (at or "(top)", f"expected {_name(shapes)}, got {_got(x)}")


def _object_problem(x: Any, shape: Obj | MapOf, at: str) -> tuple[str, str] | None:
    if not isinstance(x, dict):
        return at or "(top)", f"expected an object, got {_got(x)}"
    if isinstance(shape, MapOf):
        items = list(x.items())
    else:
        missing = [k for k in shape.required if k not in x]
        if missing:
            return _key(at, missing[0]), "missing"
        items = [(k, x[k]) for k in shape.fields if k in x]
    for k, v in items:
        p = shape_problem(v, shape.value if isinstance(shape, MapOf) else shape.fields[k], _key(at, k))
        if p is not None:
            return p
    return None


def _list_problem(x: Any, shape: ListOf, at: str) -> tuple[str, str] | None:
    if not isinstance(x, list):
        return at or "(top)", f"expected a list, got {_got(x)}"
    for i, v in enumerate(x):
        p = shape_problem(v, shape.item, f"{at}[{i}]")
        if p is not None:
            return p
    return None


def _kind_matches(x: Any, shape: Any) -> bool:
    return ((isinstance(shape, (Obj, MapOf)) and isinstance(x, dict))
            or (isinstance(shape, ListOf) and isinstance(x, list)))


def read_record(path: Path, shape: Any) -> Any:
    """A run's JSON record (bounded: read_json), checked against ``shape``;
    a UserError naming the file and the field otherwise."""
    doc = read_json(path)
    p = shape_problem(doc, shape)
    if p is not None:
        raise UserError(p[1], path, None, p[0])
    return doc
