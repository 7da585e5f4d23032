"""The bad-input corpus (issue W2 5/5): what an adversarial user gave the
`wotbench` command, each a case here. Every one exits 2 with exactly one
line on stderr (``error: ...``) that names the file, line or field where
there is one, and leaves nothing behind: no results folder, no output
folder, nothing in the working folder.

The kinds: YAML that is no spec (empty, a list, a syntax error, binary,
an alias bomb, too deep, too big), every spec section with a wrong type,
an unknown key, an out-of-range or absurd value (the pre-flight budget),
bad distributions and units, empirical CSVs that are missing or not
numbers, scales and sweeps that do not apply, and the command line itself
(unknown commands and options, bad core lists, paths that are folders or
files where the other is needed). The C binaries' own inputs (trace
lines, hosts files, resource files, their flags) have their corpus in
gateway-emulator/tests/test_bad_input.py, test_rt.py, test_cpus.py and
device/tests/test_cli.py.

In-process (``wotbench.commands.main.main``): a hundred cases in seconds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from wotbench.commands import main as cli

BASE = """\
name: t
workload: {seed: 1}
devices:
  - name: a
    count: 4
    rit: exp:100ms
    service: exp:5ms
    mode: sleep
    threads: 2
    memory: 48m
gateway: {instances: 1, type: con, timeout: 2s}
cd: {enabled: true, rit: 500ms, calibration: 3s}
placement: {affinity: false, reserve: [0]}
phases: {warmup: 1s, measure: 10s, cooldown: 1s}
"""


def sub(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def bomb(levels: int = 9, fan: int = 9) -> str:
    lines = ["a0: &a0 [x]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    return "\n".join(lines) + "\n" + BASE


# (id, spec text or None, argv with {spec} / {tmp}, what the one line must contain)
SPECS: list[tuple[str, str | bytes, str]] = [
    # --- YAML that is no spec
    ("empty-file", "", "spec.yaml"),
    ("only-a-comment", "# nothing\n", "spec.yaml"),
    ("top-level-list", "- 1\n- 2\n", "spec.yaml"),
    ("top-level-scalar", "hello\n", "spec.yaml"),
    ("yaml-syntax", BASE + "gateway: {instances: 1\n", "spec.yaml"),
    ("tab-indent", BASE.replace("    count: 4", "\tcount: 4"), "spec.yaml"),
    ("binary-garbage", b"\x00\xff\xfe\x80garbage\x00", "spec.yaml"),
    ("not-utf8", BASE.encode() + b"# \xff\xfe\n", "spec.yaml"),
    ("alias-bomb", bomb(), "alias"),
    ("too-deep", "a: " + "[" * 200 + "]" * 200 + "\n" + BASE, "spec.yaml"),
    ("over-1MiB", BASE + "#" + "x" * (1 << 20) + "\n", "spec.yaml"),
    ("duplicate-key", BASE + "name: u\n", "name"),
    # --- top level
    ("unknown-top-key", BASE + "devicez: []\n", "devicez"),
    ("name-with-slash", sub("name: t", "name: ../../etc"), "name"),
    ("name-empty", sub("name: t", 'name: ""'), "name"),
    ("name-a-list", sub("name: t", "name: [a]"), "name"),
    ("missing-devices", BASE.replace(BASE[BASE.index("devices:"):BASE.index("gateway:")], ""), "devices"),
    ("devices-empty", BASE.replace(BASE[BASE.index("devices:"):BASE.index("gateway:")], "devices: []\n"),
     "devices"),
    ("devices-a-mapping", BASE.replace(BASE[BASE.index("devices:"):BASE.index("gateway:")], "devices: {a: 1}\n"),
     "devices"),
    # --- a device group
    ("count-zero", sub("count: 4", "count: 0"), "devices[0].count"),
    ("count-negative", sub("count: 4", "count: -3"), "devices[0].count"),
    ("count-word", sub("count: 4", "count: many"), "devices[0].count"),
    ("count-fraction", sub("count: 4", "count: 2.5"), "devices[0].count"),
    ("count-over-budget", sub("count: 4", "count: 100000"), "devices[0].count"),
    ("rit-unknown-distribution", sub("rit: exp:100ms", "rit: expo:100ms"), "devices[0].rit"),
    ("rit-no-parameter", sub("rit: exp:100ms", "rit: 'exp:'"), "devices[0].rit"),
    ("rit-negative", sub("rit: exp:100ms", "rit: exp:-5ms"), "devices[0].rit"),
    ("rit-no-unit", sub("rit: exp:100ms", "rit: exp:100"), "devices[0].rit"),
    ("rit-1ns-budget", sub("rit: exp:100ms", "rit: exp:1ns"), "rit"),
    ("rit-pareto-alpha", sub("rit: exp:100ms", "rit: 'pareto:mean=5ms,alpha=0.5'"), "devices[0].rit"),
    ("rit-mmpp2-missing", sub("rit: exp:100ms", "rit: 'mmpp2:on=exp:1ms'"), "devices[0].rit"),
    ("rit-empirical-missing", sub("rit: exp:100ms", "rit: empirical:nosuch.csv"), "nosuch.csv"),
    ("service-unknown", sub("service: exp:5ms", "service: gauss:5ms"), "devices[0].service"),
    ("service-a-number", sub("service: exp:5ms", "service: 5"), "devices[0].service"),
    ("mode-bogus", sub("mode: sleep", "mode: nap"), "devices[0].mode"),
    ("threads-zero", sub("threads: 2", "threads: 0"), "devices[0].threads"),
    ("threads-huge", sub("threads: 2", "threads: 100000"), "devices[0].threads"),
    ("memory-word", sub("memory: 48m", "memory: lots"), "devices[0].memory"),
    ("memory-over-host", sub("memory: 48m", "memory: 99999g"), "devices[0].memory"),
    ("memory-negative", sub("memory: 48m", "memory: -5m"), "devices[0].memory"),
    ("cpus-negative", sub("memory: 48m", "memory: 48m\n    cpus: -1"), "devices[0].cpus"),
    ("cpus-word", sub("memory: 48m", "memory: 48m\n    cpus: half"), "devices[0].cpus"),
    ("methods-unknown", sub("memory: 48m", "memory: 48m\n    methods: {FETCH: 1}"), "devices[0].methods"),
    ("methods-negative", sub("memory: 48m", "memory: 48m\n    methods: {GET: -1}"), "devices[0].methods"),
    ("payload-too-big", sub("memory: 48m", "memory: 48m\n    payload_bytes: 5000"), "devices[0].payload_bytes"),
    ("resources-zero", sub("memory: 48m", "memory: 48m\n    resources: 0"), "devices[0].resources"),
    ("unknown-group-key", sub("memory: 48m", "memory: 48m\n    colour: blue"), "devices[0].colour"),
    ("loss-over-100", sub("memory: 48m", "memory: 48m\n    impairment: {loss: 120%}"),
     "devices[0].impairment.loss"),
    ("jitter-without-delay", sub("memory: 48m", "memory: 48m\n    impairment: {jitter: 1ms}"),
     "devices[0].impairment.jitter"),
    ("rate-word", sub("memory: 48m", "memory: 48m\n    impairment: {rate: fast}"), "devices[0].impairment.rate"),
    ("rate-too-small", sub("memory: 48m", "memory: 48m\n    impairment: {rate: 1bit}"),
     "devices[0].impairment.rate"),
    ("impairment-unknown", sub("memory: 48m", "memory: 48m\n    impairment: {corrupt: 1%}"),
     "devices[0].impairment.corrupt"),
    # --- gateway, cd, placement
    ("instances-zero", sub("instances: 1", "instances: 0"), "gateway.instances"),
    ("instances-99", sub("instances: 1", "instances: 99"), "gateway.instances"),
    ("gateway-type", sub("type: con", "type: tcp"), "gateway.type"),
    ("gateway-timeout-negative", sub("timeout: 2s", "timeout: -2s"), "gateway.timeout"),
    ("gateway-scheduler", sub("type: con,", "type: con, scheduler: rr,"), "gateway.scheduler"),
    ("gateway-unknown", sub("type: con,", "type: con, turbo: true,"), "gateway.turbo"),
    ("cd-rit-zero", sub("cd: {enabled: true, rit: 500ms", "cd: {enabled: true, rit: 0ms"), "cd.rit"),
    ("cd-calibration-word", sub("calibration: 3s", "calibration: soon"), "cd.calibration"),
    ("cd-enabled-word", sub("enabled: true", "enabled: maybe"), "cd.enabled"),
    ("reserve-not-a-core", sub("reserve: [0]", "reserve: [99999]"), "placement.reserve"),
    ("reserve-negative", sub("reserve: [0]", "reserve: [-1]"), "placement.reserve"),
    ("affinity-word", sub("affinity: false", "affinity: sometimes"), "placement.affinity"),
    # --- phases, repetitions, sweep, validity, workload
    ("measure-zero", sub("measure: 10s", "measure: 0s"), "phases.measure"),
    ("measure-a-million-hours", sub("measure: 10s", "measure: 1000000h"), "requests in one test"),
    ("warmup-negative", sub("warmup: 1s", "warmup: -1s"), "phases.warmup"),
    ("phases-unknown", sub("cooldown: 1s", "cooldown: 1s, rest: 1s"), "phases.rest"),
    ("repetitions-zero", BASE + "repetitions: 0\n", "repetitions"),
    ("repetitions-word", BASE + "repetitions: twice\n", "repetitions"),
    ("sweep-bogus-key", BASE + "sweep: {key: 'nosuch.key', values: [1, 2]}\n", "sweep"),
    ("sweep-no-values", BASE + "sweep: {key: 'devices[0].count', values: []}\n", "sweep"),
    ("sweep-bad-value", BASE + "sweep: {key: 'devices[0].count', values: [1, -2]}\n", "devices[0].count"),
    ("validity-word", BASE + "validity: {rate_tolerance: lots}\n", "validity.rate_tolerance"),
    ("validity-unknown", BASE + "validity: {be_nice: true}\n", "validity.be_nice"),
    ("seed-word", sub("workload: {seed: 1}", "workload: {seed: abc}"), "workload.seed"),
    ("rit-scope-bogus", sub("workload: {seed: 1}", "workload: {seed: 1, rit_scope: all}"), "workload.rit_scope"),
    ("gateway-rit-without-scope", sub("workload: {seed: 1}", "workload: {seed: 1, rit: exp:1ms}"), "workload.rit"),
    ("interference-kind", BASE + "interference: [{kind: disk, start: 1s, end: 2s}]\n", "interference[0].kind"),
    ("interference-backwards", BASE + "interference: [{kind: cpu, start: 5s, end: 2s}]\n", "interference[0]"),
    ("scales-not-a-mapping", BASE + "scales: [small]\n", "scales"),
    ("scale-override-unknown-key", BASE + "scales: {small: {nosuch: 1}}\n", "(at scale small)"),
]

CLI: list[tuple[str, list[str], str]] = [
    ("no-arguments", [], "wotbench"),
    ("unknown-command", ["fly"], "fly"),
    ("unknown-option", ["plan", "{spec}", "--fast"], "--fast"),
    ("plan-missing-file", ["plan", "{tmp}/nosuch.yaml"], "nosuch.yaml"),
    ("plan-a-folder", ["plan", "{tmp}"], ""),
    ("cores-letters", ["plan", "{spec}", "--cores", "a-b"], "--cores"),
    ("cores-huge", ["plan", "{spec}", "--cores", "0-99999999"], "--cores"),
    ("cores-backwards", ["plan", "{spec}", "--cores", "5-2"], "--cores"),
    ("scale-unknown", ["plan", "{spec}", "--scale", "huge"], "huge"),
    ("run-results-is-a-file", ["run", "{spec}", "--results", "{tmp}/afile"], "--results"),
    ("run-missing-spec", ["run", "{tmp}/nosuch.yaml", "--results", "{tmp}/res"], "nosuch.yaml"),
    ("report-missing-folder", ["report", "{tmp}/nosuch"], "nosuch"),
    ("report-not-a-run", ["report", "{tmp}/empty"], "no GE output"),
    ("tracegen-negative-devices", ["tracegen", "--devices", "-1", "--duration", "1s", "--rit", "exp:1s",
                                   "--service", "exp:1ms", "--out", "{tmp}/wl"], "--devices"),
    ("tracegen-bad-rit", ["tracegen", "--devices", "2", "--duration", "1s", "--rit", "exp",
                          "--service", "exp:1ms", "--out", "{tmp}/wl"], "--rit"),
    ("tracegen-no-length", ["tracegen", "--devices", "2", "--rit", "exp:1s", "--service", "exp:1ms",
                            "--out", "{tmp}/wl"], "--duration"),
    ("tracegen-out-is-a-file", ["tracegen", "--devices", "2", "--duration", "1s", "--rit", "exp:1s",
                                "--service", "exp:1ms", "--out", "{tmp}/afile"], "afile"),
    ("validate-cd-without-its-section", ["validate-cd", "{spec}", "--classes", "nosuch"], "validate_cd"),
]


# --- issue 23 (inputs): control characters, numbers outside the grammar, budgets
# counted before expansion, the host's cores, files that are not regular files
# (FIFOs: harness/tests/test_bounded_reads.py, which also measures memory).
_GRID = "sweep:\n" + "".join(f"  - {{key: '{k}', values: {list(range(1, 101))}}}\n"
                             for k in ("devices[0].threads", "devices[0].count", "devices[0].resources"))
SPECS += [
    ("nul-in-spec", sub("name: t", "name: t\x00"), "spec.yaml:1: invalid YAML: control character U+0000 at column 8"),
    ("bel-in-spec", sub("mode: sleep", "mode: sleep\x07"), "spec.yaml:8: invalid YAML: control character U+0007"),
    ("esc-in-spec", sub("service: exp:5ms", "service: exp:5ms\x1b[2J"), "control character U+001B"),
    ("cpus-over-the-hosts-cores", sub("memory: 48m", "memory: 48m\n    cpus: 1000"),
     "devices[0].cpus: 1000 CPUs per container, more than this host's"),
    ("sweep-three-axes-of-100", BASE + _GRID, "= 1,000,000 tests"),
    ("sweep-1000-values-x-1000-repetitions",
     BASE + "repetitions: 1000\nsweep: {key: 'devices[0].threads', values: ["
     + ", ".join(str(1 + i % 200) for i in range(1000)) + "]}\n", "1000 repetitions = 1,000,000 tests"),
    ("measure-fullwidth-digits", sub("measure: 10s", "measure: １０s"), "phases.measure: invalid duration"),
    ("measure-arabic-indic-digits", sub("measure: 10s", "measure: ١٠s"), "phases.measure: invalid duration"),
    ("measure-with-a-space", sub("measure: 10s", "measure: 10 s"), "with no space"),
    ("measure-underscore", sub("measure: 10s", "measure: 1_0s"), "phases.measure: invalid duration"),
    ("measure-hex", sub("measure: 10s", "measure: 0x2s"), "phases.measure: invalid duration"),
    ("timeout-nan", sub("timeout: 2s", "timeout: nans"), "gateway.timeout: invalid duration"),
    ("count-hex", sub("count: 4", "count: 0x2"), "devices[0].count: expected an integer"),
    ("count-underscore", sub("count: 4", "count: 1_000"), "devices[0].count: expected an integer"),
    ("count-octal", sub("count: 4", "count: 010"), "devices[0].count: expected an integer"),
    ("count-plus", sub("count: 4", "count: +4"), "devices[0].count: expected an integer"),
    ("count-fullwidth", sub("count: 4", "count: ４"), "devices[0].count: expected an integer"),
    ("threads-sexagesimal", sub("threads: 2", "threads: 1:30"), "devices[0].threads: expected an integer"),
    ("cpus-nan", sub("memory: 48m", "memory: 48m\n    cpus: .nan"), "devices[0].cpus"),
    ("cpus-inf", sub("memory: 48m", "memory: 48m\n    cpus: .inf"), "devices[0].cpus"),
    ("memory-fullwidth", sub("memory: 48m", "memory: ４８m"), "devices[0].memory: invalid size"),
    ("loss-inf", sub("memory: 48m", "memory: 48m\n    impairment: {loss: .inf}"), "devices[0].impairment.loss"),
    ("rate-with-a-space", sub("memory: 48m", "memory: 48m\n    impairment: {rate: 1 mbit}"), "with no space"),
    ("validity-nan", BASE + "validity: {rate_tolerance: .nan}\n", "validity.rate_tolerance"),
    ("seed-underscore", sub("workload: {seed: 1}", "workload: {seed: 1_0}"), "workload.seed"),
    ("lognormal-cv-arabic-digits", sub("service: exp:5ms", "service: 'lognormal:mean=5ms,cv=٢'"),
     "devices[0].service: lognormal parameter 'cv'"),
    ("pareto-alpha-inf", sub("rit: exp:100ms", "rit: 'pareto:mean=5ms,alpha=inf'"), "devices[0].rit"),
    ("rit-empirical-dev-zero", sub("rit: exp:100ms", "rit: empirical:/dev/zero"),
     "spec.yaml:6: devices[0].rit: empirical: /dev/zero: a character device, not a regular file"),
    ("rit-empirical-a-folder", sub("rit: exp:100ms", "rit: empirical:/"), "a folder, not a regular file"),
    ("rit-mmpp2-on-empirical-dev-zero",
     sub("rit: exp:100ms", "rit: 'mmpp2:on=empirical:/dev/zero,off=exp:1ms,t_on=1s,t_off=1s'"),
     "devices[0].rit: mmpp2 parameter 'on': empirical: /dev/zero: a character device"),
    ("rit-empirical-path-with-a-newline", sub("rit: exp:100ms", 'rit: "empirical:/nonexistent/a\\nerror: fake"'),
     "empirical: /nonexistent/a\\nerror: fake: cannot read: file not found"),
]
CLI += [
    ("plan-dev-zero", ["plan", "/dev/zero"], "/dev/zero: a character device, not a regular file"),
    ("plan-dev-urandom", ["plan", "/dev/urandom"], "/dev/urandom: a character device"),
    ("run-dev-zero", ["run", "/dev/zero", "--results", "{tmp}/res"], "/dev/zero: a character device"),
    ("tracegen-spec-dev-zero", ["tracegen", "--spec", "/dev/zero", "--out", "{tmp}/wl"], "a character device"),
    ("tracegen-a-billion-devices", ["tracegen", "--devices", "1000000000", "--duration", "1s", "--rit",
                                    "exp:1s", "--service", "exp:1ms", "--out", "{tmp}/wl"], "--devices"),
    ("tracegen-1e12-requests", ["tracegen", "--devices", "2", "--requests", "1000000000000", "--rit",
                                "exp:1s", "--service", "exp:1ms", "--out", "{tmp}/wl"], "--requests"),
    ("tracegen-fullwidth-devices", ["tracegen", "--devices", "１０", "--duration", "1s", "--rit", "exp:1s",
                                    "--service", "exp:1ms", "--out", "{tmp}/wl"], "--devices"),
    ("tracegen-duration-with-a-space", ["tracegen", "--devices", "2", "--duration", "1 s", "--rit", "exp:1s",
                                        "--service", "exp:1ms", "--out", "{tmp}/wl"], "--duration"),
    ("cores-fullwidth-digits", ["plan", "{spec}", "--cores", "０-１"], "--cores"),
    ("cores-underscore", ["plan", "{spec}", "--cores", "0-1_0"], "--cores"),
]


#: Inputs the probe counted as bad that are accepted, as documented (exit 0).
ACCEPTED: list[tuple[str, list[str], str]] = [
    # docs/spec.md: `name` defaults to the spec file's name without .yaml
    ("no-name-is-the-file-name", ["plan", "{tmp}/spec.yaml"], "BASE-without-name"),
    # docs/spec.md: a one-core host shares its only core (reserve is refused
    # only when it names every core of a host with more than one)
    ("one-core-host-reserving-it", ["plan", "{spec}", "--cores", "0"], "BASE"),
]


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _call(argv: list[str], tmp: Path, capsys) -> tuple[int, list[str]]:
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        rc = cli.main(argv)
    finally:
        os.chdir(cwd)
    err = capsys.readouterr().err
    return rc, err.splitlines()


def _check(rc: int, lines: list[str], names: str) -> None:
    assert rc == 2, (rc, lines)
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert names in lines[0], lines[0]


#: Refused by `run` only once the engine said whether this is a swarm (the
#: host's memory, cores and threads are a single host's limits).
NEEDS_ENGINE = {"count-over-budget", "memory-over-host", "cpus-over-the-hosts-cores"}


@pytest.mark.parametrize("text,names", [
    pytest.param(*c[1:], id=c[0], marks=[pytest.mark.docker] if c[0] in NEEDS_ENGINE else []) for c in SPECS])
def test_bad_spec_is_one_line_exit_2_and_nothing_made(text, names, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(text if isinstance(text, bytes) else text.encode())
    before = _listing(tmp_path)
    for argv in (["plan", str(spec)], ["run", str(spec), "--results", str(tmp_path / "res")]):
        rc, lines = _call(argv, tmp_path, capsys)
        _check(rc, lines, names)
        if isinstance(text, str) and "spec.yaml" not in names and names != "alias":
            assert "spec.yaml" in lines[0], lines[0]            # names the file
        assert _listing(tmp_path) == before, argv[0]


@pytest.mark.parametrize("argv,names", [c[1:] for c in CLI], ids=[c[0] for c in CLI])
def test_bad_command_line_is_one_line_exit_2_and_nothing_made(argv, names, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE)
    (tmp_path / "afile").write_text("x")
    (tmp_path / "empty").mkdir()
    before = _listing(tmp_path)
    rc, lines = _call([a.format(spec=spec, tmp=tmp_path) for a in argv], tmp_path, capsys)
    _check(rc, lines, names)
    assert _listing(tmp_path) == before


@pytest.mark.parametrize("argv,which", [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_documented_inputs_are_accepted(argv, which, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE.replace("name: t\n", "") if which == "BASE-without-name" else BASE)
    rc, lines = _call([a.format(spec=spec, tmp=tmp_path) for a in argv], tmp_path, capsys)
    assert rc == 0 and lines == []


RSS_CASES = ("alias-bomb", "too-deep", "over-1MiB", "rit-1ns-budget", "count-over-budget",
             "measure-a-million-hours", "threads-huge")


def test_plan_stays_under_200_mb(tmp_path):
    """Peak RSS of `wotbench plan` (issue W2 5/5: an alias bomb grew past
    4 GB, `--cores 0-99999999` took 12 GB; plan also imported the analysis
    and came to 229 MB on any spec): the corpus's costly specs, the largest
    valid one and the widest --cores, each in a fresh process."""
    import subprocess

    texts = {n: t for n, t, _ in SPECS if n in RSS_CASES}
    texts["valid-1000-devices"] = sub("count: 4", "count: 1000")
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's (pytest's) peak across exec.
    code = ("import re, sys; from wotbench.commands import main as cli; rc = cli.main(sys.argv[1:]); "
            "print(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1), file=sys.stderr); "
            "sys.exit(rc)")
    peak = {}
    for name, text in texts.items():
        spec = tmp_path / f"{name}.yaml"
        spec.write_bytes(text if isinstance(text, bytes) else text.encode())
        argv = ["plan", str(spec)] + (["--cores", "0-8191"] if name == "valid-1000-devices" else [])
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300)
        assert r.returncode == (0 if name.startswith("valid") else 2), r.stderr
        peak[name] = int(r.stderr.strip().splitlines()[-1]) // 1024
    print("plan peak RSS (MB):", peak)
    assert max(peak.values()) < 200, peak
