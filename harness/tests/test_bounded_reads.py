"""The one bounded reader of spec inputs (wotbench.base.inputfile, issue 23):
a spec, or an ``empirical:`` file it points at, that is a FIFO, a device
that never ends, a file too large or one that grows is refused in one line
(exit 2) in bounded memory; an error never shows what such a file holds.

Every CLI case runs in a subprocess with a timeout, so that a regression
that blocks (a FIFO opened without O_NONBLOCK) fails instead of hanging, and
reports its peak RSS (VmHWM) so that one that reads without a bound fails
on memory. Nothing here is timed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wotbench.base import inputfile
from wotbench.base.errors import UserError
from wotbench.spec import empirical
from wotbench.tracegen._distribution import Empirical, parse_distribution

BASE = """\
name: t
workload: {seed: 1}
devices:
  - name: a
    count: 4
    rit: exp:100ms
    service: exp:5ms
    threads: 2
    memory: 48m
gateway: {instances: 1}
cd: {enabled: true, rit: 500ms, calibration: 3s}
placement: {affinity: false, reserve: [0]}
phases: {warmup: 1s, measure: 10s, cooldown: 1s}
"""
MAX_MB = 200
SECRET = "root:$6$SECRET-HASH-4242$xyz:19000:0:99999:7:::"
# VmHWM, not ru_maxrss: the latter keeps the forking parent's (pytest's) peak across exec.
_CODE = ("import re, sys; from wotbench.commands import main as cli; rc = cli.main(sys.argv[1:]); "
         "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
         "sys.exit(rc)")


def wotbench(*argv: str | Path, cwd: Path) -> tuple[int, list[str], int]:
    """(exit status, stderr lines but the peak, peak RSS in MB) of the CLI, at most 20 s."""
    r = subprocess.run([sys.executable, "-c", _CODE, *map(str, argv)], capture_output=True, text=True,
                       timeout=20, cwd=cwd)
    lines = r.stderr.strip().splitlines()
    return r.returncode, lines[:-1], int(lines[-1]) // 1024


def empirical_dist(name: str, base_dir: Path) -> Empirical:
    """``empirical:NAME`` parsed in ``base_dir``: an Empirical, its samples read."""
    dist = parse_distribution(f"empirical:{name}", base_dir=base_dir)
    assert isinstance(dist, Empirical), dist
    return dist


def refused(argv: list[str | Path], cwd: Path, *needles: str) -> str:
    rc, lines, peak = wotbench(*argv, cwd=cwd)
    assert rc == 2 and len(lines) == 1 and lines[0].startswith("error: "), (rc, lines)
    assert all(n in lines[0] for n in needles), lines[0]
    assert peak < MAX_MB, (peak, lines)
    return lines[0]


def spec_with_rit(tmp_path: Path, rit: str) -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(BASE.replace("rit: exp:100ms", f"rit: {rit}"))
    return p


# --- the spec itself -------------------------------------------------------------


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_spec_that_is_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, command):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    extra = ["--results", str(tmp_path / "res")] if command == "run" else []
    refused([command, fifo, *extra], tmp_path, "spec.yaml", "a FIFO, not a regular file")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_spec_that_is_a_device_is_refused_before_a_byte_is_read(tmp_path, device):
    refused(["plan", device], tmp_path, device, "a character device, not a regular file")


def test_a_symlink_to_a_device_is_the_device(tmp_path):
    (tmp_path / "spec.yaml").symlink_to("/dev/zero")
    refused(["plan", tmp_path / "spec.yaml"], tmp_path, "spec.yaml: a character device")


@pytest.mark.parametrize("key,old", [("name", "name: t"), ("devices[0].mode", "threads: 2")])
def test_an_error_line_stays_short_whatever_the_spec_holds(tmp_path, key, old):
    """A 900 KB value was echoed whole in its error line."""
    spec = tmp_path / "spec.yaml"
    new = "name: " + "x" * 900_000 if key == "name" else "threads: 2\n    mode: " + "y" * 900_000
    spec.write_text(BASE.replace(old, new))
    assert len(refused(["plan", spec], tmp_path, key)) < 300


def test_tracegen_reads_its_spec_through_the_same_reader(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    refused(["tracegen", "--spec", fifo, "--out", tmp_path / "wl"], tmp_path, "a FIFO")
    assert not (tmp_path / "wl").exists()


# --- the files a spec points at ----------------------------------------------------


def test_an_empirical_fifo_is_refused_at_the_line_that_names_it(tmp_path):
    os.mkfifo(tmp_path / "rits.csv")
    spec = spec_with_rit(tmp_path, "empirical:rits.csv")
    refused(["plan", spec], tmp_path, "spec.yaml:6: devices[0].rit:", "rits.csv", "a FIFO")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_an_empirical_device_is_refused_in_bounded_memory(tmp_path, device):
    spec = spec_with_rit(tmp_path, f"empirical:{device}")
    refused(["plan", spec], tmp_path, "spec.yaml:6: devices[0].rit:", "a character device")


def test_an_empirical_file_over_the_size_bound_is_refused_before_it_is_read(tmp_path):
    big = tmp_path / "rits.csv"
    with open(big, "wb") as fh:               # sparse: the size is what is refused
        fh.truncate(empirical.MAX_BYTES + 1)
    spec = spec_with_rit(tmp_path, "empirical:rits.csv")
    refused(["plan", spec], tmp_path, "devices[0].rit", f"larger than the {empirical.MAX_BYTES} bytes")


def test_an_empirical_file_over_the_line_bound_is_refused(tmp_path):
    f = tmp_path / "rits.csv"
    f.write_text("\n" * empirical.MAX_LINES + "1\n")          # 1,000,001 lines, 1 MB
    spec = spec_with_rit(tmp_path, "empirical:rits.csv")
    refused(["plan", spec], tmp_path, "devices[0].rit", f"more than the {empirical.MAX_LINES:,}")


def test_an_empirical_file_at_the_bound_is_planned_in_bounded_memory(tmp_path):
    """The largest empirical file accepted (MAX_LINES values) costs plan
    less than 200 MB (a 10M-row file took 1.9 GB before)."""
    values = np.random.default_rng(1).gamma(2.0, 50_000.0, empirical.MAX_LINES)
    (tmp_path / "rits.csv").write_text("\n".join(f"{v:.3f}" for v in values) + "\n")
    spec = spec_with_rit(tmp_path, "empirical:rits.csv")
    rc, lines, peak = wotbench("plan", spec, cwd=tmp_path)
    assert rc == 0 and lines == [] and peak < MAX_MB, (rc, lines, peak)


def test_a_byte_order_mark_is_not_a_header(tmp_path):
    """A BOM made the first value look like a header: it was dropped silently."""
    (tmp_path / "rits.csv").write_bytes(b"\xef\xbb\xbf100\n200\n")
    assert list(empirical_dist("rits.csv", tmp_path).samples) == [100, 200]


# --- errors name the place, never the content ---------------------------------------------


@pytest.mark.parametrize("content,line,needle", [
    (f"{SECRET}\n", None, "has no values"),                      # one line: a header, no values
    (f"rit_us\n100\n{SECRET}\n", 3, "not a number"),
    (f"100\n200,{SECRET}\n", 2, "2 columns"),
    (f"100\n{SECRET}\n300\n", 2, "not a number"),
    (f"100\n-3\n{SECRET}\n", 2, "must be a finite value >= 0"),
    (f"100\n1e999\n{SECRET}\n", 2, "must be a finite value >= 0"),
    (b"100\n" + b"\xff" + SECRET.encode() + b"\n", 2, "not UTF-8"),
    (f"100\n１００\n{SECRET}\n", 2, "not a number"),              # Unicode digits are not a number
    (f"100\n1_000\n{SECRET}\n", 2, "not a number"),
    (f"100\nnan\n{SECRET}\n", 2, "not a number"),
])
def test_an_empirical_error_names_file_line_and_field_never_the_content(tmp_path, content, line, needle):
    """Issue 23: `rit: empirical:/etc/shadow` printed a line of that file."""
    f = tmp_path / "shadow"
    f.write_bytes(content if isinstance(content, bytes) else content.encode())
    f.chmod(0o600)
    spec = spec_with_rit(tmp_path, f"empirical:{f}")
    where = f"{f}:{line}: devices[0].rit:" if line else "spec.yaml:6: devices[0].rit:"
    msg = refused(["plan", spec], tmp_path, where, needle)
    assert "SECRET" not in msg and "4242" not in msg and "19000" not in msg, msg


def test_every_reader_error_is_about_the_file_not_its_bytes(tmp_path):
    """The reader's own refusals: the path and the kind of problem."""
    (tmp_path / "d").mkdir()
    (tmp_path / "afile").write_text(SECRET)
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cases = {tmp_path / "nosuch": "file not found", tmp_path / "d": "a folder",
             tmp_path / "loop": "too many symlinks", tmp_path / "afile" / "x": "not a folder"}
    for path, needle in cases.items():
        with pytest.raises(UserError, match=needle) as ei:
            inputfile.read_bytes(path, 100, "f")
        assert str(path) in ei.value.what and ei.value.file is None and ei.value.field == "f"
    with pytest.raises(UserError, match="larger than the 10 bytes") as ei:
        inputfile.read_bytes(tmp_path / "afile", 10)
    assert "SECRET" not in str(ei.value)


