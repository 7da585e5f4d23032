"""README.md's commands work as written: every `make X` it shows is a
target of the Makefile, and the swarm lab's block builds the images the lab
needs before `wotbench swarm-lab up` (a fresh clone has none of them)."""

from __future__ import annotations

import re
from pathlib import Path

from wotbench.engine import swarmlab

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _blocks(text: str) -> list[list[str]]:
    """The README's code blocks (indented by 4, or fenced), each its lines."""
    blocks: list[list[str]] = []
    cur: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            if fenced:
                blocks.append(cur)
                cur = []
            fenced = not fenced
        elif fenced:
            cur.append(line)
        elif line.startswith("    ") and line.strip():
            cur.append(line.strip())
        elif line.strip() and cur:
            blocks.append(cur)
            cur = []
    return [b for b in blocks + [cur] if b]


def _make_rules() -> dict[str, tuple[list[str], list[str]]]:
    """The explicit targets of the Makefile and the files it includes:
    name -> (prerequisites, recipe lines)."""
    rules: dict[str, tuple[list[str], list[str]]] = {}
    recipe: list[str] = []
    top = (REPO / "Makefile").read_text()
    included = [REPO / p for p in re.findall(r"^-?include\s+(\S+)", top, re.M)]
    lines = top.splitlines() + [ln for p in included for ln in p.read_text().splitlines()]
    for line in lines:
        if line.startswith("\t"):
            recipe.append(line.strip())
            continue
        m = re.match(r"^([A-Za-z0-9_.-]+(?:\s+[A-Za-z0-9_.-]+)*)\s*:(?![:=])\s*([^;#]*)", line)
        if m and "=" not in m.group(1):
            recipe = []
            for t in m.group(1).split():
                rules[t] = (m.group(2).split(), recipe)
    return rules


def _closure(targets: list[str], rules: dict[str, tuple[list[str], list[str]]]) -> set[str]:
    """The targets and every target they depend on."""
    seen: set[str] = set()
    todo = list(targets)
    while todo:
        t = todo.pop()
        if t not in seen and t in rules:
            seen.add(t)
            todo += rules[t][0]
    return seen


def _make_targets(lines: list[str]) -> list[str]:
    return [w for ln in lines if (m := re.match(r"^make\s+(.*?)(?:\s+#.*)?$", ln))
            for w in m.group(1).split() if "=" not in w]


def test_every_make_command_in_the_readme_is_a_target() -> None:
    rules = _make_rules()
    shown = [t for b in _blocks(README.read_text()) for t in _make_targets(b)]
    assert {"run", "test", "check", "images", "images-swarm"} <= set(shown)
    missing = sorted(set(shown) - set(rules))
    assert not missing, f"README.md shows `make {missing[0]}`, which the Makefile does not have"


def test_the_swarm_lab_block_builds_its_images_first() -> None:
    rules = _make_rules()
    lab_blocks = [b for b in _blocks(README.read_text()) if any("swarm-lab up" in ln for ln in b)]
    assert lab_blocks, "README.md no longer shows the swarm lab"
    # What the lab refuses to start without: its node image and the run's images on every node.
    assert swarmlab.NODE_IMAGE.startswith("wotbench/swarm-node:")
    assert {i.split(":")[0] for i in swarmlab.DEFAULT_IMAGES} == {"wotbench/device", "wotbench/ge",
                                                                 "wotbench/nettools"}
    for b in lab_blocks:
        up = next(i for i, ln in enumerate(b) if "swarm-lab up" in ln)
        built = _closure(_make_targets(b[:up]), rules)
        recipes = [r for t in built for r in rules[t][1] if "docker/build-images.sh" in r]
        # build-images.sh builds device, ge and nettools by default, the node image with --swarm-node.
        assert any("--swarm-node" in r for r in recipes), f"no `make images-swarm` before: {b[up]}"
        assert any("--" not in r.split("build-images.sh", 1)[1] for r in recipes), \
            f"the device, GE and nettools images are not built before: {b[up]}"


def test_the_durations_table_names_every_experiment_and_its_scales():
    """README's "how long" answer points to docs/results.md's table: one row
    per experiments/*.yaml, and every scale the spec defines in that row's
    columns (full, small, ci, or "other scales")."""
    import yaml

    text = (REPO / "docs" / "results.md").read_text()
    section = text.split("## How long each experiment takes", 1)[1].split("\n## ", 1)[0]
    rows = {cells[0]: cells for line in section.splitlines() if line.startswith("| ")
            for cells in [[c.strip() for c in line.strip("|").split("|")]] if cells[0] not in ("experiment", "---")}
    names = sorted(p.stem for p in (REPO / "experiments").glob("*.yaml"))
    assert sorted(rows) == names
    for name in names:
        scales = (yaml.safe_load((REPO / "experiments" / f"{name}.yaml").read_text()) or {}).get("scales") or {}
        other = rows[name][-1]
        for s in scales:
            assert s in ("full", "small", "ci") or s in other, (name, s)
        assert "#how-long-each-experiment-takes" in README.read_text()


def test_the_python_example_uses_only_what_a_run_has(tmp_path):
    """README's "From Python" block runs against a real (synthetic) run
    folder: every attribute it names exists and the quantiles come out."""
    import contextlib
    import io

    from wotbench.reporting.bench.synth import synth_run
    from wotbench.reporting.tests.conftest import BASE

    text = README.read_text().split("## From Python", 1)[1]
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    run = synth_run(tmp_path / "run", BASE)
    (run / "summary.json").write_text('{"format": 1, "run_id": "r", "complete": true, "verdict": "valid", '
                                      '"reasons": []}')
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(code.replace("results/<run-id>", str(run)), {})    # README's own example, on a synthetic run
    assert "0.99" in out.getvalue()


def test_every_picture_the_docs_show_is_there_and_small():
    """Each image a docs/*.md page links (docs/img/, the report's screenshots)
    exists, is a PNG and stays under 250 KB; each transcript it links exists."""
    for page in sorted((REPO / "docs").glob("*.md")):
        for target in re.findall(r"\]\(((?:img|transcripts)/[^)\s]+)\)", page.read_text()):
            path = REPO / "docs" / target
            assert path.is_file(), f"{page.name}: {target} is missing"
            if target.startswith("img/"):
                assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{target}: not a PNG"
                assert path.stat().st_size <= 250 * 1024, f"{target}: {path.stat().st_size // 1024} KB"
