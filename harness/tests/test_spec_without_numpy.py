"""Reading a spec does not load NumPy (issue 24): the spec holds each
distribution as its parsed values (wotbench.spec.distributions), and what it
computes from them (means, rates, the service time of each resource) is
plain Python giving NumPy's numbers. Drawing is tracegen's, which builds its
NumPy kinds from the spec's values (the reference the numbers are held to here).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from wotbench.spec import GroupWorkload, WorkloadSpec, resource_service_times
from wotbench.spec._sums import numpy_sum
from wotbench.spec.distributions import DistributionSpec, parse_distribution
from wotbench.tracegen._distribution import resource_service_times as numpy_table
from wotbench.tracegen._registry import sampler

REPO = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "pandas", "scipy")

#: Every kind once, in both roles, a gateway-scope workload and an automatic CD service time.
EVERY_KIND = """\
name: kinds
workload: {seed: 3, duration: 10s}
devices:
  - {name: a, count: 2, rit: "det:1s", service: "exp:5ms", resources: 100}
  - {name: b, count: 2, rit: "exp:300ms", service: "uniform:1ms,5ms"}
  - {name: c, count: 1, rit: "uniform:100ms,300ms", service: "lognormal:mean=5ms,cv=2", resources: 4096}
  - {name: d, count: 1, rit: "lognormal:mean=200ms,cv=0.5", service: "pareto:mean=5ms,alpha=1.5"}
  - {name: e, count: 1, rit: "pareto:mean=200ms,alpha=2.5", service: "empirical:svc.csv"}
  - {name: f, count: 1, rit: "empirical:rits.csv", service: "det:2ms"}
  - {name: g, count: 1, rit: "mmpp2:on=exp:10ms,off=uniform:100ms,300ms,t_on=1s,t_off=3s", service: "det:1ms"}
cd: {enabled: true, rit: 500ms, service: auto, calibration: 3s}
"""
GATEWAY = """\
name: gw
workload: {seed: 3, duration: 10s, rit_scope: gateway, rit: "lognormal:mean=3ms,cv=1"}
devices: [{name: a, count: 7, service: "exp:5ms"}, {name: b, count: 3, service: "empirical:svc.csv"}]
"""

#: Loads every spec named on the command line (every test, at every scale the file
#: offers), prints how many tests and which of HEAVY got loaded.
_LOAD_ALL = f"""
import json, sys, yaml
from wotbench.spec import load
tests = 0
for path in sys.argv[1:]:
    doc = yaml.safe_load(open(path)) or {{}}
    for scale in [None, *(doc.get("scales") or {{}})]:
        for run in load(path, scale):
            w = run.spec.workload
            tests += 1
            run.yaml()
            w.aggregate_rate_per_us(), w.cd_service_effective_us(), w.group_of_device()
            [(g.resource_mean_us, g.resource_table_us, g.method_shares) for g in w.groups]
