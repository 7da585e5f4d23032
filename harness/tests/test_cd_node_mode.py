"""The CD node serves in the mode of the devices it stands for (cd-module
README): a busy-mode host gets a busy-mode CD node, so that a CPU
neighbour slows it down as it slows the devices."""

from pathlib import Path

from wotbench.execution.phases._provision import cd_node_mode, device_spec


def test_mode_of_most_devices() -> None:
    assert cd_node_mode(["busy"] * 3, "sleep") == "busy"
    assert cd_node_mode(["sleep"] * 3 + ["busy"], "busy") == "sleep"
    assert cd_node_mode(["sleep", "busy"], "sleep") == "busy"
    assert cd_node_mode([], "busy") == "busy"
    assert cd_node_mode([], "sleep") == "sleep"


def test_cd_node_argv_carries_the_mode(tmp_path: Path) -> None:
    res = tmp_path / "cd.csv"
    res.write_text("path,service_us\n/r/0,5000\n")
    for mode in ("busy", "sleep"):
        spec = device_spec("cd-node", None, None, "0", res, None, mode)
        argv = list(spec.argv)
        assert argv[argv.index("--mode") + 1] == mode
        assert spec.role == "cd-node"
