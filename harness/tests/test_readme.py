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