print(tests, json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def _write_inputs(folder: Path) -> None:
    """The empirical files EVERY_KIND and GATEWAY name."""
    values = np.random.default_rng(4).gamma(2.0, 80_000.0, 3000)
    (folder / "rits.csv").write_text("rit_us\n" + "".join(f"{v:.3f}\n" for v in values))
    (folder / "svc.csv").write_text("".join(f"{v}\n" for v in (900, 1200, 1500, 2500, 4000, 20000)))


def test_reading_every_experiment_loads_no_numpy(tmp_path: Path) -> None:
    _write_inputs(tmp_path)
    (tmp_path / "kinds.yaml").write_text(EVERY_KIND)
    (tmp_path / "gw.yaml").write_text(GATEWAY)
    specs = sorted((REPO / "experiments").glob("*.yaml"))
    assert len(specs) >= 10
    r = subprocess.run([sys.executable, "-c", _LOAD_ALL, *map(str, specs), str(tmp_path / "kinds.yaml"),
                        str(tmp_path / "gw.yaml")], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    tests, loaded = r.stdout.split(" ", 1)
    assert int(tests) > len(specs) and json.loads(loaded) == [], r.stdout


# -- the same numbers as NumPy -------------------------------------------------------


@pytest.mark.parametrize("n", [*range(0, 300), 1000, 8191, 8193, 100_003])
def test_sums_are_numpys(n: int) -> None:
    rng = random.Random(n)
    values = [rng.lognormvariate(0, 3) * (1e12 if rng.random() < 0.05 else 1.0) for _ in range(n)]
    assert numpy_sum(values) == float(np.sum(np.array(values)))


#: Kinds computed with + - * / only (and sorting): bit for bit, on any machine.
ARITHMETIC = ["det:3ms", "det:0us", "uniform:1ms,5ms", "uniform:0us,7ms", "empirical:rits.csv", "empirical:svc.csv"]
#: Kinds with log, pow or the normal CDF and quantile: libm (and statistics.NormalDist) against NumPy
#: and SciPy, which differ in the last bits (NumPy's own power and log differ between CPUs), and
#: the bin means of a heavy tail (pareto, alpha near 1) lose some of them to cancellation.
TRANSCENDENTAL = [f"exp:{m}" for m in ("1us", "300us", "5ms", "2s")] + [
    f"lognormal:mean={m},cv={cv}" for m in ("37us", "5ms", "2s") for cv in (0.1, 0.5, 1, 2, 10)] + [
    f"pareto:mean={m},alpha={a}" for m in ("37us", "5ms", "2s") for a in (1.01, 1.5, 2.5, 7)]
KS = (1, 2, 7, 16, 64, 100, 256, 1024)


def _both(text: str, folder: Path) -> tuple[DistributionSpec, DistributionSpec]:
    """The spec's value of ``text`` and tracegen's NumPy kind of it."""
    _write_inputs(folder)
    d = parse_distribution(text, "service", role="service", base_dir=folder)
    drawn = sampler(d)
    assert type(d) is not type(drawn) and drawn.text == d.text
    return d, drawn


@pytest.mark.parametrize("text", ARITHMETIC)
def test_arithmetic_kinds_are_numpys_bit_for_bit(text: str, tmp_path: Path) -> None:
    d, drawn = _both(text, tmp_path)
    assert d.mean_us() == float(drawn.mean_us())
    for k in (*KS, 65536):
        assert list(d.bin_means(k)) == list(drawn.bin_means(k)), k
        assert resource_service_times(d, k) == tuple(resource_service_times(drawn, k)), k


def test_an_empirical_mean_is_numpys(tmp_path: Path) -> None:
    for n in (1, 7, 129, 5000, 123_457):
        values = np.random.default_rng(n).pareto(1.3, n) * 1000
        (tmp_path / "x.csv").write_text("".join(f"{v!r}\n" for v in values.tolist()))
        d = parse_distribution("empirical:x.csv", base_dir=tmp_path)
        assert d.mean_us() == float(values.mean()), n


@pytest.mark.parametrize("text", TRANSCENDENTAL)
def test_kinds_with_logs_and_powers_agree_with_numpy(text: str, tmp_path: Path) -> None:
    d, drawn = _both(text, tmp_path)
    assert d.mean_us() == drawn.mean_us()
    for k in KS:
        assert list(d.bin_means(k)) == pytest.approx(list(drawn.bin_means(k)), rel=1e-9, abs=1e-9), k
        assert resource_service_times(d, k) == tuple(resource_service_times(drawn, k)), k
    # 65,536 resources: a bin mean within 1e-12 of a half microsecond may round the other way.
    ours, numpys = np.array(resource_service_times(d, 65536)), np.array(resource_service_times(drawn, 65536))
    assert np.abs(ours - numpys).max() <= 1 and (ours != numpys).sum() <= 2


def _numpy_workload(spec: WorkloadSpec) -> dict[str, object]:
    """What WorkloadSpec computed with NumPy before (its code, verbatim)."""
    counts = [g.count for g in spec.groups]
    if spec.rit_scope == "gateway":
        assert spec.rit is not None
        rate = np.full(len(spec.groups), 1.0 / spec.rit.mean_us() / spec.n_devices)
    else:
        rate = np.array([1.0 / g.rit.mean_us() for g in spec.groups])  # type: ignore[union-attr]
    table = [numpy_table(sampler(g.service), g.resources) for g in spec.groups]  # type: ignore[arg-type]
    w = rate * np.array(counts)
    s = np.array([float(t.mean()) for t in table])
    return {"rates": rate.tolist(), "aggregate": float((rate * counts).sum()),
            "mean_service": float((w * s).sum() / w.sum()), "resource_means": s.tolist(),
            "tables": [t.tolist() for t in table],
            "group_of": np.repeat(np.arange(len(spec.groups)), counts).tolist()}


@pytest.mark.parametrize("seed", range(12))
def test_workload_rates_and_means_are_numpys(seed: int, tmp_path: Path) -> None:
    _write_inputs(tmp_path)
    rng = random.Random(seed)
    kinds = ["det:{m}", "exp:{m}", "uniform:0us,{m}", "lognormal:mean={m},cv=1.5", "pareto:mean={m},alpha=2.2",
             "empirical:rits.csv"]
    groups = tuple(
        GroupWorkload(f"g{i}", rng.randint(1, 50),
                      parse_distribution(rng.choice(kinds[:5]).format(m=f"{rng.uniform(0.1, 9):.4f}ms"),
                                         role="service"),
                      None if seed % 3 == 0 else parse_distribution(
                          rng.choice(kinds).format(m=f"{rng.uniform(1, 900):.3f}ms"), base_dir=tmp_path),
                      resources=rng.choice((1, 3, 64, 1000)))
        for i in range(1 + seed * 2))
    gateway = parse_distribution("exp:0.37ms") if seed % 3 == 0 else None
    spec = WorkloadSpec(groups, duration_us=10**7, rit_scope="gateway" if gateway else "device", rit=gateway)
    want = _numpy_workload(spec)
    assert list(spec.device_rate_per_us()) == want["rates"]
    assert spec.aggregate_rate_per_us() == want["aggregate"]
    assert spec.mean_service_us() == want["mean_service"]
    assert [g.resource_mean_us for g in spec.groups] == want["resource_means"]
    assert [list(g.resource_table_us) for g in spec.groups] == want["tables"]
    assert list(spec.group_of_device()) == want["group_of"]


def test_a_spec_holds_parsed_values_and_tracegen_draws_them(tmp_path: Path) -> None:
    _write_inputs(tmp_path)
    (tmp_path / "kinds.yaml").write_text(textwrap.dedent(EVERY_KIND))
    from wotbench.spec import load

    w = load(tmp_path / "kinds.yaml")[0].spec.workload
    assert w is not None
    for g in w.groups:
        for d in (g.rit, g.service):
            assert d is not None and type(d).__module__ == "wotbench.spec.distributions"
            drawn = sampler(d)
            assert type(drawn).__module__ == "wotbench.tracegen._distribution" and isinstance(drawn, type(d))
            assert drawn == type(drawn).of(d) and drawn.mean_us() == d.mean_us()
