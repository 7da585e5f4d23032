"""Pure parts of a run: device split between GEs, trace split, CON drain
time, the GE command line, CD clock shift, cgroup and collectl readers,
atomic writes, the run folder's names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wotbench.base import results
from wotbench.base import rundir as layout
from wotbench.execution import monitor
from wotbench.execution.phases import _collect as collect
from wotbench.execution.phases import _ge as ge
from wotbench.spec import Gateway, Spec

TRACE = """device_id,send_ts_us,method,uri,payload
0,10,GET,coap://dev-0/r/1,
3,20,PUT,coap://dev-3/r/2,xx
1,30,GET,coap://dev-1/r/0,
2,40,GET,coap://dev-2/r/0,
3,50,GET,coap://dev-3/r/0,
0,60,GET,coap://dev-0/r/0,
1,70,DELETE,coap://dev-1/r/5,
"""


def test_devices_are_split_into_contiguous_near_equal_blocks():
    blocks = ge.split_devices(range(10), 3)
    assert [b.tolist() for b in blocks] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.parametrize("chunk", [2, 3, 1000])
def test_trace_split_keeps_order_and_every_line(tmp_path: Path, chunk: int):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    blocks = ge.split_devices(range(4), 2)
    out = ge.split_trace(trace, blocks, [tmp_path / f"t{k}.csv" for k in range(2)], 7, chunk_rows=chunk)
    assert [n for _, n in out] == [4, 3]
    lines = TRACE.splitlines()
    for (path, _), block in zip(out, blocks, strict=True):
        got = path.read_text().splitlines()
        want = [lines[0]] + [ln for ln in lines[1:] if int(ln.split(",")[0]) in block.tolist()]
        assert got == want


def test_single_ge_uses_the_trace_as_is(tmp_path: Path):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    assert ge.split_trace(trace, [np.arange(4)], [tmp_path / "t0.csv"], 7) == [(trace, 7)]
    assert ge.trace_lines(trace) == 7


def _hs(**gw) -> Spec:
    return Spec("x", (), Gateway(**gw), None, None, None, 1, None, {})  # type: ignore[arg-type]


def test_con_drain_covers_every_retransmission():
    assert ge.drain_us(_hs()) == 2_000_000 * 1.5 * 31 + 5_000_000        # RFC 7252 defaults
    assert ge.drain_us(_hs(ack_timeout_us=100_000, max_retransmit=2, timeout_us=1_000_000)) \
        == 100_000 * 1.5 * 7 + 1_000_000
    # The other strategies' caps (gateway-emulator/README.md), the dithering factor, NSTART's queue wait.
    assert ge.drain_us(_hs(ack_random_factor=2.0)) == 2_000_000 * 2.0 * 31 + 5_000_000
    assert ge.drain_us(_hs(congestion="cocoa")) == 32_000_000 * (1.5 + 4) + 5_000_000
    assert ge.drain_us(_hs(congestion="linux-rto", nstart=1)) == 32_000_000 + 4 * 60_000_000 + 2 * 5_000_000


def test_cd_output_is_shifted_onto_t0(tmp_path: Path):
    raw = tmp_path / "raw.csv"
    raw.write_text("device_id,method,uri,intended_us,sent_us,recv_us,response_us,latency_intended_us,"
                   "send_lag_us,status,code,retransmissions,service_us\n"
                   "3,GET,coap://cd-node/r/0,0,0.120,4189.974,4189.854,4189.974,0.120,ok,2.05,0,2000\n"
                   "3,GET,coap://cd-node/r/0,200000,200000.048,,,,0.048,timeout,,4,\n")
    collect.shift_times(raw, tmp_path / "cd.csv", 3_000_000)
    df = pd.read_csv(tmp_path / "cd.csv", dtype={"code": str})
    assert df["intended_us"].tolist() == [-3_000_000, -2_800_000]
    assert df["sent_us"].tolist() == pytest.approx([-2999999.880, -2799999.952])
    assert df["recv_us"].isna().tolist() == [False, True]
    assert df["code"].tolist()[0] == "2.05" and df["response_us"][0] == pytest.approx(4189.854)


def test_cgroup_v1_and_v2_are_read(tmp_path: Path):
    cid = "abc123"
    v1 = tmp_path / "v1"
    (v1 / "cpuacct" / "docker" / cid).mkdir(parents=True)
    (v1 / "memory" / "docker" / cid).mkdir(parents=True)
    (v1 / "cpuacct" / "docker" / cid / "cpuacct.usage").write_text("123456789\n")
    (v1 / "memory" / "docker" / cid / "memory.usage_in_bytes").write_text("4096\n")
    f = monitor.cgroup_files(cid, v1)
    assert f is not None and f[2] == "v1" and monitor.read_cgroup(f) == (123456, 4096, -1)
    v2 = tmp_path / "v2" / "system.slice" / f"docker-{cid}.scope"
    v2.mkdir(parents=True)
    (v2 / "cpu.stat").write_text("usage_usec 777\nuser_usec 700\nsystem_usec 77\n")
    (v2 / "memory.current").write_text("8192\n")
    f = monitor.cgroup_files(cid, tmp_path / "v2")
    assert f is not None and f[2] == "v2" and monitor.read_cgroup(f) == (777, 8192, -1)
    assert monitor.cgroup_files("nothere", tmp_path / "v2") is None
    # The working set: the inactive file cache (a GE's written output) is not the container's growth.
    (v1 / "memory" / "docker" / cid / "memory.stat").write_text(
        "cache 3000\nrss 10\ntotal_rss 1000\ntotal_inactive_file 1024\n")
    f = monitor.cgroup_files(cid, v1)
    assert f is not None and monitor.read_cgroup(f) == (123456, 3072, 1000)
    (v2 / "memory.stat").write_text("anon 4000\ninactive_file 8000\n")
    f = monitor.cgroup_files(cid, tmp_path / "v2")
    assert f is not None and monitor.read_cgroup(f) == (777, 192, 4000)


def test_container_sampler_spools_to_disk_and_writes_on_t0(tmp_path: Path, monkeypatch):
    """A soak's samples go to the spool as they are taken (the harness's
    memory stays flat), and come back as containers.csv on t0, in chunks."""
    calls = iter(range(1, 1000))
    monkeypatch.setattr(monitor, "cgroup_files", lambda cid: (Path(cid), Path(cid), "v1"))
    monkeypatch.setattr(monitor, "read_cgroup", lambda f: (next(calls), 4096, 2048))
    s = monitor.ContainerSampler(spool=tmp_path / "monitor" / "containers.csv.partial")
    assert s.spool is not None
    s.add("c1", "dev-0", "device")
    s.add("c2", "ge-0", "ge")
    s.start()
    s.stop()
    s.sample_once()                       # after stop: nowhere to go, nothing kept
    s._fh = s.spool.open("a")             # as while running
    for _ in range(5):
        s.sample_once()
    assert s.rows == []                   # nothing held in memory
    s.write_csv(tmp_path / "containers.csv", t0_epoch_us=0, chunk_rows=3)
    df = pd.read_csv(tmp_path / "containers.csv")
    assert list(df.columns) == ["t_us", "container", "role", "cpu_usage_us", "mem_bytes", "anon_bytes"]
    assert len(df) >= 10 and set(df["container"]) == {"dev-0", "ge-0"}
    assert (df["anon_bytes"] == 2048).all() and df["cpu_usage_us"].is_monotonic_increasing
    assert not s.spool.exists()


def test_collectl_plot_files_become_host_csv(tmp_path: Path):
    (tmp_path / "vm-1.cpu").write_text(
        "################\n# Collectl: V4.3.1\n"
        "#UTC [CPU:0]User% [CPU:0]Sys% [CPU:0]Idle% [CPU:1]User% [CPU:1]Sys% [CPU:1]Idle%\n"
        "100.000 10 5 85 1 1 98\n101.000 20 5 75 2 1 97\n")
    (tmp_path / "vm-1.tab").write_text(
        "#UTC [CPU]User% [MEM]Tot [MEM]Used [MEM]Free [MEM]Cached [NET]RxKBTot [NET]TxKBTot "
        "[NET]RxPktTot [NET]TxPktTot\n"
        "100.000 5 1000 400 600 100 1 2 3 4\n101.000 5 1000 410 590 100 5 6 7 8\n")
    df = monitor.Collectl(tmp_path, [0]).frame(t0_epoch_us=100_500_000)
    assert df["t_us"].tolist() == [-500_000, 500_000]
    assert df["cpu0_user"].tolist() == [10, 20] and df["cpu1_idle"].tolist() == [98, 97]
    assert df["mem_used_kb"].tolist() == [400, 410] and df["net_tx_pkt_s"].tolist() == [4, 8]


def test_atomic_write_leaves_no_temp_on_error(tmp_path: Path):
    target = tmp_path / "a.json"
    results.write_json(target, {"x": 1})
    with pytest.raises(TypeError):
        results.write_atomic(target, 12345)  # type: ignore[arg-type]
    assert target.read_text().strip().startswith("{") and [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_run_ids_are_unique_and_sortable():
    a, b = results.new_run_id("x", 0), results.new_run_id("x", 0)
    assert a != b and a.startswith("19700101-000000-x-")


def test_addresses_fill_networks_in_order_and_leave_ge_slots():
    import ipaddress

    from docker.models.networks import Network

    from wotbench.engine import DockerBackend
    from wotbench.engine.dockerenv import NET_CAPACITY

    bed = DockerBackend(None, "20260101-000000-x-abcdef")  # type: ignore[arg-type]  # no engine: none is asked
    assert bed.name_of("dev-3") == "wb-abcdef-dev-3"
    bed.networks = [Network(attrs={"Name": "n0"}), Network(attrs={"Name": "n1"})]
    bed.subnets = [ipaddress.IPv4Network("10.210.0.0/22"), ipaddress.IPv4Network("10.210.4.0/22")]
    per_net = NET_CAPACITY - 8
    got = bed.addresses(per_net + 5)
    assert got[0] == ("n0", "10.210.0.10") and got[per_net] == ("n1", "10.210.4.10")
    assert len({ip for _, ip in got}) == len(got)
    assert all(ipaddress.ip_address(ip) in bed.subnets[0 if n == "n0" else 1] for n, ip in got)
    assert {bed.ge_address(0, k) for k in range(8)} == {f"10.210.0.{i}" for i in range(2, 10)}
    with pytest.raises(RuntimeError):
        bed.addresses(2 * per_net + 1)


def test_one_ge_command_line_for_the_ges_and_the_cd_ge():
    gw = Gateway(type="non", timeout_us=1_500_000, ack_timeout_us=500_000, max_retransmit=2)
    argv = ge.ge_argv(gw, trace="/in/t.csv", hosts="/out/hosts.csv", out="/out/ge-0.csv",
                      summary="/out/ge-0.summary.json", start_at_us=123, late_us=1000, cpu="1")
    assert argv == ["--trace", "/in/t.csv", "--hosts", "/out/hosts.csv", "--out", "/out/ge-0.csv",
                    "--summary", "/out/ge-0.summary.json", "--type", "non", "--timeout-ms", "1500",
                    "--ack-timeout-ms", "500", "--max-retransmit", "2", "--start-at", "123",
                    "--late-us", "1000", "--cpu", "1"]
    cd = ge.ge_argv(Gateway(), trace="/in/trace.csv", hosts="/hosts/hosts.csv", out="/out/cd-ge.raw.csv",
                    summary="/out/cd-ge.summary.json", start_at_us=100, late_us=250, coap_type="con",
                    spin_us=2000)
    assert cd[cd.index("--type") + 1] == "con" and cd[cd.index("--spin-us") + 1] == "2000"
    assert cd[cd.index("--late-us") + 1] == "250" and "--cpu" not in cd and "--ack-timeout-ms" not in cd


def test_the_run_folder_names_its_files_once(tmp_path: Path):
    run = layout.RunDir(tmp_path)
    assert run.ge_csv(3) == tmp_path / "ge" / "ge-3.csv" and run.cd_csv == tmp_path / "cd" / "cd-ge.csv"
    assert run.observed.name == "observed.json" and run.summary.name == "summary.json"
    assert run.device_stats("wb-x-dev-0") == tmp_path / "devices" / "wb-x-dev-0" / "stats.json"
    assert layout.ge_index(run.ge_csv(12)) == 12 and layout.ge_index("ge-x.csv") is None
    # Every file name of docs/run-layout.md comes from the layout module.
    doc = (Path(__file__).resolve().parents[2] / "docs" / "run-layout.md").read_text()
    for name in (layout.INCOMPLETE, layout.SPEC, layout.MANIFEST, layout.PHASES, layout.OBSERVED,
                 layout.SUMMARY, layout.HOSTS, layout.CD_OUTPUT, layout.CD_SUMMARY, layout.HOST_MONITOR,
                 layout.CONTAINERS_MONITOR, layout.DEVICE_STATS, layout.PUMBA_LOG):
        assert name in doc, name


# --- the results folder is checked before anything starts (issue W2 5/5) ---------------

def test_results_root_that_is_a_file_is_a_user_error(tmp_path):
    from wotbench.base import results as res
    from wotbench.base.errors import UserError

    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="is not a folder") as ei:
        res.check_results_root(f)
    assert ei.value.field == "--results" and ei.value.file == str(f)


def test_results_root_that_cannot_be_made_is_a_user_error(tmp_path):
    from wotbench.base import results as res
    from wotbench.base.errors import UserError

    with pytest.raises(UserError, match="system folder /proc"):
        res.check_results_root(Path("/proc/wotbench-results-here"))      # procfs: refused by the path guard
    res.check_results_root(tmp_path / "new" / "deep")                     # its parent would hold it
    assert list(tmp_path.iterdir()) == []                                 # nothing made, nothing left


def test_run_with_results_on_a_file_exits_2_with_one_line(tmp_path, wotbench_cli):
    f = tmp_path / "file"
    f.write_text("x")
    spec = Path(__file__).resolve().parents[2] / "experiments" / "quickstart.yaml"
    r = wotbench_cli("run", str(spec), "--results", str(f), timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"error: {f}: --results: is not a folder"]
    assert r.stdout == ""
