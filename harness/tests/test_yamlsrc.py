"""wotbench.spec._yaml: plain data plus the line of every key."""

from __future__ import annotations

from pathlib import Path

import pytest

from wotbench import UserError
from wotbench.spec import _yaml as yamlsrc

DOC = """\
name: x
workload:
  seed: 3
devices:
  - name: a
    count: 2
  - name: b
    service: exp:5ms
"""


def test_data_is_plain_python() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    assert src.data == {"name": "x", "workload": {"seed": 3},
                        "devices": [{"name": "a", "count": 2}, {"name": "b", "service": "exp:5ms"}]}
    assert type(src.data) is dict and type(src.data["devices"]) is list


def test_line_of_keys_and_items() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    assert src.line("workload", "seed") == 3
    assert src.line("devices", 0) == 5
    assert src.line("devices", 1, "service") == 8


def test_missing_key_points_at_nearest_ancestor() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    assert src.line("devices", 1, "count") == src.line("devices", 1) == 7
    assert src.line("nope") == 1


def test_error_names_file_line_and_field() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    err = src.error("must be > 0", "devices", 0, "count")
    assert str(err) == "exp.yaml:6: devices[0].count: must be > 0"


def test_at_fills_in_location_of_errors_raised_inside() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    with pytest.raises(UserError) as ei:
        with src.at("workload", "seed"):
            raise UserError("bad seed")
    assert str(ei.value) == "exp.yaml:3: workload.seed: bad seed"


def test_duplicate_key_is_an_error() -> None:
    with pytest.raises(UserError) as ei:
        yamlsrc.loads("a: 1\nb: 2\na: 3\n", "d.yaml")
    assert (ei.value.line, ei.value.field) == (3, "a")


def test_syntax_error_has_a_line() -> None:
    with pytest.raises(UserError) as ei:
        yamlsrc.loads("a: [1, 2\nb: 3\n", "s.yaml")
    assert ei.value.file == "s.yaml" and ei.value.line is not None
    assert "invalid YAML" in ei.value.what


def test_load_resolves_relative_paths_against_the_file(tmp_path: Path) -> None:
    p = tmp_path / "sub" / "exp.yaml"
    p.parent.mkdir()
    p.write_text(DOC)
    src = yamlsrc.load(p)
    assert src.resolve("rits.csv") == p.parent / "rits.csv"
    assert src.name == str(p)


def test_unreadable_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as ei:
        yamlsrc.load(tmp_path / "missing.yaml")
    assert "cannot read" in ei.value.what


def test_field_name() -> None:
    assert yamlsrc.field_name(("devices", 0, "impairment", "loss")) == "devices[0].impairment.loss"
    assert yamlsrc.field_name(()) == ""


def test_key_paths_parse_only_when_they_render_back() -> None:
    assert yamlsrc.parse_key_path("devices[0].impairment.loss") == ("devices", 0, "impairment", "loss")
    assert yamlsrc.parse_key_path("sweep") == ("sweep",)
    for bad in ("devices[0]..count", "[0].count", "devices.0", "", "a b"):
        assert yamlsrc.parse_key_path(bad) is None, bad


def test_locate_places_a_later_error_at_its_key() -> None:
    src = yamlsrc.loads(DOC, "exp.yaml")
    err = src.locate(UserError("no such core", field="devices[1].service"))
    assert str(err) == "exp.yaml:8: devices[1].service: no such core"
    placed = UserError("x", "other.csv", 3, "value")
    assert src.locate(placed) is placed and placed.file == "other.csv" and placed.line == 3


def test_with_value_keeps_the_original_and_points_at_the_override() -> None:
    src = yamlsrc.loads(DOC + "over:\n  count: 9\n", "exp.yaml")
    new = src.with_value(("devices", 0, "count"), 9, ("over", "count"))
    assert new.data["devices"][0]["count"] == 9 and src.data["devices"][0]["count"] == 2
    assert new.line("devices", 0, "count") == 10 and src.line("devices", 0, "count") == 6
    gone = src.with_value(("workload", "seed"), None, ("over",))
    assert "seed" not in gone.data["workload"] and src.data["workload"]["seed"] == 3
    with pytest.raises(UserError, match=r"devices\[5\] does not exist") as ei:
        src.with_value(("devices", 5, "count"), 1, ("over", "count"))
    assert ei.value.line == 10
    assert "over" not in src.without("over").data and src.without("over").line("over", "count") == 10


@pytest.mark.parametrize("text, line, col, hint", [
    ("a:\n  b: 1\n    c: 2\n", 3, 6, "indent this line like the keys above"),
    ("a:\n    b: 1\n  c: 2\n", 3, 3, "indented differently"),
    ("a: x: 1\n", 1, 5, "quote a value that contains ': '"),
    ("a:\n\tb: 1\n", 2, 1, "tabs are not allowed"),
    ("a: 'x\nb: 1\n", 3, 1, "never closed (it opens at line 1)"),
])
def test_syntax_error_names_column_and_gives_a_hint(text: str, line: int, col: int, hint: str) -> None:
    with pytest.raises(yamlsrc.YamlSyntaxError) as ei:
        yamlsrc.loads(text, "s.yaml")
    e = ei.value
    assert e.line == line and f"(line {line}, column {col})" in e.what and hint in e.what
    assert e.what.startswith("invalid YAML: ") and "\n" not in str(e)


def test_syntax_error_excerpt_is_the_one_named_line_cut_short() -> None:
    secret = "token: " + "s" * 300
    text = f"{secret}\na:\n  b: 1\n    c: 2 {'x' * 300}\n{secret}\n"
    with pytest.raises(yamlsrc.YamlSyntaxError) as ei:
        yamlsrc.loads(text, "s.yaml")
    src, caret = ei.value.excerpt.split("\n")
    assert src.startswith("    4 |     c: 2 xx") and src.endswith("...") and "s" * 10 not in src
    assert len(src) <= len("    4 | ") + yamlsrc.EXCERPT_CHARS + 3
    assert caret == "      | " + " " * 5 + "^"           # under column 6, the ':' after c
    # Far along a line, the excerpt is the part around the column.
    with pytest.raises(yamlsrc.YamlSyntaxError) as ei:
        yamlsrc.loads("a: 1\nb: " + "x" * 200 + ": 3\n", "s.yaml")
    src, caret = ei.value.excerpt.split("\n")
    assert src.startswith("    2 | ...") and src.endswith(": 3")
    assert caret.index("^") == src.index(": 3")
    # A tab shows escaped, and the caret still points under it.
    with pytest.raises(yamlsrc.YamlSyntaxError) as ei:
        yamlsrc.loads("a:\n  b: 1\n  \tc: 2\n", "s.yaml")
    assert ei.value.excerpt == "    3 |   \\tc: 2\n      |   ^"
