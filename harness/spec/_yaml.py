"""Load a YAML file as plain Python data and remember the line of every key.

Error messages must point at the offending line (``error: FILE:LINE: FIELD:
what``), but ``yaml.safe_load`` forgets where things were. This module
composes the document with PyYAML's SafeLoader, keeps the node marks, and
hands out ordinary dicts/lists/scalars plus a way to ask where a key was::

    src = load(Path("exp.yaml"))               # or loads(text, "exp.yaml")
    src.data                                   # plain dict / list / scalar
    src.line("devices", 0, "service")          # 1-based line of that key
    raise src.error("must be > 0", "devices", 0, "count")
    with src.at("devices", 0, "rit"):          # fills file, line and field of a
        parse_distribution(text, "rit")        # UserError raised inside
    src.resolve("rits.csv")                    # path relative to the spec's folder

A key path is a sequence of mapping keys (str) and list indexes (int). For a
path that does not exist (a missing key) ``line`` returns the line of the
nearest existing ancestor, so "missing key" errors point at the section
that lacks it. Duplicate keys in one mapping are an error (PyYAML would
silently keep the last one). YAML syntax errors become UserError too.

This is the one place that gives an error its place: every reader of the
spec model raises through :meth:`YamlSource.error`, :meth:`YamlSource.at` or
:meth:`YamlSource.locate`, so every message reads ``FILE:LINE: FIELD: what``.
"""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wotbench.base import inputfile
from wotbench.base.errors import UserError

__all__ = ["YamlSource", "YamlSyntaxError", "load", "loads", "field_name", "parse_key_path", "KeyPath",
           "syntax_error", "excerpt", "HINTS", "EXCERPT_CHARS"]

KeyPath = tuple[str | int, ...]


def field_name(path: KeyPath | list[str | int]) -> str:
    """Render a key path the way error messages name fields: ``devices[0].service``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def parse_key_path(text: str) -> KeyPath | None:
    """``devices[0].count`` -> ("devices", 0, "count"); None if it is not a key path."""
    parts: list[str | int] = []
    for m in re.finditer(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[([0-9]+)\]", text):
        parts.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
    ok = parts and isinstance(parts[0], str) and field_name(tuple(parts)) == text
    return tuple(parts) if ok else None


@dataclass(frozen=True)
class YamlSource:
    """A loaded YAML document: its data and the line of every key path."""

    name: str
    """File name used in error messages (as given to :func:`load`)."""
    data: Any
    """The document as plain dicts, lists and scalars (``None`` if empty)."""
    base_dir: Path = Path(".")
    """Folder that relative paths inside the document are relative to."""
    lines: dict[KeyPath, int] = field(default_factory=dict, repr=False)

    def line(self, *path: str | int) -> int | None:
        """1-based line of the key (or list item) at ``path``, else of its nearest ancestor."""
        key = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), None)

    def error(self, what: str, *path: str | int) -> UserError:
        """A UserError for the field at ``path`` (returned, so callers write ``raise src.error(...)``)."""
        return UserError(what, self.name, self.line(*path), field_name(path) or None)

    @contextlib.contextmanager
    def at(self, *path: str | int) -> Iterator[None]:
        """Attach this file and the line of ``path`` to a UserError raised inside the block.

        Only errors that do not name a file yet are changed; their field
        defaults to ``field_name(path)`` when they name none.
        """
        try:
            yield
        except UserError as err:
            if err.file is None:
                err.file = self.name
                err.line = self.line(*path)
                if not err.field:
                    err.field = field_name(path) or None
            raise

    def locate(self, err: UserError) -> UserError:
        """``err`` placed in this file at the line of the key its ``field``
        names (``devices[0].impairment``), unless it names a file already."""
        if err.file is None:
            err.file = self.name
            err.line = self.line(*(parse_key_path(err.field or "") or ()))
        return err

    def with_value(self, path: KeyPath, value: Any, at: KeyPath) -> YamlSource:
        """A copy with the value at ``path`` replaced (``None`` removes a
        key) by one written at ``at`` elsewhere in this file (a scale, a
        sweep value): errors about the new value point there. Every key on
        the path but the last must exist."""
        data = copy.deepcopy(self.data)
        _set(data, path, copy.deepcopy(value), self, at)
        lines = {p: ln for p, ln in self.lines.items() if p[: len(path)] != path}
        if value is not None:
            lines.update({path + p[len(at):]: ln for p, ln in self.lines.items() if p[: len(at)] == at})
        return YamlSource(self.name, data, self.base_dir, lines)

    def without(self, *keys: str) -> YamlSource:
        """A copy without these top-level keys; their lines stay known (an
        override written there still points at its line)."""
        if not isinstance(self.data, Mapping):
            return self
        data = {k: v for k, v in self.data.items() if k not in keys}
        return YamlSource(self.name, data, self.base_dir, self.lines)

    def resolve(self, relpath: str | Path) -> Path:
        """A path written in the document, made relative to the document's folder."""
        p = Path(relpath).expanduser()
        return p if p.is_absolute() else self.base_dir / p


