"""docs/architecture.md against the tree, and .pyroot/wotbench against the
package folders.

The page's file map ("File map") names every production module exactly
once: each Python module of harness/, tracegen/, reporting/ and cd-module/
outside their tests/ folders, and each .c/.h file at the top of
gateway-emulator/ and device/ (their fuzz/ and bench/ folders are not
modules). Every repository path the page quotes and every ``wotbench.*``
name it mentions exists, and so do the modules its diagram names.
.pyroot/wotbench, the package as Python and the static tools see it
(docs/architecture.md, "Why .pyroot/"), holds exactly one relative link per
part of the package, each to its folder.

Each check is a function of the page's text (or of a folder) that returns
what disagrees. The real ones give nothing; in-memory and on-disk drifts (a
line removed, a path made up, a line twice, a module added or removed, a
link missing, dangling or pointing elsewhere) must each trip their check, so
no check passes vacuously."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
PY_FOLDERS = ("harness", "tracegen", "reporting", "cd-module")
C_FOLDERS = ("gateway-emulator", "device")
#: The names in .pyroot/wotbench of the package's folders outside harness/.
OTHER_PARTS = {"tracegen": "tracegen", "reporting": "reporting", "cd": "cd-module"}
#: Folders a quoted repository path may start with.
PATH_ROOTS = (*PY_FOLDERS, *C_FOLDERS, "docs", "experiments", "docker", ".pyroot", ".ci")
#: The layers, as the diagram names their modules (without ``wotbench.``).
LAYERS = ("base", "spec", "tracegen", "cd", "reporting", "host", "engine", "execution", "studies", "commands")

MAP_ROW = re.compile(r"^\| `([^`]+)` \|(.*)\|\s*$", re.M)
QUOTED_PATH = re.compile(r"`((?:" + "|".join(re.escape(r) for r in PATH_ROOTS) + r")/[^`\s*]*)`")
DOTTED = re.compile(r"(?<![\w.])wotbench(?:\.[A-Za-z_]\w*)+")
DIAGRAM = re.compile(r"^```mermaid\n(.*?)^```", re.M | re.S)
DIAGRAM_MODULE = re.compile(r"(?<![\w.])(?:" + "|".join(LAYERS) + r")(?:\.[A-Za-z_]\w*)+")
DIAGRAM_PRIVATE = re.compile(r"(?<![\w.])_[a-z]\w*")
QUOTED_MODULE = re.compile(r"`((?:" + "|".join(LAYERS) + r")(?:\.[A-Za-z_]\w*)+)`")


# ---- the tree -------------------------------------------------------------

def production_modules(root: Path) -> set[str]:
    """Repository paths of every module the file map must name."""
    found: set[str] = set()
    for folder in PY_FOLDERS:
        for p in (root / folder).rglob("*.py"):
            rel = p.relative_to(root)
            if "tests" not in rel.parts and "__pycache__" not in rel.parts:
                found.add(rel.as_posix())
    for folder in C_FOLDERS:
        for pattern in ("*.c", "*.h"):
            found.update(p.relative_to(root).as_posix() for p in (root / folder).glob(pattern))
    return found


def module_file(dotted: str, pyroot: Path) -> tuple[Path | None, list[str]]:
    """The longest module prefix of ``dotted`` under ``pyroot``: its file (a
    package's folder, namespace packages included), and the parts left."""
    parts = dotted.split(".")
    for n in range(len(parts), 0, -1):
        base = pyroot.joinpath(*parts[:n])
        for file in (base, base.with_name(base.name + ".py")):
            if file.is_dir() or (file.suffix == ".py" and file.is_file()):
                return file, parts[n:]
    return None, parts


def name_problem(dotted: str, pyroot: Path) -> str | None:
    """Why ``dotted`` names no module, nor a name of a module, or None."""
    file, rest = module_file(dotted, pyroot)
    if file is None or len(rest) > 1:
        return f"{dotted}: no such module"
    source = file / "__init__.py" if file.is_dir() else file
    if rest and not (source.is_file() and re.search(rf"\b{re.escape(rest[0])}\b", source.read_text())):
        return f"{dotted}: {file.relative_to(pyroot).as_posix()} has no {rest[0]}"
    return None


# ---- the page -------------------------------------------------------------

def section(text: str, title: str) -> str:
    """The body of the ``## title`` section, up to the next ``## `` heading."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def map_rows(text: str) -> list[tuple[str, str]]:
    """(path, what it owns) of every row of the file map."""
    return [(path, owns.strip()) for path, owns in MAP_ROW.findall(section(text, "File map"))]


def map_problems(text: str, modules: set[str]) -> list[str]:
    """What the file map and the tree's modules disagree on."""
    rows = map_rows(text)
    if not rows:
        return ["docs/architecture.md has no file map"]
    named = Counter(path for path, _ in rows)
    problems = [f"{path}: {n} lines in the file map" for path, n in sorted(named.items()) if n > 1]
    problems += [f"{path}: a module the file map leaves out" for path in sorted(modules - named.keys())]
    problems += [f"{path}: in the file map, but not a production module of the tree"
                 for path in sorted(named.keys() - modules)]
    problems += [f"{path}: its line says nothing" for path, owns in rows if not owns]
    return problems


def path_problems(text: str, root: Path) -> list[str]:
    """Quoted repository paths of the page that do not exist."""
    return [f"{p}: no such path" for p in sorted(set(QUOTED_PATH.findall(text))) if not (root / p).exists()]


def name_problems(text: str, root: Path) -> list[str]:
    """``wotbench.*`` names of the page, the modules it quotes without the
    prefix (`execution.runner`) and those its diagram names (``execution.phases._measure``,
    ``_records``), that do not exist."""
    pyroot = root / ".pyroot"
    names = set(DOTTED.findall(text)) | {"wotbench." + m for m in QUOTED_MODULE.findall(text)}
    diagrams = DIAGRAM.findall(text)
    names |= {"wotbench." + m for d in diagrams for m in DIAGRAM_MODULE.findall(d)}
    problems = [p for p in (name_problem(n, pyroot) for n in sorted(names)) if p]
    privates = {p.stem for folder in PY_FOLDERS for p in (root / folder).rglob("_*.py")}
    problems += [f"{m}: the diagram names no module of the tree"
                 for m in sorted({m for d in diagrams for m in DIAGRAM_PRIVATE.findall(d)} - privates)]
    if not diagrams:
        problems.append("docs/architecture.md has no Mermaid diagram")
    return problems


# ---- .pyroot --------------------------------------------------------------

def pyroot_parts(root: Path) -> dict[str, Path]:
    """Name in .pyroot/wotbench -> the folder or file it must link to: each
    folder and module at the top of harness/, and the folders of the other
    parts."""
    parts = {p.name: p for p in (root / "harness").iterdir()
             if (p.is_dir() and not p.name.startswith((".", "__pycache__"))) or p.suffix == ".py"}
    parts.update({name: root / folder for name, folder in OTHER_PARTS.items()})
    return parts


def pyroot_problems(root: Path) -> list[str]:
    """What .pyroot/wotbench and the package's folders disagree on."""
    view = root / ".pyroot" / "wotbench"
    want = pyroot_parts(root)
    have = {p.name: p for p in view.iterdir() if p.name != "__pycache__"}
    problems = [f"{name}: no link in .pyroot/wotbench" for name in sorted(want.keys() - have.keys())]
    problems += [f"{name}: in .pyroot/wotbench, but no part of the package"
                 for name in sorted(have.keys() - want.keys())]
    for name in sorted(want.keys() & have.keys()):
        link = have[name]
        if not link.is_symlink():
            problems.append(f"{name}: not a symbolic link")
        elif os.path.isabs(os.readlink(link)):
            problems.append(f"{name}: an absolute link (a clone elsewhere would not resolve it)")
        elif not link.exists():
            problems.append(f"{name}: a dangling link")
        elif link.resolve() != want[name].resolve():
            problems.append(f"{name}: links to {link.resolve()}, not {want[name]}")
    return problems


# ---- the real page and tree ------------------------------------------------

def test_the_file_map_names_every_module_once() -> None:
    assert map_problems(DOC.read_text(), production_modules(REPO)) == []


def test_every_path_the_page_quotes_exists() -> None:
    assert path_problems(DOC.read_text(), REPO) == []


def test_every_module_the_page_names_exists() -> None:
    assert name_problems(DOC.read_text(), REPO) == []


def test_pyroot_is_one_link_per_part_of_the_package() -> None:
    assert pyroot_problems(REPO) == []


# ---- each check catches drift -----------------------------------------------

def _first_row(text: str) -> str:
    m = MAP_ROW.search(text, text.index("## File map"))
    assert m is not None
    return m.group(0)


def _drop_first_row(text: str) -> str:
    return text.replace(_first_row(text) + "\n", "", 1)


def _made_up_row(text: str) -> str:
    row = _first_row(text)
    return text.replace(row, row + "\n| `harness/base/nothing.py` | a module that is not there |", 1)


def _row_twice(text: str) -> str:
    row = _first_row(text)
    return text.replace(row, row + "\n" + row, 1)


def _row_says_nothing(text: str) -> str:
    row = _first_row(text)
    return text.replace(row, f"|{row.split('|')[1]}|  |", 1)


MapDrift = Callable[[str, set[str]], tuple[str, set[str]]]

#: drift -> (how it changes the page or the tree, what the check must say).
MAP_DRIFTS: dict[str, tuple[MapDrift, str]] = {
    "a line removed": (lambda t, m: (_drop_first_row(t), m), "leaves out"),
    "a made-up path": (lambda t, m: (_made_up_row(t), m), "not a production module"),
    "a line twice": (lambda t, m: (_row_twice(t), m), "2 lines"),
    "a line that says nothing": (lambda t, m: (_row_says_nothing(t), m), "says nothing"),
    "a module added to the tree": (lambda t, m: (t, m | {"harness/base/new.py"}), "leaves out"),
    "a C file added to the tree": (lambda t, m: (t, m | {"device/new.c"}), "leaves out"),
    "a module removed from the tree": (lambda t, m: (t, m - {sorted(m)[0]}), "not a production module"),
    "no file map": (lambda t, m: (t.replace("## File map", "## Files"), m), "no file map"),
}


@pytest.mark.parametrize(("drift", "said"), MAP_DRIFTS.values(), ids=MAP_DRIFTS.keys())
def test_the_map_check_catches(drift: MapDrift, said: str) -> None:
    real, modules = DOC.read_text(), production_modules(REPO)
    new = set(map_problems(*drift(real, modules))) - set(map_problems(real, modules))
    assert new and all(said in p for p in new), new


@pytest.mark.parametrize("mention", [
    "`harness/base/nothing.py`", "`harness/_plan.py`", "`harness/phases/`", "`device/ge.h`",
])
def test_the_path_check_catches(mention: str) -> None:
    real = DOC.read_text()
    new = set(path_problems(real + f"\nSee {mention}.\n", REPO)) - set(path_problems(real, REPO))
    assert new == {f"{mention.strip('`')}: no such path"}


@pytest.mark.parametrize("mention", [
    "wotbench.backend", "wotbench._plan", "`execution.layout`", "wotbench.engine.NoSuchBackend",
    "wotbench.execution.phases._plan.x",
    "```mermaid\nflowchart LR\n    A[\"execution.phases._nothing\"]\n```",
    "```mermaid\nflowchart LR\n    A[\"reporting._analyze, _nothing\"]\n```",
])
def test_the_name_check_catches(mention: str) -> None:
    real = DOC.read_text()
    assert len(set(name_problems(real + f"\n{mention}\n", REPO)) - set(name_problems(real, REPO))) == 1


def test_the_tree_scan_takes_production_modules_only(tmp_path: Path) -> None:
    for rel in ("harness/__init__.py", "harness/execution/phases/_x.py", "harness/tests/test_x.py",
                "harness/__pycache__/x.py", "reporting/tests/_reference.py", "tracegen/bench/b.py",
                "cd-module/_rd.py", "gateway-emulator/a.c", "gateway-emulator/a.h",
                "gateway-emulator/fuzz/fuzz_a.c", "device/b.c", "device/bench/c.c", "device/README.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert production_modules(tmp_path) == {
        "harness/__init__.py", "harness/execution/phases/_x.py", "tracegen/bench/b.py", "cd-module/_rd.py",
        "gateway-emulator/a.c", "gateway-emulator/a.h", "device/b.c"}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A package tree with a correct .pyroot/wotbench."""
    for rel in ("harness/__init__.py", "harness/base/__init__.py", "harness/execution/__init__.py",
                "harness/tests/test_x.py", "harness/README.md", "tracegen/__init__.py",
                "reporting/__init__.py", "cd-module/__init__.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    (tmp_path / "harness" / "__pycache__").mkdir()
    view = tmp_path / ".pyroot" / "wotbench"
    view.mkdir(parents=True)
    for name in ("__init__.py", "base", "execution", "tests"):
        (view / name).symlink_to(f"../../harness/{name}")
    for name, folder in OTHER_PARTS.items():
        (view / name).symlink_to(f"../../{folder}")
    return tmp_path


def _relink(link: Path, target: str) -> None:
    link.unlink()
    link.symlink_to(target)


def _copy_for_link(link: Path) -> None:
    link.unlink()
    link.mkdir()
    (link / "__init__.py").write_text("")


def _mkdir(folder: Path) -> None:
    folder.mkdir()


def _touch(file: Path) -> None:
    file.write_text("")


#: drift -> (how it changes the tree, what the check must say).
PYROOT_DRIFTS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a link missing": (lambda r: (r / ".pyroot/wotbench/execution").unlink(), "no link"),
    "a new subpackage without its link": (lambda r: _mkdir(r / "harness/studies"), "studies: no link"),
    "a new root module without its link": (lambda r: _touch(r / "harness/extra.py"), "extra.py: no link"),
    "a link to no part": (lambda r: (r / ".pyroot/wotbench/old").symlink_to("../../harness/base"), "no part"),
    "a dangling link": (lambda r: _relink(r / ".pyroot/wotbench/base", "../../harness/gone"), "dangling"),
    "a link to another folder": (lambda r: _relink(r / ".pyroot/wotbench/cd", "../../tracegen"), "links to"),
    "an absolute link": (lambda r: _relink(r / ".pyroot/wotbench/base", str(r / "harness/base")), "absolute"),
    "a copy instead of a link": (lambda r: _copy_for_link(r / ".pyroot/wotbench/reporting"), "not a symbolic"),
}


def test_the_pyroot_check_passes_a_correct_view(tree: Path) -> None:
    assert pyroot_problems(tree) == []


@pytest.mark.parametrize(("drift", "said"), PYROOT_DRIFTS.values(), ids=PYROOT_DRIFTS.keys())
def test_the_pyroot_check_catches(tree: Path, drift: Callable[[Path], None], said: str) -> None:
    drift(tree)
    problems = pyroot_problems(tree)
    assert len(problems) == 1 and said in problems[0], problems


def name_clashes(modules: set[str]) -> list[str]:
    """Module names (the file's name, not its package's) that two
    production modules share: a name says what one module owns."""
    by_name: dict[str, list[str]] = {}
    for path in sorted(modules):
        if not path.endswith("/__init__.py") and path.endswith(".py"):
            by_name.setdefault(Path(path).name, []).append(path)
    return [f"{name}: {', '.join(paths)}" for name, paths in sorted(by_name.items()) if len(paths) > 1]


def test_no_two_modules_share_a_name() -> None:
    assert name_clashes(production_modules(REPO)) == []


def test_a_shared_name_is_found() -> None:
    assert name_clashes({"harness/engine/_swarm.py", "reporting/_swarm.py", "harness/base/__init__.py",
                         "reporting/__init__.py"}) == ["_swarm.py: harness/engine/_swarm.py, reporting/_swarm.py"]