# --- the races the reader closes ---------------------------------------------------------


def test_a_fifo_swapped_in_after_the_check_does_not_block(tmp_path):
    """stat said "regular file", then a FIFO took the name: the open does not
    wait for a writer (O_NONBLOCK) and the open descriptor is refused."""
    fifo = tmp_path / "rits.csv"
    os.mkfifo(fifo)
    code = (
        "import os, stat, sys\n"
        "from wotbench.base import inputfile as r\n"
        "real = os.stat\n"
        "class Reg:\n"
        "    st_mode = stat.S_IFREG | 0o644\n"
        "os.stat = lambda p, *a, **k: Reg() if str(p) == sys.argv[1] else real(p, *a, **k)\n"
        "try:\n"
        "    r.read_bytes(sys.argv[1], 100)\n"
        "except r.UserError as e:\n"
        "    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=20)
    assert "a FIFO, not a regular file" in r.stdout, r.stdout + r.stderr


def test_a_file_that_grows_while_it_is_read_is_refused(tmp_path, monkeypatch):
    """fstat saw a small file; more than the limit came: refused at limit + 1 bytes."""
    f = tmp_path / "grows.csv"
    f.write_bytes(b"1\n" * 1000)
    real = os.fstat

    class Small:
        def __init__(self, st: os.stat_result) -> None:
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real(fd)))
    with pytest.raises(UserError, match="grew past the 100 bytes"):
        inputfile.read_bytes(f, 100)


