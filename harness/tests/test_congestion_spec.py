"""gateway.congestion, gateway.nstart, gateway.probing_rate and
gateway.ack_random_factor (docs/spec.md): read and checked, a bad value
one line naming the field and exit 2 with nothing written; passed to the
workload GEs only (never the CD-GE's command line) and recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wotbench import UserError, spec
from wotbench.execution.phases._ge import ge_argv
from wotbench.spec._sections import CONGESTION, Gateway

REPO = Path(__file__).resolve().parents[2]

BASE = """\
name: t
workload: {seed: 1}
devices:
  - {name: a, count: 2, rit: exp:100ms, service: exp:5ms}
gateway: {instances: 1, type: con, timeout: 2s%s}
phases: {warmup: 1s, measure: 10s, cooldown: 1s}
"""


def _gw(spec_file, extra: str) -> Gateway:
    return spec.load(spec_file(BASE % extra))[0].spec.gateway


def test_the_defaults_are_today_s_behaviour(spec_file):
    gw = _gw(spec_file, "")
    assert (gw.congestion, gw.nstart, gw.probing_rate, gw.ack_random_factor) == ("rfc7252", None, None, None)
    assert gw.congestion_args() == ["--congestion", "rfc7252", "--nstart", "unlimited"]
    assert gw.congestion_record() == {"strategy": "rfc7252", "nstart": None, "probing_rate_bytes_per_s": None,
                                      "ack_random_factor": 1.5, "applies_to": "workload GEs (not the CD-GE)"}


@pytest.mark.parametrize("extra, args", [
    (", congestion: cocoa, nstart: 1", ["--congestion", "cocoa", "--nstart", "1"]),
    (", congestion: peakhopper-rto, nstart: 65535, probing_rate: 1B/s",
     ["--congestion", "peakhopper-rto", "--nstart", "65535", "--probing-rate", "1"]),
    (", nstart: unlimited, probing_rate: 10kB/s, ack_random_factor: 1",
     ["--congestion", "rfc7252", "--nstart", "unlimited", "--probing-rate", "10000", "--ack-random-factor", "1.0"]),
    (", probing_rate: none, ack_random_factor: 2.5",
     ["--congestion", "rfc7252", "--nstart", "unlimited", "--ack-random-factor", "2.5"]),
])
def test_values_become_the_ge_arguments(spec_file, extra, args):
    assert _gw(spec_file, extra).congestion_args() == args


def test_every_strategy_of_the_ge_is_accepted(spec_file):
    cli = (REPO / "gateway-emulator" / "README.md").read_text()
    for name in CONGESTION:
        assert _gw(spec_file, f", congestion: {name}").congestion == name
        assert f"`{name}`" in cli


@pytest.mark.parametrize("extra, field, what", [
    (", congestion: tcp", "gateway.congestion", "expected one of rfc7252, cocoa, cocoa-strong"),
    (", congestion: 1", "gateway.congestion", "expected one of"),
    (", nstart: 0", "gateway.nstart", "expected unlimited or a number 1..65535, got 0"),
    (", nstart: 65536", "gateway.nstart", "got 65536"),
    (", nstart: two", "gateway.nstart", "got 'two'"),
    (", nstart: true", "gateway.nstart", "got True"),
    (", nstart: 1.5", "gateway.nstart", "got 1.5"),
    (", probing_rate: 1B", "gateway.probing_rate", "expected none or a rate such as 1B/s"),
    (", probing_rate: 0B/s", "gateway.probing_rate", "got '0B/s'"),
    (", probing_rate: 2000MB/s", "gateway.probing_rate", "got '2000MB/s'"),
    (", probing_rate: 5", "gateway.probing_rate", "got 5"),
    (", ack_random_factor: 0.5", "gateway.ack_random_factor", "expected a number 1.0 .. 16"),
    (", ack_random_factor: 17", "gateway.ack_random_factor", "got 17"),
    (", ack_random_factor: x", "gateway.ack_random_factor", "got 'x'"),
])
def test_bad_values_name_the_field_and_line(spec_file, extra, field, what):
    with pytest.raises(UserError) as ei:
        _gw(spec_file, extra)
    assert ei.value.field == field and what in ei.value.what and ei.value.line == 5, str(ei.value)


def test_a_bad_value_is_one_line_and_exit_2_with_nothing_written(spec_file, tmp_path):
    path = spec_file(BASE % ", nstart: 0")
    results = tmp_path / "res"
    for cmd in (["plan", str(path)], ["run", str(path), "--results", str(results)]):
        p = subprocess.run([sys.executable, "-m", "wotbench.commands.main", *cmd], cwd=REPO, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip().splitlines() == [
            f"error: {path}:5: gateway.nstart: expected unlimited or a number 1..65535, got 0"]
    assert not results.exists()


def test_the_cd_ge_command_line_never_carries_them():
    """ge_argv is the CD-GE's whole command line (the workload GEs add the
    congestion arguments and --rto-out in ge_spec)."""
    gw = Gateway(congestion="cocoa", nstart=1, probing_rate=1, ack_random_factor=1.0)
    argv = ge_argv(gw, trace="t", hosts="h", out="o", summary="s", start_at_us=1, late_us=100, coap_type="con")
    assert not {"--congestion", "--nstart", "--probing-rate", "--ack-random-factor", "--rto-out"} & set(argv)
