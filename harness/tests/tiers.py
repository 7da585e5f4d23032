"""Test tiers, assigned from what a test uses (a pytest plugin, loaded by
pyproject's ``addopts = -p wotbench.tests.tiers``).

Each collected test gets the markers of what it reaches. The plugin reads
the code of the test and of every fixture in its closure (and of a fixture
it asks for by name, ``request.getfixturevalue("ge_bin")``), following the
functions and classes of the test folders (helpers, conftest) they use:

- ``native``: a path under build/ (a built binary, an ASan build, a fuzzer,
  an object file) or a ``make`` command;
- ``docker``: a client for the engine (``docker.from_env``), or the
  existing ``docker`` marker;
- ``root``: asks who it runs as (``os.getuid``/``os.geteuid``), or a command
  line that starts a root-only program (mount, setpriv, iptables, ...).

A function of the package that a test calls directly is read one level
deep: ``docker`` if it makes the engine's client itself (``dockerenv.client``),
``root`` if it both asks who it runs as and names a root-only program
(``hostguard.available``).

Two markers are set by hand (pyproject). ``slow``, on a test whose point
is a big input or a memory bound (seconds of CPU that no smaller input can
replace), keeps the test out of ``check``, which must stay under a
minute, and in ``native`` and the whole suite. ``serial``, on a native
test that measures time, pins a core or waits on short timers, keeps it
off the 2 workers on which ``make test`` runs the rest of the native tier
(``-m "not serial"``); it runs alone, with the Docker tests.

``--tier check`` keeps the tests with none of the markers (as ``-m "not
docker and not native and not root and not slow"``), ``--tier native`` adds
the ``native`` and ``slow`` ones (as ``-m "not docker and not root"``);
without ``--tier`` every test runs (``make test``). In a tier the plugin hides the Docker
engine (DOCKER_HOST names a socket that does not exist, for the tests and
the processes they start), so the tier runs the same with or without one,
and a test FAILS, naming what it reached, when it or its fixtures start a
program beyond the tier (a binary under build/, ``make``, ``docker``, a
root-only program) or connect to the Docker socket: a mis-tiered test is a
loud failure, never a silent skip.
"""

from __future__ import annotations

import ast
import dis
import functools
import inspect
import linecache
import os
import socket
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build"
TIERS = ("docker", "native", "root")
#: Set by hand, never assigned: a test too long for ``check`` (a big input, a memory bound).
SLOW = "slow"
#: --tier NAME -> the tier markers its tests may carry.
ALLOWED: dict[str, frozenset[str]] = {"check": frozenset(), "native": frozenset({"native", SLOW})}
#: Programs that only root may run as the tests run them (mount a tmpfs,
#: become another user, enter a namespace, change the firewall).
ROOT_PROGRAMS = frozenset({"mount", "umount", "setpriv", "nsenter", "unshare", "iptables",
                           "ip6tables", "iptables-save", "iptables-restore", "ip", "tc"})
DOCKER_PROGRAMS = frozenset({"docker", "dockerd", "containerd"})
DOCKER_SOCKETS = frozenset({"/var/run/docker.sock", "/run/docker.sock"})
#: Where the tiers' DOCKER_HOST points: a socket that cannot exist.
NO_DOCKER = "unix:///dev/null/wotbench-tier-has-no-docker.sock"
HIDDEN_ENGINE = ("this test asked for the Docker engine, which its tier hides (DOCKER_HOST="
                 f"{NO_DOCKER}): if it needs the engine, its code or a fixture must show it "
                 "(docker.from_env, the docker_client fixture, or the docker marker)")
UID_CALLS = frozenset({"getuid", "geteuid"})

Tiers = frozenset[str]
NONE: Tiers = frozenset()


# ---- assignment: what a function's code reaches ----

def _in_test_folder(obj: object) -> bool:
    """Defined in a file of a tests/ folder of this repo (helpers, conftest)."""
    path = getattr(getattr(obj, "__code__", None), "co_filename", None)
    if path is None:
        path = getattr(sys.modules.get(getattr(obj, "__module__", "") or ""), "__file__", None)
    return bool(path) and _is_test_file(path)


@functools.cache
def _is_test_file(path: str) -> bool:
    """A file of a tests/ folder of this repo (asked for every function a
    test reaches: memoised, resolving a path costs a system call per part)."""
    p = Path(path).resolve()
    return p.is_relative_to(ROOT) and "tests" in p.relative_to(ROOT).parts[:-1]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple | frozenset):
        for v in value:
            yield from _strings(v)