def _set(doc: Any, path: KeyPath, value: Any, src: YamlSource, at: KeyPath) -> None:
    node: Any = doc
    for i, part in enumerate(path[:-1]):
        ok = (isinstance(node, Mapping) and isinstance(part, str) and part in node) or (
            isinstance(node, list) and isinstance(part, int) and part < len(node))
        if not ok:
            raise src.error(f"{field_name(path[: i + 1])} does not exist in the spec", *at)
        node = node[part]
    last = path[-1]
    if isinstance(last, int):
        if not isinstance(node, list) or last >= len(node):
            raise src.error(f"{field_name(path)} does not exist in the spec", *at)
        if value is None:
            raise src.error("a list item cannot be removed (give a value)", *at)
        node[last] = value
    elif not isinstance(node, dict):
        raise src.error(f"{field_name(path[:-1])} is not a mapping", *at)
    elif value is None:
        node.pop(last, None)
    else:
        node[last] = value


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"


class _Loader(yaml.SafeLoader):
    """PyYAML's SafeLoader whose plain numbers are decimal, in ASCII digits
    (an exponent as YAML 1.1 writes it, ``1.5e+3``): YAML 1.1 also reads
    ``0x2``, ``010`` (octal 8), ``0b101``, ``1_000``, ``1:30`` (90), ``+4``
    and ``.inf``/``.nan`` as numbers; here they stay strings, which the
    spec's readers refuse as numbers (docs/spec.md)."""


