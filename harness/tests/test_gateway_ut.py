"""The ``gateway_under_test`` section, its placement and its container:
the shape and defaults of the section, every bad value as one line naming
file, line and field (exit 2 from the command line, nothing written), the
gateway's own cores in the plan (never shared; a host without them
refused), its hardened container spec and the GE options that send every
request through it, and its readiness checks against real sockets."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wotbench import UserError, spec
from wotbench.engine import DockerBackend, Started, dockerenv, readiness
from wotbench.execution.phases import Node
from wotbench.execution.phases._gateway import end_state, gateway_spec, image_ref, north_args
from wotbench.execution.placement import make_plan

REPO = Path(__file__).resolve().parents[2]
BASE = """\
name: t
workload: {seed: 1}
devices:
  - {name: a, count: 4, rit: exp:100ms, service: exp:5ms}
phases: {measure: 10s}
"""


def gut(text: str) -> spec.GatewayUnderTest:
    g = spec.loads(BASE + text, "exp.yaml")[0].spec.gateway_under_test
    assert g is not None
    return g


def bad(text: str) -> UserError:
    with pytest.raises(UserError) as ei:
        spec.loads(BASE + text, "exp.yaml")
    return ei.value


def test_no_section_no_gateway():
    assert spec.loads(BASE, "exp.yaml")[0].spec.gateway_under_test is None


def test_a_shipped_gateway_needs_no_command_and_gets_the_defaults():
    g = gut("gateway_under_test: {image: libcoap, north: coap-uri}\n")
    assert (g.shipped, g.command, g.port, g.cores, g.ready, g.env) == ("libcoap", None, 5683, 1, "coap", ())
    assert image_ref(g) == dockerenv.GATEWAY_IMAGE.format(name="libcoap")
    assert image_ref(g).startswith("wotbench/gw-libcoap:")


def test_an_image_of_ones_own_with_every_key():
    g = gut("gateway_under_test:\n  image: reg.example:5000/me/gw:1.2\n  command: [gw, --port, '8081']\n"
            "  env: {LEVEL: warn, N: 3}\n  north: http\n  port: 8081\n  http_path: /p/{coap_uri}\n"
            "  http_conns: 8\n  cores: 2\n  memory: 64m\n  pids: 32\n  ready: http:/health\n  ready_timeout: 5s\n"
            "  objective: {p99: 50ms, mean: 20ms}\n")
    assert g.shipped is None and image_ref(g) == "reg.example:5000/me/gw:1.2"
    assert g.command == ("gw", "--port", "8081") and g.env == (("LEVEL", "warn"), ("N", "3"))
    assert (g.north, g.port, g.http_path, g.http_conns, g.cores) == ("http", 8081, "/p/{coap_uri}", 8, 2)
    assert (g.memory_bytes, g.pids, g.ready, g.ready_path, g.ready_timeout_us) == (
        64 << 20, 32, "http:/health", "/health", 5_000_000)
    assert [(o.stat, o.limit_us) for o in g.objective] == [("p99", 50_000), ("mean", 20_000)]
    assert g.to_dict()["objective"] == {"p99": 50_000, "mean": 20_000}


def test_sockets_default_to_per_device_for_the_shipped_libcoap_and_to_one_otherwise():
    """libcoap 4.3.1's proxy keeps one upstream session per client endpoint
    (gateway-emulator/README.md, "One client per device")."""
    assert gut("gateway_under_test: {image: libcoap, north: coap-uri}\n").sockets == "per-device"
    assert gut("gateway_under_test: {image: libcoap, north: coap-scheme, sockets: one}\n").sockets == "one"
    assert gut("gateway_under_test: {image: aiocoap, north: coap-scheme}\n").sockets == "one"
    assert gut("gateway_under_test: {image: my/gw, north: coap-uri}\n").sockets == "one"
    g = gut("gateway_under_test: {image: nodered, north: http}\n")
    assert g.sockets is None and g.to_dict()["sockets"] is None


def test_http_north_defaults_to_a_tcp_check_on_8080_and_the_shipped_nodered_to_1880():
    g = gut("gateway_under_test: {image: my/gw, north: http}\n")
    assert (g.port, g.ready) == (8080, "tcp")
    assert gut("gateway_under_test: {image: nodered, north: http}\n").port == 1880


@pytest.mark.parametrize("line, field, what", [
    ("{north: coap-uri}", "gateway_under_test.image", "missing"),
    ("{image: libcoap}", "gateway_under_test.north", "missing"),
    ("{image: 'Not An Image', north: coap-uri}", "gateway_under_test.image", "expected a Docker image"),
    ("{image: 7, north: coap-uri}", "gateway_under_test.image", "expected a Docker image"),
    ("{image: libcoap, north: mqtt}", "gateway_under_test.north", "expected one of coap-uri"),
    ("{image: libcoap, north: http}", "gateway_under_test.north", "libcoap gateway speaks coap-uri or"),
    ("{image: nodered, north: coap-uri}", "gateway_under_test.north", "nodered gateway speaks http, not"),
    ("{image: libcoap, north: coap-uri, command: []}", "gateway_under_test.command", "non-empty list"),
    ("{image: libcoap, north: coap-uri, command: coap-server}", "gateway_under_test.command", "non-empty list"),
    ("{image: libcoap, north: coap-uri, command: [a, 2]}", "gateway_under_test.command[1]", "expected a string"),
    ("{image: libcoap, north: coap-uri, env: [A]}", "gateway_under_test.env", "mapping"),
    ("{image: libcoap, north: coap-uri, env: {1A: x}}", "gateway_under_test.env", "not an environment"),
    ("{image: libcoap, north: coap-uri, env: {A: [x]}}", "gateway_under_test.env.A", "string or a number"),
    ("{image: libcoap, north: coap-uri, cores: 0}", "gateway_under_test.cores", "at least 1"),
    ("{image: libcoap, north: coap-uri, cores: 1.5}", "gateway_under_test.cores", ""),
    ("{image: libcoap, north: coap-uri, memory: 1m}", "gateway_under_test.memory", "at least 6m"),
    ("{image: libcoap, north: coap-uri, memory: lots}", "gateway_under_test.memory", ""),
    ("{image: libcoap, north: coap-uri, pids: 2}", "gateway_under_test.pids", ""),
    ("{image: libcoap, north: coap-uri, port: 0}", "gateway_under_test.port", ""),
    ("{image: libcoap, north: coap-uri, port: 70000}", "gateway_under_test.port", ""),
    ("{image: libcoap, north: coap-uri, http_path: /x}", "gateway_under_test.http_path", "only with north: http"),
    ("{image: libcoap, north: coap-scheme, http_conns: 4}", "gateway_under_test.http_conns", "only with north"),
    ("{image: nodered, north: http, http_path: 'no slash'}", "gateway_under_test.http_path", "starting with /"),
    ("{image: nodered, north: http, http_conns: 0}", "gateway_under_test.http_conns", ""),
    ("{image: libcoap, north: coap-uri, ready: ping}", "gateway_under_test.ready", "expected coap, tcp"),
    ("{image: libcoap, north: coap-uri, ready: 'http:health'}", "gateway_under_test.ready", "expected coap"),
    ("{image: libcoap, north: coap-uri, ready_timeout: 30}", "gateway_under_test.ready_timeout", ""),
    ("{image: libcoap, north: coap-uri, ready_timeout: 1h}", "gateway_under_test.ready_timeout", "10m"),
    ("{image: libcoap, north: coap-uri, sockets: two}", "gateway_under_test.sockets", "expected one of one, per-"),
    ("{image: libcoap, north: coap-uri, sockets: 1}", "gateway_under_test.sockets", "expected one of one, per-"),
    ("{image: nodered, north: http, sockets: one}", "gateway_under_test.sockets",
     "only with north: coap-uri or coap-scheme"),
    ("{image: libcoap, north: coap-uri, colour: red}", "gateway_under_test.colour", "unknown key"),
    ("{image: libcoap, north: coap-uri, objective: {p98: 50ms}}", "gateway_under_test.objective.p98",
     "unknown statistic"),
    ("{image: libcoap, north: coap-uri, objective: {p99: 0ms}}", "gateway_under_test.objective.p99", "positive"),
    ("{image: libcoap, north: coap-uri, objective: 50ms}", "gateway_under_test.objective", "{p95: 50ms}"),
    ("{}", "gateway_under_test", "at least 'image'"),
    ("[libcoap]", "gateway_under_test", "at least 'image'"),
])
def test_every_bad_value_names_file_line_and_field(line, field, what):
    err = bad(f"gateway_under_test: {line}\n")
    assert (err.file, err.line, err.field) == ("exp.yaml", 6, field)
    assert what in err.what
    assert str(err).startswith(f"exp.yaml:6: {field}: ")


def test_a_bad_value_on_the_command_line_is_one_line_exit_2(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text(BASE + "gateway_under_test:\n  image: libcoap\n  north: coap-uri\n  cores: -1\n")
    for cmd in (["plan", str(path)], ["run", str(path), "--results", str(tmp_path / "r")]):
        proc = subprocess.run([sys.executable, "-m", "wotbench.commands.main", *cmd], capture_output=True,
                              text=True, timeout=60, cwd=REPO)
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"error: {path}:9: gateway_under_test.cores: must be at least 1, got -1"]
    assert not (tmp_path / "r").exists()


def test_the_section_round_trips_through_the_saved_spec(tmp_path):
    rs = spec.loads(BASE + "gateway_under_test: {image: aiocoap, north: coap-scheme, env: {A: b}}\n",
                    "exp.yaml")[0]
    saved = tmp_path / "spec.yaml"
    saved.write_text(rs.yaml())
    assert spec.load_saved(saved).gateway_under_test == rs.spec.gateway_under_test


# --- placement ---------------------------------------------------------------------------


def plan(cores, k, reserve=(0,), ges=1):
    return make_plan(cores, reserve=reserve, ge_instances=ges, cd_enabled=True, devices=20, affinity=True,
                     gateway_cores=k)


def used(p) -> set[int]:
    """Every core the plan gives the GEs, the CD pair and the devices."""
    from wotbench.execution.placement import cpu_ids

    return (set(p.ge_cores) | set(p.device_cores) | set(cpu_ids(p.cd_ge_cpuset))
            | set(cpu_ids(p.cd_node_cpuset)) | {c for cs in p.device_cpusets for c in cpu_ids(cs)})


@pytest.mark.parametrize("cores, k, reserve, ges", [
    (range(2), 1, (0,), 1), (range(4), 1, (0,), 1), (range(8), 2, (0,), 2), (range(8), 3, (0, 1), 1),
    (range(16), 4, (0,), 3), (range(3), 2, (0,), 1)])
def test_the_gateway_cores_are_its_own(cores, k, reserve, ges):
    p = plan(cores, k, reserve, ges)
    assert len(p.gateway_cores) == k and len(set(p.gateway_cores)) == k
    assert not set(p.gateway_cores) & (used(p) | set(p.reserved))
    assert "gateway under test: cpuset" in p.render()
    assert list(p.to_dict()["gateway_cores"]) == list(p.gateway_cores)


def test_on_two_cores_the_gateway_takes_core_1_and_the_rest_share_the_reserve():
    p = plan(range(2), 1)
    assert p.gateway_cores == (1,) and p.ge_cores == (0,) and p.device_cores == (0,) and p.degraded
    assert any("the gateway under test takes core(s) 1" in n for n in p.notes)


def test_with_room_nothing_is_degraded_by_the_gateway():
    p = plan(range(6), 1)
    assert p.gateway_cores == (5,) and not p.degraded and p.ge_cores == (1,)


@pytest.mark.parametrize("cores, k, reserve", [(range(2), 2, (0,)), (range(4), 4, (0,)), (range(1), 1, (0,)),
                                               (range(2), 2, ())])
def test_a_host_without_enough_cores_is_refused(cores, k, reserve):
    with pytest.raises(UserError) as ei:
        plan(cores, k, reserve)
    assert ei.value.field == "gateway_under_test.cores"
    assert "of its own" in ei.value.what or "none left" in ei.value.what


def test_without_a_gateway_the_plan_is_as_before():
    assert plan(range(4), 0) == make_plan(range(4), reserve=(0,), ge_instances=1, cd_enabled=True, devices=20,
                                          affinity=True)
    assert plan(range(4), 0).gateway_cores == ()


def test_wotbench_plan_shows_the_gateway_and_refuses_a_host_too_small():
    cmd = [sys.executable, "-m", "wotbench.commands.main", "plan", "experiments/gateway.yaml", "--scale", "ci"]
    ok = subprocess.run([*cmd, "--cores", "0-3"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert ok.returncode == 0, ok.stderr
    assert "gateway under test: cpuset 3 (its own)" in ok.stdout and "GE 0: core 1" in ok.stdout
    no = subprocess.run([*cmd, "--cores", "0"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert no.returncode == 2
    (line,) = no.stderr.strip().splitlines()
    assert line.startswith("error: experiments/gateway.yaml:") and ": gateway_under_test.cores: " in line


# --- the container and the GE options ------------------------------------------------------


def _node(key: str, address: str, dev: int) -> Node:
    return Node(Started(key, "device", f"wb-x-{key}", "id" + key, address), dev, None)


def test_the_container_is_hardened_on_its_cores_with_the_devices_in_its_hosts_file():
    g = gut("gateway_under_test: {image: libcoap, north: coap-uri, memory: 64m, pids: 40, env: {A: b}}\n")
    cs = gateway_spec(g, (3,), [_node("dev-0", "10.0.0.10", 0), _node("dev-1", "10.0.0.11", 1)])
    assert (cs.role, cs.cpuset, cs.memory_bytes, cs.pids, cs.argv, cs.tmpfs) == ("gateway", "3", 64 << 20, 40, (),
                                                                                   ("/tmp",))
    assert set(cs.extra_hosts) >= {("dev-0", "10.0.0.10"), ("wb-x-dev-1", "10.0.0.11")}
    args = DockerBackend.__new__(DockerBackend)
    args.short, args.run_id, args.owner = "abc", "t-abc", "h:1"
    made = args.create_args(cs, "0:0")
    assert made["image"] == image_ref(g) and made["command"] is None     # the image's own command
    assert made["cap_drop"] == ["ALL"] and made["security_opt"] == ["no-new-privileges"] and made["read_only"]
    assert (made["mem_limit"], made["pids_limit"], made["cpuset_cpus"]) == (64 << 20, 40, "3")
    assert made["tmpfs"] == {"/tmp": "rw,nosuid,nodev,size=64m,mode=1777"} and made["environment"] == {"A": "b"}
    assert made["labels"]["org.wotbench.role"] == "gateway" and made["labels"]["org.wotbench.run"] == "t-abc"
    assert made["extra_hosts"]["dev-1"] == "10.0.0.11" and "user" not in made


@pytest.mark.parametrize("text, argv", [
    ("{image: libcoap, north: coap-uri}",
     ["--gateway", "10.1.0.9:5683", "--north", "coap-uri", "--north-sockets", "per-device"]),
    ("{image: libcoap, north: coap-scheme, sockets: one}",
     ["--gateway", "10.1.0.9:5683", "--north", "coap-scheme", "--north-sockets", "one"]),
    ("{image: aiocoap, north: coap-scheme, port: 5700}",
     ["--gateway", "10.1.0.9:5700", "--north", "coap-scheme", "--north-sockets", "one"]),
    ("{image: my/gw, north: coap-uri, sockets: per-device}",
     ["--gateway", "10.1.0.9:5683", "--north", "coap-uri", "--north-sockets", "per-device"]),
    ("{image: nodered, north: http, http_path: '/p/{coap_uri}', http_conns: 4}",
     ["--gateway", "10.1.0.9:1880", "--north", "http", "--http-path", "/p/{coap_uri}", "--http-conns", "4"]),
])
def test_the_ge_options_send_every_request_through_the_gateway(text, argv):
    assert north_args(gut(f"gateway_under_test: {text}\n"), "10.1.0.9") == argv
    assert north_args(gut(f"gateway_under_test: {text}\n"), "fd00::9")[1].startswith("[fd00::9]:")


# --- readiness, against real sockets ---------------------------------------------------------


def _udp_server(reply) -> tuple[socket.socket, int]:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))

    def serve() -> None:
        try:
            data, addr = s.recvfrom(2048)
        except OSError:
            return
        out = reply(data)
        if out is not None:
            s.sendto(out, addr)

    threading.Thread(target=serve, daemon=True).start()
    return s, s.getsockname()[1]


def test_a_coap_ping_is_answered_by_rst_of_its_message_id():
    s, port = _udp_server(lambda d: bytes([0x70, 0x00]) + d[2:4])
    with s:
        assert readiness.coap_ping(("127.0.0.1", port), 2.0)
    s, port = _udp_server(lambda d: bytes([0x70, 0x00, d[2] ^ 1, d[3]]))     # another message id
    with s:
        assert not readiness.coap_ping(("127.0.0.1", port), 0.3)


def test_tcp_and_http_checks():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve() -> None:
        for _ in range(2):
            c, _ = srv.accept()
            with c:
                c.recv(1024)
                c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=serve, daemon=True).start()
    with srv:
        assert readiness.probe_once(("127.0.0.1", port), "tcp", 2.0)
        assert readiness.probe_once(("127.0.0.1", port), "http:/health", 2.0)   # any HTTP answer
    assert not readiness.probe_once(("127.0.0.1", port), "tcp", 0.5)          # closed now


def test_waiting_ends_with_why_when_nothing_answers_or_the_container_stopped():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    why = readiness.wait_service(("127.0.0.1", port), "tcp", 0.5, alive=lambda: True, retry_s=0.1)
    assert why is not None and "no answer" in why and f"127.0.0.1:{port}" in why
    why = readiness.wait_service(("127.0.0.1", port), "tcp", 5.0, alive=lambda: False)
    assert why is not None and "stopped before it was ready" in why


# --- on a swarm: the gateway on the GE node ----------------------------------------------------


def _swarm_node(host: str, cores: int, *, local: bool = False, role: str = "worker"):
    from wotbench.engine.inventory import NodeInfo

    return NodeInfo(id=f"id-{host}", hostname=host, role=role, state="ready", availability="active", labels=(),
                    cores=tuple(range(cores)), engine_version="20.10.24", local=local)


def test_on_a_swarm_the_gateway_goes_on_the_ge_node_with_its_own_cores():
    from wotbench.engine.inventory import Inventory
    from wotbench.execution.placement import make_cluster_plan

    inv = Inventory(True, (_swarm_node("mgr", 4, local=True, role="manager"), _swarm_node("h2", 8)))
    p = make_cluster_plan(inv, spec.Cluster(), reserve=[0], ge_instances=1, cd_enabled=True, group_sizes=[10],
                          affinity=True, gateway_cores=2)
    ge, dev = p.nodes
    assert ge.hostname == "mgr" and ge.plan.gateway_cores == (2, 3) and ge.plan.ge_cores == (1,)
    assert dev.plan.gateway_cores == () and "gateway under test" in ge.roles()
    assert any("gateway under test on the GE node mgr" in w for w in p.why)
    assert "gateway under test: cpuset 2-3 (its own)" in p.render()
    with pytest.raises(UserError) as ei:          # the GE node has 3 cores outside the reserve, not 4
        make_cluster_plan(inv, spec.Cluster(), reserve=[0], ge_instances=1, cd_enabled=True, group_sizes=[10],
                          affinity=True, gateway_cores=4)
    assert ei.value.field == "gateway_under_test.cores" and "node mgr" in ei.value.what


def test_gateway_json_is_the_engines_end_state_of_the_container():
    """gateway.json (docs/run-layout.md) from the engine's inspect: running,
    exited (with its code, killed for memory) or gone."""
    from wotbench.engine import ContainerState

    st = Started("gateway", "gateway", "wb-x-gateway", "id", "10.0.0.254")
    never = "0001-01-01T00:00:00Z"
    up = ContainerState.of({"State": {"Status": "running", "ExitCode": 0, "OOMKilled": False,
                                      "StartedAt": "2026-01-01T00:00:01Z", "FinishedAt": never}, "RestartCount": 0})
    assert end_state("img", st, up, "1") == {
        "format": 1, "image": "img", "container": "wb-x-gateway", "state": "running", "exit_code": None,
        "oom_killed": False, "restarts": 0, "started_at": "2026-01-01T00:00:01Z", "finished_at": None, "cpuset": "1"}
    oom = ContainerState.of({"State": {"Status": "exited", "ExitCode": 137, "OOMKilled": True,
                                       "StartedAt": "2026-01-01T00:00:01Z", "FinishedAt": "2026-01-01T00:00:09Z"},
                             "RestartCount": 1})
    got = end_state("img", st, oom, "1")
    assert (got["state"], got["exit_code"], got["oom_killed"], got["restarts"], got["finished_at"]) == (
        "exited", 137, True, 1, "2026-01-01T00:00:09Z")
    for gone in (None, ContainerState("removed", None, None)):
        assert end_state("img", st, gone, "1")["state"] == "missing"