def _under_build(value: object, depth: int = 0) -> bool:
    """A path under build/, or a list/tuple/set/dict holding one."""
    if isinstance(value, Path):
        return value.resolve().is_relative_to(BUILD)
    if depth < 2 and isinstance(value, list | tuple | set | frozenset):
        return any(_under_build(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, dict):
        return any(_under_build(v, depth + 1) for v in value.values())
    return False


def _root_command(value: object) -> bool:
    """A command line (list or tuple) that starts a root-only program."""
    return (isinstance(value, list | tuple) and bool(value) and isinstance(value[0], str)
            and value[0] in ROOT_PROGRAMS)


def _writes_root_command(fn: Callable[..., Any]) -> bool:
    """The function's source holds a list or tuple literal that starts a
    root-only program (``["mount", "-t", "tmpfs", ...]``)."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", None)
    if filename is not None and not _quotes_root_program(filename):
        return False                            # no such literal anywhere in its file
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return False
    return any(isinstance(n, ast.List | ast.Tuple) and n.elts and isinstance(n.elts[0], ast.Constant)
               and n.elts[0].value in ROOT_PROGRAMS for n in ast.walk(tree))


@functools.cache
def _quotes_root_program(filename: str) -> bool:
    """The file holds a string literal naming a root-only program (a cheap
    test before parsing the source of each of its functions)."""
    text = "".join(linecache.getlines(filename))
    return not text or any(f"{q}{p}{q}" in text for p in ROOT_PROGRAMS for q in "\"'")


def _members(cls: type) -> Iterator[Callable[..., Any]]:
    for v in vars(cls).values():
        if isinstance(v, staticmethod | classmethod):
            v = v.__func__
        elif isinstance(v, property):
            v = v.fget
        if isinstance(v, types.FunctionType):
            yield v


class _Scan:
    """What one function's bytecode shows (nested functions included)."""

    def __init__(self) -> None:
        self.tiers: set[str] = set()
        self.strings: set[str] = set()
        self.asks_uid = False
        self.asks_fixture = False
        self.docker_module = False              # import docker, or the module as a global
        self.asks_engine = False                # .from_env(): the engine DOCKER_HOST names


class Reach:
    """The tier markers a function's code reaches, and the fixtures it asks
    for by name, memoised per code object. Functions and classes of the
    test folders are followed through; a function of the package is read
    one level deep (what it does itself, not what it calls)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[int, bool], tuple[Tiers, frozenset[str]]] = {}

    def of(self, fn: Callable[..., Any], follow: bool = True) -> tuple[Tiers, frozenset[str]]:
        """(tier markers, fixture names asked for) of ``fn``'s code."""
        fn = getattr(fn, "__func__", fn)
        code = getattr(fn, "__code__", None)
        if code is None:
            return NONE, frozenset()
        key = (id(code), follow)
        if key not in self._seen:
            self._seen[key] = NONE, frozenset()                 # a cycle adds nothing
            self._seen[key] = self._judge(fn, code, follow)
        return self._seen[key]

    def _judge(self, fn: Callable[..., Any], code: types.CodeType,
               follow: bool) -> tuple[Tiers, frozenset[str]]:
        scan = _Scan()
        env = getattr(fn, "__globals__", {})
        for c in _codes(code):
            scan.strings |= {s for k in c.co_consts for s in _strings(k)}
            held: object = None                                   # the value last loaded
            for ins in dis.get_instructions(c):
                held = self._instruction(ins, env, held, scan, follow)
        if scan.docker_module and scan.asks_engine:
            scan.tiers.add("docker")
        if follow:                                                # code of the tests
            if "make" in scan.strings:
                scan.tiers.add("native")
            if scan.asks_uid or _writes_root_command(fn):
                scan.tiers.add("root")
        elif scan.asks_uid and scan.strings & ROOT_PROGRAMS:      # the package's own check
            scan.tiers.add("root")
        asked = frozenset(scan.strings) if scan.asks_fixture else frozenset()
        return frozenset(scan.tiers), asked

    def _instruction(self, ins: dis.Instruction, env: dict[str, Any], held: object,
                     scan: _Scan, follow: bool) -> object:
        name = ins.argval
        if ins.opname == "IMPORT_NAME":
            scan.docker_module |= str(name).split(".")[0] == "docker"
        elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            scan.asks_uid |= name in UID_CALLS
            scan.asks_engine |= name == "from_env"
            scan.asks_fixture |= name == "getfixturevalue"
            if follow and isinstance(held, types.ModuleType):    # module.function
                value = getattr(held, str(name), None)
                scan.tiers |= self._value(value, follow)
                return value
        elif ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and name in env:
            value = env[name]
            scan.docker_module |= isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "docker"
            scan.tiers |= self._value(value, follow)
            return value
        return None

    def _value(self, value: object, follow: bool) -> Tiers:
        if _under_build(value):
            return frozenset({"native"})
        if not follow:
            return NONE
        if _root_command(value):
            return frozenset({"root"})
        if isinstance(value, types.FunctionType):
            return self.of(value, follow=_in_test_folder(value))[0]
        if isinstance(value, type) and _in_test_folder(value):
            return NONE.union(*(self.of(m)[0] for m in _members(value)))
        return NONE


def _fixture_funcs(item: pytest.Item, name: str) -> list[Callable[..., Any]]:
    defs = item.session._fixturemanager.getfixturedefs(name, item) or ()
    return [fd.func for fd in defs if _in_test_folder(fd.func)]


def tiers_of(item: pytest.Item, reach: Reach) -> Tiers:
    """The tier markers of one test: its marks, its own code, and the code
    of every fixture in its closure or that it asks for by name."""
    found = {t for t in (*TIERS, SLOW) if item.get_closest_marker(t)}
    todo: list[Callable[..., Any]] = [item.function] if isinstance(item, pytest.Function) else []
    info = getattr(item, "_fixtureinfo", None)
    for name in (info.names_closure if info else ()):
        todo += _fixture_funcs(item, name)
    done: set[int] = set()
    while todo:
        fn = todo.pop()
        if id(fn) not in done:
            done.add(id(fn))
            tiers, asked = reach.of(fn)
            found |= tiers
            for name in asked:
                todo += _fixture_funcs(item, name)
    return frozenset(found)


# ---- the guard: a test of a tier that reaches beyond it fails ----

def _program(args: Any, kwargs: dict[str, Any]) -> str | None:
    """The program a Popen(args, ...) starts."""
    exe = kwargs.get("executable")
    if exe is None and isinstance(args, str | bytes | os.PathLike):
        words = os.fsdecode(args).split() if kwargs.get("shell") else [os.fsdecode(args)]
        exe = words[0] if words else None
    elif exe is None and args:
        exe = args[0]
    return os.fsdecode(exe) if exe is not None else None


def _program_tier(program: str, cwd: Any) -> str | None:
    name = os.path.basename(program)
    if os.sep in program:
        path = Path(os.fsdecode(cwd) if cwd else os.getcwd()) / program
        if path.resolve().is_relative_to(BUILD):
            return "native"
    if name == "make":
        return "native"
    if name in DOCKER_PROGRAMS:
        return "docker"
    if name in ROOT_PROGRAMS:
        return "root"
    return None


class Guard:
    """For the length of a session in a tier: no Docker engine to be found,
    and what a test reaches beyond the tier (programs it starts, the Docker
    socket) noted, to fail the test."""

    def __init__(self, allowed: Tiers) -> None:
        self.allowed = allowed
        self.reached: list[str] = []
        self.probed = False                     # asked for the (hidden) engine
        self._undo: list[Callable[[], None]] = []

    def note(self, tier: str | None, what: str) -> None:
        if tier is not None and tier not in self.allowed:
            self.reached.append(f"{tier}: {what}")

    def install(self) -> None:
        popen_init = subprocess.Popen.__init__
        connect = socket.socket.connect
        docker_host = os.environ.get("DOCKER_HOST")
        guard = self

        def checked_init(self: subprocess.Popen[Any], args: Any, *a: Any, **kw: Any) -> None:
            program = _program(args, kw)
            if program is not None:
                guard.note(_program_tier(program, kw.get("cwd")), f"starts {program}")
            popen_init(self, args, *a, **kw)

        def checked_connect(self: socket.socket, address: Any) -> None:
            if self.family == socket.AF_UNIX and isinstance(address, str | bytes):
                path = os.fsdecode(address)
                if path in DOCKER_SOCKETS:                      # not through DOCKER_HOST
                    guard.note("docker", f"connects to {path}")
                guard.probed |= path == NO_DOCKER.removeprefix("unix://")
            connect(self, address)

        def undo_env() -> None:
            if docker_host is None:
                os.environ.pop("DOCKER_HOST", None)
            else:
                os.environ["DOCKER_HOST"] = docker_host

        os.environ["DOCKER_HOST"] = NO_DOCKER
        self._undo = [undo_env]
        self._swap(subprocess.Popen, "__init__", checked_init)
        self._swap(socket.socket, "connect", checked_connect)
        for name in ("system", "posix_spawn", "posix_spawnp"):     # starts without Popen
            self._wrap_os(name)

    def _swap(self, owner: object, name: str, value: object) -> None:
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._undo.append(lambda: setattr(owner, name, original))

    def _wrap_os(self, name: str) -> None:
        original = getattr(os, name)
        guard = self

        def checked(program: Any, *a: Any, **kw: Any) -> Any:
            first = _program(program, {"shell": name == "system"})
            if first is not None:
                guard.note(_program_tier(first, None), f"starts {first}")
            return original(program, *a, **kw)

        self._swap(os, name, checked)

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo = []


_GUARD = pytest.StashKey[Guard]()
_REACH = pytest.StashKey[Reach]()


# ---- the hooks ----

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier", choices=sorted(ALLOWED), default=None,
                     help="run one tier: check (no Docker, no built binary, no root, not slow), "
                          "native (adds the C binaries and the slow tests); default: every test")
    parser.addoption("--exclude-tier", choices=sorted(ALLOWED), default=None,
                     help="every test but those of one tier (make test: the check tier runs first, "
                          "spread over the cores, then the rest with --exclude-tier check)")


