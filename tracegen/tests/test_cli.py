"""``wotbench tracegen``: both forms, and bad input as one line, exit 2, nothing written."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., tuple[int, str, str]]
GOOD = ["--devices", "3", "--duration", "5s", "--rit", "exp:100ms", "--service", "exp:5ms"]


def test_flags_form(run_cli: Run, tmp_path: Path) -> None:
    rc, out, err = run_cli("tracegen", *GOOD, "--methods", "GET=0.5,PUT=0.5", "--payload-bytes", "8",
                           "--resources", "16", "--cd-rit", "250ms", "--cd-service", "7ms",
                           "--seed", "9", "--out", tmp_path / "wl")
    assert rc == 0, err
    assert "requests to 3 devices" in out
    doc = json.loads((tmp_path / "wl" / "expected.json").read_text())
    assert doc["seed"] == 9 and doc["devices"] == 3 and doc["groups"][0]["resources"] == 16
    assert doc["cd"]["rit_us"] == 250_000 and doc["cd"]["service_us"] == 7000
    assert doc["groups"][0]["methods"] == {"GET": 0.5, "PUT": 0.5}


def test_spec_form_and_seed_override(run_cli: Run, spec_file: Callable[[str], Path], tmp_path: Path) -> None:
    spec = spec_file("""
        workload: {seed: 1, duration: 5s}
        devices: [{count: 2, rit: exp:50ms, service: det:2ms, mode: busy}]
    """)
    assert run_cli("tracegen", "--spec", spec, "--out", tmp_path / "a")[0] == 0
    assert run_cli("tracegen", "--spec", spec, "--seed", "2", "--out", tmp_path / "b")[0] == 0
    assert json.loads((tmp_path / "b" / "expected.json").read_text())["seed"] == 2
    a = (tmp_path / "a" / "trace.csv").read_bytes()
    assert a != (tmp_path / "b" / "trace.csv").read_bytes()


@pytest.mark.parametrize("change,field,needle", [
    ({"--devices": "0"}, "--devices", "at least 1"),
    ({"--duration": "5"}, "--duration", "has no unit"),
    ({"--rit": "expo:1s"}, "--rit", "unknown distribution"),
    ({"--rit": "exp:-1s"}, "--rit", "must not be negative"),
    ({"--service": "lognormal:mean=5ms"}, "--service", "missing parameter 'cv'"),
    ({"--service": "mmpp2:on=exp:1ms,off=exp:1s,t_on=1s,t_off=1s"}, "--service", "RITs only"),
    ({"--methods": "GET=x"}, "--methods", "not a number"),
    ({"--methods": "FETCH=1"}, "--methods.FETCH", "unknown method"),
    ({"--cd-rit": "0s"}, "--cd-rit", "must be > 0"),
    ({"--requests": "10"}, "--requests", "not both"),
])
def test_bad_flags(run_cli: Run, tmp_path: Path, change: dict[str, str], field: str, needle: str) -> None:
    args = list(GOOD)
    for flag, value in change.items():
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    rc, out, err = run_cli("tracegen", *args, "--out", tmp_path / "wl")
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {field}: ") and needle in err, err
    assert not (tmp_path / "wl").exists()
    assert list(tmp_path.iterdir()) == []


def test_bad_spec_names_file_line_and_field(run_cli: Run, spec_file: Callable[[str], Path],
                                            tmp_path: Path) -> None:
    spec = spec_file("""
        workload: {duration: 5s}
        devices:
          - count: 2
            rit: exp:50ms
            service: expo:2ms
    """)
    rc, _, err = run_cli("tracegen", "--spec", spec, "--out", tmp_path / "wl")
    assert rc == 2
    assert err == f"error: {spec}:5: devices[0].service: unknown distribution 'expo' " \
                  "(one of det, exp, uniform, lognormal, pareto, mmpp2, empirical)\n"
    assert not (tmp_path / "wl").exists()


def test_spec_and_workload_flags_do_not_mix(run_cli: Run, spec_file: Callable[[str], Path],
                                            tmp_path: Path) -> None:
    spec = spec_file("devices: [{count: 1, rit: exp:1s, service: det:1ms}]\nworkload: {duration: 1s}\n")
    rc, _, err = run_cli("tracegen", "--spec", spec, "--rit", "exp:1s", "--out", tmp_path / "wl")
    assert rc == 2 and err.startswith("error: --rit: cannot be combined with --spec")


def test_missing_spec_file(run_cli: Run, tmp_path: Path) -> None:
    rc, _, err = run_cli("tracegen", "--spec", tmp_path / "nope.yaml", "--out", tmp_path / "wl")
    assert rc == 2 and "cannot read" in err and err.count("\n") == 1


def test_console_script_exit_status(tmp_path: Path) -> None:
    """The installed entry point, as users run it."""
    proc = subprocess.run([sys.executable, "-m", "wotbench.commands.main", "tracegen", *GOOD[:-2],
                           "--service", "exp:5", "--out", str(tmp_path / "wl")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --service: exp parameter 'mean': value '5' has no unit " \
                                  "(use ns, us, ms, s, m or h)"
