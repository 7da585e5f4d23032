"""S for the CD node from the devices' resource files."""

from __future__ import annotations

from pathlib import Path

import pytest

from wotbench import UserError
from wotbench.cd import cd_service_us, mean_service_us


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_plain_mean_over_all_resources(tmp_path: Path):
    a = write(tmp_path / "dev-0.csv", "path,service_us\n/r0,1000\n/r1,3000\n")
    b = write(tmp_path / "dev-1.csv", "path,service_us,payload_bytes\n/r0,8000,16\n")
    assert mean_service_us([a, b]) == pytest.approx(4000.0)
    assert cd_service_us(tmp_path) == 4000


def test_trace_weighted_mean(tmp_path: Path):
    res = tmp_path / "resources"
    res.mkdir()
    write(res / "dev-0.csv", "path,service_us\n/r0,1000\n/r1,9000\n")
    write(res / "dev-1.csv", "path,service_us\n/r0,5000\n")
    trace = write(tmp_path / "trace.csv",
                  "device_id,send_ts_us,method,uri\n"
                  "# three requests of the cheap resource, one of the expensive one\n"
                  "0, 0, GET, coap://dev-0/r0\n0,10,GET,coap://dev-0/r0\n\n"
                  "0,20,GET,coap://dev-0:5683/r0?x=1\n0,30,PUT,coap://dev-0/r1,abc\n"
                  "1,40,GET,coap://10.0.0.2/r0\n")
    # (3*1000 + 9000 + 5000) / 5
    assert mean_service_us(sorted(res.glob("*.csv")), trace) == pytest.approx(3400.0)
    assert cd_service_us(res, trace) == 3400


def test_bad_service_time_names_line_and_field(tmp_path: Path):
    f = write(tmp_path / "dev-0.csv", "path,service_us\n/r0,10\n/r1,-5\n")
    with pytest.raises(UserError) as err:
        mean_service_us([f])
    assert str(err.value).startswith(f"{f}:3: service_us:")


def test_trace_naming_unknown_resource_is_an_error(tmp_path: Path):
    write(tmp_path / "dev-0.csv", "path,service_us\n/r0,10\n")
    trace = write(tmp_path / "t.csv", "0,0,GET,coap://dev-0/nope\n")
    with pytest.raises(UserError, match="no resource '/nope'"):
        cd_service_us(tmp_path, trace)


def test_no_resource_files(tmp_path: Path):
    with pytest.raises(UserError, match="no dev-"):
        cd_service_us(tmp_path)


def test_agrees_with_tracegen_cd_service_auto(tmp_path: Path):
    """tracegen sets the CD node's S from the spec (cd.service: auto); the
    resource files it writes must give the same mean."""
    import json

    from wotbench.commands.main import main

    out = tmp_path / "wl"
    assert main(["tracegen", "--devices", "5", "--duration", "20s", "--rit", "exp:50ms",
                 "--service", "exp:5ms", "--seed", "3", "--out", str(out)]) == 0
    cd = json.loads((out / "expected.json").read_text())["cd"]
    assert cd["service_auto"]
    assert cd_service_us(out / "resources") == pytest.approx(cd["service_us"], rel=0.01)
    # Weighted by the trace's actual requests: close, up to sampling noise.
    assert cd_service_us(out / "resources", out / "trace.csv") == pytest.approx(cd["service_us"], rel=0.1)
