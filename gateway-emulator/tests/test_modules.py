"""wotbench-ge keeps the device's module discipline: one header per
module, no two files that call each other (the call graph between files,
read from each object's defined and undefined symbols with `nm`, has no
cycle), and each fuzzer links exactly the modules its entry point reaches."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from gehelpers import ROOT

GE_DIR = ROOT / "gateway-emulator"
OBJ = ROOT / "build" / "obj" / "gateway-emulator"
# Defined global symbols (nm's upper-case types other than U).
DEFINED = set("TDBRCGSVWi")


def symbols(obj: Path) -> tuple[set[str], set[str]]:
    """(defined, undefined) global symbols of one object file."""
    out = subprocess.run(["nm", "-g", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    defined: set[str] = set()
    undefined: set[str] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[-2] == "U":
            undefined.add(parts[-1])
        elif len(parts) == 3 and parts[1] in DEFINED:
            defined.add(parts[2])
    return defined, undefined


def call_graph(objs: dict[str, Path]) -> dict[str, dict[str, set[str]]]:
    """File -> the files it calls -> the symbols it uses from each."""
    syms = {name: symbols(path) for name, path in objs.items()}
    owner = {s: name for name, (defined, _) in syms.items() for s in defined}
    graph: dict[str, dict[str, set[str]]] = {name: {} for name in objs}
    for name, (_, undefined) in syms.items():
        for s in undefined:
            if s in owner and owner[s] != name:
                graph[name].setdefault(owner[s], set()).add(s)
    return graph


def mutual_pairs(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """Every pair of files that call each other, with the symbols."""
    return [f"{a} <-> {b}: {sorted(graph[a][b])} / {sorted(graph[b][a])}"
            for a in graph for b in graph[a] if a < b and a in graph.get(b, {})]


def cycle(graph: dict[str, dict[str, set[str]]]) -> list[str]:
    """One cycle of calls between files (any length), or []."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str]:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return []

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return []


def reach(graph: dict[str, dict[str, set[str]]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for m in graph[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen


def make_var(name: str) -> list[str]:
    """A variable of the Makefile (gateway-emulator/build.mk), expanded."""
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT),
                        "--eval", "print-var-%: ; @echo $($*)", f"print-var-{name}"],
                       capture_output=True, text=True, check=True)
    return p.stdout.split()


def modules() -> list[str]:
    return sorted(p.stem for p in GE_DIR.glob("*.c"))


def ge_objects() -> dict[str, Path]:
    objs = {m: OBJ / f"{m}.o" for m in modules()}
    objs["cpulist"] = OBJ / "cpulist.o"  # the device's, compiled for the GE
    return objs


def test_every_module_is_built_and_has_its_header(ge_bin):
    assert sorted([*make_var("GE_MODS"), "main"]) == modules()
    assert not (GE_DIR / "ge.h").exists()
    for m in modules():
        if m != "main":
            assert (GE_DIR / f"{m}.h").is_file(), f"{m}.c has no {m}.h"


def test_no_two_files_call_each_other(ge_bin):
    graph = call_graph(ge_objects())
    assert graph["loop"] and graph["main"], "no calls read: the check would be vacuous"
    assert mutual_pairs(graph) == []
    assert cycle(graph) == []


def test_no_file_but_main_calls_main_or_cli(ge_bin):
    graph = call_graph(ge_objects())
    callers = {a for a in graph for b in graph[a] if b in ("main", "cli")}
    assert callers <= {"main"}, callers


def test_every_exported_name_is_prefixed(ge_bin):
    bad = {m: sorted(s for s in symbols(path)[0] if not s.startswith("ge_"))
           for m, path in ge_objects().items() if m not in ("main", "cpulist")}
    assert {m: v for m, v in bad.items() if v} == {}
    assert symbols(OBJ / "main.o")[0] == {"main"}


@pytest.mark.parametrize("which", ["trace", "datagram", "http"])
def test_fuzzer_links_exactly_what_it_reaches(which, ge_fuzzers):
    objs = {m: OBJ / "fuzz" / f"{m}.o" for m in make_var(f"GE_FUZZ_{which.upper()}_MODS")}
    objs[f"fuzz_{which}"] = OBJ / "fuzz" / f"fuzz_{which}.o"
    listed = set(objs) - {f"fuzz_{which}"}
    assert reach(call_graph(objs), f"fuzz_{which}") == listed
    assert not listed & {"main", "cli", "loop", "stats"}


def compile_pair(tmp_path: Path, a_src: str, b_src: str) -> dict[str, Path]:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    objs = {}
    for name, src in (("a", a_src), ("b", b_src)):
        (tmp_path / f"{name}.c").write_text(src)
        objs[name] = tmp_path / f"{name}.o"
        subprocess.run([cc, "-c", str(tmp_path / f"{name}.c"), "-o", str(objs[name])],
                       check=True)
    return objs


def test_the_check_finds_two_files_that_call_each_other(tmp_path):
    objs = compile_pair(tmp_path, "int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n",
                        "int a(int);\nint b(int x) { return a(x); }\n")
    graph = call_graph(objs)
    assert mutual_pairs(graph) == ["a <-> b: ['b'] / ['a']"]
    assert cycle(graph) == ["a", "b", "a"]


def test_the_check_passes_a_one_way_call(tmp_path):
    objs = compile_pair(tmp_path, "int b(int);\nint a(int x) { return b(x); }\n",
                        "int b(int x) { return x + 1; }\n")
    graph = call_graph(objs)
    assert graph == {"a": {"b": {"b"}}, "b": {}}
    assert mutual_pairs(graph) == [] and cycle(graph) == []
