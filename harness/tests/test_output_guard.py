"""The one guard for every path wotbench writes or deletes (wotbench.base.outpath,
issue 23): a refusal is exit 2 with one `error:` line naming the path and
the flag, before anything is written, and the folder it was pointed at is
left exactly as it was. Destructive cases use stand-ins under tmp_path only
(never the real /etc or /)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from wotbench.base import outpath
from wotbench.base.errors import UserError
from wotbench.commands.main import main

TRACEGEN = ["tracegen", "--devices", "2", "--duration", "2s", "--rit", "exp:100ms", "--service", "exp:5ms"]
Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str | Path) -> tuple[int, str, str]:
        rc = main([os.fspath(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err
    return run


def tree(root: Path) -> dict[str, tuple[int, bytes | str | None]]:
    """Every entry below ``root`` (symlinks not followed): its type and content."""
    out: dict[str, tuple[int, bytes | str | None]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            p = Path(dirpath, name)
            st = p.lstat()
            body = (p.read_bytes() if stat.S_ISREG(st.st_mode)
                    else os.readlink(p) if stat.S_ISLNK(st.st_mode) else None)
            out[str(p.relative_to(root))] = (stat.S_IFMT(st.st_mode), body)
    return out


def refused(res: tuple[int, str, str], path: object, field: str, why: str) -> None:
    rc, out, err = res
    assert rc == 2, err
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {path}: {field}: ") and why in lines[0], lines[0]


# --- tracegen --out DIR [--force] ----------------------------------------------------------

def test_force_refuses_a_folder_tracegen_did_not_make(cli: Run, tmp_path: Path) -> None:
    etc = tmp_path / "etc"                      # a stand-in for /etc: a folder of someone else's files
    (etc / "ssl").mkdir(parents=True)
    (etc / "passwd").write_text("root:x:0:0\n")
    before = tree(tmp_path)
    refused(cli(*TRACEGEN, "--out", etc, "--force"), etc, "--out", "was not made by wotbench tracegen")
    assert tree(tmp_path) == before


def test_force_refuses_a_tracegen_folder_holding_a_users_file(cli: Run, tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    assert cli(*TRACEGEN, "--out", wl)[0] == 0
    (wl / "notes.txt").write_text("mine")
    before = tree(tmp_path)
    refused(cli(*TRACEGEN, "--out", wl, "--force"), wl, "--out", "'notes.txt'")
    assert tree(tmp_path) == before


def test_force_refuses_a_forged_marker_with_a_symlink_inside(cli: Run, tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    assert cli(*TRACEGEN, "--out", wl)[0] == 0
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("keep")
    (wl / "resources" / "dev-9.csv").symlink_to(victim / "keep.txt")
    before = tree(tmp_path)
    refused(cli(*TRACEGEN, "--out", wl, "--force"), wl, "--out", "resources/dev-9.csv")
    assert tree(tmp_path) == before


def test_force_replaces_a_folder_tracegen_made_and_leaves_nothing_beside_it(cli: Run, tmp_path: Path) -> None:
    wl = tmp_path / "wl"
    assert cli(*TRACEGEN, "--out", wl, "--seed", "1")[0] == 0
    assert (wl / outpath.MARKER).read_text() == "wotbench tracegen\n"
    first = (wl / "trace.csv").read_bytes()
    rc, _, err = cli(*TRACEGEN, "--out", wl, "--force", "--seed", "2")
    assert rc == 0, err
    assert (wl / "trace.csv").read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wl"]


def test_empty_out_is_refused_and_leaves_no_old_folder(cli: Run, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    rc, out, err = cli(*TRACEGEN, "--out", "", "--force")
    assert rc == 2 and out == "" and err == "error: --out: is empty (give a folder)\n", err
    assert tree(tmp_path) == before


@pytest.mark.parametrize("target", ["loop", "loop/sub"])
def test_symlink_loop_is_refused(cli: Run, tmp_path: Path, target: str) -> None:
    (tmp_path / "loop").symlink_to("loop")
    before = tree(tmp_path)
    refused(cli(*TRACEGEN, "--out", tmp_path / target, "--force"), tmp_path / target, "--out", "symlink loop")
    assert tree(tmp_path) == before


def test_out_in_proc_is_refused(cli: Run) -> None:
    refused(cli(*TRACEGEN, "--out", "/proc/self/x", "--force"), "/proc/self/x", "--out", "system folder /proc")


def test_out_through_a_file_is_refused(cli: Run, tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    before = tree(tmp_path)
    refused(cli(*TRACEGEN, "--out", tmp_path / "f" / "wl"), tmp_path / "f" / "wl", "--out", "not a folder")
    assert tree(tmp_path) == before


def test_failed_generation_removes_the_folders_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from wotbench.commands.main import build_parser
    from wotbench.tracegen import _generate as gen
    from wotbench.tracegen.tracegen_cmd import spec_from_args

    def boom(*_a: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(gen, "expected_stats", boom)
    with pytest.raises(OSError, match="disk full"):
        gen.generate(spec_from_args(build_parser().parse_args([*TRACEGEN, "--out", "x"])),
                     tmp_path / "a" / "b" / "wl")
    assert list(tmp_path.iterdir()) == []


# --- the guard itself: the root and system folders (pure checks, nothing is written) ------------

@pytest.mark.parametrize("path,why", [("/", "root folder"), ("/etc", "system folder /etc"),
                                      ("/etc/wotbench-x", "system folder /etc"),
                                      ("/usr/lib/x", "system folder /usr"), ("/dev/full", "system folder /dev"),
                                      ("/sys/kernel", "system folder /sys")])
def test_root_and_system_folders_are_refused(path: str, why: str) -> None:
    with pytest.raises(UserError, match=why) as exc:
        outpath.resolve(path, "--out")
    assert str(exc.value).startswith(f"{path}: --out: ")


def test_inside_refuses_a_symlinked_part(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "run" / "report").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UserError, match="is a symlink"):
        outpath.inside(tmp_path / "run", "report/figures", "report")
    with pytest.raises(UserError, match="not a path inside"):
        outpath.inside(tmp_path / "run", "../elsewhere", "report")


# --- wotbench report -------------------------------------------------------------------

@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path]:
    from wotbench.reporting.bench.synth import SynthSpec, synth_run

    small = SynthSpec(devices=3, measure_s=4.0, calibration_s=2.0, warmup_s=1.0)
    return synth_run(tmp_path / "runA", small), synth_run(tmp_path / "runB", small)


def test_report_into_a_symlinked_report_folder_is_refused(cli: Run, runs: tuple[Path, Path],
                                                          tmp_path: Path) -> None:
    run = runs[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (run / "report").symlink_to(outside)
    before = tree(tmp_path)
    refused(cli("report", run), run / "report", "report", "is a symlink")
    assert tree(tmp_path) == before


def test_report_with_a_symlinked_figures_folder_is_refused(cli: Run, runs: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    run = runs[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    (run / "report").mkdir()
    (run / "report" / "figures").symlink_to(outside)
    before = tree(tmp_path)
    refused(cli("report", run), run / "report" / "figures", "report", "is a symlink")
    assert tree(tmp_path) == before


def test_sweep_report_into_a_file_is_refused_before_anything_is_printed(cli: Run, runs: tuple[Path, Path],
                                                                       tmp_path: Path) -> None:
    f = tmp_path / "afile"
    f.write_text("mine")
    before = tree(tmp_path)
    refused(cli("report", "-o", f, *runs), f, "--out", "is not a folder")
    assert tree(tmp_path) == before


def test_sweep_report_into_a_users_folder_is_refused(cli: Run, runs: tuple[Path, Path], tmp_path: Path) -> None:
    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "index.html").write_text("my page")
    (mine / "todo.txt").write_text("mine")
    before = tree(tmp_path)
    refused(cli("report", "-o", mine, *runs), mine, "--out", "'todo.txt'")
    assert tree(tmp_path) == before


def test_parquet_cache_is_not_written_through_a_symlinked_ge_folder(cli: Run, runs: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    run = runs[0]
    outside = tmp_path / "outside-ge"
    (run / "ge").rename(outside)
    (run / "ge").symlink_to(outside)
    before = tree(outside)
    rc, _, err = cli("report", run)
    assert rc == 0, err
    assert tree(outside) == before                      # no ge-0.parquet written out there
    assert (run / "report" / "index.html").is_file()


# --- --results ---------------------------------------------------------------------------

@pytest.mark.parametrize("target", ["loop", "loop/results"])
def test_results_under_a_symlink_loop_is_refused_before_docker(cli: Run, tmp_path: Path, target: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")   # nothing may start
    (tmp_path / "loop").symlink_to("loop")
    spec = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml"
    before = tree(tmp_path)
    refused(cli("run", spec, "--results", tmp_path / target), tmp_path / target, "--results", "symlink loop")
    assert tree(tmp_path) == before


# --- atomic writes never replace a device, FIFO or folder ------------------------------------

@pytest.mark.parametrize("kind", ["fifo", "chardev", "folder"])
def test_atomic_write_refuses_to_replace_what_is_not_a_file(tmp_path: Path, kind: str) -> None:
    from wotbench.base.results import write_json

    node = tmp_path / "node"
    if kind == "fifo":
        os.mkfifo(node)
    elif kind == "chardev":
        try:
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 7))   # a stand-in for /dev/full
        except PermissionError:
            pytest.skip("mknod needs CAP_MKNOD")
    else:
        node.mkdir()
    before = tree(tmp_path)
    with pytest.raises(UserError, match="not a regular file"):
        write_json(node, {"a": 1})
    assert tree(tmp_path) == before


def test_report_with_a_fifo_for_its_page_is_refused_before_printing(cli: Run, runs: tuple[Path, Path],
                                                                    tmp_path: Path) -> None:
    run = runs[0]
    (run / "report").mkdir()
    os.mkfifo(run / "report" / "index.html")
    before = tree(tmp_path)
    refused(cli("report", run), run / "report", "report", "'index.html'")
    assert tree(tmp_path) == before


def test_a_newline_in_the_path_stays_on_one_line(cli: Run, tmp_path: Path) -> None:
    odd = tmp_path / "we\nird"
    odd.mkdir()
    (odd / "f").write_text("keep")
    before = tree(tmp_path)
    rc, _, err = cli(*TRACEGEN, "--out", odd, "--force")
    assert rc == 2 and err.count("\n") == 1 and "we\\nird: --out: was not made" in err, err
    assert tree(tmp_path) == before


def test_a_run_that_failed_before_its_folder_names_no_details_file(tmp_path: Path) -> None:
    from wotbench.execution.runner import RunFailed

    assert RunFailed(tmp_path / "never-made", OSError(40, "loop")).details is None
    (tmp_path / "made").mkdir()
    (tmp_path / "made" / "INCOMPLETE").write_text("running\n")
    assert RunFailed(tmp_path / "made", OSError(28, "full")).details == tmp_path / "made" / "INCOMPLETE"
