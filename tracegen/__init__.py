"""tracegen: the synthetic workload generator (paper section 4.2).

Public API (imported lazily, so that ``wotbench --help`` does not load NumPy)::

    from wotbench.spec import load
    from wotbench.tracegen import generate
    workload = load("exp.yaml")[0].spec.workload      # a WorkloadSpec
    out = generate(workload, Path("results/x/workload"))
    from_capture("gateway.pcapng", Path("wl"))        # a captured workload (CaptureWorkload)

The workload types (``WorkloadSpec``, ``GroupWorkload``) belong to the spec
model, :mod:`wotbench.spec`. See tracegen/README.md for the files written
and how resources are chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wotbench.base.lazy import exports

# The same names for mypy and editors, which cannot follow __getattr__
# (harness/tests/test_lazy_exports.py holds them to _WHERE and __all__).
if TYPE_CHECKING:
    from wotbench.tracegen._distribution import Distribution, parse_distribution
    from wotbench.tracegen._fromcapture import CaptureWorkload, from_capture
    from wotbench.tracegen._generate import GeneratedWorkload, build_requests, device_host, generate
    from wotbench.tracegen._replay import replay, replay_info, replay_times

__all__ = ["generate", "GeneratedWorkload", "build_requests", "device_host", "Distribution",
           "parse_distribution", "from_capture", "CaptureWorkload", "replay", "replay_times",
           "replay_info"]

_WHERE = {
    "generate": "_generate", "GeneratedWorkload": "_generate", "build_requests": "_generate",
    "device_host": "_generate",
    "Distribution": "_distribution", "parse_distribution": "_distribution",
    "from_capture": "_fromcapture", "CaptureWorkload": "_fromcapture",
    "replay": "_replay", "replay_times": "_replay", "replay_info": "_replay",
}


__getattr__, __dir__ = exports(__name__, _WHERE, __all__)
