"""The placement plan as a pure function of fake CPU lists."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

from wotbench import UserError
from wotbench.execution.placement import Plan, cores_phrase, cpuset, make_plan


def plan(cores: Iterable[int], *, reserve: Sequence[int] = (0,), ge_instances: int = 1, cd_enabled: bool = True,
         devices: int = 10, affinity: bool = True) -> Plan:
    return make_plan(cores, reserve=reserve, ge_instances=ge_instances, cd_enabled=cd_enabled, devices=devices,
                     affinity=affinity)


def test_cpuset_compresses_ranges():
    assert cpuset([5, 1, 2, 3]) == "1-3,5"
    assert cpuset([0]) == "0"
    assert cpuset([0, 2, 4]) == "0,2,4"


def test_eight_cores_follow_the_paper_layout():
    p = plan(range(8))
    assert not p.degraded and not p.cores_shared
    assert p.reserved == (0,)
    assert p.ge_cores == (1,)
    assert p.cd_ge_cpuset == "2"
    assert p.device_cores == (3, 4, 5, 6, 7)
    # Nothing else on a GE core or the reserved core.
    assert p.cd_node_cpuset is not None
    used = {int(c) for c in p.device_cpusets} | {int(p.cd_node_cpuset)}
    assert used <= {3, 4, 5, 6, 7}
    # Round-robin: CD node first, then devices; 11 slots over 5 cores.
    assert p.cd_node_cpuset == "3"
    assert list(p.device_cpusets[:5]) == ["4", "5", "6", "7", "3"]
    counts = {c: (list(p.device_cpusets) + [p.cd_node_cpuset]).count(c) for c in "34567"}
    assert max(counts.values()) - min(counts.values()) <= 1


def test_without_affinity_devices_share_one_cpuset():
    p = plan(range(8), affinity=False)
    assert set(p.device_cpusets) == {"3-7"}
    assert p.cd_node_cpuset == "3-7"


def test_four_cores_is_the_minimum_full_layout():
    p = plan(range(4))
    assert not p.degraded
    assert (p.ge_cores, p.cd_ge_cpuset, p.device_cores) == ((1,), "2", (3,))


def test_two_cores_degrade_visibly():
    p = plan([0, 1])
    assert p.degraded and p.cores_shared
    assert p.ge_cores == (1,)                       # the workload GE keeps its core
    assert p.cd_ge_cpuset == "0" and set(p.device_cpusets) == {"0"}
    assert any("share" in n for n in p.notes)
    assert "shared cores: this host has 2, the paper's layout needs 4" in p.render()
    assert "docs/reading-the-report.md#shared-cores" in p.render()
    assert "DEGRADED" not in p.render()


def test_three_cores_keep_the_ge_dedicated_and_share_the_cd_ge():
    p = plan([0, 1, 2])
    assert p.degraded
    assert p.ge_cores == (1,) and p.cd_ge_cpuset == "2" and p.device_cores == (2,)


def test_two_ges_on_eight_cores():
    p = plan(range(8), ge_instances=2)
    assert p.ge_cores == (1, 2) and p.cd_ge_cpuset == "3" and p.device_cores == (4, 5, 6, 7)
    assert not p.degraded


def test_two_ges_on_four_cores_share_and_say_so():
    p = plan(range(4), ge_instances=2)
    assert p.degraded
    assert p.ge_cores == (1, 2) and p.device_cores == (3,) and p.cd_ge_cpuset == "3"


def test_cd_disabled_frees_a_core():
    p = plan(range(4), cd_enabled=False)
    assert p.cd_ge_cpuset is None and p.cd_node_cpuset is None
    assert p.device_cores == (2, 3) and len(p.device_cpusets) == 10


def test_sparse_cpu_list_from_affinity():
    p = plan([0, 2, 5, 7, 9])
    assert p.ge_cores == (2,) and p.cd_ge_cpuset == "5" and p.device_cores == (7, 9)


def test_reserved_core_must_be_offered():
    with pytest.raises(UserError) as ei:
        plan([1, 2, 3, 4], reserve=[0])
    assert ei.value.field == "placement.reserve"


def test_reserving_every_core_of_a_larger_host_is_refused():
    with pytest.raises(UserError, match=r"reserves every offered core \(0-1\)") as ei:
        plan([0, 1], reserve=[0, 1])
    assert ei.value.field == "placement.reserve"


def test_single_core_shares_everything():
    p = plan([0], reserve=[0])
    assert p.degraded and p.ge_cores == (0,) and set(p.device_cpusets) == {"0"}


def test_plan_is_serialisable():
    d = plan(range(8)).to_dict()
    assert d["cores_shared"] is False and len(d["device_cpusets"]) == 10


def test_the_cd_ge_spin_is_a_planner_value_recorded_with_the_plan():
    p = plan(range(8))
    assert p.cd_ge_spin_us == 2000 and p.to_dict()["cd_ge_spin_us"] == 2000
    assert "--spin-us 2000" in p.render()
    assert plan(range(8), cd_enabled=False).cd_ge_spin_us is None


def test_a_fast_cd_ge_spins_a_fortieth_of_its_interval_so_that_its_rt_budget_lasts():
    def spin(rit_us: int) -> int | None:
        return make_plan(range(8), reserve=[0], ge_instances=1, cd_enabled=True, devices=10, affinity=True,
                         cd_rit_us=rit_us).cd_ge_spin_us

    assert spin(100_000) == 2000 and spin(80_000) == 2000
    assert spin(10_000) == 250 and spin(2_000) == 50
    assert spin(100) == 20                   # never below a wake-up's worth
    assert "--spin-us 50" in make_plan(range(8), reserve=[0], ge_instances=1, cd_enabled=True, devices=10,
                                       affinity=True, cd_rit_us=2_000).render()


def test_a_node_names_its_core_count_and_where_it_came_from_in_words():
    assert cores_phrase(1, "NanoCPUs") == "1 core (as the engine reports)"
    assert cores_phrase(8, "--cores") == "8 cores (from --cores)"
    assert cores_phrase(2, "sched_getaffinity") == "2 cores (this process's CPU affinity)"