_Loader.yaml_implicit_resolvers = {
    first: [r for r in resolvers if r[0] not in (_INT, _FLOAT)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver(_INT, re.compile(r"^-?(?:0|[1-9][0-9]*)$"), list("-0123456789"))
_Loader.add_implicit_resolver(_FLOAT, re.compile(r"^-?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+][0-9]+)?$"),
                              list("-.0123456789"))


#: Bounds on what a spec may cost to load: its size on disk, and its nodes
#: once YAML aliases are expanded (an alias bomb of ten lines expands to
#: hundreds of millions of nodes; the largest experiment here has ~200).
MAX_BYTES = 1 << 20
MAX_NODES = 100_000


def _expanded_nodes(root: yaml.Node, name: str) -> int:
    """Nodes of the document with every alias expanded, counted without
    expanding (each composed node once, memoised); over MAX_NODES is a UserError."""
    memo: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        got = memo.get(id(node))
        if got is not None:
            return got
        memo[id(node)] = 1                      # a recursive alias counts once
        if isinstance(node, yaml.MappingNode):
            n = 1 + sum(size(k) + size(v) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n = 1 + sum(size(v) for v in node.value)
        else:
            n = 1
        memo[id(node)] = n
        if n > MAX_NODES:
            raise UserError(f"the document expands to more than {MAX_NODES} YAML nodes "
                            "(aliases included): refused", name, node.start_mark.line + 1)
        return n

    return size(root)


def load(path: str | Path) -> YamlSource:
    """Read and load the YAML file at ``path``: a regular file of at most
    MAX_BYTES (wotbench.base.inputfile); anything else, or invalid YAML, raises UserError."""
    p = Path(path)
    text = inputfile.read_text(p, MAX_BYTES, what="a spec")
    return loads(text, str(p), base_dir=p.parent.absolute())


def loads(text: str, name: str = "<string>", *, base_dir: Path | None = None) -> YamlSource:
    """Load YAML from a string; ``name`` is the file name shown in errors."""
    if len(text) > MAX_BYTES:
        raise UserError(f"{len(text)} characters: larger than the {MAX_BYTES} a spec may have", name)
    node, data, loader = _compose(text, name)
    lines: dict[KeyPath, int] = {}
    if node is not None:
        lines[()] = node.start_mark.line + 1
        _record(loader, node, (), lines, name)
    return YamlSource(name, data, base_dir if base_dir is not None else Path("."), lines)


def _compose(text: str, name: str) -> tuple[yaml.Node | None, Any, _Loader]:
    """The document's node tree and its data; every YAML error a UserError
    with its line (a control character: its line and column)."""
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        char = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise UserError(f"invalid YAML: control character U+{char:04X} at column {col}", name, line) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _expanded_nodes(node, name)
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        raise syntax_error(exc, text, name) from None
    except yaml.YAMLError as exc:
        raise UserError(f"invalid YAML: {exc}", name) from None
    except RecursionError:
        raise UserError("invalid YAML: nested too deeply", name) from None
    finally:
        loader.dispose()
    return node, data, loader


class YamlSyntaxError(UserError):
    """A YAML syntax error: its one-line message (``FILE:LINE: invalid
    YAML: <problem> (line L, column C): <hint>``) and, in ``excerpt``, the
    one source line the parser names with a caret under the column (the
    command line prints it after the message on a terminal only: a log
    keeps the one line, and no text of the spec)."""

    excerpt: str = ""

    def __init__(self, what: str, file: str, line: int | None, excerpt: str = "") -> None:
        super().__init__(what, file, line)
        self.excerpt = excerpt


#: PyYAML's problems in plain words: (a fragment of the problem, the hint).
HINTS: tuple[tuple[str, str], ...] = (
    ("mapping values are not allowed here",
     "a 'key:' where a value was expected: indent this line like the keys above it "
     "(a deeper indent continues the value above), or quote a value that contains ': '"),
    ("expected <block end>", "this line is indented differently from the keys beside it "
     "(indent with spaces, the same number for every key of one mapping or list)"),
    ("did not find expected key", "this line is indented differently from the keys beside it "
     "(indent with spaces, the same number for every key of one mapping or list)"),
    ("could not find expected ':'", "a key without its ':', or a value that runs on to this line: "
     "check the indentation and the quotes above"),
    ("found character '\\t'", "tabs are not allowed in YAML indentation: use spaces"),
    ("found unexpected end of stream", "a quote, bracket or brace is opened and never closed"),
    ("expected ',' or ']'", "a [list] is not closed, or an item in it needs quotes"),
    ("expected ',' or '}'", "a {mapping} is not closed, or an item in it needs quotes"),
    ("found undefined alias", "an *alias names no &anchor defined above it"),
    ("expected alphabetic or numeric character", "a '*' or '&' starts a value: quote it"),
    ("found character '@'", "'@' and '`' cannot start a plain value: quote it"),
    ("found character '`'", "'@' and '`' cannot start a plain value: quote it"),
)

#: The most characters of the source line an error shows.
EXCERPT_CHARS = 120


def syntax_error(exc: yaml.MarkedYAMLError, text: str, name: str) -> YamlSyntaxError:
    """``exc`` as a one-line UserError with its line, column and a plain
    hint, plus an excerpt of the one line the parser names (never more:
    the spec's other lines may hold values nobody should see in a log)."""
    mark = exc.problem_mark or exc.context_mark
    what = exc.problem or exc.context or "invalid YAML"
    if mark is None:
        return YamlSyntaxError(f"invalid YAML: {what}", name, None)
    line, col = mark.line + 1, mark.column + 1
    hint = next((h for frag, h in HINTS if frag in what), "")
    if "end of stream" in what and exc.context_mark is not None and exc.context_mark is not mark:
        hint += f" (it opens at line {exc.context_mark.line + 1})"
    msg = f"invalid YAML: {what} (line {line}, column {col})" + (f": {hint}" if hint else "")
    return YamlSyntaxError(msg, name, line, excerpt(text, mark.line, mark.column))


def excerpt(text: str, line0: int, col0: int) -> str:
    """Line ``line0`` (0-based) of ``text``, cut to EXCERPT_CHARS around
    column ``col0`` and made printable, with a caret under that column
    (``""`` for a blank line)."""
    lines = text.split("\n")
    if not 0 <= line0 < len(lines):
        return ""
    src = lines[line0].rstrip("\r")
    if not src.strip():                      # the end of the text: nothing to point at
        return ""
    start = max(0, min(col0 - EXCERPT_CHARS // 2, len(src) - EXCERPT_CHARS))
    piece = src[start:start + EXCERPT_CHARS]
    shown = "".join(ch if ch.isprintable() else ("\\t" if ch == "\t" else "?") for ch in piece)
    # The caret's offset counts what is shown before it (a tab shows as two characters).
    caret = sum(2 if ch == "\t" else 1 for ch in piece[:max(0, col0 - start)])
    cut_l, cut_r = ("..." if start else ""), ("..." if start + EXCERPT_CHARS < len(src) else "")
    gutter = f"{line0 + 1:>5} | "
    return f"{gutter}{cut_l}{shown}{cut_r}\n{' ' * (len(gutter) - 2)}| {' ' * (len(cut_l) + caret)}^"


def _record(
    loader: _Loader, node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int], name: str
) -> None:
    """Walk the composed node tree in step with the constructed data, noting each key's line."""
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int)):
                key = str(key)
            if key in seen:
                raise UserError("duplicate key", name, key_node.start_mark.line + 1,
                                field_name(path + (key,)))
            seen.add(key)
            sub = path + (key,)
            lines[sub] = key_node.start_mark.line + 1
            _record(loader, value_node, sub, lines, name)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            sub = path + (i,)
            lines[sub] = item.start_mark.line + 1
            _record(loader, item, sub, lines, name)