def pytest_configure(config: pytest.Config) -> None:
    # The session's identity on the swarms its tests make (wotbench.tests.leftovers);
    # xdist's workers and the processes the tests start inherit it.
    from wotbench.tests.leftovers import session_identity
    os.environ.setdefault("WOTBENCH_TEST_SESSION", session_identity())   # swarmlab.TEST_SESSION_ENV
    config.addinivalue_line("markers", "native: runs a binary under build/ or make "
                                       "(assigned by wotbench.tests.tiers; make test-native)")
    config.addinivalue_line("markers", "root: needs to run as root (assigned by wotbench.tests.tiers)")
    config.stash[_REACH] = Reach()
    tier = config.getoption("--tier")
    if tier is not None:
        guard = Guard(ALLOWED[tier])
        guard.install()
        config.stash[_GUARD] = guard


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        guard.uninstall()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reach = config.stash[_REACH]
    tier = config.getoption("--tier")
    exclude = config.getoption("--exclude-tier")
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        marks = tiers_of(item, reach)
        for mark in sorted(marks - {m.name for m in item.iter_markers()}):
            item.add_marker(mark)
        wanted = (tier is None or marks <= ALLOWED[tier]) and (exclude is None or not marks <= ALLOWED[exclude])
        (keep if wanted else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> None:
    """A fixture beyond the tier, reached in a way the assignment missed, fails."""
    guard = request.config.stash.get(_GUARD, None)
    if guard is None or not _in_test_folder(fixturedef.func):
        return
    beyond = request.config.stash[_REACH].of(fixturedef.func)[0] - guard.allowed
    if beyond:
        pytest.fail(f"tier {request.config.getoption('--tier')}: fixture {fixturedef.argname} "
                    f"needs {', '.join(sorted(beyond))}", pytrace=False)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    guard = item.config.stash.get(_GUARD, None)
    if guard is not None:
        guard.reached, guard.probed = [], False     # what the fixtures and the test reach


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    guard = item.config.stash.get(_GUARD, None)
    if guard is None:
        return (yield)
    try:
        result = yield
    except BaseException:
        if guard.probed:
            item.add_report_section("call", "tier", HIDDEN_ENGINE)
        raise
    finally:
        reached, guard.reached = guard.reached, []
    if reached:
        pytest.fail(f"tier {item.config.getoption('--tier')}: this test reaches beyond its tier "
                    f"({'; '.join(dict.fromkeys(reached))}); tiers are assigned from what a test's "
                    "code and fixtures use (harness/tests/tiers.py)", pytrace=False)
    return result