# --- what empirical files may hold at once --------------------------------------------


def test_the_same_empirical_bytes_are_parsed_once(tmp_path):
    (tmp_path / "a.csv").write_text("1\n2\n3\n")
    (tmp_path / "b.csv").write_text("1\n2\n3\n")
    a = empirical_dist("a.csv", tmp_path)
    b = empirical_dist("b.csv", tmp_path)
    assert a.samples is b.samples and not a.samples.flags.writeable
    (tmp_path / "a.csv").write_text("4\n5\n6\n")            # same size, new bytes: read again
    assert list(empirical_dist("a.csv", tmp_path).samples) == [4, 5, 6]


def test_empirical_values_held_at_once_are_bounded(tmp_path, monkeypatch):
    """A sweep over many large files would hold them all: past
    MAX_LIVE_VALUES the next is refused; values no longer used do not count."""
    monkeypatch.setattr(empirical, "MAX_LIVE_VALUES", 10)
    for name, first, n in (("a.csv", 0, 6), ("b.csv", 100, 6), ("c.csv", 200, 4)):
        (tmp_path / name).write_text("".join(f"{first + i}\n" for i in range(n)))
    held = parse_distribution("empirical:a.csv", base_dir=tmp_path)
    with pytest.raises(UserError, match="more than the 10 that empirical files may hold at once"):
        parse_distribution("empirical:b.csv", base_dir=tmp_path)
    parse_distribution("empirical:c.csv", base_dir=tmp_path)          # 6 + 4 fit
    del held
    parse_distribution("empirical:b.csv", base_dir=tmp_path)          # a.csv is no longer held


# --- budgets counted before anything is built --------------------------------------------


def _grid(axes: int, n: int) -> str:
    keys = ["devices[0].threads", "devices[0].count", "gateway.timeout"][:axes]
    vals = {"devices[0].threads": list(range(1, n + 1)), "devices[0].count": list(range(1, n + 1)),
            "gateway.timeout": [f"{i}s" for i in range(1, n + 1)]}
    return "sweep:\n" + "".join(f"  - {{key: '{k}', values: {vals[k]}}}\n" for k in keys)


@pytest.mark.parametrize("extra,needle", [
    (_grid(3, 100), "= 1,000,000 tests"),
    ("repetitions: 1000\nsweep: {key: 'devices[0].threads', values: ["
     + ", ".join(str(1 + i % 200) for i in range(1000)) + "]}\n", "1000 repetitions = 1,000,000 tests"),
])
def test_a_sweep_is_counted_before_it_is_expanded(tmp_path, extra, needle):
    """Issue 23: three axes of 100 values grew past 3 GB; 1,000 x 1,000 was accepted."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE + extra)
    refused(["plan", spec], tmp_path, "spec.yaml:", "sweep", needle, "more than the 1,000")


@pytest.mark.parametrize("flags,field", [
    (["--devices", "1000000000", "--duration", "1s"], "--devices"),
    (["--devices", "2", "--requests", "1000000000000"], "--requests"),
])
def test_tracegen_flags_pass_the_budget_before_anything_is_allocated(tmp_path, flags, field):
    refused(["tracegen", *flags, "--rit", "exp:1s", "--service", "exp:1ms", "--out", tmp_path / "wl"],
            tmp_path, f"error: {field}:")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_the_bounds_are_the_documented_ones():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "spec.md").read_text()
    from wotbench.spec import _yaml, budget

    for n in (empirical.MAX_LINES, empirical.MAX_LIVE_VALUES, budget.MAX_TESTS, budget.MAX_GROUP_DEVICES):
        assert f"{n:,}" in doc, n
    assert f"{empirical.MAX_BYTES >> 20} MiB" in doc and f"{_yaml.MAX_BYTES >> 20} MiB" in doc
    assert "regular file" in doc
